"""The real-photo labels (fixtures/real/): well formed, inside their photos, split by source."""

import json

import cv2
import numpy as np
import pytest

from lab.real_photos import REAL_ROOT, check_label, check_tree, fit_box, propose_boxes


@pytest.fixture(scope="module")
def report():
    return check_tree(REAL_ROOT)


def test_every_label_passes_the_checks(report):
    assert report.problems == []


def test_validation_holds_300_d6_dice_on_several_kinds_of_table(report):
    assert report.d6["validation"] >= 300
    assert len(report.tables["validation"]) >= 2
    assert len(report.sources["validation"]) >= 2


def test_no_source_is_in_both_splits(report):
    assert not report.sources.get("validation", set()) & report.sources.get("learn", set())


def _label(**changes):
    label = {"image": "a.jpg", "dice_set": "any", "source": "s1", "split": "validation",
             "table": "grey tray", "size": [200, 100],
             "dice": [{"die": "d6", "face": "3", "box": [10, 10, 40, 40], "center": [25, 25],
                       "cocked": False}]}
    label.update(changes)
    return label


def _die(**changes):
    die = {"die": "d6", "face": "3", "box": [10, 10, 40, 40], "center": [25, 25], "cocked": False}
    die.update(changes)
    return die


def test_a_good_label_has_no_problems():
    assert check_label(_label(), "a", "s1") == []


@pytest.mark.parametrize("die, words", [
    (_die(box=[150, 10, 210, 40]), "not a box inside"),
    (_die(box=[40, 10, 10, 40]), "not a box inside"),
    (_die(face="7"), "face"),
    (_die(die="other", face="2"), "face"),
    (_die(die="d20"), "not one of"),
    (_die(box=[10, 10, 18, 18], center=[14, 14]), "too small"),
    (_die(center=[60, 25]), "outside its box"),
    (_die(cocked="no"), "cocked"),
])
def test_bad_dice_are_named(die, words):
    problems = check_label(_label(dice=[die]), "a", "s1")
    assert any(words in problem for problem in problems), problems


def test_bad_photo_level_fields_are_named():
    assert "split" in check_label(_label(split="train"), "a", "s1")[0]
    assert "folder" in check_label(_label(source="s2"), "a", "s1")[0]
    assert "image" in check_label(_label(image="b.jpg"), "a", "s1")[0]
    assert "long side" in check_label(_label(size=[1600, 900]), "a", "s1")[0]
    assert "missing key 'table'" in check_label({k: v for k, v in _label().items() if k != "table"}, "a")[0]
    crowded = _label(dice=[_die() for _ in range(41)])
    assert "too many" in check_label(crowded, "a", "s1")[0]


def _write_tree(root, sources, labels):
    root.mkdir(exist_ok=True)
    (root / "sources.json").write_text(json.dumps(sources))
    for source, name, label in labels:
        (root / source).mkdir(exist_ok=True)
        (root / source / f"{name}.json").write_text(json.dumps(label))


def test_a_source_in_both_splits_and_an_undescribed_source_are_caught(tmp_path):
    _write_tree(tmp_path, {"s1": {"split": "validation"}},
                [("s1", "a", _label(image="a.jpg")),
                 ("s1", "b", _label(image="b.jpg", split="learn")),
                 ("s2", "c", _label(image="c.jpg", source="s2"))])
    report = check_tree(tmp_path)
    assert any("both splits" in p for p in report.problems)
    assert any("b: split 'learn', its source is 'validation'" in p for p in report.problems)
    assert any("s2: not described" in p for p in report.problems)
    assert report.d6["validation"] == 2 and report.d6["learn"] == 1


def test_a_photo_that_does_not_match_its_label_is_caught(tmp_path):
    _write_tree(tmp_path, {"s1": {"split": "validation"}},
                [("s1", "a", _label(image="a.jpg")), ("s1", "b", _label(image="b.jpg")),
                 ("s1", "c", _label(image="c.jpg"))])
    cv2.imwrite(str(tmp_path / "s1" / "a.jpg"), np.zeros((100, 200, 3), np.uint8))
    cv2.imwrite(str(tmp_path / "s1" / "b.jpg"), np.zeros((120, 200, 3), np.uint8))
    good = (tmp_path / "s1" / "a.jpg").read_bytes()
    (tmp_path / "s1" / "c.jpg").write_bytes(good[:len(good) // 3])  # cut short: does not decode
    problems = check_tree(tmp_path).problems
    assert problems == ["b.jpg: is 200x120, its label says [200, 100]",
                        "c.jpg: cannot be read as a JPEG photo"]


def _dice_photo():
    """Two light squares with dark pips on a mid-grey table."""
    image = np.full((240, 320, 3), 90, np.uint8)
    for x0, y0 in ((40, 60), (180, 120)):
        image[y0:y0 + 50, x0:x0 + 50] = 230
        cv2.circle(image, (x0 + 25, y0 + 25), 5, (20, 20, 20), -1)
    return image


def test_proposals_find_light_dice_on_a_darker_table():
    boxes = sorted(propose_boxes(_dice_photo(), "bright"))
    assert len(boxes) == 2
    for box, (x0, y0) in zip(boxes, ((40, 60), (180, 120))):
        assert np.allclose(box, [x0, y0, x0 + 50, y0 + 50], atol=3)


def test_a_rough_box_snaps_to_its_die():
    assert np.allclose(fit_box(_dice_photo(), [45, 50, 100, 105], "bright"), [40, 60, 90, 110], atol=3)
