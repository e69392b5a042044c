"""The Toss Up reader on the rendered fixture library (both splits).

These are regression floors, set below the product targets; `dicetray bench scanner`
prints the measured figures that the issue notes quote.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from scanner.evaluate import Scorecard
from scanner.labels import photo_labels
from scanner.reader import Scanner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def tossup_card() -> Scorecard:
    labels = list(photo_labels(FIXTURES / "tossup"))
    assert labels, "no Toss Up fixtures"
    scanner = Scanner("tossup")
    card = Scorecard()
    for label in labels:
        image = cv2.imread(str(label.image), cv2.IMREAD_COLOR)
        assert image is not None, label.image
        card.add(label.image.name, label.dice, scanner.read(image))
    return card


def test_finds_the_dice(tossup_card):
    summary = tossup_card.summary()
    assert summary["detection_recall"] >= 0.93, tossup_card.failures
    assert summary["detection_precision"] >= 0.99, tossup_card.failures


def test_never_reads_a_wrong_colour_with_confidence(tossup_card):
    summary = tossup_card.summary()
    assert summary["wrong_confident_rate"] <= 0.002, tossup_card.failures
    assert summary["face_accuracy"] >= 0.99, tossup_card.confusion_table()


def test_empty_trays_show_no_dice():
    scanner = Scanner("tossup")
    empties = sorted((FIXTURES / "tossup").glob("*-empty.jpg"))
    assert empties
    for path in empties:
        assert scanner.read(cv2.imread(str(path))) == [], path.name
