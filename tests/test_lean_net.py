"""The lean net: how it cuts a die, how its training cuts and augments, which dice the scanner
asks it about and how it takes its word, and how the shipped net judges the test split it
never saw."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from scanner.evaluate import match
from scanner.frames import DieReading
from scanner.labels import photo_labels
from scanner.finder import DieFinder, FinderRules, FoundDie
from scanner.lean_net import (CROP_REACH, CROP_SIDE, FINDER_HINT, LEAN_THRESHOLD, NEIGHBOUR_REACH, POSITION_SCALES, LeanNet,
                              crop_around, finder_leaning_at, may_lean, net_input, position_of)
from scanner.lean_training import LEANING_REPEATS, LeanExamples, augmented, epoch_batch, load_lean_examples
from scanner.nets import over_bright_level
from scanner.reader import Scanner
from scanner.training import cosine_rate, labelled_images, missing_folders

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _reading(x: float, y: float, side: float = 40.0, cocked: bool = False) -> DieReading:
    half = side / 2
    return DieReading(center=(x, y), corners=((x - half, y - half), (x + half, y - half), (x + half, y + half), (x - half, y + half)),
                      die="tossup", face="green", confidence=0.9, cocked=cocked, size=side)


def test_a_crop_holds_the_die_in_its_middle_and_its_neighbourhood_around():
    image = np.zeros((300, 400, 3), np.uint8)
    image[80:120, 180:220] = (0, 255, 0)  # the die's top face: 40 px about (200, 100)
    image[80:120, 240:250] = (0, 0, 255)  # a neighbour's edge, 1.0-1.25 sides to the right
    crop = crop_around(image, (200, 100), 40)
    assert crop.shape == (CROP_SIDE, CROP_SIDE, 3) and crop.dtype == np.uint8
    scale = CROP_SIDE / (2 * CROP_REACH * 40)  # crop pixels per frame pixel
    middle = crop[int(CROP_SIDE / 2 - 15 * scale):int(CROP_SIDE / 2 + 15 * scale),
                  int(CROP_SIDE / 2 - 15 * scale):int(CROP_SIDE / 2 + 15 * scale)]
    assert (middle[..., 1] > 200).all()
    red_columns = np.flatnonzero(crop[CROP_SIDE // 2, :, 2] > 128)
    assert red_columns.size and abs(red_columns.mean() - (CROP_SIDE / 2 + 45 * scale)) < 2


def test_a_crop_at_the_frame_edge_mirrors_the_frame_instead_of_black():
    image = np.full((100, 100, 3), 120, np.uint8)
    crop = crop_around(image, (2, 2), 30)
    assert crop.min() == 120


def test_the_position_is_the_offset_from_the_frame_centre_and_the_size_in_frame_widths():
    assert position_of((960, 180), 64, (1280, 720)) == pytest.approx((0.25, -0.140625, 0.05))


def test_the_net_input_divides_out_the_brightness_and_adds_the_position_as_planes():
    bright = np.full((CROP_SIDE, CROP_SIDE, 3), 200, np.uint8)
    bright[:10, :10] = 100
    dim = (bright // 2).astype(np.uint8)
    inputs = net_input(np.stack([bright, dim]), np.float32([[0.1, -0.2, 0.05], [0.0, 0.0, 0.02]]))
    assert inputs.shape == (2, 6, CROP_SIDE, CROP_SIDE) and inputs.dtype == np.float32
    # The lamp's brightness drops out: the same die under half the light looks nearly the same.
    assert np.abs(inputs[0, :3] - inputs[1, :3]).max() < 0.02
    assert inputs[0, 3:, 5, 7] == pytest.approx(np.float32([0.1, -0.2, 0.05]) * np.float32(POSITION_SCALES))
    assert np.ptp(inputs[0, 3:], axis=(1, 2)) == pytest.approx([0, 0, 0])


@pytest.mark.parametrize("shape", [(7, CROP_SIDE, CROP_SIDE, 3), (3, 64, 64, 3), (2, 5, 5, 3)])
def test_a_crop_s_bright_level_read_off_its_histogram_is_numpy_s_percentile_to_the_bit(shape):
    rng = np.random.default_rng(sum(shape))
    crops = rng.integers(0, 256, shape, dtype=np.uint8)
    crops[0, : shape[1] // 3] = 255  # a glare patch: the level sits on a run of equal values
    crops[-1] //= 4  # a dim crop: few distinct values
    floats = crops.astype(np.float32)
    reference = np.percentile(floats.reshape(len(crops), -1), 99, axis=1).reshape(-1, 1, 1, 1) + 1.0
    expected = (floats / reference).transpose(0, 3, 1, 2)
    assert np.array_equal(over_bright_level(crops), expected)
    # Crops that are not 8-bit (the locator's, balanced by gains) take numpy's own way.
    assert np.array_equal(over_bright_level(floats), expected)


def test_augmenting_turns_the_crop_and_its_position_in_the_frame_together():
    crop = np.zeros((CROP_SIDE, CROP_SIDE, 3), np.uint8)
    # A mark to the right of the die, i.e. away from the frame's centre when the die lies right of it.
    crop[CROP_SIDE // 2 - 3:CROP_SIDE // 2 + 3, CROP_SIDE - 20:CROP_SIDE - 8] = 255
    rng = np.random.default_rng(4)
    for _ in range(30):
        image, position = augmented(rng, crop, (0.3, 0.0, 0.04))
        assert image.shape == crop.shape and image.dtype == np.uint8
        assert position[2] == pytest.approx(0.04)
        assert math.hypot(position[0], position[1]) == pytest.approx(0.3, abs=1e-5)
        # The mark, wherever it went, lies in the direction the position now points.
        ys, xs = np.nonzero(image.max(axis=2) > 100)
        mark = np.float32([xs.mean() - CROP_SIDE / 2, ys.mean() - CROP_SIDE / 2])
        heading = np.float32(position[:2]) / 0.3
        assert float(mark @ heading) / float(np.linalg.norm(mark)) > 0.9


def test_an_epoch_shows_each_leaning_die_repeatedly_beside_as_many_flat_ones():
    count = 40
    examples = LeanExamples(np.zeros((count, CROP_SIDE, CROP_SIDE, 3), np.uint8), np.zeros((count, 3), np.float32),
                            np.arange(count) < 3, np.array(["s0"] * count), np.ones(count, bool), np.zeros(count, np.float32))
    inputs, targets = epoch_batch(np.random.default_rng(0), examples, np.arange(count))
    assert inputs.shape == (6 * LEANING_REPEATS, 6, CROP_SIDE, CROP_SIDE)
    assert targets.sum() == 3 * LEANING_REPEATS and len(targets) == 6 * LEANING_REPEATS


def _labelled_still(folder: Path, name: str, split: str, cocked: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(folder / f"{name}.jpg"), np.full((200, 300, 3), 90, np.uint8))
    die = {"die": "tossup", "face": "green", "center": [100, 100], "corners": [[80, 80], [120, 80], [120, 120], [80, 120]],
           "cocked": cocked}
    (folder / f"{name}.json").write_text(json.dumps({"image": f"{name}.jpg", "dice_set": "tossup", "dice": [die],
                                                     "scene": {"split": split}}))


def test_training_cuts_the_dev_and_both_lean_sets_dice_never_the_test_split_or_the_lean_check_set(tmp_path):
    _labelled_still(tmp_path / "tossup", "tossup-s00-r00", "dev", False)
    _labelled_still(tmp_path / "tossup", "tossup-s01-r00", "test", True)
    _labelled_still(tmp_path / "lean" / "tossup", "lean-tossup-s00-r00", "lean", True)
    _labelled_still(tmp_path / "leanmore" / "tossup", "leanmore-tossup-s00-r00", "leanmore", True)
    _labelled_still(tmp_path / "leancheck" / "tossup", "leancheck-tossup-s00-r00", "leancheck", True)
    examples = load_lean_examples(tmp_path)
    # A plain grey picture: the scanner finds nothing there, so each die is cut about its label only.
    assert examples.crops.shape == (3, CROP_SIDE, CROP_SIDE, 3)
    assert not examples.by_scanner.any() and not examples.finder_leaning.any()
    assert sorted(zip(examples.setups.tolist(), examples.leaning.tolist())) == [
        ("lean-tossup-s00", True), ("leanmore-tossup-s00", True), ("tossup-s00", False)]


class _Judge(LeanNet):
    """The lean net's decisions around a stand-in for the net: a die leans as its x says."""

    def __init__(self) -> None:
        self.threshold = LEAN_THRESHOLD
        self.asked: list[tuple[float, float]] = []

    def chances(self, image, readings):
        self.asked += [r.center for r in readings]
        return [r.center[0] / 100.0 for r in readings]


def test_only_suspects_the_net_is_sure_of_are_flagged_and_none_is_unflagged():
    judge = _Judge()
    readings = [_reading(95, 10), _reading(50, 20), _reading(10, 30, cocked=True), _reading(99, 40, side=0.0),
                _reading(97, 50)]
    flagged = judge.flagged(np.zeros((100, 100, 3), np.uint8), readings, [True, True, True, True, False])
    assert [r.cocked for r in flagged] == [True, False, True, False, False]
    # Dice already cocked, readings without a size and dice nobody suspects are not asked about.
    assert judge.asked == [(95, 10), (50, 20)]
    assert [r.center for r in flagged] == [r.center for r in readings]
    with pytest.raises(ValueError):
        judge.flagged(np.zeros((100, 100, 3), np.uint8), readings, [True])


def test_the_finder_s_leaning_at_a_reading_is_that_of_the_die_it_found_there():
    def found(x: float, cocked: float) -> FoundDie:
        return FoundDie(center=(x, 100.0), side=40.0, angle=0.0, score=0.9, cocked=cocked, colours=(1.0, 0.0, 0.0))

    dice = [found(100, 0.8), found(300, 0.1)]
    assert finder_leaning_at(dice, _reading(104, 102), FinderRules()) == 0.8
    assert finder_leaning_at(dice, _reading(300, 100), FinderRules()) == 0.1
    assert finder_leaning_at(dice, _reading(200, 100), FinderRules()) == 0.0


def test_a_missing_model_says_how_to_train_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="lean_training"):
        LeanNet(tmp_path / "none.onnx")


def test_a_die_may_lean_where_it_touches_another_or_the_finder_sees_it_leaning_a_little():
    side = 40.0
    readings = [_reading(100, 100), _reading(100 + 0.99 * NEIGHBOUR_REACH * side, 100),  # touching
                _reading(400, 100),  # alone, the finder sees it leaning a little: a wall
                _reading(400, 400), _reading(400 + 1.01 * NEIGHBOUR_REACH * side, 400)]  # alone, not touching
    assert may_lean(readings, [0.0, 0.0, FINDER_HINT, FINDER_HINT * 0.9, 0.0]) == [True, True, True, False, False]
    # The larger of two dice measures how near they are.
    assert may_lean([_reading(0, 0, side=20.0), _reading(0.9 * NEIGHBOUR_REACH * side, 0, side=side)], [0.0, 0.0]) == [True, True]
    with pytest.raises(ValueError):
        may_lean(readings, [0.0])


def test_the_scanner_asks_the_lean_net_about_the_dice_that_may_lean_only():
    image = cv2.imread(str(FIXTURES / "tossup" / "tossup-s01-r00.jpg"))
    plain = Scanner(dice_set="tossup", use_lean_net=False).read(image)
    finder = DieFinder()
    found = finder.find(image)
    suspects = [r.center for r, suspect in zip(plain, may_lean(plain, [finder_leaning_at(found, r, FinderRules()) for r in plain]))
                if suspect and not r.cocked]
    assert 0 < len(suspects) < len(plain)  # some touch or lean a little, some lie alone
    judge = _Judge()
    judged = Scanner(dice_set="tossup", lean_net=judge, finder=finder).read(image)
    assert judge.asked == suspects
    assert [r.center for r in judged] == [r.center for r in plain]
    assert [r.cocked for r in judged] == [r.cocked or (r.center in suspects and r.center[0] / 100.0 >= LEAN_THRESHOLD)
                                          for r in plain]


def test_only_toss_up_dice_are_judged_by_the_lean_net():
    assert isinstance(Scanner(dice_set="tossup").lean_net, LeanNet)
    assert Scanner(dice_set="tossup", use_lean_net=False).lean_net is None
    assert Scanner(dice_set="tossup", use_finder=False).lean_net is None  # nothing says which dice may lean
    assert Scanner(dice_set="tallyup").lean_net is None and Scanner(dice_set="any").lean_net is None


def _judged(scanner: Scanner, folder: Path, split: str) -> tuple[int, int, int, int]:
    """(leaning dice found, of them flagged cocked, flat dice found, of them flagged cocked)."""
    leaning = leaning_flagged = flat = flat_flagged = 0
    for photo in photo_labels(folder, split):
        if not photo.dice:
            continue
        readings = scanner.read(cv2.imread(str(photo.image)))
        for li, ri in match(photo.dice, readings):
            if photo.dice[li].cocked:
                leaning += 1
                leaning_flagged += readings[ri].cocked
            else:
                flat += 1
                flat_flagged += readings[ri].cocked
    return leaning, leaning_flagged, flat, flat_flagged


def test_on_the_toss_up_test_split_the_lean_net_flags_every_leaning_die_and_at_most_two_flat_ones_more():
    # The test split was never trained on. Measured: with the net 6 of 6 leaning dice flagged,
    # 8 of 361 flat ones; without, 4 of 6 and 6 of 361. (The net before the second lean set,
    # asked only where the finder saw a die leaning: 5 of 6 and 7.)
    without = _judged(Scanner(dice_set="tossup", use_lean_net=False), FIXTURES / "tossup", "test")
    judged = _judged(Scanner(dice_set="tossup"), FIXTURES / "tossup", "test")
    assert judged[0] == without[0] == 6 and judged[2] == without[2]
    assert judged[1] == 6 > without[1]
    assert judged[3] <= without[3] + 2


def test_the_training_scripts_read_each_kept_photo_and_name_one_that_cannot_be_read(tmp_path, caplog):
    _labelled_still(tmp_path, "tossup-s00-r00", "dev", False)
    _labelled_still(tmp_path, "tossup-s00-r01", "dev", True)
    _labelled_still(tmp_path, "tossup-s01-r00", "test", False)
    (tmp_path / "tossup-s00-r01.jpg").write_bytes(b"not a jpeg")
    with caplog.at_level("WARNING"):
        read = list(labelled_images(tmp_path, "dev"))
    assert [(photo.image.name, image.shape) for photo, image in read] == [("tossup-s00-r00.jpg", (200, 300, 3))]
    assert "tossup-s00-r01.jpg: cannot be read; left out" in caplog.text
    assert [photo.image.name for photo, _ in labelled_images(tmp_path, keep=lambda photo: photo.split == "test")] == [
        "tossup-s01-r00.jpg"]


def test_the_training_scripts_learning_rate_falls_on_a_cosine_to_zero():
    class _Optimiser:
        param_groups = [{"lr": 1.0}, {"lr": 1.0}]

    optimiser = _Optimiser()
    rates = []
    for epoch in range(4):
        cosine_rate(optimiser, 2e-3, epoch, 4)
        rates.append(optimiser.param_groups[1]["lr"])
    assert optimiser.param_groups[0]["lr"] == optimiser.param_groups[1]["lr"]
    assert rates == pytest.approx([2e-3 * (1 + math.cos(math.pi * k / 4)) / 2 for k in range(1, 5)])
    assert rates[-1] == pytest.approx(0.0, abs=1e-12)


def test_the_training_scripts_name_the_unrendered_sets_they_need(tmp_path):
    (tmp_path / "tossup").mkdir()
    assert missing_folders(tmp_path, ["tossup"]) is None
    why = missing_folders(tmp_path, ["tossup", "leanmore/tossup", "facemore/tallyup"])
    assert why == f"leanmore/tossup, facemore/tallyup missing under {tmp_path}: render it first (fixtures/README.md)"
