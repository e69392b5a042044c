"""The Toss Up reader on drawn dice: any tray colour, lamp colour and brightness."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from scanner.frames import UNSURE
from scanner.reader import Scanner
from scorekeeper.table.synthetic import draw_tray as draw_dice
from scorekeeper.table.synthetic import square_corners as square

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
    assert_reads_flat(Scanner("tossup").read(image), LAYOUT)


def assert_reads_flat(readings, dice):
    """One confident, flat reading of the right colour on every drawn die, and no others."""
    assert len(readings) == len(dice)
    for cx, cy, face, _ in dice:
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


WHITE = (236, 236, 232)
INSET = {"green": (42, 98, 22), "yellow": (92, 236, 246), "red": (28, 42, 226)}


def draw_die_with_side(image, top_center, top_face, side_face, side_direction, ratio, side=48):
    """A die's top face plus one side face beside it, as a camera sees a cube at an angle.

    Seen at an angle t from the top face's normal, toward `side_direction` (unit vector from
    the top's centre toward the side face), the top is foreshortened to side * cos(t) and the
    side face shows side * sin(t): `ratio` = tan(t) is the side/top area ratio.
    """
    cx, cy = top_center
    ux, uy = side_direction
    nx, ny = -uy, ux  # along the shared edge
    angle = math.atan(ratio)
    depth_top, depth_side = side * math.cos(angle), side * math.sin(angle)

    def rect(start, end, half_width):  # depths measured from the top's centre along u
        return np.array([(cx + ux * d + nx * w, cy + uy * d + ny * w)
                         for d, w in ((start, half_width), (start, -half_width), (end, -half_width), (end, half_width))],
                        np.int32)

    inset = 40 / 48
    cv2.fillConvexPoly(image, rect(-depth_top / 2, depth_top / 2, side / 2), WHITE, cv2.LINE_AA)
    cv2.fillConvexPoly(image, rect(-depth_top / 2 * inset, depth_top / 2 * inset, side / 2 * inset), INSET[top_face], cv2.LINE_AA)
    near, far = depth_top / 2, depth_top / 2 + depth_side
    cv2.fillConvexPoly(image, rect(near, far, side / 2), WHITE, cv2.LINE_AA)
    middle, half_depth = (near + far) / 2, depth_side / 2 * inset
    cv2.fillConvexPoly(image, rect(middle - half_depth, middle + half_depth, side / 2 * inset), INSET[side_face], cv2.LINE_AA)
    return image


def _toward_centre(x, y, width=1280, height=720):
    dx, dy = width / 2 - x, height / 2 - y
    length = math.hypot(dx, dy)
    return dx / length, dy / length


def _only_reading(image):
    readings = Scanner("tossup").read(cv2.GaussianBlur(image, (3, 3), 0))
    assert len(readings) == 1, readings
    return readings[0]


def test_a_flat_die_off_axis_shows_its_side_toward_the_centre_and_is_not_cocked():
    image = draw_tray(BACKGROUNDS["dark_felt"], [])
    x, y = 1100, 600
    # perspective: a side/top ratio about (distance from the nadir) / focal, toward the nadir
    draw_die_with_side(image, (x, y), "green", "red", _toward_centre(x, y), 0.35)
    reading = _only_reading(image)
    assert reading.face == "green" and not reading.cocked
    assert math.dist(reading.center, (x, y)) < 4


def test_a_side_face_away_from_the_centre_means_the_die_leans():
    image = draw_tray(BACKGROUNDS["wood"], [])
    x, y = 1100, 600
    away = tuple(-c for c in _toward_centre(x, y))
    draw_die_with_side(image, (x, y), "yellow", "green", away, 0.5)
    assert _only_reading(image).cocked


def test_a_large_side_face_near_the_centre_means_the_die_leans():
    image = draw_tray(BACKGROUNDS["green_felt"], [])
    draw_die_with_side(image, (700, 400), "red", "yellow", _toward_centre(700, 400), 0.8)
    reading = _only_reading(image)
    assert reading.cocked
    # reported between its two faces, on the die whichever face points up
    assert math.dist(reading.center, (700, 400)) < 0.5 * 48


def test_a_die_on_its_edge_shows_two_thin_faces_and_is_one_cocked_die():
    image = draw_tray(BACKGROUNDS["dark_felt"], [])
    # two faces of equal depth meeting at an edge, neither square: no top in view
    for y0, y1, face in ((330, 358, "green"), (362, 390, "yellow")):
        cv2.rectangle(image, (616, y0), (664, y1), WHITE, -1)
        cv2.rectangle(image, (620, y0 + 4), (660, y1 - 4), INSET[face], -1)
    reading = _only_reading(image)
    assert reading.cocked
    assert math.dist(reading.center, (640, 360)) < 0.5 * 48


#: The reader's own judgement of leaning (its view model, tossup._leaning) without the lean net:
#: the net learned leaning from rendered photos, and drawn flat squares touching in a row look
#: to it like dice pressed together, one leaning (it flags three of these five at 0.92-0.98).
#: It is measured on the rendered photos (tests/test_lean_net.py, test_scanner_fixtures.py).
def _reader_geometry() -> Scanner:
    return Scanner("tossup", use_lean_net=False)


def test_flat_dice_in_a_row_are_never_cocked():
    dice = [(400 + 49 * i, 300 + 3 * i, face, 0.05) for i, face in enumerate(["green", "red", "yellow", "green", "yellow"])]
    readings = _reader_geometry().read(draw_tray(BACKGROUNDS["white_board"], dice))
    assert len(readings) == len(dice)
    assert not any(r.cocked for r in readings)


def test_a_tilted_camera_moves_the_nadir_flat_dice_stay_flat_and_a_leaning_one_is_found():
    # camera tilted: vertical lines meet below the frame's centre; every flat die shows its
    # side toward that point, by (distance / focal)
    nadir, focal = (640.0, 600.0), 0.9 * 1280
    image = draw_tray(BACKGROUNDS["wood"], [])
    places = [(200, 120), (640, 110), (1080, 130), (180, 420), (1100, 430)]
    faces = ["green", "yellow", "red", "green", "yellow"]
    for (x, y), face in zip(places, faces):
        dx, dy = nadir[0] - x, nadir[1] - y
        distance = math.hypot(dx, dy)
        draw_die_with_side(image, (x, y), face, "green" if face != "green" else "red", (dx / distance, dy / distance),
                           distance / focal)
    # ...and one die leaning the other way among them
    draw_die_with_side(image, (640, 330), "red", "yellow", (0.0, -1.0), 0.45)
    readings = _reader_geometry().read(cv2.GaussianBlur(image, (3, 3), 0))
    assert len(readings) == len(places) + 1
    assert [r for r in readings if r.cocked] == [min(readings, key=lambda r: math.dist(r.center, (640, 330)))]


def test_dice_in_the_shadow_of_a_wall_are_found_by_their_dim_rims():
    # A lit white board with a wall's shadow over its lower third: there the rims are about a
    # quarter as bright as in the lamp's light, as on the renders' white boards.
    dice = [(300, 200, "red", 0.2), (640, 250, "green", 0.5), (400, 600, "green", 0.3), (800, 610, "yellow", 0.9)]
    image = draw_tray(BACKGROUNDS["white_board"], dice).astype(np.float32)
    image[520:] *= 0.25
    assert_reads_flat(Scanner("tossup").read(image.astype(np.uint8)), dice)


def test_a_black_level_taken_off_does_not_lose_the_dice_in_a_wall_s_shadow():
    """A calibration profile's black level (stray room light, measured on the empty tray) is
    taken off every frame; a rim in shadow, dim already, then falls far below the lamp's white.
    The white thresholds follow, so those dice are still found (and the lit ones too)."""
    dice = [(300, 200, "red", 0.2), (640, 250, "green", 0.5), (400, 600, "green", 0.3), (800, 610, "yellow", 0.9)]
    image = draw_tray(BACKGROUNDS["white_board"], dice).astype(np.float32)
    image[520:] *= 0.12  # deep shadow: there the stray light is half of what the camera sees
    stray = np.float32([30, 22, 12])  # bluish room light, B G R
    photo = np.clip(image + stray, 0, 255).astype(np.uint8)
    calibrated = Scanner("tossup", black_level=tuple(float(v) for v in stray))
    assert_reads_flat(calibrated.read(photo), dice)
