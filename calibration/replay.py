"""A camera stand-in that shows whichever photo it is told to: for tests, demos and the bench.

Physical setup it stands for: the camera above the tray while the user empties the tray, rolls
the dice, rolls again. `show()` is the user changing what lies in the tray; the source keeps
delivering the current picture at `fps`, as a real camera keeps delivering the same scene. It
plugs into the live table like any camera (`LIVE_SOURCE` may be a source factory).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import cv2
import numpy as np

from scanner.frames import Frame
from scanner.sources import FrameSource, SourceUnavailable


class StillSource(FrameSource):
    """Serves the photo last given to `show` over and over, like a camera over a still tray."""

    def __init__(self, first: np.ndarray | Path | str, fps: float = 20.0, name: str = "replayed photos") -> None:
        self.fps = fps
        self.name = name
        self._lock = threading.Lock()
        self._image = self._load(first)
        self._index = 0
        self.shown = 0  # how many times the picture was changed

    @staticmethod
    def _load(photo: np.ndarray | Path | str) -> np.ndarray:
        if isinstance(photo, np.ndarray):
            image = photo
        else:
            image = cv2.imread(str(photo), cv2.IMREAD_COLOR)
            if image is None:
                raise SourceUnavailable(f"cannot read photo {photo}")
        image = np.ascontiguousarray(image)
        image.setflags(write=False)  # every frame shares it: nobody may draw into it
        return image

    def show(self, photo: np.ndarray | Path | str) -> None:
        """From the next frame on, the camera sees `photo`."""
        image = self._load(photo)
        with self._lock:
            self._image = image
            self.shown += 1

    def read(self) -> Frame | None:
        time.sleep(1.0 / self.fps)
        with self._lock:
            image = self._image
        frame = Frame(image=image, index=self._index, t=self._index / self.fps)
        self._index += 1
        return frame


__all__ = ["StillSource"]
