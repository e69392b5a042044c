"""Values that cross the scanner's borders: frames, die readings and settled rolls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

UNSURE = "unsure"


@dataclass(frozen=True)
class Frame:
    """One camera image (BGR, uint8, HxWx3) with its position in the stream."""

    image: np.ndarray
    index: int
    t: float  # seconds since the stream started, by the source's own clock or frame rate


@dataclass(frozen=True)
class DieReading:
    """One die found in a frame: where its top face is and what it shows."""

    center: tuple[float, float]
    corners: tuple[tuple[float, float], ...]  # four top-face corners, clockwise from top-left
    die: str | None = None  # "tossup", "red" ... "purple", "up"; None when only found
    face: str | None = None  # a face label, "unsure", or None when only found
    confidence: float = 0.0
    cocked: bool = False
    size: float = 0.0  # top-face side in pixels
    #: Its face unread, the top face lies white in the lamp's reflection (scanner.shade.washed_out):
    #: the player can do something about that (move the lamp), not only tap the face in.
    glare: bool = False
    #: Its face unread, the die lies in a wall's deep shadow (scanner.shade.in_deep_shade): the
    #: player can light that side of the tray.
    shade: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "die": self.die,
            "face": self.face,
            "confidence": round(float(self.confidence), 4),
            "center": [round(float(self.center[0]), 1), round(float(self.center[1]), 1)],
            "corners": [[round(float(x), 1), round(float(y), 1)] for x, y in self.corners],
            "cocked": bool(self.cocked),
            "glare": bool(self.glare),
            "shade": bool(self.shade),
        }


@dataclass(frozen=True)
class Roll:
    """A settled tray: every die's reading, once all were still for the settle window."""

    frame: int
    t: float
    dice: tuple[DieReading, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"frame": self.frame, "t": round(self.t, 3), "dice": [d.to_json() for d in self.dice]}


@dataclass(frozen=True)
class TrayChanged:
    """The dice moved after a reading without a new roll (a bump): the reading is stale."""

    frame: int
    t: float
    moved: int  # how many dice of the last reading are no longer where they were
    dice: tuple[DieReading, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "changed": {"frame": self.frame, "t": round(self.t, 3), "moved": self.moved,
                        "dice": [d.to_json() for d in self.dice]},
        }
