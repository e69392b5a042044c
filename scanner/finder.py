"""A small learned die finder: a convolutional net run through OpenCV's dnn module.

Physical setup assumed: the camera looks down on the tray from 30-50 cm, so a die's top face is
roughly 3-5 % of the frame's width across (20-60 px at 640-1280 px width).

The net sees the frame shrunk to `INPUT_WIDTH` pixels across and answers on a grid of
`STRIDE`-pixel cells: how likely a die's top-face centre lies in each cell, where in the cell,
the face's side and turn, whether the die is cocked, and, for Toss Up dice, the colour on top.
It is trained by `scanner/finder_training.py` from the project's own fixtures (dev split and
teach set only) and shipped as `scanner/data/finder.onnx`.

The hand-written readers stay in charge; the finder adds the dice they missed (see
`complete_tossup` and `TallyReader._with_found`), and looks again at the frame with its shade
lifted for a die a wall's shadow hides (`find_in_shade`), because it has seen only renders and
a hand-written rule fails in ways that are easier to reason about on photos nobody here has.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading
from scanner.nets import read_onnx
from scanner.shade import Brightness, Shade, lifted, measure_shade
from scanner.tossup import order_clockwise

log = logging.getLogger(__name__)

#: Width of the net's input in pixels; the height follows the frame's aspect (a multiple of 8).
INPUT_WIDTH = 320
#: Input pixels per output cell.
STRIDE = 4
TOSSUP_FACES = ("green", "yellow", "red")
#: Which die it is: a Toss Up die or one of the Tally Up set.
IDENTITIES = ("tossup", "red", "orange", "yellow", "green", "blue", "purple", "up")
#: Output channels, in order.
CHANNELS = ("centre", "dx", "dy", "log_side", "cos4", "sin4", "cocked", *TOSSUP_FACES,
            *(f"is_{die}" for die in IDENTITIES))
FACE_CHANNELS = slice(7, 10)
IDENTITY_CHANNELS = slice(10, 10 + len(IDENTITIES))
DEFAULT_MODEL = Path(__file__).with_name("data") / "finder.onnx"


def input_size(width: int, height: int) -> tuple[int, int]:
    """The net's input size (width, height) for a frame of this size."""
    in_h = max(8, int(height * INPUT_WIDTH / width / 8.0 + 0.5) * 8)
    return INPUT_WIDTH, in_h


def net_input(image: np.ndarray, half: np.ndarray | None = None) -> np.ndarray:
    """A BGR frame shrunk to the net's input size (BGR, uint8).

    `half`: the frame's `tossup.half_size`, when a reader made it already (both readers find
    their dice on it): the first halving below is the same resize, and a frame need not be
    halved twice. Or the frame already at the net's input size, as made here and changed
    since (its shade lifted: `find_in_shade`).
    """
    in_w, in_h = input_size(image.shape[1], image.shape[0])
    if half is not None and half.shape[:2] == (in_h, in_w):
        return half
    small = image
    # OpenCV's area resize is a cheap box filter for whole factors but 4x slower for others
    # (720 rows to 184): halve first, the same averages to within half a grey level.
    while small.shape[1] >= 2 * in_w and small.shape[0] >= 2 * in_h:
        if small is image and half is not None:
            small = half
        else:
            small = cv2.resize(small, (small.shape[1] // 2, small.shape[0] // 2), interpolation=cv2.INTER_AREA)
    return cv2.resize(small, (in_w, in_h), interpolation=cv2.INTER_AREA)


def to_blob(image: np.ndarray, half: np.ndarray | None = None) -> np.ndarray:
    """A BGR frame as the net's input: 1x3xHxW float32, RGB order, 0-1 (`half`: as for `net_input`)."""
    return cv2.dnn.blobFromImage(net_input(image, half), scalefactor=1.0 / 255.0, swapRB=True)


@dataclass(frozen=True)
class FoundDie:
    """A die the net found, in frame pixels."""

    center: tuple[float, float]
    side: float
    angle: float  # radians, the top face's turn modulo 90 degrees
    score: float  # the centre map's peak, 0-1
    cocked: float  # probability that it rests cocked
    colours: tuple[float, float, float]  # Toss Up face probabilities (green, yellow, red)
    identities: tuple[float, ...] = ()  # probability of each die of IDENTITIES

    def chances(self, among: Collection[str] | None = None) -> dict[str, float]:
        """The probability of each die of IDENTITIES, by name; with `among`, of each of those
        dice given that it is one of them (zero each where the net gives them none)."""
        chances = dict(zip(IDENTITIES, self.identities))
        if among is None:
            return chances
        kept = {name: p for name, p in chances.items() if name in among}
        total = sum(kept.values())
        return {name: p / total for name, p in kept.items()} if total > 0 else kept

    def corners(self) -> tuple[tuple[float, float], ...]:
        """The top face's four corners, clockwise from the one nearest the top-left."""
        half = self.side / 2.0
        c, s = math.cos(self.angle), math.sin(self.angle)
        points = np.array([[cx * c - cy * s, cx * s + cy * c] for cx, cy in
                           ((-half, -half), (half, -half), (half, half), (-half, half))], np.float32)
        points += np.array(self.center, np.float32)
        return tuple((float(x), float(y)) for x, y in order_clockwise(points))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30.0, 30.0)))


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


def decode(raw: np.ndarray, frame_size: tuple[int, int], threshold: float) -> list[FoundDie]:
    """The dice in one output map (CxHxW logits and regressions), frame_size = (width, height)."""
    width, height = frame_size
    in_w, in_h = input_size(width, height)
    heat = sigmoid(raw[0])
    # A peak is a cell at least as high as its eight neighbours.
    peaks = (heat >= threshold) & (heat >= cv2.dilate(heat, np.ones((3, 3), np.uint8)))
    sx, sy = width / in_w, height / in_h
    found = []
    for gy, gx in zip(*(index.tolist() for index in np.nonzero(peaks))):  # ints, so centres are floats, not numpy's
        cell = raw[:, gy, gx]
        x_in = (gx + 0.5 + float(cell[1])) * STRIDE
        y_in = (gy + 0.5 + float(cell[2])) * STRIDE
        side_in = math.exp(min(max(float(cell[3]), -2.0), 6.0))  # np.clip's value, without its set-up per die
        angle = math.atan2(float(cell[5]), float(cell[4])) / 4.0
        colours, identities = softmax(cell[FACE_CHANNELS]), softmax(cell[IDENTITY_CHANNELS])
        found.append(FoundDie(
            center=(x_in * sx - 0.5 * (sx - 1), y_in * sy - 0.5 * (sy - 1)),
            side=side_in * (sx + sy) / 2.0, angle=angle, score=float(heat[gy, gx]),
            cocked=float(sigmoid(cell[6])), colours=tuple(float(p) for p in colours),
            identities=tuple(float(p) for p in identities),
        ))
    found.sort(key=lambda d: -d.score)
    return found


class DieFinder:
    """The finder net, loaded once; `find` is safe to call from one thread at a time."""

    def __init__(self, model: Path = DEFAULT_MODEL, threshold: float = 0.2) -> None:
        if not Path(model).exists():
            raise FileNotFoundError(f"die finder model {model} is missing; train one with "
                                    "`python -m scanner.finder_training` or reinstall dicetray")
        self.net = read_onnx(Path(model).read_bytes())
        self.threshold = threshold

    def raw(self, image: np.ndarray, half: np.ndarray | None = None) -> np.ndarray:
        """The net's output map for a BGR frame: CxHxW. `half`: as for `to_blob`."""
        self.net.setInput(to_blob(image, half))
        return self.net.forward()[0]

    def find(self, image: np.ndarray, half: np.ndarray | None = None, threshold: float | None = None) -> list[FoundDie]:
        """The dice in a BGR frame, surest first; `half`: the frame's `tossup.half_size`, if made
        already; `threshold`: the least score of a die (default: the finder's own). Those of a
        lower threshold scoring at least the finder's own are, in order, the dice it finds."""
        return decode(self.raw(image, half), (image.shape[1], image.shape[0]),
                      self.threshold if threshold is None else threshold)


@dataclass(frozen=True)
class FinderRules:
    """When a die the net found is added to the dice a hand-written reader found."""

    #: The net's centre score a die needs to be added...
    min_score: float = 0.3
    #: ...and its colour probability to be read rather than "unsure"; a die whose colour the
    #: net is unsure of needs a higher score (a second look at a die already read, its side
    #: face or its shadow, is neither clearly a die nor clearly coloured).
    min_colour: float = 0.95
    min_score_unsure: float = 0.7
    #: A Tally die it added is named when the net is this sure which die it is (and its body
    #: colour agrees).
    min_identity: float = 0.5
    #: ...or, where the body colour lies as near two dice (a die in shadow), when the net is
    #: this sure it is one of those two.
    sure_identity: float = 0.95
    #: ...or this sure, where the one it chooses is also the nearer of the two by colour: two
    #: signs that agree (a purple die on light cloth, its colour near the blue die's too).
    #: Over the dev, teach, lean and alt sets and the Tally check set, each also as the six
    #: other cameras would take it (7 x 1,723 dice), 6 dice more read right, no confident
    #: mistake more; in the calibration bench's two lamps, uncalibrated, 7 more, none wrong.
    #: (At 0.8: 9 and 10 more, but one confident mistake in the bluish lamp; at 0.7: 13.) Only
    #: for a die the colour blobs found: one only the finder found is named by its colour and
    #: print where the finder is less sure (the Tally reader's _named_by_print), which reads
    #: those dice with more to go on (the same rule there read one die more right and one less).
    nearer_identity: float = 0.9
    #: A Tally die the colour blobs found, its face unread, is read again on the square the
    #: net found for the same die (its likeliest identity, at least min_identity) if the net
    #: scores it at least reread_score and its centre lies reread_apart to reread_near sides
    #: off; the die moves there when the print reads, or when it lies move_apart sides off.
    #: Chosen on the dev split, the lean set and the alt look: recall +1.7, +0.5 and +1.1
    #: points, faces read right of all dice +2.3, +1.2 and +2.2, no confident mistake more.
    #: (reread_score was 0.5 until the net's own bar for a die, min_score, proved enough: a
    #: white Up Die whose blob is only its blown half, which the net scores below 0.5, is
    #: read on the net's square. Dev split +1 read right, lean set +1 found and read, dev
    #: under the calibration bench's warm lamp +1 found; teach, alt and dev as other cameras
    #: would take it the same; no confident mistake more.)
    reread_score: float = 0.3
    reread_apart: float = 0.05
    reread_near: float = 1.0
    move_apart: float = 0.3
    #: A Tally die the colour blobs found, its face unread, smaller than speck_size times the
    #: median size of the dice the net scores at least sizing_score, where the net found no
    #: die at all, is a square of a plaid rim or a cloth's check. Dev split, lean set and alt
    #: look: precision +0.6, 0 and +1.1 points, no die lost (0.65 to 0.85 lost none either);
    #: it took the two false dice out of a video roll on a plaid tray.
    sizing_score: float = 0.7
    speck_size: float = 0.75
    #: Whether a Tally die it found but could not name is added (as a die to tap and set).
    unnamed_tally: bool = True
    #: Whether a Tally die only it found is flagged cocked where it judges the die leaning (at
    #: `cocked`). Off: over the dev split, the lean set and the Tally check set it so flagged 2
    #: leaning dice and 12 flat ones (its chances for the two, 0.77 and 0.90, lie among the flat
    #: ones', 0.51-0.92), and a flat die sent back to be rolled again changes a fair roll. (On
    #: the colour blobs' dice it was never taken: there too it flagged more flat dice than
    #: leaning ones.)
    tally_leaning: bool = False
    #: A Tally die it found mostly blown out, with no print read, is a lamp's mirror image on
    #: the tray unless the net scores it at least this (a white Up Die under glare). Dev split
    #: and lean set: recall 95.3 -> 96.0 % and 92.0 -> 96.0 % (from 0.5 to 0.7 alike), no
    #: precision lost; 0.9 keeps most of them out. One whose own edge names it (the Tally
    #: reader's _named_by_rim: a mirror image on the tray has no rim of a die's colour) is kept
    #: however low: over the tuning sets, their lamps and cameras, and the hold set, that adds
    #: the Tally check set's yellow die blown white at 0.6 and no false die.
    blown_score: float = 0.7
    #: A Tally die it scores at least this, and is sure which die it is (sure_identity), takes
    #: the place of a die read there with another name whose face is not read, where its body
    #: colour names it so too and its print reads (the Tally reader's _displaced_unread): a
    #: patch of green felt beside a white Up Die was taken for a green die over it. Over the
    #: dev, teach, lean and alt sets and the Tally check set, each also as other cameras would
    #: take it (7 x 1,723 dice): 5 dice more read right, 4 false dice fewer, no confident
    #: mistake more (the same from 0.5 to 0.7; 0.9 found one die less).
    displace_score: float = 0.7
    #: Its face counts as cocked above this probability.
    cocked: float = 0.5
    #: It is the same die as a reading closer than this many sides; closer than touching
    #: (flat dice lie at least a side apart, centre to centre) it needs near_score, since there
    #: it is as likely a side face or the shadow of the die beside it.
    same_die: float = 0.7
    touching: float = 1.3
    #: (0.6 until the lean set, where 0.5 finds one more die and no false one; the dev split
    #: reads the same at 0.4-0.6.)
    near_score: float = 0.5
    #: ...unless it reads as a die that neither a side face nor a shadow can be: then
    #: read_near_score will do. So is a Tally die named by a colour no other die of the frame
    #: has, its face read (a side face shows its own die's colour), and a die of either game
    #: that the second look at the shade finds dark in the frame, its face read. Dice huddled
    #: in a wall's shadow touch one another and the wall, and the net, which learned mostly
    #: lit dice, scores them low there. (A Toss Up die in the light is no such die: every
    #: face has an inset, and on the test split and the lean set its side faces were added.)
    read_near_score: float = 0.3
    #: Where a reader leaves dice of the set unfound, the net looks again at the frame's shade
    #: lifted (find_in_shade; scanner.shade): cells lit at most 1/shade_gain of the
    #: common light, lifted by up to shade_lift. A die it adds there must be darker in the frame
    #: as it comes than shade_dark of the frame's white: a lit die beside a dark patch is read
    #: as it is (on the dev split the one such Tally addition, a lit die partly under another,
    #: had its print read wrong; lifting up to 6x read one more die wrong).
    shade_gain: float = 2.0
    shade_lift: float = 4.0
    shade_dark: float = 0.4
    #: A frame whose white (shade.Brightness) is below shade_dim of full scale is dim (a lamp
    #: dimmer than when the exposure was locked): there the first look leaves no trace of the
    #: shaded dice, and the net looks again at the shade whatever it saw. On the net's input,
    #: the fixtures' white lies at 187-255, under the calibration bench's half light at 117-172.
    shade_dim: float = 0.7
    #: The Tally reader takes a die the net's first look finds at least this sure (below its own
    #: bar, DieFinder.threshold) in the shade, where no die is read, as a trace worth the second
    #: look: a Tally die in a wall's deep shadow often leaves only such a faint one. Chosen on
    #: the Tally check set (fixtures/tallycheck, r00-r04), dev split and the check set's other
    #: rolls: at 0.1 the second look is taken on 43 % of the frames that have shade (on all of
    #: them: the same readings); 0.05 reads the same, at 0.15 4 dice are lost.
    shade_trace: float = 0.1
    #: A Tally die the second look at the shade finds, whose print is too dark to read there,
    #: is added unread (the player sets its face) when the net scores it at least this and is
    #: at least shade_unread_identity sure which die it is, as its body colour says: a die left
    #: out of the roll is worse than one to set by hand. Chosen on the dev split, the Tally
    #: check set's rolls r00-r04 and its other rolls, dev, lean and the check set in the
    #: calibration bench's lamps and dev as other cameras would take it: 4 dice more found and
    #: named, no false one (at 0.3 and 0.6 sure of the die, a false one in dev's deep shade; at
    #: 0.85 rather than sure_identity's 0.95, one more die, dev's green in deep shade, on dev
    #: and four of its five cameras). An unread die scores nothing until the player sets its face.
    shade_unread_score: float = 0.5
    shade_unread_identity: float = 0.85

    def admits(self, die: FoundDie, others: Sequence[tuple[tuple[float, float], float]], read: bool = False) -> bool:
        """Whether `die` is one more die beside `others` (centre, side) already found;
        `read`: if it reads as a die of the set (see read_near_score)."""
        if die.score < self.min_score:
            return False
        gaps = [_gap(die, centre, side) for centre, side in others]
        if any(gap < self.same_die for gap in gaps):
            return False
        return die.score >= (self.read_near_score if read else self.near_score) or all(gap >= self.touching for gap in gaps)

    def same(self, die: FoundDie, center: tuple[float, float], side: float) -> bool:
        """Whether `die` is the die a reader found at `center` (its top face `side` across)."""
        return _gap(die, center, side) < self.same_die


def find_in_shade(finder: DieFinder, image: np.ndarray, half: np.ndarray | None, rules: FinderRules,
                  seen: Sequence[FoundDie], read: Sequence[tuple[tuple[float, float], float]]
                  ) -> tuple[list[FoundDie], Shade | None]:
    """(the dice `finder` finds in the frame's shade lifted, in cells lit at most
    1/rules.shade_gain of the common light; the shade, over the frame), or ([], None) where no
    part of the frame is in shade. A die in a wall's shadow on a white board is too dark for
    the net in the frame as it comes. Measured and lifted on the net's input (a quarter of the
    frame's width), which `find` takes in place of the halved frame.

    Only where the net, in the frame as it comes, found (`seen`) a die in shade that none of
    the dice `read` (centre, side) is: it leaves such a trace of a shaded die it cannot read
    well enough to add, and looking again everywhere would cost every frame of part of a set
    a second pass of the net. In a dim frame (see FinderRules.shade_dim) it leaves none, and
    the net looks again anyway. (The Tally reader gives it the dice found down to
    FinderRules.shade_trace as `seen`: a fainter trace.)"""
    small = net_input(image, half)
    shade = measure_shade(small, rules.shade_lift)
    if float(shade.gains.max()) < rules.shade_gain:
        return [], None
    over = shade.over((image.shape[1], image.shape[0]))
    traced = any(over.at(die.center) >= rules.shade_gain and not any(rules.same(die, centre, side) for centre, side in read)
                 for die in seen)
    if not traced and Brightness(small).white >= rules.shade_dim * 255.0:  # not dim either
        return [], over
    found = finder.find(image, lifted(small, shade))
    return [die for die in found if over.at(die.center) >= rules.shade_gain], over


def _gap(die: FoundDie, center: tuple[float, float], side: float) -> float:
    """Centre to centre from `die` to a die at `center`, in the larger one's sides."""
    return math.dist(die.center, center) / max(die.side, side, 1.0)


def _score_at(found: Sequence[FoundDie], reading: DieReading, rules: FinderRules) -> float:
    """The net's score of the die it found where `reading` is (0 where it found none)."""
    return max((die.score for die in found if rules.same(die, reading.center, reading.size)), default=0.0)


def complete_tossup(readings: Sequence[DieReading], found: Sequence[FoundDie], rules: FinderRules = FinderRules(),
                    rim_colour: Callable[[tuple[float, float], float], tuple[str, float]] | None = None,
                    max_dice: int | None = None, read_near: bool = False) -> list[DieReading]:
    """The reader's dice plus the ones the net found that none of them is. The reader's own
    judgement of a die stands (its view model tells a leaning die better than the net).

    `rim_colour(center, side)`, when given, reads an added die's inset against its own white
    rim (`tossup.rim_colour`): it gives the face where the net is unsure of the colour but
    leans the same way, and makes the face unsure where the two disagree.

    More readings than the set has dice (`max_dice`) means the tray fooled the reader (a plaid
    whose pale stripes frame coloured squares as a rim frames an inset): then only the readings
    the net found a die at are kept. Such a plaid fools the net too, beside the tray's wall
    (lean check set, leancheck-tossup-s14: seven to eight "dice" at scores 0.28-0.66, where the
    dice it added that are dice scored 0.8 and more): when the reader's dice and the ones it adds
    are more than the set has, only as many as the set has are kept, best first by the net's
    score (a reader's die by the score of the net's die there, 0 where it found none).

    `read_near`: a die touching another needs only FinderRules.read_near_score if its face is
    read (for the dice the second look at the shade found, see FinderRules.read_near_score).
    """
    if max_dice is not None and len(readings) > max_dice:
        readings = [r for r in readings if _score_at(found, r, rules) >= rules.min_score]
    result = list(readings)
    added: list[tuple[float, DieReading]] = []
    for die in found:
        others = [(r.center, r.size) for r in result]
        if not rules.admits(die, others, read=read_near):
            continue
        must_read = read_near and not rules.admits(die, others)
        best = int(np.argmax(die.colours))
        confidence = round(min(die.score, die.colours[best]), 4)
        face = TOSSUP_FACES[best] if die.colours[best] >= rules.min_colour else UNSURE
        if rim_colour is not None:
            by_rim, rim_confidence = rim_colour(die.center, die.side)
            if by_rim != UNSURE and by_rim != TOSSUP_FACES[best]:
                face = UNSURE
            elif by_rim != UNSURE and face == UNSURE:
                face, confidence = by_rim, round(min(die.score, rim_confidence), 4)
        if face == UNSURE and (must_read or die.score < rules.min_score_unsure):
            continue
        reading = DieReading(
            center=die.center, corners=die.corners(), die="tossup", face=face, confidence=confidence,
            cocked=die.cocked >= rules.cocked, size=die.side,
        )
        result.append(reading)
        added.append((die.score, reading))
    if max_dice is not None and len(result) > max_dice:
        # The reader's own dice by the net's score there, beside its own.
        ranked = sorted([*((_score_at(found, r, rules), r) for r in readings), *added], key=lambda pair: -pair[0])
        result = [reading for _, reading in ranked[:max_dice]]
    result.sort(key=lambda d: (d.center[1], d.center[0]))
    return result
