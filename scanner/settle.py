"""Knowing when a roll has settled: one reading per roll, none while anything moves.

Works on any frame stream. Motion is measured on a small blurred grey copy of each frame;
once nothing has moved for `settle_s`, the next few still frames are read and merged die by
die (camera noise can tip one frame's reading of a small print), a few more while a face is
still unsure (`unsure_extra_s`). A tray that was already
read and is disturbed without a new throw (a bump, dice taken away) yields `TrayChanged`,
not a roll.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading, Frame, Roll, TrayChanged

log = logging.getLogger(__name__)

MOTION_WIDTH = 160


@dataclass(frozen=True)
class SettleConfig:
    settle_s: float = 0.3
    #: A pixel of the small grey image counts as moving when it changes by more than this.
    pixel_threshold: int = 14
    #: The frame counts as still when fewer than this fraction of pixels moved.
    still_fraction: float = 0.0015
    #: A die whose centre moved less than this many top-face sizes stayed put.
    same_place: float = 0.5
    #: Still frames read per roll and merged: a die must be found in most of them, and a
    #: face read in one is kept unless another frame reads it differently.
    confirm_frames: int = 3
    #: While the merged reading leaves a die's face unsure, still frames go on being read for
    #: up to this long more (a small print that camera noise tips to unsure in three frames
    #: is often read in the next few); the roll is then reported with what they show.
    unsure_extra_s: float = 0.1


def motion_image(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[:2]
    small = cv2.resize(image, (MOTION_WIDTH, max(1, round(height * MOTION_WIDTH / width))), interpolation=cv2.INTER_AREA)
    grey = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    return cv2.GaussianBlur(grey, (5, 5), 0)


def moved_fraction(previous: np.ndarray, current: np.ndarray, threshold: int) -> float:
    return float(np.count_nonzero(cv2.absdiff(previous, current) > threshold)) / current.size


def _pairs(old: Sequence[DieReading], new: Sequence[DieReading], tolerance: float) -> list[tuple[DieReading, DieReading | None]]:
    """Each die of `old` with the die of `new` nearest its place (each used once), or None."""
    free = list(new)
    pairs: list[tuple[DieReading, DieReading | None]] = []
    for die in old:
        reach = tolerance * max(die.size, 1.0)
        best = min(free, key=lambda d: math.dist(d.center, die.center), default=None)
        if best is not None and math.dist(best.center, die.center) <= reach:
            free.remove(best)
            pairs.append((die, best))
        else:
            pairs.append((die, None))
    return pairs


def unmatched(old: Sequence[DieReading], new: Sequence[DieReading], tolerance: float) -> int:
    """How many dice of `old` have no die of `new` near their old place."""
    return sum(match is None for _, match in _pairs(old, new, tolerance))


def merge_readings(frames: Sequence[Sequence[DieReading]], tolerance: float) -> tuple[DieReading, ...]:
    """One reading per die from several frames of a still tray.

    A die counts when it is found in most frames. Its reading is the one frame's that is
    sure, when every sure reading of it agrees; readings that disagree make it unsure (a
    wrong confident reading is the worst outcome).
    """
    anchor = max(frames, key=len)
    others = [frame for frame in frames if frame is not anchor]
    merged = []
    for die in anchor:
        seen = [die] + [match for other in others for _, match in _pairs([die], other, tolerance) if match is not None]
        if 2 * len(seen) <= len(frames):
            continue
        sure = [d for d in seen if d.face != UNSURE and d.die != UNSURE]
        readings = Counter((d.die, d.face) for d in sure)
        if len(readings) == 1:
            chosen = max(sure, key=lambda d: d.confidence)
        elif readings:
            chosen = replace(die, face=UNSURE, confidence=0.0)
        else:
            chosen = die
        cocked = 2 * sum(d.cocked for d in seen) > len(seen)
        merged.append(chosen if chosen.cocked == cocked else replace(chosen, cocked=cocked))
    return tuple(merged)


class SettleWatcher:
    """Feed frames in order; get `Roll` or `TrayChanged` events back."""

    def __init__(
        self,
        read_dice: Callable[[np.ndarray], Sequence[DieReading]],
        fps: float,
        config: SettleConfig | None = None,
    ) -> None:
        self.read_dice = read_dice
        self.config = config or SettleConfig()
        self.settle_frames = max(2, math.ceil(self.config.settle_s * fps))
        self.extra_frames = max(0, math.ceil(self.config.unsure_extra_s * fps - 1e-9))
        self._previous: np.ndarray | None = None
        self._still_for = 0
        # Armed: something moved since the tray was last read (at start: read what lies there).
        self._armed = True
        self._last: tuple[DieReading, ...] = ()
        self._pending: list[tuple[DieReading, ...]] = []  # readings of this still spell

    def feed(self, frame: Frame) -> list[Roll | TrayChanged]:
        current = motion_image(frame.image)
        previous, self._previous = self._previous, current
        if previous is None or previous.shape != current.shape:
            self._still_for = 0
            return []
        if moved_fraction(previous, current, self.config.pixel_threshold) >= self.config.still_fraction:
            self._still_for = 0
            self._armed = True
            self._pending = []
            return []
        self._still_for += 1
        if not self._armed or self._still_for < self.settle_frames:
            return []
        self._pending.append(tuple(self.read_dice(frame.image)))
        confirm = max(1, self.config.confirm_frames)
        if len(self._pending) < confirm:
            return []
        merged = merge_readings(self._pending, self.config.same_place)
        if len(self._pending) < confirm + self.extra_frames and any(d.face == UNSURE for d in merged):
            return []
        self._armed = False
        self._pending = []
        return self._read(frame, merged)

    def _read(self, frame: Frame, dice: tuple[DieReading, ...]) -> list[Roll | TrayChanged]:
        if dice and all(d.die == UNSURE and d.face == UNSURE for d in dice):
            # Nothing about them is known: a square of a patterned rim that looks like a die
            # (any real roll has a die whose colour or print is read), not a roll to score.
            log.debug("frame %s: only %d unknown die-like patch(es): taken for an empty tray", frame.index, len(dice))
            dice = ()
        last, self._last = self._last, dice
        if not dice:
            log.debug("frame %s: tray settled empty", frame.index)
            return []
        if last:
            moved = unmatched(last, dice, self.config.same_place)
            # Most dice still where they were and none added: a bump or dice taken away, not a
            # throw. (More dice than before is a roll: a Tally bonus roll joins the main dice.)
            if len(dice) <= len(last) and (len(last) - moved) * 2 >= len(last):
                if moved == 0 and len(dice) == len(last) and _same_faces(last, dice):
                    return []
                return [TrayChanged(frame=frame.index, t=frame.t, moved=max(moved, len(last) - len(dice)), dice=dice)]
        return [Roll(frame=frame.index, t=frame.t, dice=dice)]


def _same_faces(old: Sequence[DieReading], new: Sequence[DieReading]) -> bool:
    return sorted((d.die or "", d.face or "") for d in old) == sorted((d.die or "", d.face or "") for d in new)
