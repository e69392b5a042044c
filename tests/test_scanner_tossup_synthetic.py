"""The Toss Up reader on drawn dice: any tray colour, lamp colour and brightness."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from scanner.frames import UNSURE
from scanner.reader import Scanner
from scorekeeper.live_synthetic import draw_tray as draw_dice
from scorekeeper.live_synthetic import square_corners as square

BACKGROUNDS = {"dark_felt": (40, 38, 36), "green_felt": (40, 95, 30), "wood": (60, 110, 160), "white_board": (225, 228, 230)}


def draw_tray(background, dice, cast=(1.0, 1.0, 1.0), gain=1.0, seed=0):
    return draw_dice(dice, background=background, seed=seed, cast=cast, gain=gain)


LAYOUT = [
    (300, 300, "green", 0.1), (350, 300, "red", 0.1),  # two touching dice
    (420, 310, "yellow", 0.5), (540, 290, "red", 1.0),
    (700, 500, "green", 0.3), (860, 420, "yellow", 0.8), (1000, 200, "green", 0.0),
]

CASTS = {"2700K": (0.55, 0.8, 1.0), "6500K": (1.0, 0.97, 0.93), "neutral": (1.0, 1.0, 1.0)}


@pytest.mark.parametrize("background", sorted(BACKGROUNDS))
@pytest.mark.parametrize("cast", sorted(CASTS))
@pytest.mark.parametrize("gain", [0.5, 1.0, 1.5])
def test_reads_every_die_whatever_the_tray_and_lamp(background, cast, gain):
    image = draw_tray(BACKGROUNDS[background], LAYOUT, CASTS[cast], gain)
    readings = Scanner("tossup").read(image)
    assert len(readings) == len(LAYOUT)
    for cx, cy, face, _ in LAYOUT:
        nearest = min(readings, key=lambda d: math.dist(d.center, (cx, cy)))
        assert math.dist(nearest.center, (cx, cy)) < 4
        assert nearest.face == face
        assert nearest.confidence > 0.5
        assert not nearest.cocked


def test_corners_are_the_top_face_clockwise_from_top_left():
    image = draw_tray(BACKGROUNDS["dark_felt"], [(640, 360, "green", 0.2)])
    (reading,) = Scanner("tossup").read(image)
    expected = square(640, 360, 48, 0.2)
    for corner in reading.corners:
        assert min(math.dist(corner, tuple(e)) for e in expected) < 5
    xs = [c[0] for c in reading.corners]
    ys = [c[1] for c in reading.corners]
    assert reading.corners[0] == min(reading.corners, key=lambda c: c[0] + c[1])
    # clockwise in image coordinates (y down): positive shoelace sum
    area = sum(xs[i] * ys[(i + 1) % 4] - xs[(i + 1) % 4] * ys[i] for i in range(4))
    assert area > 0


def test_an_inset_of_no_known_colour_is_unsure_not_guessed():
    image = draw_tray(BACKGROUNDS["dark_felt"], [(640, 360, "green", 0.2)])
    blue = square(640, 360, 40, 0.2)
    cv2.fillConvexPoly(image, blue.astype(np.int32), (200, 60, 40))
    readings = Scanner("tossup").read(image)
    assert all(r.face == UNSURE for r in readings)


def test_any_mode_finds_dice_without_reading_them():
    image = draw_tray(BACKGROUNDS["wood"], LAYOUT)
    readings = Scanner("any").read(image)
    assert len(readings) == len(LAYOUT)
    assert all(r.die is None and r.face is None for r in readings)


def test_empty_tray_has_no_dice():
    for background in BACKGROUNDS.values():
        assert Scanner("tossup").read(draw_tray(background, [])) == []
