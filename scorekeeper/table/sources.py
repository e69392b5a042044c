"""Frame sources the live table adds to the scanner's: the demo playlist and slideshow.

`dicetray serve --demo` replays the bundled fixture videos as if they were a camera, choosing at
each clip the dice set of the game on the table (Toss Up clips for a Toss Up game, Tally Up clips
for a Tally Up game); when no video is bundled it shows the Toss Up fixture photos as a slideshow
(each photo held long enough to settle, the setup's empty tray between rolls). Both loop for
ever in real time.
"""

from __future__ import annotations

import logging
import time
from itertools import zip_longest
from pathlib import Path
from typing import Callable, Sequence

import cv2

from scanner.frames import Frame
from scanner.sources import FrameSource, SourceFailed, SourceUnavailable, open_source

log = logging.getLogger(__name__)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NAMES = {"tossup": "Toss Up", "tallyup": "Tally Up"}


class PlaylistSource(FrameSource):
    """Several video files one after another (looping when asked), as one stream of frames.

    With `wanted` (a callable naming a dice set, or None for any), each next clip is the next
    one in turn whose name starts with that set, so the demo shows the dice of the game on the
    table; when no clip of that set exists, clips simply play in turn.
    """

    def __init__(self, paths: Sequence[Path], loop: bool = True, realtime: bool = True,
                 opener: Callable[..., FrameSource] = open_source,
                 wanted: Callable[[], str | None] | None = None) -> None:
        if not paths:
            raise SourceUnavailable("the playlist is empty")
        self.paths = [Path(p) for p in paths]
        self.loop = loop
        self.realtime = realtime
        self.name = f"playlist:{self.paths[0].parent}"
        self._opener = opener
        self._wanted = wanted
        self._current: FrameSource | None = None
        self._position = 0
        self._index = 0
        self._t_offset = 0.0
        self._last_t = 0.0

    def open(self) -> None:
        self._next()

    def _next(self) -> bool:
        if self._current is not None:
            self._current.close()
            self._current = None
        if self._position >= len(self.paths):
            if not self.loop:
                return False
            self._position = 0
        self._position = self._next_wanted(self._position)
        path = self.paths[self._position]
        self._position += 1
        self._current = self._opener(str(path), realtime=self.realtime)
        self._current.open()
        self.fps = self._current.fps
        return True

    def _next_wanted(self, start: int) -> int:
        dice_set = self._wanted() if self._wanted is not None else None
        if dice_set is None:
            return start
        order = list(range(start, len(self.paths))) + (list(range(start)) if self.loop else [])
        return next((i for i in order if self.paths[i].name.startswith(f"{dice_set}-")), start)

    def read(self) -> Frame | None:
        for _ in range(len(self.paths) + 1):
            if self._current is None and not self._next():
                return None
            assert self._current is not None
            frame = self._current.read()
            if frame is not None:
                # One continuous clock and frame count over all the clips.
                self._last_t = self._t_offset + frame.t
                out = Frame(image=frame.image, index=self._index, t=self._last_t)
                self._index += 1
                return out
            self._t_offset = self._last_t + 1.0 / float(self.fps or 30.0)
            if not self._next():
                return None
        raise SourceFailed(f"no video in {self.name} delivers frames")

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None


class SlideshowSource(FrameSource):
    """Photos shown one after another, each held for `hold_s`, at `fps` frames a second."""

    def __init__(self, paths: Sequence[Path], hold_s: float = 3.0, fps: float = 5.0, loop: bool = True,
                 realtime: bool = True) -> None:
        if not paths:
            raise SourceUnavailable("no photos for the slideshow")
        self.paths = [Path(p) for p in paths]
        self.fps = fps
        self.loop = loop
        self.realtime = realtime
        self.name = f"slideshow:{self.paths[0].parent}"
        self._per_photo = max(2, round(hold_s * fps))
        self._index = 0
        self._image = None
        self._started: float | None = None

    def read(self) -> Frame | None:
        photo, shown = divmod(self._index, self._per_photo)
        if photo >= len(self.paths):
            if not self.loop:
                return None
            photo %= len(self.paths)
        if shown == 0 or self._image is None:
            self._image = cv2.imread(str(self.paths[photo]), cv2.IMREAD_COLOR)
            if self._image is None:
                raise SourceFailed(f"cannot read {self.paths[photo]}")
        t = self._index / self.fps
        self._index += 1
        if self.realtime:
            now = time.monotonic()
            self._started = now - t if self._started is None else self._started
            delay = self._started + t - now
            if delay > 0:
                time.sleep(delay)
        return Frame(image=self._image, index=self._index - 1, t=t)


#: The dice sets whose fixture videos the demo replays.
DEMO_SETS = ("tossup", "tallyup")


def demo_videos(fixtures: Path = FIXTURES) -> list[Path]:
    """The bundled fixture videos of both games, alternating sets (tossup-v0, tallyup-v0, ...)."""
    folder = fixtures / "videos"
    if not folder.is_dir():
        return []
    per_set = [sorted(folder.glob(f"{dice_set}-*.mp4")) for dice_set in DEMO_SETS]
    return [clip for group in zip_longest(*per_set) for clip in group if clip is not None]


def demo_photos(fixtures: Path = FIXTURES) -> list[Path]:
    """Toss Up fixture photos in slideshow order: each setup's empty tray before each of its rolls."""
    folder = fixtures / "tossup"
    if not folder.is_dir():
        return []
    photos = sorted(p for p in folder.glob("*.jpg") if not p.stem.endswith("-empty"))
    ordered: list[Path] = []
    for photo in photos:
        empty = photo.with_name(photo.stem.rsplit("-", 1)[0] + "-empty.jpg")
        if empty.exists():
            ordered.append(empty)  # the dice were taken out before the next throw
        ordered.append(photo)
    return ordered


def demo_source(fixtures: Path = FIXTURES,
                wanted: Callable[[], str | None] | None = None) -> tuple[Callable[[], FrameSource], str]:
    """A factory for the demo's source and a sentence saying what it replays.

    `wanted` names the dice set of the game on the table (see `PlaylistSource`).
    Raises SourceUnavailable when the repository bundles neither videos nor photos.
    """
    videos = demo_videos(fixtures)
    if videos:
        counts = ", ".join(f"{sum(v.name.startswith(s + '-') for v in videos)} {NAMES[s]}"
                           for s in DEMO_SETS if any(v.name.startswith(s + "-") for v in videos))
        return (lambda: PlaylistSource(videos, wanted=wanted)), (
            f"replaying fixture videos ({counts}) from {videos[0].parent}, the dice of the game on the table")
    photos = demo_photos(fixtures)
    if photos:
        return (lambda: SlideshowSource(photos)), (
            f"no fixture videos in {fixtures / 'videos'} yet: showing {len(photos)} Toss Up fixture photos as a slideshow")
    raise SourceUnavailable(
        f"the demo needs fixture videos ({fixtures / 'videos'}/tossup-*.mp4) or photos ({fixtures / 'tossup'}), "
        "and none are bundled with this copy of dicetray; use --source with a camera or a video instead")


def find_camera(loader: Callable[[], object] | None = None) -> tuple[str | None, str]:
    """'picamera2' when a Raspberry Pi camera is attached, else None and why not.

    USB cameras are not guessed at: on a Pi several /dev/video* nodes are codecs, not cameras,
    so `--source usb:N` names one explicitly.
    """
    try:
        module = loader() if loader is not None else _import_picamera2()
    except ImportError:
        return None, "picamera2 is not installed"
    try:
        cameras = module.Picamera2.global_camera_info()  # type: ignore[attr-defined]
    except Exception as error:  # libcamera raises several kinds when nothing is attached
        return None, f"libcamera found no camera ({error})"
    if not cameras:
        return None, "libcamera lists no camera"
    return "picamera2", f"{len(cameras)} camera(s): " + ", ".join(str(c.get("Model", "?")) for c in cameras)


def _import_picamera2() -> object:
    import picamera2  # type: ignore[import-not-found]

    return picamera2
