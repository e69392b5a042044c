"""The camera thread: newest frame to many consumers, skipped bad frames, reconnecting."""

from __future__ import annotations

import threading
import time

import numpy as np

from scanner.camera import CameraReader, frame_is_usable
from scanner.frames import Frame
from scanner.sources import FrameSource, SourceFailed, SourceUnavailable


class ScriptedSource(FrameSource):
    """Serves the given images; an Exception instance in the script is raised instead."""

    def __init__(self, script, name="scripted", delay=0.002):
        self.script = list(script)
        self.name = name
        self.delay = delay
        self.closed = False
        self.index = 0

    def read(self):
        time.sleep(self.delay)
        if not self.script:
            return None
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        frame = Frame(image=item, index=self.index, t=self.index / 30)
        self.index += 1
        return frame

    def close(self):
        self.closed = True


def grey(value):
    return np.full((24, 32, 3), value, np.uint8)


def wait_until(predicate, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_black_and_corrupt_frames_are_skipped_and_counted():
    assert not frame_is_usable(grey(0))
    assert not frame_is_usable(np.zeros((0, 0, 3), np.uint8))
    assert not frame_is_usable(None)
    assert frame_is_usable(grey(90))
    source = ScriptedSource([grey(90), grey(0), np.zeros((4, 4), np.uint8), grey(100)])
    reader = CameraReader(lambda: source).start()
    assert wait_until(lambda: reader.status().state == "ended")
    status = reader.status()
    assert status.frames == 2
    assert status.skipped == 2
    reader.stop()


def test_consumers_get_the_newest_frame_and_slow_ones_drop_frames():
    source = ScriptedSource([grey(10 + i) for i in range(200)], delay=0.001)
    reader = CameraReader(lambda: source).start()
    seen = []
    seq = 0
    while True:
        got = reader.wait_frame(seq, timeout=1.0)
        if got is None:
            break
        seq, frame = got
        seen.append(frame.index)
        time.sleep(0.01)  # a slow consumer
    reader.stop()
    assert seen == sorted(seen)
    assert len(seen) < 200  # frames were dropped, not queued
    assert seen[-1] == 199


def test_lost_camera_is_reported_and_reconnects_by_itself():
    sources = iter([
        ScriptedSource([grey(50), grey(60), SourceFailed("unplugged")], name="cam"),
        SourceUnavailable("still unplugged"),
        ScriptedSource([grey(70)] * 1000, name="cam"),
    ])

    def factory():
        item = next(sources)
        if isinstance(item, Exception):
            raise item
        return item

    states = []
    reader = CameraReader(factory, backoff=(0.05, 0.1))
    reader.on_status(lambda status: states.append(status.state))
    reader.start()
    assert wait_until(lambda: states.count("live") >= 2)
    before_stop = list(states)
    reader.stop()
    assert before_stop[0] == "live"
    assert before_stop[1] == "lost"
    assert before_stop[-1] == "live"
    assert reader.status().reconnects >= 1


def test_many_consumers_share_one_camera():
    source = ScriptedSource([grey(80)] * 300, delay=0.001)
    reader = CameraReader(lambda: source).start()
    counts = []

    def consume():
        seq, n = 0, 0
        while (got := reader.wait_frame(seq, timeout=1.0)) is not None:
            seq = got[0]
            n += 1
        counts.append(n)

    threads = [threading.Thread(target=consume) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    reader.stop()
    assert len(counts) == 5 and all(n > 0 for n in counts)
