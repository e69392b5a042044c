"""Where a frame lies in shade, and the frame with that shade lifted.

Physical setup assumed: a lamp above the tray and a camera exposed for the lit tray floor. The
tray's wall casts a shadow several dice wide along one side; on a white board the camera's
exposure, set by the bright floor, leaves a die in that shadow at a quarter of its lit
brightness or less, too dark for the colour bands learned under the lamp.

The shade is measured on the tray floor itself: the frame shrunk to cells a few dice apart
would be dominated by the dice, so the brightness of each cell is the median over its
neighbourhood of five by five cells (dice cover a small share of the floor). A cell lit at half the frame's common
light or less is in shade. Lifting brightens each pixel by its cell's shortfall, with a tone
curve that keeps white at white: a lit die standing in a dark neighbourhood is not pushed into
clipping, and its hue stays (all three channels are scaled alike).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

#: Side of a shade cell in pixels of a 1280 px wide frame: about half a die.
CELL = 16
#: Cells over which the floor's brightness is the median: five cells, a few dice across.
NEIGHBOURHOOD = 5
#: The frame's common light: this percentile of the cells' floor brightness.
COMMON_LIGHT = 75.0


@dataclass(frozen=True)
class Shade:
    """Per cell of `cell` pixels, how many times brighter the common light is than the floor
    there (at least 1, at most the `lift` it was measured with)."""

    gains: np.ndarray  # float32, rows x columns of cells
    cell: int

    def at(self, point: tuple[float, float]) -> float:
        """The gain of the cell holding `point` (x, y), in frame pixels."""
        row = min(max(int(point[1] // self.cell), 0), self.gains.shape[0] - 1)
        column = min(max(int(point[0] // self.cell), 0), self.gains.shape[1] - 1)
        return float(self.gains[row, column])

    def region(self, least: float, margin: float, shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
        """(x0, y0, x1, y1): the frame pixels around every cell of gain `least` or more,
        `margin` pixels wider on each side (cut by the frame); None when no cell is."""
        rows, columns = np.nonzero(self.gains >= least)
        if not len(rows):
            return None
        x0 = max(int(columns.min() * self.cell - margin), 0)
        y0 = max(int(rows.min() * self.cell - margin), 0)
        x1 = min(int((columns.max() + 1) * self.cell + margin), shape[1])
        y1 = min(int((rows.max() + 1) * self.cell + margin), shape[0])
        return x0, y0, x1, y1


def measure_shade(image: np.ndarray, lift: float) -> Shade:
    """The frame's shade: per cell, the common light over the floor's there, from 1 to `lift`."""
    cell = max(int(round(CELL * image.shape[1] / 1280)), 4)
    small = cv2.resize(image, (max(image.shape[1] // cell, 1), max(image.shape[0] // cell, 1)),
                       interpolation=cv2.INTER_AREA)
    value = small.max(axis=2)
    floor = cv2.medianBlur(value, NEIGHBOURHOOD).astype(np.float32) if min(value.shape) >= NEIGHBOURHOOD \
        else value.astype(np.float32)
    common = float(np.percentile(floor, COMMON_LIGHT))
    return Shade(np.clip(common / np.maximum(floor, 1.0), 1.0, lift).astype(np.float32), cell)


def lifted(image: np.ndarray, shade: Shade, box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """`image` (or its part `box`, x0, y0, x1, y1) with its shade lifted: each pixel times g / (1 +
    (g - 1) v), g its cell's gain (smoothed over the cells), v its brightest channel from 0 to 1,
    which is g in the dark and 1 at white."""
    x0, y0, x1, y1 = (0, 0, image.shape[1], image.shape[0]) if box is None else box
    smooth = cv2.GaussianBlur(shade.gains, (0, 0), 1.5)
    full = cv2.resize(np.maximum(smooth, 1.0), (smooth.shape[1] * shade.cell, smooth.shape[0] * shade.cell),
                      interpolation=cv2.INTER_LINEAR)
    part = image[y0:y1, x0:x1]
    gain = np.ones(part.shape[:2], np.float32)
    known = full[y0:y1, x0:x1]  # the cells may stop a few pixels short of the frame's edge
    gain[:known.shape[0], :known.shape[1]] = known
    blue, green, red = cv2.split(part)
    value = cv2.max(cv2.max(blue, green), red).astype(np.float32) * (1.0 / 255.0)
    ratio = gain / (1.0 + (gain - 1.0) * value)
    return cv2.multiply(part, cv2.merge([ratio, ratio, ratio]), dtype=cv2.CV_8U)
