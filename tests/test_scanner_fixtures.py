"""The Toss Up reader on the rendered fixture library (both splits).

These are regression floors, set a little below what the reader measures today (and below the
product targets where it does not reach them yet); `dicetray bench scanner` prints the
measured figures per split that the issue notes quote.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from scanner.evaluate import Scorecard, score_photos
from scanner.labels import photo_labels
from scanner.reader import Scanner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Floors over both splits, a little below the measured figures (170 photos, 868 dice: recall
# 0.911, precision 0.996, cocked 0.70 with 5 false alarms). Product targets: recall and
# precision >= 0.995, cocked recall >= 0.90.
RECALL_FLOOR = 0.90
PRECISION_FLOOR = 0.99
COCKED_FLOOR = 0.65
#: False cocked alarms per flat die read.
FALSE_COCKED_RATE = 0.01


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


def test_empty_trays_show_no_dice():
    scanner = Scanner("tossup")
    empties = sorted((FIXTURES / "tossup").glob("*-empty.jpg"))
    assert empties
    for path in empties:
        assert scanner.read(cv2.imread(str(path))) == [], path.name
