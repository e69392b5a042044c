"""Drawn Toss Up throws as a video: the soak benchmark and the live-table tests replay them.

The drawing matches what the Toss Up reader expects (white dice with a coloured inset seen from
above, 1280x720), so a replay of these clips exercises the whole camera -> settle -> scanner ->
game path without a camera, dice or the rendered fixture videos.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

log = logging.getLogger(__name__)

SIZE = (1280, 720)  # width, height
INSET_BGR = {
    "green": (42, 98, 22), "yellow": (92, 236, 246), "red": (28, 42, 226),
    "blue": (200, 60, 40),  # no Toss Up face: the reader must call it unsure (tests of the one-tap fix)
}
FELT = (40, 38, 36)

#: (x, y, face, angle in radians) of one die's top face centre.
Die = tuple[float, float, str, float]


@dataclass(frozen=True)
class Clip:
    """A written video: where it is and, per throw, the first frame at which the dice lie still."""

    path: Path
    fps: float
    frames: int
    settled_frames: tuple[int, ...]
    faces: tuple[tuple[str, ...], ...]


def square_corners(cx: float, cy: float, side: float, angle: float) -> np.ndarray:
    half = side / 2
    c, s = math.cos(angle), math.sin(angle)
    return np.array([(cx + dx * c - dy * s, cy + dx * s + dy * c)
                     for dx, dy in ((-half, -half), (half, -half), (half, half), (-half, half))], np.float32)


def draw_tray(
    dice: Sequence[Die],
    background: tuple[int, int, int] = FELT,
    seed: int = 0,
    cast: tuple[float, float, float] = (1.0, 1.0, 1.0),
    gain: float = 1.0,
) -> np.ndarray:
    """One BGR frame of a tray with `dice` lying in it (a little sensor noise included).

    `cast` (per BGR channel) and `gain` imitate the lamp's colour and brightness.
    """
    noise = np.empty((SIZE[1], SIZE[0], 3), np.int16)
    cv2.setRNGSeed(seed)
    cv2.randn(noise, 0, 3)  # cv2's generator: ten times faster than numpy's for a whole frame
    noise += np.array(background, np.int16)
    image = np.clip(noise, 0, 255).astype(np.uint8)
    shade = tuple(int(c * 0.55) for c in background)
    for cx, cy, face, angle in dice:
        body = square_corners(cx, cy, 48, angle)
        cv2.fillConvexPoly(image, (body + np.float32([5, 6])).astype(np.int32), shade, cv2.LINE_AA)
        cv2.fillConvexPoly(image, body.astype(np.int32), (236, 236, 232), cv2.LINE_AA)
        cv2.fillConvexPoly(image, square_corners(cx, cy, 40, angle).astype(np.int32), INSET_BGR[face], cv2.LINE_AA)
    if cast != (1.0, 1.0, 1.0) or gain != 1.0:
        image = cv2.transform(image, np.diag(np.float32(cast) * np.float32(gain)))
    return cv2.GaussianBlur(image, (3, 3), 0)


def layout(faces: Sequence[str], seed: int) -> list[Die]:
    """`faces` spread on a grid with jitter, so no two dice touch and every throw lies differently."""
    rng = np.random.default_rng(seed)
    cells = [(c, r) for r in range(4) for c in range(7)]
    order = rng.permutation(len(cells))[: len(faces)]
    dice = []
    for face, cell in zip(faces, order):
        col, row = cells[int(cell)]
        x = 200 + col * 140 + float(rng.uniform(-25, 25))
        y = 150 + row * 140 + float(rng.uniform(-25, 25))
        dice.append((x, y, face, float(rng.uniform(0, math.pi / 2))))
    return dice


def write_throws(path: Path, throws: Sequence[Sequence[str]], fps: float = 30.0, empty_s: float = 0.5,
                 slide_frames: int = 10, rest_s: float = 1.2, seed: int = 0) -> Clip:
    """A clip of an empty tray, then per throw: dice slide in, lie still for `rest_s`, are taken out.

    Written as Motion-JPEG in an .avi (every OpenCV build reads and writes it).
    """
    path = Path(path)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, SIZE)
    if not writer.isOpened():
        raise OSError(f"cannot write a video to {path}")
    empty = draw_tray([], seed=seed)
    frames = 0
    settled: list[int] = []

    def put(image: np.ndarray, count: int = 1) -> None:
        nonlocal frames
        for _ in range(count):
            writer.write(image)
            frames += 1

    try:
        put(empty, max(1, round(empty_s * fps)))
        for number, faces in enumerate(throws):
            dice = layout(faces, seed * 1000 + number)
            for step in range(slide_frames):
                away = slide_frames - step
                moving = [(x - 22 * away, y + 9 * away, face, angle + 0.15 * away) for x, y, face, angle in dice]
                put(draw_tray(moving, seed=seed + step + 1))
            settled.append(frames)
            put(draw_tray(dice, seed=seed), max(2, round(rest_s * fps)))
            put(empty, max(2, round(empty_s * fps)))
    finally:
        writer.release()
    log.info("wrote %s: %s frames, %s throws", path, frames, len(throws))
    return Clip(path, fps, frames, tuple(settled), tuple(tuple(t) for t in throws))
