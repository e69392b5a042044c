"""Settle detection on synthetic streams: one reading per roll, bumps reported as changes."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading, Frame, Roll, TrayChanged
from scanner.settle import SettleWatcher, merge_readings

FPS = 30
SIZE = 40


def find_white_squares(image: np.ndarray) -> list[DieReading]:
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    count, _, stats, centroids = cv2.connectedComponentsWithStats((grey > 200).astype(np.uint8))
    dice = []
    for label in range(1, count):
        x, y, w, h, area = stats[label]
        if area > 200 and w < 3 * SIZE:
            corners = ((x, y), (x + w, y), (x + w, y + h), (x, y + h))
            dice.append(DieReading(center=tuple(centroids[label]), corners=corners, size=float(w)))
    return dice


def scene(positions, hand=None) -> np.ndarray:
    image = np.full((360, 480, 3), 40, np.uint8)
    noise = np.random.default_rng(len(positions)).integers(0, 6, image.shape, dtype=np.uint8)
    image += noise
    for x, y in positions:
        cv2.rectangle(image, (int(x), int(y)), (int(x) + SIZE, int(y) + SIZE), (235, 235, 235), -1)
    if hand is not None:
        cv2.circle(image, hand, 70, (120, 150, 200), -1)
    return image


class Stream:
    def __init__(self) -> None:
        self.frames: list[np.ndarray] = []

    def hold(self, positions, seconds, hand=None):
        self.frames += [scene(positions, hand)] * round(seconds * FPS)

    def throw(self, start, end, seconds=0.6):
        steps = round(seconds * FPS)
        for k in range(steps):
            a = k / steps
            self.frames.append(scene([(sx + (ex - sx) * a, sy + (ey - sy) * a) for (sx, sy), (ex, ey) in zip(start, end)]))

    def run(self):
        watcher = SettleWatcher(find_white_squares, fps=FPS)
        events = []
        for index, image in enumerate(self.frames):
            events += watcher.feed(Frame(image=image, index=index, t=index / FPS))
        return events


REST = [(100, 100), (250, 120), (180, 240)]


def test_one_reading_per_roll_only_after_the_dice_are_still():
    stream = Stream()
    stream.hold([], 0.5)
    stream.throw([(0, 0), (20, 0), (40, 0)], REST)
    settled = len(stream.frames)
    stream.hold(REST, 2.0)
    events = stream.run()
    assert len(events) == 1
    roll = events[0]
    assert isinstance(roll, Roll)
    assert len(roll.dice) == 3
    assert settled <= roll.frame <= settled + 0.5 * FPS


def test_nothing_while_dice_keep_moving():
    stream = Stream()
    stream.throw([(0, 0)] * 3, REST, seconds=2.0)
    assert stream.run() == []


def test_a_bump_is_a_change_not_a_new_roll():
    stream = Stream()
    stream.throw([(0, 0)] * 3, REST)
    stream.hold(REST, 1.0)
    bumped = [REST[0], REST[1], (230, 280)]
    stream.throw(REST, bumped, seconds=0.15)
    stream.hold(bumped, 1.0)
    events = stream.run()
    assert [type(e) for e in events] == [Roll, TrayChanged]
    assert events[1].moved == 1


def test_a_hand_taking_the_dice_away_gives_no_reading_and_the_next_throw_does():
    stream = Stream()
    stream.throw([(0, 0)] * 3, REST)
    stream.hold(REST, 1.0)
    for x in range(0, 300, 20):
        stream.frames.append(scene(REST, hand=(x, 200)))
    stream.hold([], 1.0)
    second = [(300, 60), (60, 250), (350, 250)]
    stream.throw([(0, 0)] * 3, second)
    stream.hold(second, 1.0)
    events = stream.run()
    assert [type(e) for e in events] == [Roll, Roll]
    assert sorted(d.center[0] > 250 for d in events[1].dice) == [False, True, True]


def test_a_still_stream_from_the_start_is_read_once():
    stream = Stream()
    stream.hold(REST, 3.0)
    events = stream.run()
    assert len(events) == 1 and isinstance(events[0], Roll)


def test_a_tally_bonus_roll_beside_resting_dice_is_a_roll():
    stream = Stream()
    stream.throw([(0, 0)] * 3, REST)
    stream.hold(REST, 1.0)
    bonus = REST + [(350, 60)]
    stream.frames += [scene(REST + [(350 - 10 * k, 60 + 5 * k)]) for k in range(10, 0, -1)]
    stream.hold(bonus, 1.0)
    events = stream.run()
    assert [type(e) for e in events] == [Roll, Roll]
    assert len(events[1].dice) == 4


def test_a_settled_tray_of_only_unknown_patches_is_no_roll():
    """A square of a patterned rim can look die-like to the Tally reader, with neither colour
    nor print of any die: a tray holding only such patches is empty, while a roll with one
    known die among unknown ones is a roll."""
    def unknown_except_left(image: np.ndarray) -> list[DieReading]:
        return [replace(d, die="purple" if d.center[0] < 80 else UNSURE, face="20" if d.center[0] < 80 else UNSURE)
                for d in find_white_squares(image)]

    def watch(stream: Stream) -> list:
        watcher = SettleWatcher(unknown_except_left, fps=FPS)
        return [e for index, image in enumerate(stream.frames)
                for e in watcher.feed(Frame(image=image, index=index, t=index / FPS))]

    patches = Stream()
    patches.throw([(0, 0)] * 2, [(250, 120), (180, 240)])
    patches.hold([(250, 120), (180, 240)], 1.0)
    assert watch(patches) == []
    roll = Stream()
    roll.throw([(0, 0)] * 3, [(40, 60), (250, 120), (180, 240)])
    roll.hold([(40, 60), (250, 120), (180, 240)], 1.0)
    events = watch(roll)
    assert [type(e) for e in events] == [Roll] and len(events[0].dice) == 3


def _die(x: float, face: str, die: str = "purple", cocked: bool = False, confidence: float = 0.8) -> DieReading:
    return DieReading(center=(x, 100.0), corners=((x - 15, 85), (x + 15, 85), (x + 15, 115), (x - 15, 115)),
                      die=die, face=face, confidence=confidence, cocked=cocked, size=30.0)


def test_merged_frames_keep_a_face_read_in_one_and_unsure_in_another():
    frames = [(_die(100, "unsure"), _die(200, "star", "red")), (_die(101, "20"), _die(200, "star", "red")),
              (_die(100, "20", confidence=0.9), _die(199, "star", "red"))]
    merged = merge_readings(frames, 0.5)
    assert sorted((d.die, d.face) for d in merged) == [("purple", "20"), ("red", "star")]
    assert max(d.confidence for d in merged if d.die == "purple") == 0.9


def test_merged_frames_that_read_a_die_differently_give_unsure():
    frames = [(_die(100, "20"),), (_die(100, "star"),), (_die(100, "20"),)]
    (merged,) = merge_readings(frames, 0.5)
    assert (merged.die, merged.face, merged.confidence) == ("purple", UNSURE, 0.0)
    frames = [(_die(100, "20"),), (_die(100, "20", die="blue"),), (_die(100, "20"),)]
    assert merge_readings(frames, 0.5)[0].face == UNSURE


def test_a_die_found_in_only_one_of_three_frames_is_left_out_and_cocked_is_the_majority():
    frames = [(_die(100, "20", cocked=True), _die(300, "star")), (_die(100, "20", cocked=True),), (_die(100, "20"),)]
    (merged,) = merge_readings(frames, 0.5)
    assert merged.center[0] == 100 and merged.cocked


def test_a_reading_that_flickers_between_frames_is_read_from_several():
    """Camera noise tips one frame's reading of a small print: the roll is read from three
    still frames, and a face read in one of them wins over "unsure" in the others."""
    stream = Stream()
    stream.throw([(0, 0)] * 3, REST)
    stream.hold(REST, 2.0)
    calls = []

    def flickering(image):
        calls.append(1)
        dice = find_white_squares(image)
        # Every other read leaves the first die unsure; the others read it as "20".
        return [replace(d, die="purple", face="unsure" if i == 0 and len(calls) % 2 else "20") for i, d in enumerate(dice)]

    watcher = SettleWatcher(flickering, fps=FPS)
    events = [e for index, image in enumerate(stream.frames) for e in watcher.feed(Frame(image=image, index=index, t=index / FPS))]
    assert len(events) == 1 and len(calls) == 3
    assert [d.face for d in events[0].dice] == ["20"] * 3


def test_a_die_left_unsure_is_looked_at_a_little_longer_before_the_roll_is_reported():
    """A small print that camera noise tips to unsure in the first three still frames is read
    in the next ones: still frames go on being read for up to unsure_extra_s (0.1 s: three
    frames at 30 fps) while a face is unsure; a roll read in three is reported at once."""
    stream = Stream()
    stream.throw([(0, 0)] * 3, REST)
    stream.hold(REST, 2.0)

    def reads_from(first_read: int):
        calls: list[int] = []

        def read(image):
            calls.append(1)
            return [replace(d, die="purple", face="20" if i or len(calls) >= first_read else UNSURE)
                    for i, d in enumerate(find_white_squares(image))]
        return read, calls

    def watch(first_read: int) -> tuple[list, int]:
        read, calls = reads_from(first_read)
        watcher = SettleWatcher(read, fps=FPS)
        events = [e for index, image in enumerate(stream.frames) for e in watcher.feed(Frame(image=image, index=index, t=index / FPS))]
        return events, len(calls)

    sure, asked = watch(1)
    assert [d.face for d in sure[0].dice] == ["20"] * 3 and asked == 3
    later, asked = watch(5)  # read in the fifth still frame
    assert len(later) == 1 and [d.face for d in later[0].dice] == ["20"] * 3 and asked == 5
    assert later[0].frame == sure[0].frame + 2
    never, asked = watch(100)  # unsure in every frame: reported after three more, once
    assert len(never) == 1 and sorted(d.face for d in never[0].dice) == ["20", "20", UNSURE] and asked == 6
    assert never[0].frame == sure[0].frame + 3
