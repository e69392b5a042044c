"""What a calibration profile knows about the table: where the tray is and how big dice look.

Physical setup assumed: the camera and tray stay where they were when the profile was made.
Dice outside the tray region are not part of a roll (Toss Up greens are set aside there), and
a die-sized prior rejects look-alikes that are far too big or too small.
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from scanner.frames import DieReading

#: Dice from this fraction of the profile's die size to its inverse are plausible.
SIZE_TOLERANCE = 0.65


def scale_to_frame(points: Sequence[Sequence[float]], profile_size: tuple[int, int] | None, shape: tuple[int, ...]) -> np.ndarray:
    """Profile coordinates in the pixels of a frame of `shape` (a profile may be made at another size)."""
    array = np.asarray(points, np.float32).reshape(-1, 2)
    if profile_size is None:
        return array
    return array * np.float32([shape[1] / profile_size[0], shape[0] / profile_size[1]])


def keep_in_tray(
    readings: Sequence[DieReading],
    tray: Sequence[Sequence[float]] | None,
    die_size: float | None,
    frame_size: tuple[int, int] | None,
    shape: tuple[int, ...],
) -> list[DieReading]:
    """The readings whose centre lies in the tray and whose size fits the profile's dice."""
    kept = list(readings)
    if tray is not None:
        polygon = scale_to_frame(tray, frame_size, shape)
        kept = [d for d in kept if cv2.pointPolygonTest(polygon, (float(d.center[0]), float(d.center[1])), False) >= 0]
    if die_size is not None:
        expected = float(scale_to_frame([[die_size, 0]], frame_size, shape)[0, 0])
        low, high = expected * SIZE_TOLERANCE, expected / SIZE_TOLERANCE
        kept = [d for d in kept if d.size == 0 or low <= d.size <= high]
    return kept

