"""A small learned judge of leaning dice: a convolutional net run through OpenCV's dnn module.

Physical setup assumed: the camera looks down on the tray from 30-50 cm, tilted at most ~15
degrees, so a die lying flat shows its top face as a near square with at most thin slivers of
side faces, while a die leaning on the wall or on another die (tilted 15-35 degrees) shows a
foreshortened top face beside a large side face.

The Toss Up reader judges leaning by hand-written geometry (`tossup._leaning`) and misses about
half of the dice that lean on another die: pressed against it, the leaning die shows only a
thin sliver of side face, often in shade, and its top is foreshortened by little more than
perspective does. A leaning die rests on something, a die beside it or a wall: the net looks
a second time at each die the reader took for flat that touches another die, or that the die
finder (scanner/finder.py, which sees the whole frame at a quarter of the resolution) sees
leaning even a little, as a die against a wall (`may_lean`). It sees a square crop about the
die's top face centre (`crop_around`, three top faces across, so the side faces and a wall or
neighbour show) with where in the frame it lies (perspective shows flat dice off-centre from
the side), and says how likely the die leans. A die it is sure of is flagged
cocked, so the table asks for it to be rolled again rather than scoring a face that is not on
top. It never unflags a die the reader judged cocked.

Until it learned from the second lean set (`fixtures/leanmore`), it was trusted only where the
finder judged the die leaning too (at FinderRules.cocked); on the lean check set
(`fixtures/leancheck`, scenes nothing learns from) that cost more leaning dice than the flat
ones it spared (see LEAN_THRESHOLD).

Only Toss Up dice are judged so. On Tally dice the net alone flagged 4 of 88 flat dice of the
differently looking Tally set (the stand-in for real dice nobody here has): a flat die sent back
to be rolled again changes a fair roll, so it is not used there.

It is trained by `scanner/lean_training.py` from the project's own fixtures (dev split and the
two lean sets only) and shipped as `scanner/data/lean_net.onnx`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from scanner.finder import FinderRules, FoundDie, sigmoid
from scanner.frames import DieReading
from scanner.nets import over_bright_level, read_onnx, square_crop

log = logging.getLogger(__name__)

DEFAULT_MODEL = Path(__file__).with_name("data") / "lean_net.onnx"
#: Side of the crop the net sees, in pixels.
CROP_SIDE = 96
#: The crop reaches this many top-face sides from the die's centre each way.
CROP_REACH = 1.5
#: Scales of the position channels (offset from the frame's centre and die size, in frame widths).
POSITION_SCALES = (4.0, 4.0, 20.0)
#: A die that may lean (see may_lean) is flagged cocked from this probability on. Chosen on
#: the lean check set (never learned from: 69 leaning and 332 flat Toss Up dice found, most
#: leaning on another die): at 0.9 the net flags 49 leaning dice and 13 flat ones (at 0.85: 53
#: and 22; at 0.95: 42 and 11). Asking the die finder to agree as well flagged 34 and 9, the
#: hand-written geometry alone 28 and 6.
LEAN_THRESHOLD = 0.9
#: A die may lean on another whose centre lies closer than this many top-face sides (the larger
#: of the two dice's); two flat dice side by side are one apart, one leaning on another at most
#: about 1.02 on the fixtures (lean sets, dev split).
NEIGHBOUR_REACH = 1.2
#: A die the finder judges leaning at least this much may lean on a wall. With NEIGHBOUR_REACH,
#: on the lean check set the net looks at 54 % of the dice (on the test split 39 %) and flags as
#: many leaning dice as when it looks at every one, and no more flat ones.
FINDER_HINT = 0.05


def crop_around(image: np.ndarray, center: Sequence[float], side: float) -> np.ndarray:
    """A CROP_SIDE square BGR crop about `center`, CROP_REACH top-face sides each way; outside
    the frame is mirrored."""
    return square_crop(image, center, CROP_REACH * max(float(side), 1.0), CROP_SIDE)


def position_of(center: Sequence[float], side: float, frame_size: tuple[int, int]) -> tuple[float, float, float]:
    """Where a die lies (offset from the frame's centre) and how large it is, in frame widths."""
    width, height = frame_size
    return ((float(center[0]) - width / 2.0) / width, (float(center[1]) - height / 2.0) / width, float(side) / width)


def net_input(crops: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """N x 6 x CROP_SIDE x CROP_SIDE float32: each crop's colours over its own 99th percentile
    (the lamp's brightness drops out), then its position as three constant planes."""
    count = len(crops)
    colours = over_bright_level(crops)
    scaled = np.asarray(positions, np.float32).reshape(count, 3) * np.float32(POSITION_SCALES)
    planes = np.broadcast_to(scaled[:, :, None, None], (count, 3, CROP_SIDE, CROP_SIDE))
    return np.ascontiguousarray(np.concatenate([colours, planes], axis=1), np.float32)


def may_lean(readings: Sequence[DieReading], finder_leaning: Sequence[float]) -> list[bool]:
    """Per reading, whether its die may lean: it touches another die (NEIGHBOUR_REACH), or the
    finder's chance that it leans (`finder_leaning`, one per reading) is at least FINDER_HINT.
    A die alone in the middle of the tray rests on nothing but the floor: the net's cost is
    spared there."""
    def touching(index: int, reading: DieReading) -> bool:
        return any(math.dist(reading.center, other.center) < NEIGHBOUR_REACH * max(reading.size, other.size)
                   for j, other in enumerate(readings) if j != index)

    return [chance >= FINDER_HINT or touching(i, r) for i, (r, chance) in enumerate(zip(readings, finder_leaning, strict=True))]


def finder_leaning_at(found: Sequence[FoundDie], reading: DieReading, rules: FinderRules) -> float:
    """The finder's chance that the die of `reading` leans: that of the die it found there
    (0 where it found none)."""
    return max((die.cocked for die in found if rules.same(die, reading.center, reading.size)), default=0.0)


class LeanNet:
    """The shipped (or a given) lean net, loaded once; `chances` is safe from one thread at a time."""

    def __init__(self, model: Path = DEFAULT_MODEL, threshold: float = LEAN_THRESHOLD) -> None:
        if not Path(model).is_file():
            raise FileNotFoundError(f"lean net {model} is missing; train one with "
                                    f"`python -m scanner.lean_training --out {model}` (see its docstring)")
        self._net = read_onnx(Path(model).read_bytes())
        self.threshold = threshold

    def chances(self, image: np.ndarray, readings: Sequence[DieReading]) -> list[float]:
        """How likely each reading's die leans (0-1), in the readings' order."""
        if not readings:
            return []
        frame = (image.shape[1], image.shape[0])
        crops = np.stack([crop_around(image, r.center, r.size) for r in readings])
        positions = np.float32([position_of(r.center, r.size, frame) for r in readings])
        self._net.setInput(net_input(crops, positions))
        logits = self._net.forward().reshape(len(readings))
        return sigmoid(logits).tolist()

    def flagged(self, image: np.ndarray, readings: Sequence[DieReading], suspects: Sequence[bool]) -> list[DieReading]:
        """`readings`, each die the net is sure leans flagged cocked (none unflagged). Only the
        `suspects` (one bool per reading: it may lean, see may_lean) are looked at, and of them
        not the dice already cocked nor readings without a size."""
        asked = [i for i, (r, suspect) in enumerate(zip(readings, suspects, strict=True))
                 if suspect and not r.cocked and r.size > 0]
        chances = dict(zip(asked, self.chances(image, [readings[i] for i in asked])))
        result = list(readings)
        for index, chance in chances.items():
            if chance >= self.threshold:
                log.debug("die at %s judged leaning (%.2f)", readings[index].center, chance)
                result[index] = replace(readings[index], cocked=True)
        return result
