"""What a calibration profile knows about the table: where the tray is and how big dice look.

Physical setup assumed: the camera and tray stay where they were when the profile was made.
Dice outside the tray region are not part of a roll (Toss Up greens are set aside there), a
die-sized prior rejects look-alikes that are far too big or too small, and a "die" where the
frame still looks just like the photographed empty tray is the tray's own pattern.
"""

from __future__ import annotations

import logging
from typing import Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading

log = logging.getLogger(__name__)

#: A die whose centre lies up to this many die sizes outside the tray still counts: the
#: floor in a wall's shadow looks like the wall on the empty tray, so the tray found there
#: can stop short of it (a set-aside die lies on the rim or beyond, further out). Dev tables,
#: calibrated as the wizard does it: recall +0.2 to +0.6 points with each look, no precision
#: lost (one table had lost 3 of 35 dice).
TRAY_SLACK = 0.5
#: Dice from this fraction of the profile's die size to its inverse are plausible.
SIZE_TOLERANCE = 0.65
#: A reading whose top face differs from the empty tray by less than this (median over the
#: face of the largest channel difference, relative to the brighter of the two) is no die. A
#: changed lamp or a moved camera makes everything differ, so nothing is dropped then. On the
#: dev tables, calibrated as the wizard does it under the three looks of `bench calibration`,
#: the tray's own pattern read as dice measures 0.03-0.10 and real dice 0.15 and up (a
#: yellow die on light wood, a green one in a wall's shadow): 0.2 had dropped two of those.
EMPTY_LOOK_DIFFERENCE = 0.12
#: Added to the brightness the difference is relative to: sensor noise in the darkest parts.
EMPTY_LOOK_FLOOR = 16.0


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
    """The readings whose centre lies in the tray (within TRAY_SLACK of the profile's die
    size, when it has one) and whose size fits the profile's dice."""
    kept = list(readings)
    expected = None if die_size is None else float(scale_to_frame([[die_size, 0]], frame_size, shape)[0, 0])
    if tray is not None:
        polygon = scale_to_frame(tray, frame_size, shape)
        slack = 0.0 if expected is None else TRAY_SLACK * expected
        kept = [d for d in kept if cv2.pointPolygonTest(polygon, (float(d.center[0]), float(d.center[1])), True) >= -slack]
    if expected is not None:
        low, high = expected * SIZE_TOLERANCE, expected / SIZE_TOLERANCE
        kept = [d for d in kept if d.size == 0 or low <= d.size <= high]
    return kept


def drop_empty_look(readings: Sequence[DieReading], image: np.ndarray, empty: np.ndarray | None) -> list[DieReading]:
    """The readings whose top face does not look as it does in the photo of the empty tray."""
    if empty is None or not readings:
        return list(readings)
    scale_x, scale_y = empty.shape[1] / image.shape[1], empty.shape[0] / image.shape[0]
    if abs(scale_x - scale_y) > 0.01 * scale_x:
        log.debug("empty tray %s and frame %s differ in shape; not compared", empty.shape, image.shape)
        return list(readings)
    kept = []
    for reading in readings:
        if reading.die not in (None, "tossup") and reading.face not in (None, UNSURE):
            # A Tally face read for sure is a print matched to that die's templates: the
            # empty tray has none, but a white Up Die on a white board looks like it elsewhere.
            kept.append(reading)
            continue
        # Only each die's own window is compared: this runs on every frame of the live table.
        corners = np.int32(np.round(reading.corners))
        x, y, w, h = cv2.boundingRect(corners)
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, image.shape[1]), min(y + h, image.shape[0])
        if x1 <= x0 or y1 <= y0:
            kept.append(reading)
            continue
        seen = image[y0:y1, x0:x1]
        before = empty[round(y0 * scale_y):max(round(y1 * scale_y), round(y0 * scale_y) + 1),
                       round(x0 * scale_x):max(round(x1 * scale_x), round(x0 * scale_x) + 1)]
        if before.shape[:2] != seen.shape[:2]:
            before = cv2.resize(before, (seen.shape[1], seen.shape[0]), interpolation=cv2.INTER_AREA)
        # Relative, so that a die in a wall's deep shadow still differs from the shadowed tray.
        difference = (cv2.absdiff(seen, before).astype(np.float32)
                      / (cv2.max(seen, before).astype(np.float32) + EMPTY_LOOK_FLOOR)).max(axis=2)
        mask = np.zeros(seen.shape[:2], np.uint8)
        cv2.fillConvexPoly(mask, corners - np.int32([x0, y0]), 255)
        inside = difference[mask > 0]
        if inside.size and float(np.median(inside)) < EMPTY_LOOK_DIFFERENCE:
            log.debug("reading at %s looks like the empty tray; dropped", reading.center)
            continue
        kept.append(reading)
    return kept
