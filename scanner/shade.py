"""Where a frame lies in shade, and the frame with that shade lifted.

Physical setup assumed: a lamp above the tray and a camera exposed for the lit tray floor. The
tray's wall casts a shadow several dice wide along one side; on a white board the camera's
exposure, set by the bright floor, leaves a die in that shadow at a quarter of its lit
brightness or less, too dark for the colour bands learned under the lamp and for the die
finder.

The shade is measured on the tray floor itself. The frame is shrunk to cells of about half a
die, and the floor's brightness in a cell is the median over its neighbourhood of five by five
cells (dice cover a small share of the floor). A cell lit at half the frame's common light or
less is in shade. Lifting brightens each pixel by its cell's shortfall, with a tone curve that
keeps white at white: a lit die standing in a dark neighbourhood is not pushed into clipping,
and its hue stays (all three channels are scaled alike).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading
from scanner.tossup import square_around

#: Side of a shade cell in pixels of a 1280 px wide frame: about half a die.
CELL = 16
#: Cells over which the floor's brightness is the median: a few dice across.
NEIGHBOURHOOD = 5
#: The frame's common light: this percentile of the cells' floor brightness.
COMMON_LIGHT = 75.0


@dataclass(frozen=True)
class Shade:
    """Per cell, how many times brighter the frame's common light is than the floor there (at
    least 1, at most the lift it was measured with). The cells span a frame of `size` (width,
    height) pixels, whatever the resolution it was measured at."""

    gains: np.ndarray  # float32, rows x columns of cells
    size: tuple[int, int]

    def at(self, point: tuple[float, float]) -> float:
        """The gain of the cell holding `point` (x, y), in pixels of a frame of `size`."""
        rows, columns = self.gains.shape
        row = min(max(int(point[1] * rows / self.size[1]), 0), rows - 1)
        column = min(max(int(point[0] * columns / self.size[0]), 0), columns - 1)
        return float(self.gains[row, column])

    def over(self, size: tuple[int, int]) -> Shade:
        """The same shade, its cells spanning a frame of `size` (the frame at another resolution)."""
        return Shade(self.gains, size)


def brightest_channel(image: np.ndarray) -> np.ndarray:
    """Per pixel of a BGR image, its brightest channel (same dtype)."""
    blue, green, red = cv2.split(image)
    return cv2.max(cv2.max(blue, green), red)


def measure_shade(image: np.ndarray, lift: float) -> Shade:
    """The frame's shade: per cell, the common light over the floor's there, from 1 to `lift`."""
    cell = max(int(round(CELL * image.shape[1] / 1280)), 2)
    small = cv2.resize(image, (max(image.shape[1] // cell, 1), max(image.shape[0] // cell, 1)),
                       interpolation=cv2.INTER_AREA)
    value = brightest_channel(small)
    floor = cv2.medianBlur(value, NEIGHBOURHOOD) if min(value.shape) >= NEIGHBOURHOOD else value
    floor = floor.astype(np.float32)
    common = float(np.percentile(floor, COMMON_LIGHT))
    gains = np.clip(common / np.maximum(floor, 1.0), 1.0, lift).astype(np.float32)
    return Shade(gains, (image.shape[1], image.shape[0]))


def lifted(image: np.ndarray, shade: Shade, box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """`image` (the frame `shade` spans, at any resolution), or its part `box` (x0, y0, x1, y1),
    with its shade lifted: each pixel times g / (1 + (g - 1) v), g its cell's gain (smoothed
    over the cells), v its brightest channel from 0 to 1: g in the dark, 1 at white."""
    x0, y0, x1, y1 = (0, 0, image.shape[1], image.shape[0]) if box is None else box
    smooth = np.maximum(cv2.GaussianBlur(shade.gains, (0, 0), 1.5), 1.0)
    gain = cv2.resize(smooth, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_LINEAR)[y0:y1, x0:x1]
    part = image[y0:y1, x0:x1]
    value = brightest_channel(part).astype(np.float32) * (1.0 / 255.0)
    ratio = gain / (1.0 + (gain - 1.0) * value)
    return cv2.multiply(part, cv2.merge([ratio, ratio, ratio]), dtype=cv2.CV_8U)


def lifted_around(image: np.ndarray, shade: Shade, dice: Iterable[tuple[tuple[float, float], float]]) -> np.ndarray:
    """A copy of `image` with its shade lifted within one and a half die sides of each die
    (centre, side): where a reader looks for its print and rim, at a fraction of the cost of
    lifting the whole frame."""
    dice = list(dice)
    bright = image.copy()
    if not dice:
        return bright
    reach = 1.5 * max(side for _, side in dice)
    box = (max(int(min(c[0] for c, _ in dice) - reach), 0), max(int(min(c[1] for c, _ in dice) - reach), 0),
           min(int(max(c[0] for c, _ in dice) + reach) + 1, image.shape[1]),
           min(int(max(c[1] for c, _ in dice) + reach) + 1, image.shape[0]))
    bright[box[1]:box[3], box[0]:box[2]] = lifted(image, shade, box)
    return bright


class Brightness:
    """How bright a part of a frame is against the frame's white (the 99th percentile of each
    pixel's brightest channel, on every fourth pixel)."""

    def __init__(self, image: np.ndarray) -> None:
        self._image = image
        # The brightest channel of every fourth pixel only, and of a quad's box where one is
        # asked for: the same values as of the whole frame's, at a tenth of the cost.
        self.white = max(float(np.percentile(brightest_channel(np.ascontiguousarray(image[::4, ::4])), 99)), 1.0)

    def of(self, corners: Sequence[Sequence[float]]) -> float:
        """The median brightest channel inside the quad `corners`, as a share of the white (0
        for a quad with no pixel inside)."""
        points = np.round(np.float32(corners)).astype(np.int32)
        x, y, width, height = cv2.boundingRect(points)
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + width, self._image.shape[1]), min(y + height, self._image.shape[0])
        if x1 <= x0 or y1 <= y0:
            return 0.0
        value = brightest_channel(self._image[y0:y1, x0:x1])
        inside = np.zeros(value.shape, np.uint8)
        cv2.fillConvexPoly(inside, points - np.int32([x0, y0]), 255)
        if not cv2.countNonZero(inside):
            return 0.0
        return float(np.median(value[inside > 0])) / self.white


#: A die's top face lies in the lamp's reflection when at least WASHED_SHARE of its middle (a
#: square WASHED_MIDDLE of its side across) is near white, every channel at least NEAR_WHITE of
#: the frame's white (Brightness.white): a glossy face mirrors the lamp, and body and print
#: alike turn white, where the matte floor need not show any glare. Of the 75 Tally readings
#: left unread on the dev split, the teach and lean sets and the check set (fixtures/tallycheck),
#: 32 are so marked; the renderer's own record (scene.glare_fraction) puts 31 of them at least
#: half under the lamp's highlight (the other lies white but for a faint print), and of those it
#: puts at least three quarters under, none is left unmarked (at 0.95, 6 are).
WASHED_SHARE = 0.9
WASHED_MIDDLE = 0.6
NEAR_WHITE = 0.85


def washed_out(image: np.ndarray, center: tuple[float, float], side: float, white: float) -> bool:
    """Whether the top face of `side` pixels about `center` is washed out white by the lamp's
    reflection, against the frame's `white` (see WASHED_SHARE)."""
    middle = square_around(image, center, WASHED_MIDDLE * side / 2)
    if not middle.size:
        return False
    return float(np.mean(middle.min(axis=2) >= NEAR_WHITE * white)) >= WASHED_SHARE


def in_deep_shade(shade: Shade, brightness: Brightness, reading: DieReading, gain: float, dark: float) -> bool:
    """Whether `reading`'s die lies in a wall's deep shadow: its cell of `shade` lit at most
    1/`gain` of the frame's common light, and its top face darker than `dark` of the frame's
    white (a lit die beside a dark patch of tray is no die in shade)."""
    return shade.at(reading.center) >= gain and brightness.of(reading.corners) < dark


def marked_unread(image: np.ndarray, readings: Sequence[DieReading], shade_gain: float, shade_dark: float
                  ) -> list[DieReading]:
    """`readings`, each unread one lying flat (its face unsure) marked with what the player can
    do something about: `glare` where its top face is washed out (washed_out), else `shade`
    where it lies in a wall's deep shadow (in_deep_shade, at `shade_gain` and `shade_dark`,
    as the die finder's look at the shade: FinderRules). The frame's white and shade are
    measured only where there is such a die. Of the 75 Tally readings left unread on the dev
    split, the teach and lean sets and the check set, 32 are marked glare and 15 shade: 12 of
    those are dice lying dark by the tray's wall, 3 are readings of no labelled die there."""
    unread = [index for index, reading in enumerate(readings) if reading.face == UNSURE and not reading.cocked]
    if not unread:
        return list(readings)
    brightness = Brightness(image)
    shade = None
    marked = list(readings)
    for index in unread:
        reading = readings[index]
        if washed_out(image, reading.center, reading.size, brightness.white):
            marked[index] = replace(reading, glare=True)
            continue
        # Lifted no further than the gain asked for: only whether a cell reaches it matters.
        shade = shade or measure_shade(image, shade_gain)
        if in_deep_shade(shade, brightness, reading, shade_gain, shade_dark):
            marked[index] = replace(reading, shade=True)
    return marked
