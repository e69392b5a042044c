"""The annotated MJPEG preview: one encoder thread, any number of viewers.

The encoder takes a locked snapshot of the newest frame and readings, draws the overlay onto
its own small copy (never into the frame the scanner reads), encodes one JPEG and wakes every
viewer through a condition: ten viewers cost one encode. It runs only while someone watches,
at most `fps` times a second, and only when the picture or the readings changed.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import cv2
import numpy as np

from scanner.frames import DieReading

log = logging.getLogger(__name__)

BOUNDARY = "frame"
FACE_BGR = {"green": (60, 200, 60), "yellow": (40, 220, 240), "red": (60, 60, 235)}


@dataclass(frozen=True)
class PreviewSnapshot:
    """What the preview draws: a reference to the newest frame (never drawn into) and the latest dice."""

    seq: int
    image: np.ndarray | None  # None: no picture (camera lost or not started): draw the placeholder
    dice: tuple[DieReading, ...]
    label: str
    changed: int  # bumps whenever the readings or the label change, so a still frame is redrawn


def placeholder(text: str, width: int = 640, quality: int = 70) -> bytes:
    """A grey card saying why there is no picture."""
    height = width * 9 // 16
    image = np.full((height, width, 3), 48, np.uint8)
    cv2.rectangle(image, (8, 8), (width - 9, height - 9), (90, 90, 90), 2)
    scale = width / 640
    cv2.putText(image, "dicetray", (24, int(60 * scale)), cv2.FONT_HERSHEY_SIMPLEX, 1.2 * scale, (200, 200, 200), 2, cv2.LINE_AA)
    for number, line in enumerate(_wrap(text, 40)):
        cv2.putText(image, line, (24, int((120 + 34 * number) * scale)), cv2.FONT_HERSHEY_SIMPLEX, 0.8 * scale,
                    (230, 230, 230), 2, cv2.LINE_AA)
    return _encode(image, quality)


def annotate(image: np.ndarray, dice: Sequence[DieReading], label: str, width: int) -> np.ndarray:
    """A copy of `image` at most `width` wide with every die outlined and labelled."""
    height, full = image.shape[:2]
    scale = min(1.0, width / full)
    # resize (or copy) first: the overlay must never touch the scanner's frame.
    small = cv2.resize(image, (round(full * scale), round(height * scale)), interpolation=cv2.INTER_AREA) \
        if scale < 1.0 else image.copy()
    for die in dice:
        points = np.array([[x * scale, y * scale] for x, y in die.corners], np.int32)
        colour = (0, 140, 255) if die.cocked else FACE_BGR.get(str(die.face), (255, 255, 255))
        if len(points) >= 3:
            cv2.polylines(small, [points], True, colour, 2, cv2.LINE_AA)
        text = f"{die.face or '?'}{' cocked' if die.cocked else ''}{' ?' if die.confidence < 0.8 else ''}"
        x, y = int(die.center[0] * scale), int(die.center[1] * scale)
        cv2.putText(small, text, (x - 20, max(12, y - 22)), cv2.FONT_HERSHEY_SIMPLEX, 0.45, colour, 1, cv2.LINE_AA)
    cv2.rectangle(small, (0, 0), (small.shape[1], 24), (0, 0, 0), -1)
    cv2.putText(small, label[:80], (6, 17), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
    return small


def multipart(jpeg: bytes) -> bytes:
    """One part of a multipart/x-mixed-replace stream."""
    return (f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n").encode() + jpeg + b"\r\n"


class PreviewEncoder:
    """Publishes the latest annotated JPEG; `frames()` is one viewer's endless iterator."""

    def __init__(self, snapshot: Callable[[], PreviewSnapshot], fps: float = 10.0, width: int = 640, quality: int = 70,
                 keepalive_s: float = 5.0) -> None:
        self._snapshot = snapshot
        self.period = 1.0 / fps
        self.width = width
        self.quality = quality
        self.keepalive_s = keepalive_s
        self._cond = threading.Condition()
        self._jpeg: bytes | None = None
        self._id = 0
        self._viewers = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self.encodes = 0

    @property
    def viewers(self) -> int:
        with self._cond:
            return self._viewers

    def frames(self) -> Iterator[bytes]:
        """JPEGs for one viewer: each new one once, the last one again every `keepalive_s`."""
        with self._cond:
            if self._closed:
                return
            self._viewers += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="preview-encoder", daemon=True)
                self._thread.start()
        try:
            seen = 0
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._id != seen or self._closed, self.keepalive_s)
                    if self._closed:
                        return
                    jpeg, seen = self._jpeg, self._id
                if jpeg is not None:
                    # A repeat after a quiet spell lets the server notice a viewer that went away.
                    yield jpeg
        finally:
            with self._cond:
                self._viewers -= 1
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _run(self) -> None:
        last_key: tuple | None = None
        while True:
            with self._cond:
                if self._closed or self._viewers == 0:
                    self._thread = None  # under the lock: a new viewer starts a new encoder
                    return
            started = time.monotonic()
            try:
                snap = self._snapshot()
                key = (snap.seq, snap.changed, snap.label, snap.image is None)
                if key != last_key:
                    jpeg = self._render(snap)
                    last_key = key
                    with self._cond:
                        self._jpeg = jpeg
                        self._id += 1
                        self.encodes += 1
                        self._cond.notify_all()
            except Exception:
                log.exception("the preview could not draw a frame")
            with self._cond:
                # Sleep out the rest of the period, but wake at once on close.
                self._cond.wait_for(lambda: self._closed, max(0.0, self.period - (time.monotonic() - started)))

    def _render(self, snap: PreviewSnapshot) -> bytes:
        if snap.image is None:
            return placeholder(snap.label or "no camera", self.width, self.quality)
        return _encode(annotate(snap.image, snap.dice, snap.label, self.width), self.quality)


def _encode(image: np.ndarray, quality: int) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise OSError("JPEG encoding failed")
    return data.tobytes()


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return (lines + [line])[:6]
