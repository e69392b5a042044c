"""scanner.shade: where a frame lies in shade, and lifting it without clipping the lit dice."""

import numpy as np
import pytest

from scanner.frames import UNSURE, DieReading
from scanner.finder import FinderRules
from scanner.shade import Brightness, lifted, lifted_around, marked_unread, measure_shade, washed_out


def _floor_with_shadow(shadow: float) -> np.ndarray:
    """A 1280x720 grey floor at 200, its top quarter at `shadow` times that (a wall's shadow)."""
    image = np.full((720, 1280, 3), 200, np.uint8)
    image[:180] = round(200 * shadow)
    return image


def test_a_walls_shadow_is_measured_as_the_common_light_over_its_own():
    shade = measure_shade(_floor_with_shadow(0.25), lift=8.0)
    assert shade.size == (1280, 720)
    assert shade.at((640, 40)) == pytest.approx(4.0, rel=0.02)
    assert shade.at((640, 600)) == 1.0
    # Capped: no part of a frame is brightened more than asked.
    assert measure_shade(_floor_with_shadow(0.1), lift=3.0).at((640, 40)) == 3.0
    # Measured on the frame shrunk (as the finder's input is), asked in the frame's own pixels.
    small = measure_shade(_floor_with_shadow(0.25)[::4, ::4], lift=8.0).over((1280, 720))
    assert small.at((640, 40)) == pytest.approx(4.0, rel=0.02) and small.at((640, 600)) == 1.0


def test_a_floor_lit_alike_everywhere_has_no_shade():
    shade = measure_shade(np.full((720, 1280, 3), 90, np.uint8), lift=4.0)
    assert float(shade.gains.max()) == 1.0


def test_a_few_dice_do_not_count_as_the_floor():
    """The floor's brightness is a median over a few dice's width: a bright die on a dark floor
    is not the light there."""
    image = _floor_with_shadow(0.25)
    image[60:100, 600:640] = 255  # a white die in the shadow
    assert measure_shade(image, lift=8.0).at((620, 80)) == pytest.approx(4.0, rel=0.02)


def test_lifting_brightens_the_shade_keeps_its_hue_and_never_clips_white():
    image = _floor_with_shadow(0.25)
    image[40:60, 100:120] = (10, 40, 50)  # a dark yellow-brown die in the shadow
    image[40:60, 300:320] = 255  # a white one
    shade = measure_shade(image, lift=8.0)
    bright = lifted(image, shade)
    die = bright[50, 110].astype(float)
    # g / (1 + (g - 1) v) with g = 4 and v = 50/255: about 2.5 times brighter.
    assert die[2] == pytest.approx(50 * 4 / (1 + 3 * 50 / 255), abs=2)
    assert die[1] / die[2] == pytest.approx(40 / 50, abs=0.03) and die[0] / die[2] == pytest.approx(10 / 50, abs=0.03)
    assert (bright[50, 310] == 255).all()
    # The lit floor stays as it is.
    assert (bright[600, 600] == image[600, 600]).all()


def test_a_part_of_the_frame_is_lifted_as_the_whole_frame_is_there():
    image = _floor_with_shadow(0.3)
    shade = measure_shade(image, lift=4.0)
    whole = lifted(image, shade)
    part = lifted(image, shade, (100, 50, 400, 300))
    assert part.shape == (250, 300, 3)
    assert (part == whole[50:300, 100:400]).all()


def test_lifting_around_dice_lifts_only_near_them():
    image = _floor_with_shadow(0.3)
    shade = measure_shade(image, lift=4.0)
    bright = lifted_around(image, shade, [((300.0, 60.0), 40.0)])
    assert (bright[60, 300] > image[60, 300]).all()  # the die's place, in the shadow
    assert (bright[60, 1000] == image[60, 1000]).all()  # far off along the same shadow
    assert (lifted_around(image, shade, []) == image).all()


def test_brightness_is_a_share_of_the_frames_white():
    image = _floor_with_shadow(0.25)
    brightness = Brightness(image)
    assert brightness.white == 200
    assert brightness.of([(100, 20), (140, 20), (140, 60), (100, 60)]) == pytest.approx(0.25)
    assert brightness.of([(100, 400), (140, 400), (140, 440), (100, 440)]) == 1.0
    assert brightness.of([(5000, 5000), (5040, 5000), (5040, 5040), (5000, 5040)]) == 0.0


def _die(x: float, face: str = UNSURE, cocked: bool = False, side: float = 40.0) -> DieReading:
    h = side / 2
    corners = ((x - h, 300 - h), (x + h, 300 - h), (x + h, 300 + h), (x - h, 300 + h))
    return DieReading((x, 300.0), corners, "red", face, 0.0, cocked, side)


def test_an_unread_face_white_in_the_lamps_reflection_is_marked_glare():
    image = np.full((720, 1280, 3), 60, np.uint8)
    image[:40] = 250  # the frame's white: a pale wall
    image[280:320, 180:220] = 250  # washed out: body and print alike white
    image[280:320, 480:520] = (40, 40, 200)  # a red face...
    image[292:308, 492:508] = 250  # ...with its white print
    image[280:320, 780:820] = 250
    image[298:301, 790:810] = 90  # a print stroke through the middle: not all of it white
    image[280:320, 1080:1120] = 250
    white = Brightness(image).white
    assert washed_out(image, (200.0, 300.0), 40.0, white)
    assert not washed_out(image, (500.0, 300.0), 40.0, white)
    assert not washed_out(image, (800.0, 300.0), 40.0, white)
    assert not washed_out(image, (-100.0, 300.0), 40.0, white)  # off the frame
    dice = [_die(200), _die(500), _die(800), _die(1100, cocked=True), _die(1100, face="50")]
    marked = _marked(image, dice)
    assert [d.glare for d in marked] == [True, False, False, False, False]
    assert not any(d.shade for d in marked)  # the floor is lit alike everywhere
    assert _marked(image, dice[1:3]) == dice[1:3]
    assert marked[0].to_json()["glare"] is True


def _marked(image: np.ndarray, dice: list[DieReading]) -> list[DieReading]:
    rules = FinderRules()
    return marked_unread(image, dice, rules.shade_gain, rules.shade_dark)


def _die_at(x: float, y: float, face: str = UNSURE, side: float = 40.0) -> DieReading:
    h = side / 2
    return DieReading((x, y), ((x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h)), "green", face, 0.0,
                      False, side)


def test_an_unread_die_dark_in_a_walls_deep_shadow_is_marked_shade():
    image = _floor_with_shadow(0.25)  # the top quarter lit at a quarter of the floor's light
    image[70:110, 180:220] = 20  # a dark die in the shadow
    image[70:110, 480:520] = 150  # a die lit by a lamp's stray beam there: bright, whatever its floor
    image[380:420, 780:820] = 20  # a dark die on the lit floor: a dark die, not a shaded one
    image[70:110, 1080:1120] = 20  # one read: nothing to say about it
    dice = [_die_at(200, 90), _die_at(500, 90), _die_at(800, 400), _die_at(1100, 90, face="30")]
    marked = _marked(image, dice)
    assert [d.shade for d in marked] == [True, False, False, False]
    assert not any(d.glare for d in marked)
    assert marked[0].to_json()["shade"] is True
    # In a shadow lit at 0.6 of the light (not as deep as FinderRules.shade_gain's half) it is not.
    half = _floor_with_shadow(0.6)
    half[70:110, 180:220] = 20
    assert not _marked(half, dice[:1])[0].shade
