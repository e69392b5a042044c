"""One thread owns the camera and hands the newest frame to any number of consumers.

Consumers never make the camera wait: each takes the newest frame when it is ready, and
frames it was too slow for are simply dropped. A source that fails (unplugged, driver
error, a stream that stops) is reopened with growing back-off; corrupt or black frames are
skipped and counted.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from scanner.frames import Frame
from scanner.sources import FrameSource, SourceFailed, SourceUnavailable

log = logging.getLogger(__name__)

BLACK_LEVEL = 4.0  # mean grey below this is a black frame (lens cap, failed exposure)


@dataclass(frozen=True)
class CameraStatus:
    state: str  # "starting", "live", "lost", "ended", "stopped"
    source: str
    message: str = ""
    frames: int = 0
    skipped: int = 0  # corrupt or black frames
    reconnects: int = 0
    since: float = 0.0  # monotonic time of the last state change


def frame_is_usable(image: object) -> bool:
    return (
        isinstance(image, np.ndarray)
        and image.ndim == 3
        and image.shape[2] == 3
        and image.dtype == np.uint8
        and image.size > 0
        and float(image[::8, ::8].mean()) >= BLACK_LEVEL
    )


class CameraReader:
    """Runs `source_factory()`'s source on its own thread; `wait_frame` serves the newest frame."""

    def __init__(
        self,
        source_factory: Callable[[], FrameSource],
        backoff: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factory = source_factory
        self._backoff = backoff
        self._clock = clock
        self._condition = threading.Condition()
        self._frame: Frame | None = None
        self._seq = 0
        self._status = CameraStatus("starting", "?", since=clock())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[CameraStatus], None]] = []

    # -- consumers --------------------------------------------------------------

    def wait_frame(self, after_seq: int = 0, timeout: float | None = None) -> tuple[int, Frame] | None:
        """The newest frame newer than `after_seq`, waiting up to `timeout`; None if none came."""
        with self._condition:
            ready = self._condition.wait_for(
                lambda: self._seq > after_seq or self._stop.is_set() or self._status.state == "ended", timeout
            )
            if not ready or self._seq <= after_seq or self._frame is None:
                return None
            return self._seq, self._frame

    def status(self) -> CameraStatus:
        with self._condition:
            return self._status

    def on_status(self, listener: Callable[[CameraStatus], None]) -> None:
        self._listeners.append(listener)

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> "CameraReader":
        self._thread = threading.Thread(target=self._run, name="camera-reader", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._condition:
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        self._set_status(state="stopped", message="")

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the camera thread ------------------------------------------------------

    def _set_status(self, **changes: object) -> None:
        with self._condition:
            old = self._status
            if "state" in changes and changes["state"] != old.state:
                changes["since"] = self._clock()
            self._status = replace(old, **changes)  # type: ignore[arg-type]
            status = self._status
            self._condition.notify_all()
        if "state" in changes and changes["state"] != old.state:
            log.info("camera %s: %s %s", status.source, status.state, status.message)
            for listener in self._listeners:
                listener(status)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                source = self._factory()
                self._set_status(source=source.name)
                source.open()
            except (SourceUnavailable, SourceFailed, OSError) as error:
                failures += 1
                self._lost(str(error), failures)
                continue
            try:
                failures = self._pump(source, failures)
                if failures == -1:
                    return
            except (SourceFailed, SourceUnavailable, OSError) as error:
                failures += 1
                self._lost(str(error), failures)
            finally:
                source.close()

    def _pump(self, source: FrameSource, failures: int) -> int:
        """Read until stopped or the stream ends (-1); a failure raises."""
        while not self._stop.is_set():
            frame = source.read()
            if frame is None:
                self._set_status(state="ended", message="the replay finished")
                return -1
            if not frame_is_usable(frame.image):
                with self._condition:
                    skipped = self._status.skipped + 1
                self._set_status(skipped=skipped)
                if skipped % 100 == 1:
                    log.warning("skipping a corrupt or black frame from %s (%s so far)", source.name, skipped)
                continue
            with self._condition:
                self._seq += 1
                self._frame = frame
                self._status = replace(self._status, frames=self._status.frames + 1)
                self._condition.notify_all()
            if self._status.state != "live":
                self._set_status(state="live", message="", reconnects=self._status.reconnects + (failures > 0))
            failures = 0
        return failures

    def _lost(self, message: str, failures: int) -> None:
        self._set_status(state="lost", message=message)
        delay = self._backoff[min(failures - 1, len(self._backoff) - 1)]
        log.warning("camera lost (%s); retrying in %.1f s", message, delay)
        self._stop.wait(delay)
