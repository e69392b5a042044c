"""Frame sources: replay of photos and videos, OpenCV capture, and picamera2 via a stand-in."""

from __future__ import annotations

import logging

import cv2
import numpy as np
import pytest

from scanner.sources import (
    Picamera2Source,
    PhotoFolderSource,
    SourceFailed,
    SourceUnavailable,
    VideoSource,
    open_source,
)


def _photo(value: int) -> np.ndarray:
    return np.full((48, 64, 3), value, np.uint8)


@pytest.fixture
def photo_folder(tmp_path):
    for i in range(3):
        cv2.imwrite(str(tmp_path / f"roll-{i}.png"), _photo(40 * (i + 1)))
    return tmp_path


def test_photo_folder_replays_in_name_order_with_times(photo_folder):
    frames = list(open_source(str(photo_folder), fps=4))
    assert [f.index for f in frames] == [0, 1, 2]
    assert [f.t for f in frames] == [0.0, 0.25, 0.5]
    assert [int(f.image[0, 0, 0]) for f in frames] == [40, 80, 120]


def test_photo_folder_loops_when_asked(photo_folder):
    source = PhotoFolderSource(photo_folder, fps=10, loop=True)
    values = [int(source.read().image[0, 0, 0]) for _ in range(5)]
    assert values == [40, 80, 120, 40, 80]


def test_corrupt_photo_is_skipped_with_a_message(photo_folder, caplog):
    (photo_folder / "roll-1.png").write_bytes(b"not a png")
    with caplog.at_level(logging.WARNING):
        frames = list(PhotoFolderSource(photo_folder))
    assert [int(f.image[0, 0, 0]) for f in frames] == [40, 120]
    assert "roll-1.png" in caplog.text


def test_a_folder_of_only_broken_photos_fails_clearly(tmp_path):
    (tmp_path / "a.jpg").write_bytes(b"junk")
    with pytest.raises(SourceFailed, match="no photo"):
        PhotoFolderSource(tmp_path, loop=True).read()


def test_video_file_replay(tmp_path):
    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (64, 48))
    for i in range(6):
        writer.write(_photo(30 * i))
    writer.release()
    source = open_source(str(path))
    frames = list(source)
    assert len(frames) == 6
    assert source.fps == pytest.approx(30)
    assert frames[3].t == pytest.approx(0.1)
    looped = VideoSource(str(path), loop=True)
    assert len([looped.read() for _ in range(9)]) == 9


class FakeCapture:
    def __init__(self, frames, opened=True):
        self.frames = list(frames)
        self.opened = opened
        self.released = False

    def isOpened(self):
        return self.opened

    def get(self, prop):
        return 15.0

    def read(self):
        if not self.frames:
            return False, None
        return True, self.frames.pop(0)

    def release(self):
        self.released = True


def test_usb_camera_through_opencv_and_its_loss():
    capture = FakeCapture([_photo(1), _photo(2)])
    source = VideoSource(0, capture_factory=lambda target: capture)
    with source:
        assert source.read().index == 0
        assert source.read().index == 1
        with pytest.raises(SourceFailed, match="stopped"):
            source.read()
    assert capture.released


def test_missing_usb_camera_names_the_alternatives():
    source = VideoSource(3, capture_factory=lambda target: FakeCapture([], opened=False))
    with pytest.raises(SourceUnavailable, match="picamera2.*usb:N.*folder of photos"):
        source.open()


@pytest.mark.parametrize("spec", ["usb:x", "/no/such/thing", "nothing-here.mp4"])
def test_bad_specs_are_explained(spec):
    with pytest.raises(SourceUnavailable, match="usb:N|no such"):
        open_source(spec)


class StandInPicamera2:
    """Records every call dicetray makes on picamera2.Picamera2."""

    def __init__(self, calls):
        self.calls = calls

    def create_video_configuration(self, **kwargs):
        self.calls.append(("create_video_configuration", kwargs))
        return {"config": kwargs}

    def configure(self, config):
        self.calls.append(("configure", config))

    def start(self):
        self.calls.append(("start",))

    def capture_array(self, stream):
        self.calls.append(("capture_array", stream))
        return np.zeros((720, 1280, 3), np.uint8)

    def set_controls(self, controls):
        self.calls.append(("set_controls", controls))

    def capture_metadata(self):
        return {"ExposureTime": 12000, "AnalogueGain": 2.5, "ColourGains": [1.8, 1.4], "Lux": 300}

    def stop(self):
        self.calls.append(("stop",))

    def close(self):
        self.calls.append(("close",))


class StandInModule:
    def __init__(self):
        self.calls = []

    def Picamera2(self):  # noqa: N802 - mirrors picamera2's API
        return StandInPicamera2(self.calls)


def test_picamera2_backend_configures_rgb888_and_locks_exposure():
    module = StandInModule()
    slept = []
    source = Picamera2Source(size=(1280, 720), fps=30, module_loader=lambda: module, sleep=slept.append)
    with source:
        frame = source.read()
        locked = source.lock_exposure(settle_s=1.5)
    assert frame.image.shape == (720, 1280, 3)
    names = [c[0] for c in module.calls]
    assert names[:3] == ["create_video_configuration", "configure", "start"]
    assert module.calls[0][1]["main"] == {"size": (1280, 720), "format": "RGB888"}
    assert ("set_controls", {"AeEnable": True, "AwbEnable": True}) in module.calls
    assert slept == [1.5]
    assert module.calls[-3] == (
        "set_controls",
        {"AeEnable": False, "AwbEnable": False, "ExposureTime": 12000, "AnalogueGain": 2.5, "ColourGains": (1.8, 1.4)},
    )
    assert names[-2:] == ["stop", "close"]
    assert locked["locked"] is True


def test_picamera2_missing_gives_one_clear_message():
    source = open_source("picamera2")
    with pytest.raises(SourceUnavailable, match="python3-picamera2.*usb:N"):
        source.open()


def test_replay_sources_cannot_lock_exposure(photo_folder):
    assert open_source(str(photo_folder)).lock_exposure()["locked"] is False
