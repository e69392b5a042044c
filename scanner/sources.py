"""Frame sources: the one interface between dicetray and a camera.

Physical setup assumed: a camera looks down on the dice tray from 30-50 cm, roughly
straight down, under steady room light. Backends:

- ``picamera2``: the Raspberry Pi camera (libcamera), main stream RGB888 (BGR bytes).
- ``usb:N``: a USB camera through OpenCV; an ``rtsp://``/``http://`` URL works the same way.
- a path: a folder of photos or a video file, replayed (tests, the demo, fixtures).

`open_source` picks the backend from a spec string; a missing backend raises
`SourceUnavailable` with one readable message that names the alternatives.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Iterator

import cv2
import numpy as np

from scanner.frames import Frame

log = logging.getLogger(__name__)

PHOTO_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}
VIDEO_SUFFIXES = {".mp4", ".avi", ".mkv", ".mov", ".m4v", ".webm"}
ALTERNATIVES = "use --source picamera2 (Raspberry Pi camera), usb:N (USB camera N), a video file or stream URL, or a folder of photos"


class SourceUnavailable(RuntimeError):
    """The requested camera or file cannot be opened."""


class SourceFailed(RuntimeError):
    """An open source stopped delivering frames (unplugged, driver error, stream ended badly)."""


class FrameSource(ABC):
    """A stream of BGR frames. `read` returns None at the end of a finite stream."""

    name: str = "source"
    fps: float | None = None
    #: Whether exposure and white balance can be locked (only real cameras can).
    controllable: bool = False

    def open(self) -> None:
        """Acquire the device; called once before reading."""

    @abstractmethod
    def read(self) -> Frame | None: ...

    def close(self) -> None:
        """Release the device; safe to call twice."""

    def lock_exposure(self) -> dict[str, Any]:
        """Let auto exposure/white balance settle, then fix them. Returns what was locked."""
        return {"locked": False, "note": f"{self.name} cannot be controlled; exposure left as it is"}

    def __enter__(self) -> "FrameSource":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Frame]:
        while (frame := self.read()) is not None:
            yield frame


class PhotoFolderSource(FrameSource):
    """Replays a folder of photos in name order at `fps`, optionally looping.

    Unreadable photos are skipped with a warning and counted in `skipped`.
    """

    def __init__(self, folder: Path, fps: float = 2.0, loop: bool = False, realtime: bool = False) -> None:
        self.folder = Path(folder)
        self.fps = fps
        self.loop = loop
        self.realtime = realtime
        self.name = f"photos:{self.folder}"
        self.paths = sorted(p for p in self.folder.iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
        if not self.paths:
            raise SourceUnavailable(f"no photos in {self.folder}; {ALTERNATIVES}")
        self.skipped = 0
        self._position = 0
        self._index = 0
        self._started: float | None = None

    def read(self) -> Frame | None:
        failures_in_a_row = 0
        while True:
            if self._position >= len(self.paths):
                if not self.loop:
                    return None
                self._position = 0
            path = self.paths[self._position]
            self._position += 1
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                self.skipped += 1
                failures_in_a_row += 1
                log.warning("skipping unreadable photo %s", path)
                if failures_in_a_row >= len(self.paths):
                    raise SourceFailed(f"no photo in {self.folder} can be read")
                continue
            frame = Frame(image=image, index=self._index, t=self._index / self.fps)
            self._index += 1
            _pace(self, frame.t)
            return frame


class VideoSource(FrameSource):
    """A video file (replayed, optionally looping) or a live OpenCV capture (USB index, URL)."""

    def __init__(
        self,
        target: str | int,
        fps: float | None = None,
        loop: bool = False,
        realtime: bool = False,
        capture_factory: Callable[[str | int], Any] = cv2.VideoCapture,
    ) -> None:
        self.target = target
        self.loop = loop
        self.realtime = realtime
        self.requested_fps = fps
        self.fps = fps
        self.live = isinstance(target, int) or "://" in str(target)
        self.controllable = False
        self.name = f"usb:{target}" if isinstance(target, int) else str(target)
        self._factory = capture_factory
        self._capture: Any = None
        self._index = 0
        self._loop_offset = 0.0
        self._started: float | None = None
        self._t0: float | None = None

    def open(self) -> None:
        capture = self._factory(self.target)
        if capture is None or not capture.isOpened():
            raise SourceUnavailable(f"cannot open {self.name}; {ALTERNATIVES}")
        self._capture = capture
        native = capture.get(cv2.CAP_PROP_FPS) or 0.0
        if self.requested_fps is None:
            self.fps = native if native > 0 else 30.0

    def read(self) -> Frame | None:
        if self._capture is None:
            self.open()
        ok, image = self._capture.read()
        if not ok or image is None:
            if self.live:
                raise SourceFailed(f"{self.name} stopped delivering frames")
            if not self.loop or self._index == 0:
                return None
            self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
            ok, image = self._capture.read()
            if not ok:
                return None
        if self.live:
            now = time.monotonic()
            self._t0 = now if self._t0 is None else self._t0
            t = now - self._t0
        else:
            t = self._index / float(self.fps or 30.0)
        frame = Frame(image=image, index=self._index, t=t)
        self._index += 1
        if not self.live:
            _pace(self, t)
        return frame

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()
            self._capture = None


class Picamera2Source(FrameSource):
    """The Raspberry Pi camera through picamera2 (from the OS package python3-picamera2).

    The main stream is RGB888, whose bytes are BGR: exactly what OpenCV expects.
    """

    controllable = True

    def __init__(
        self,
        size: tuple[int, int] = (1280, 720),
        fps: float = 30.0,
        module_loader: Callable[[], Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.size = size
        self.fps = fps
        self.name = "picamera2"
        self._load = module_loader or _import_picamera2
        self._sleep = sleep
        self._camera: Any = None
        self._index = 0
        self._t0: float | None = None

    def open(self) -> None:
        module = self._load()
        try:
            camera = module.Picamera2()
        except (RuntimeError, IndexError, OSError) as error:
            raise SourceUnavailable(f"no Raspberry Pi camera found ({error}); {ALTERNATIVES}") from error
        config = camera.create_video_configuration(
            main={"size": self.size, "format": "RGB888"},
            controls={"FrameRate": self.fps},
        )
        camera.configure(config)
        camera.start()
        self._camera = camera

    def read(self) -> Frame | None:
        if self._camera is None:
            self.open()
        try:
            image = self._camera.capture_array("main")
        except Exception as error:  # the driver raises many types; all mean the camera is gone
            raise SourceFailed(f"picamera2 capture failed: {error}") from error
        now = time.monotonic()
        self._t0 = now if self._t0 is None else self._t0
        frame = Frame(image=np.ascontiguousarray(image[:, :, :3]), index=self._index, t=now - self._t0)
        self._index += 1
        return frame

    def lock_exposure(self, settle_s: float = 2.0) -> dict[str, Any]:
        """Let AE/AWB converge for `settle_s`, then fix the values they chose."""
        if self._camera is None:
            self.open()
        self._camera.set_controls({"AeEnable": True, "AwbEnable": True})
        self._sleep(settle_s)
        metadata = self._camera.capture_metadata()
        locked = {
            "ExposureTime": metadata["ExposureTime"],
            "AnalogueGain": metadata["AnalogueGain"],
            "ColourGains": tuple(metadata["ColourGains"]),
        }
        self._camera.set_controls({"AeEnable": False, "AwbEnable": False, **locked})
        log.info("locked exposure and white balance: %s", locked)
        return {"locked": True, **locked}

    def close(self) -> None:
        if self._camera is not None:
            try:
                self._camera.stop()
            finally:
                self._camera.close()
                self._camera = None


def _import_picamera2() -> Any:
    try:
        import picamera2  # type: ignore[import-not-found]
    except ImportError as error:
        raise SourceUnavailable(
            "picamera2 is not installed (on Raspberry Pi OS: sudo apt install python3-picamera2, "
            f"and make the venv with --system-site-packages); {ALTERNATIVES}"
        ) from error
    return picamera2


def _pace(source: Any, t: float) -> None:
    """Replay in real time when asked (the demo); tests read as fast as they can."""
    if not getattr(source, "realtime", False):
        return
    now = time.monotonic()
    if source._started is None:
        source._started = now - t
    delay = source._started + t - now
    if delay > 0:
        time.sleep(delay)


def open_source(spec: str, fps: float | None = None, loop: bool = False, realtime: bool = False) -> FrameSource:
    """Make the source a spec names: 'picamera2', 'usb:N', a URL, a photo folder or a video file."""
    if spec == "picamera2":
        return Picamera2Source(fps=fps or 30.0)
    if spec.startswith("usb:"):
        index = spec[4:]
        if not index.isdigit():
            raise SourceUnavailable(f"usb camera spec must be usb:N with a number N, got {spec!r}; {ALTERNATIVES}")
        return VideoSource(int(index), fps=fps)
    if "://" in spec:
        return VideoSource(spec, fps=fps)
    path = Path(spec)
    if path.is_dir():
        return PhotoFolderSource(path, fps=fps or 2.0, loop=loop, realtime=realtime)
    if path.is_file() and path.suffix.lower() in VIDEO_SUFFIXES:
        return VideoSource(str(path), fps=fps, loop=loop, realtime=realtime)
    if path.is_file() and path.suffix.lower() in PHOTO_SUFFIXES:
        raise SourceUnavailable(f"{spec} is a single photo; use `dicetray scan` for photos, or give a folder")
    raise SourceUnavailable(f"unknown source {spec!r}: no such camera, file or folder; {ALTERNATIVES}")
