"""The Toss Up reader on the rendered fixture library (both splits).

These are regression floors, set a little below what the reader measures today (and below the
product targets where it does not reach them yet); `dicetray bench scanner` prints the
measured figures per split that the issue notes quote.
"""

from __future__ import annotations

import io
import math
from dataclasses import replace
from pathlib import Path

import cv2
import pytest

from lab.bench_scanner import bench_videos
from scanner.evaluate import Scorecard, score_perturbed, score_photos
from scanner.finder import FinderRules
from scanner.labels import photo_labels
from scanner.reader import Scanner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Floors over both splits, a little below the measured figures with the die finder (190
# photos, 950 dice: recall 0.992 with its second look at the shade lifted, 0.986 without;
# precision 0.995; the finder learned from the dev half, so this is kinder than the test split
# alone). Without the finder: recall 0.924. Cocked: 25 of 25 flagged with 13 false alarms in
# 918 flat dice read, with the lean net, which learned from the dev half too (the test half
# alone: 6 of 6 and 8 in 361); without it 18 of 25 (0.72) and 9 false alarms. The lean net
# costs four flat dice re-rolled for seven leaning dice no longer scored as if flat; on the
# lean check set, which it never learned from, it flags 49 of 69 leaning dice found instead of
# the 32 that the net flagged when the finder had to agree, for 13 flat dice of 332 instead
# of 9 (`dicetray bench scanner --fixtures fixtures/leancheck --split all`, once rendered).
# Product targets: recall and precision >= 0.995, cocked recall >= 0.90.
RECALL_FLOOR = 0.975
PRECISION_FLOOR = 0.99
COCKED_FLOOR = 0.85
#: False cocked alarms per flat die read.
FALSE_COCKED_RATE = 0.015


@pytest.fixture(scope="module")
def tossup_card() -> Scorecard:
    labels = list(photo_labels(FIXTURES / "tossup"))
    assert labels, "no Toss Up fixtures"
    return score_photos(Scanner("tossup").read, labels)


def test_finds_the_dice(tossup_card):
    summary = tossup_card.summary()
    assert summary["detection_recall"] >= RECALL_FLOOR, tossup_card.failures
    assert summary["detection_precision"] >= PRECISION_FLOOR, tossup_card.failures


def test_never_reads_a_wrong_colour_with_confidence(tossup_card):
    summary = tossup_card.summary()
    assert summary["wrong_confident_rate"] <= 0.002, tossup_card.failures
    assert summary["face_accuracy"] >= 0.99, tossup_card.confusion_table()


def test_flags_cocked_dice_and_almost_never_a_flat_one(tossup_card):
    summary = tossup_card.summary()
    assert summary["cocked_dice"] > 0, "no cocked dice in the fixtures"
    assert summary["cocked_recall"] >= COCKED_FLOOR, tossup_card.failures
    # every false alarm makes the players re-roll a die that lay flat
    assert tossup_card.false_cocked <= FALSE_COCKED_RATE * tossup_card.faces_total


def assert_only_the_rule_adds(folder: str, photo: str, faces: list[str], without: FinderRules) -> None:
    """Read `photo` with the finder's rules as shipped and `without` the rule under test: the
    dice only the shipped rules find have `faces`, each read right at a labelled die."""
    label = next(label for label in photo_labels(FIXTURES / folder) if label.image.name == photo)
    image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
    before = Scanner("tossup", finder_rules=without).read(image)
    added = [r for r in Scanner("tossup").read(image) if all(r.center != b.center for b in before)]
    assert sorted(r.face for r in added) == faces
    for reading in added:
        truth = min(label.dice, key=lambda die: math.dist(die.center, reading.center))
        assert math.dist(truth.center, reading.center) < 0.5 * truth.size and truth.face == reading.face


@pytest.mark.parametrize("folder, photo, faces", [
    ("tossup", "tossup-s09-r00.jpg", ["yellow"]),
    ("lean/tossup", "lean-tossup-s05-r02.jpg", ["green", "red", "yellow"]),
])
def test_dice_in_a_walls_shadow_are_found_where_the_shade_is_lifted(folder, photo, faces):
    """Dice in the tray wall's shadow, too dark for the inset reader and for the finder in the
    picture as it comes (a dev photo and a lean-set one): the finder finds them in the shade
    lifted (finder.find_in_shade) and their rims read them right. This adds 3 dice over the
    dev split (one unsure), 1 over the test split and 11 over the lean set (one unsure, one not
    a die), none read wrong."""
    assert_only_the_rule_adds(folder, photo, faces, replace(FinderRules(), shade_gain=math.inf))


@pytest.mark.parametrize("folder, photo, faces", [
    ("tossup", "tossup-s09-r03.jpg", ["yellow"]),
    ("lean/tossup", "lean-tossup-s02-r02.jpg", ["yellow", "yellow"]),
])
def test_dice_huddled_in_a_walls_shadow_are_found_though_they_touch(folder, photo, faces):
    """Dice in the wall's shadow touch one another: the net, looking at the shade lifted,
    scores them under FinderRules.near_score, which in the frame as it comes tells a die beside
    another from its side face or shadow. Dark in the shade, their insets read, they need only
    read_near_score: over the dev split this adds 1 die and over the lean set 4, none read
    wrong and no false die."""
    rules = FinderRules()
    assert_only_the_rule_adds(folder, photo, faces, replace(rules, read_near_score=rules.near_score))


def test_empty_trays_show_no_dice():
    scanner = Scanner("tossup")
    empties = sorted((FIXTURES / "tossup").glob("*-empty.jpg"))
    assert empties
    for path in empties:
        assert scanner.read(cv2.imread(str(path))) == [], path.name


def test_a_patterned_cloth_does_not_hide_the_dice_on_it():
    # Its coloured squares between pale stripes pass as open insets, so more "dice" than a game
    # has are found; only the repeated colour is dropped, not every die whose rim is cut.
    labels = [p for p in photo_labels(FIXTURES / "tossup") if p.scene.get("surface") == "patterned_cloth"]
    assert labels, "no patterned cloth in the fixtures"
    card = score_photos(Scanner("tossup").read, labels)
    summary = card.summary()
    # measured 0.958 with the die finder (dev photos it learned from among them); 0.732 without
    # it (0.655 dropping all open insets)
    assert summary["detection_recall"] >= 0.9, card.failures
    assert summary["detection_precision"] >= 0.95, card.failures


def test_every_toss_up_video_gives_one_right_reading_per_roll_soon_after_it_settles():
    rows = bench_videos(FIXTURES / "videos", "tossup", Scanner("tossup"), io.StringIO())
    assert rows, "no Toss Up fixture videos"
    for row in rows:
        assert row["rolls_read"] == row["rolls_labelled"], row
        for roll in row["rolls"]:
            assert roll["faces_right"], row
            assert 0.0 <= roll["latency_s"] <= 0.5, row


@pytest.mark.slow  # about a minute on 2 cores: CI runs it in its own pass (.ci/run)
def test_the_test_split_as_other_cameras_would_take_it_reads_no_colour_wrong():
    """Resampled through another resolution, a stronger JPEG, a brighter tone curve, a softer
    lens, a dim room's sensor grain (scanner.evaluate.PERTURBATIONS): the same photos, 2208
    dice in all. Measured: recall 0.996, faces 0.9995, no confident mistake."""
    labels = list(photo_labels(FIXTURES / "tossup", "test"))
    assert labels, "no Toss Up fixtures"
    card = Scorecard.merged(score_perturbed(Scanner("tossup").read, labels).values())
    summary = card.summary()
    assert summary["wrong_confident_rate"] == 0.0, card.failures
    assert summary["face_accuracy"] >= 0.99, card.confusion_table()
    assert summary["detection_recall"] >= 0.98 and summary["detection_precision"] >= 0.99, card.failures
