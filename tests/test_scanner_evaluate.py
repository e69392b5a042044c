"""The bench's arithmetic: matching readings to labels and the rates it prints."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from scanner.evaluate import PERTURBATIONS, Scorecard, failure_lines, match, percentile, score_perturbed, score_photos
from scanner.frames import DieReading
from scanner.labels import LabelledDie, LabelledPhoto


def label(x, y, face="green", die="tossup", cocked=False, size=40):
    h = size / 2
    corners = ((x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h))
    return LabelledDie(die=die, face=face, center=(x, y), corners=corners, cocked=cocked)


def reading(x, y, face="green", die="tossup", cocked=False, confidence=0.99):
    return DieReading(center=(x, y), corners=(), die=die, face=face, cocked=cocked, confidence=confidence, size=40)


def test_match_pairs_closest_within_half_a_die():
    labels = [label(100, 100), label(150, 100)]
    readings = [reading(146, 102), reading(104, 99), reading(400, 400)]
    assert sorted(match(labels, readings)) == [(0, 1), (1, 0)]
    assert match([label(100, 100)], [reading(125, 100)]) == []


def test_scorecard_counts_every_outcome():
    card = Scorecard()
    labels = [label(100, 100, "green"), label(200, 100, "red"), label(300, 100, "yellow"),
              label(400, 100, "red", cocked=True), label(500, 100, "green")]
    readings = [reading(100, 100, "green"), reading(200, 100, "unsure"), reading(300, 100, "green"),
                reading(400, 100, "red", cocked=True), reading(700, 700)]
    card.add("photo", labels, readings)
    s = card.summary()
    assert s["detection_recall"] == 4 / 5
    assert s["detection_precision"] == 4 / 5
    assert s["face_accuracy"] == 1 / 3
    assert s["read_right_of_all"] == 1 / 4  # the missed green die counts too, the cocked one not
    assert s["unsure_rate"] == 1 / 3
    assert s["wrong_confident_rate"] == 1 / 3
    assert s["cocked_recall"] == 1.0
    assert card.confusion[("yellow", "green")] == 1
    assert "yellow" in card.confusion_table()
    assert any("read as tossup green" in f for f in card.failures)
    assert "photo: tossup red left unsure (named tossup, face unsure) at (200.0, 100.0)" in card.failures


def test_identity_counts_for_tally_dice():
    card = Scorecard()
    card.add("p", [label(10, 10, "50", die="red")], [reading(10, 10, "50", die="orange")])
    assert card.summary()["identity_accuracy"] == 0.0
    assert card.summary()["face_accuracy"] == 0.0
    card.add("q", [label(10, 10, "(10)", die="blue")], [reading(10, 10, "unsure", die="unsure")])
    assert card.failures[-1] == "q: blue (10) left unsure (unnamed, face unsure) at (10.0, 10.0)"


def test_a_tally_die_read_off_its_top_face_with_another_face_is_a_confident_mistake():
    labels = [label(100, 100, "star", die="yellow", size=40), label(300, 100, "20", die="red", size=40),
              label(500, 100, "x2", die="up", size=40)]
    # Yellow read on its side face (30 px away, past the match radius): its reading still scores
    # the yellow die; red read away from its top face with the right face; up read elsewhere, unsure.
    readings = [reading(130, 100, "70", die="yellow"), reading(330, 100, "20", die="red"),
                reading(530, 100, "unsure", die="up"), reading(900, 100, "40", die="green")]
    card = Scorecard()
    card.add("p", labels, readings)
    s = card.summary()
    assert s["detection_recall"] == 0.0 and s["detection_precision"] == 0.0
    assert card.wrong_confident == 1 and s["wrong_off_top"] == 1
    assert any("yellow star read as yellow 70" in f and "off its top face" in f for f in card.failures)
    # Toss Up dice are alike: a reading away from any of them names none of them.
    tossup = Scorecard()
    tossup.add("p", [label(100, 100, "green")], [reading(130, 100, "red")])
    assert tossup.wrong_confident == 0


def test_cocked_dice_read_as_lying_flat_are_counted_as_scored():
    labels = [label(100, 100, "red", cocked=True), label(200, 100, "green", cocked=True),
              label(300, 100, "yellow", cocked=True), label(500, 100, "20", die="blue", cocked=True),
              label(700, 100, "star", die="red", cocked=True)]
    readings = [reading(np.float64(100.04), np.float32(100), "red"), reading(200, 100, "green", cocked=True),
                reading(300, 100, "unsure"),
                reading(530, 100, "50", die="blue"),  # blue read on its side face, as if flat
                reading(700, 100, "star", die="orange")]  # the red die's top face, its colour taken for orange's
    card = Scorecard()
    card.add("p", labels, readings)
    s = card.summary()
    assert s["cocked_scored"] == 3 and s["cocked_recall"] == 1 / 4 and s["cocked_labelled"] == 5
    assert card.wrong_confident == 0 and s["wrong_off_top"] == 0  # counted apart from the flat dice's mistakes
    assert s["cocked_scored_other_face"] == 2  # blue's side face, red named orange; the tossup red is on top
    assert sum("read as lying flat" in f for f in card.failures) == 3
    assert "p: cocked tossup read as lying flat, red, at (100.0, 100.0)" in card.failures  # plain numbers, not numpy's
    assert "p: cocked blue read as lying flat, 50 (on top: 20), at (530.0, 100.0)" in card.failures
    assert "p: cocked red read as lying flat, orange star (on top: red star), at (700.0, 100.0)" in card.failures


def test_a_bench_lists_its_first_failures_then_how_many_more():
    assert failure_lines(["a", "b", "c"], 2) == ["- a", "- b", "... and 1 more"]
    assert failure_lines(["a"], 2) == ["- a"]


def test_rates_without_data_are_nan_and_percentiles():
    assert math.isnan(Scorecard().summary()["face_accuracy"])
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([5], 0.95) == 5
    assert math.isnan(percentile([], 0.5))


def test_score_photos_reads_each_photo_and_names_one_it_cannot_read(tmp_path):
    cv2.imwrite(str(tmp_path / "a.png"), np.zeros((20, 30, 3), np.uint8))
    photo = LabelledPhoto(tmp_path / "a.png", "tossup", (label(10, 10, "green"),), {})
    seen = []
    card = score_photos(lambda image: seen.append(image.shape) or [reading(10, 10, "green")], [photo])
    assert seen == [(20, 30, 3)] and card.summary()["face_accuracy"] == 1.0
    with pytest.raises(ValueError, match="cannot read .*missing.png"):
        score_photos(lambda image: [], [LabelledPhoto(tmp_path / "missing.png", "tossup", (), {})])


def test_merged_scorecards_hold_the_counts_of_all():
    first, second, both = Scorecard(), Scorecard(), Scorecard()
    photos = [
        ([label(100, 100), label(300, 100, face="red")], [reading(101, 100), reading(300, 101, face="green")]),
        ([label(100, 100, cocked=True), label(500, 500)], [reading(100, 100, face="unsure"), reading(50, 600)]),
    ]
    for card, (labels, readings) in zip((first, second), photos):
        card.add("photo", labels, readings)
        both.add("photo", labels, readings)
    def figures(card):  # nan for "no such dice", which compares unequal to itself
        return {key: None if isinstance(value, float) and math.isnan(value) else value for key, value in card.summary().items()}

    merged = Scorecard.merged([first, second])
    assert figures(merged) == figures(both) and merged.labelled == 4
    assert merged.confusion == both.confusion and merged.failures == both.failures
    assert figures(Scorecard.merged([])) == figures(Scorecard())


@pytest.mark.parametrize("name", [name for name, _ in PERTURBATIONS])
def test_a_perturbed_photo_keeps_its_frame_size_and_changes_a_little(name):
    """The labels still hold for a perturbed photo: same size, same place of everything."""
    perturb = dict(PERTURBATIONS)[name]
    rng = np.random.default_rng(3)
    image = cv2.GaussianBlur(rng.integers(0, 256, (180, 320, 3), dtype=np.uint8), (0, 0), 1.5)
    cv2.rectangle(image, (100, 60), (140, 100), (40, 200, 240), -1)
    changed = perturb(image)
    assert changed.shape == image.shape and changed.dtype == np.uint8
    assert np.array_equal(perturb(image), changed)  # deterministic
    difference = np.abs(changed.astype(np.int16) - image.astype(np.int16))
    assert 0 < float(difference.mean()) < 25
    # The square stays where it was, to within a pixel.
    def centre(picture):
        ys, xs = np.nonzero(np.abs(picture.astype(np.int16) - (40, 200, 240)).max(axis=2) < 45)
        return xs.mean(), ys.mean()

    assert math.dist(centre(changed), centre(image)) < 1.0


def test_score_perturbed_reads_each_photo_once_per_change_and_skips_one_it_cannot_read(tmp_path):
    cv2.imwrite(str(tmp_path / "a.png"), np.full((20, 30, 3), 90, np.uint8))
    photos = [LabelledPhoto(tmp_path / "a.png", "tossup", (label(10, 10, "green"),), {}),
              LabelledPhoto(tmp_path / "missing.png", "tossup", (label(10, 10, "green"),), {})]
    seen = []
    cards = score_perturbed(lambda image: seen.append(image.shape) or [reading(10, 10, "green")], photos)
    assert list(cards) == [name for name, _ in PERTURBATIONS]
    assert seen == [(20, 30, 3)] * len(PERTURBATIONS)
    assert all(card.labelled == 1 and card.faces_right == 1 for card in cards.values())
