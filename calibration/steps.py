"""The calibration wizard's steps as plain functions on BGR numpy images (no Flask, no camera).

Physical setup assumed: the Pi camera looks down on the dice tray from 30-50 cm; the user
follows the wizard: frames the tray, photographs it empty, lets the camera's exposure settle,
rolls the Toss Up dice once and the Tally Dice several times, confirming (or correcting) what
was read each time. Every function here takes what the wizard has gathered so far and returns a
value the page can show; the session (calibration/session.py) keeps the state.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import cv2
import numpy as np

from scanner.evaluate import Scorecard, match
from scanner.frames import DieReading
from scanner.labels import LabelledDie
from scanner.reader import Scanner, brightened, subtract_black_level
from scanner.shade import Brightness, washed_out
from scanner.tally_model import DIE_FACES
from scanner.tossup import TossUpParams, find_insets, illuminant, order_clockwise, read_colour, square_around, work_frame

log = logging.getLogger(__name__)

Point = tuple[float, float]
Quad = tuple[Point, Point, Point, Point]

#: Framing and light limits (measured on the fixture renders, whose exposure is good, and on
#: the same photos blurred and darkened until the Toss Up reader started to miss dice).
MIN_SHARPNESS = 12.0  # variance of the Laplacian on the tray at 640 px width
#: The light level is the grey of the brightest surfaces (1 % of the frame: white dice, a pale
#: floor or the table): a dark felt floor is dark in any light, a dim lamp makes everything dark.
MIN_LIGHT = 70.0
MAX_CLIPPED = 0.01  # share of blown-out pixels in the tray before glare is reported
MIN_TRAY_SHARE = 0.25  # the tray should fill at least this share of the frame
#: A die's top face should be at least this many pixels wide per 1280 px of frame width
#: (the Toss Up reader looks for insets of 10 px there; a face is ~1.2 insets).
MIN_DIE_SIZE = 26.0
#: Verdict thresholds over everything confirmed in the wizard.
READY_RECALL = 0.95
READY_FACES = 0.98
#: A confirmed die the scanner missed lies in deep shade when the brightest tenth of its square
#: is below this share of the frame's light level (`light_level`). Flat dice the scanner reads
#: on the dev split and the lean set: 2 of 846 below it; flat dice it misses there: 22 of 37,
#: nearly all in a wall's shadow (test split, for the record: 12 of 360 read, 1 of 2 missed).
DEEP_SHADE = 0.5


# -- step 1: framing --------------------------------------------------------------------------


@dataclass(frozen=True)
class Framing:
    """What the camera check sees in one frame, and what to tell the user."""

    sharpness: float
    brightness: float
    clipped: float
    tray: Quad | None
    cut_off: tuple[str, ...]
    hints: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.hints

    def to_json(self) -> dict[str, Any]:
        return {"sharpness": round(self.sharpness, 1), "brightness": round(self.brightness, 1),
                "clipped": round(self.clipped, 4), "tray": _quad_json(self.tray), "cut_off": list(self.cut_off),
                "hints": list(self.hints), "ok": self.ok}


def _quad_json(quad: Quad | None) -> list[list[float]] | None:
    return [[round(float(x), 1), round(float(y), 1)] for x, y in quad] if quad is not None else None


def _grey_at(image: np.ndarray, width: int = 640) -> tuple[np.ndarray, float]:
    scale = width / image.shape[1]
    small = cv2.resize(image, (width, max(1, round(image.shape[0] * scale))), interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(small, cv2.COLOR_BGR2GRAY), scale


def _tray_mask(shape: tuple[int, int], tray: Quad | None, scale: float) -> np.ndarray:
    mask = np.zeros(shape, np.uint8)
    if tray is None:
        mask[shape[0] // 6: shape[0] * 5 // 6, shape[1] // 6: shape[1] * 5 // 6] = 255
    else:
        cv2.fillConvexPoly(mask, np.round(np.float32(tray) * scale).astype(np.int32), 255)
    return mask


def _where(x: float, y: float, width: int, height: int) -> str:
    """'the left', 'the top right', 'the middle' of the frame."""
    col = "left" if x < width / 3 else "right" if x > 2 * width / 3 else ""
    row = "top" if y < height / 3 else "bottom" if y > 2 * height / 3 else ""
    return "the " + (" ".join(p for p in (row, col) if p) or "middle")


def glare_at(image: np.ndarray, tray: Quad | None = None) -> tuple[float, str | None]:
    """The share of blown-out pixels in the tray, and where most of them are."""
    grey, scale = _grey_at(image)
    mask = _tray_mask(grey.shape, tray, scale)
    small = cv2.resize(image, (grey.shape[1], grey.shape[0]), interpolation=cv2.INTER_AREA)
    blown = cv2.bitwise_and(cv2.inRange(small, (250, 250, 250), (255, 255, 255)), mask)
    share = cv2.countNonZero(blown) / max(cv2.countNonZero(mask), 1)
    if not share:
        return 0.0, None
    ys, xs = np.nonzero(blown)
    return share, _where(float(np.median(xs)), float(np.median(ys)), grey.shape[1], grey.shape[0])


def framing(image: np.ndarray, tray: Quad | None = None) -> Framing:
    """Focus, light and framing of one frame, with hints in the user's words.

    Without a tray the empty-tray finder is tried on the frame (it works with dice in it too,
    as long as they cover little of the floor).
    """
    height, width = image.shape[:2]
    cut: tuple[str, ...] = ()
    if tray is None:
        found = find_tray(image)
        tray, cut = (found.quad, found.cut_off) if found is not None else (None, ())
    grey, scale = _grey_at(image)
    mask = _tray_mask(grey.shape, tray, scale)
    laplacian = cv2.Laplacian(grey, cv2.CV_32F)
    inner = cv2.erode(mask, np.ones((9, 9), np.uint8))  # the tray's own edges are not focus
    sharpness = float(laplacian[inner > 0].var()) if cv2.countNonZero(inner) else float(laplacian.var())
    brightness = light_level(image)
    clipped, glare_where = glare_at(image, tray)
    hints: list[str] = []
    if tray is None:
        hints.append("no tray found: point the camera straight down at the tray, with all of it in the picture")
    for side in cut:
        hints.append(f"the tray's {side} edge is cut off: move the camera or the tray so all of it is in the picture")
    if tray is not None and cv2.contourArea(np.float32(tray)) < MIN_TRAY_SHARE * width * height:
        hints.append("the tray is small in the picture: lower the camera or move it closer")
    if sharpness < MIN_SHARPNESS:
        hints.append("the picture is blurred: turn the lens to focus on the tray floor")
    if brightness < MIN_LIGHT:
        hints.append("the light is too dim: add a lamp above the tray")
    if clipped > MAX_CLIPPED and glare_where:
        hints.append(f"glare on {glare_where}: move the lamp so its reflection is outside the tray")
    return Framing(sharpness, brightness, clipped, tray, cut, tuple(hints))


# -- step 2: the empty tray -------------------------------------------------------------------


@dataclass(frozen=True)
class TrayFit:
    """The tray region found in an empty-tray photo (corners clockwise from the top-left)."""

    quad: Quad
    cut_off: tuple[str, ...]  # sides of the tray that run off the frame
    floor_share: float  # the share of the frame the found floor covers


#: The region kept for the scanner reaches this share of the tray's size beyond the floor that
#: was found: a die against the far wall has its top face above the floor's edge.
TRAY_MARGIN = 0.05


#: 0 stands for OpenCV's own start state: the finder behaves as in a freshly started process.
TRAY_SEED = 0


def find_tray(image: np.ndarray, margin: float = TRAY_MARGIN) -> TrayFit | None:
    """The tray floor of an (empty) tray photo as a quadrilateral, or None when there is none.

    The floor is the large region around the frame's middle that looks alike (GrabCut from the
    middle as tray and the frame's border as table: any colour, pattern or shading of floor,
    walls and table), its convex hull fitted with four corners, then widened by `margin`.
    """
    height, width = image.shape[:2]
    scale = 320.0 / width
    small = cv2.resize(image, (320, max(1, round(height * scale))), interpolation=cv2.INTER_AREA)
    sh, sw = small.shape[:2]
    mask = np.full((sh, sw), cv2.GC_PR_BGD, np.uint8)
    mask[int(sh * 0.15):int(sh * 0.85), int(sw * 0.15):int(sw * 0.85)] = cv2.GC_PR_FGD
    mask[int(sh * 0.3):int(sh * 0.7), int(sw * 0.3):int(sw * 0.7)] = cv2.GC_FGD
    border = max(2, sw // 60)
    mask[:border, :] = mask[-border:, :] = cv2.GC_BGD
    mask[:, :border] = mask[:, -border:] = cv2.GC_BGD
    background, foreground = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    # GrabCut seeds its colour models with k-means from OpenCV's per-thread random generator:
    # without a fixed seed the same photo could give another tray depending on what ran before.
    cv2.setRNGSeed(TRAY_SEED)
    try:
        cv2.grabCut(small, mask, None, background, foreground, 4, cv2.GC_INIT_WITH_MASK)
    except cv2.error as error:  # a flat picture (lens cap) has no colours to model
        log.info("tray finder: %s", error)
        return None
    region = np.where((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD), 255, 0).astype(np.uint8)
    _, labels = cv2.connectedComponents(region)
    region = np.where(labels == labels[sh // 2, sw // 2], 255, 0).astype(np.uint8)
    contours = cv2.findContours(region, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)[0]
    if not contours:
        return None
    hull = cv2.convexHull(max(contours, key=cv2.contourArea))
    share = cv2.contourArea(hull) / float(sh * sw)
    if share < 0.05:
        return None
    quad = _four_corners(hull)
    centre = quad.mean(axis=0)
    quad = centre + (quad - centre) * (1.0 + 2 * margin)
    full = (quad + 0.5) / scale - 0.5
    cut = _cut_sides(full, width, height)
    full[:, 0] = np.clip(full[:, 0], 0, width - 1)
    full[:, 1] = np.clip(full[:, 1], 0, height - 1)
    ordered = order_clockwise(full.astype(np.float32))
    return TrayFit(tuple((float(x), float(y)) for x, y in ordered), cut, float(share))  # type: ignore[arg-type]


def _four_corners(hull: np.ndarray) -> np.ndarray:
    perimeter = cv2.arcLength(hull, True)
    for epsilon in np.linspace(0.01, 0.12, 23):
        approx = cv2.approxPolyDP(hull, float(epsilon) * perimeter, True)
        if len(approx) == 4:
            return approx.reshape(4, 2).astype(np.float32)
    return cv2.boxPoints(cv2.minAreaRect(hull)).astype(np.float32)


def _cut_sides(quad: np.ndarray, width: int, height: int) -> tuple[str, ...]:
    """Sides of the tray that touch the frame's edge (within 1 % of the frame)."""
    near_x, near_y = 0.01 * width, 0.01 * height
    sides = []
    if (quad[:, 0] <= near_x).sum() >= 2:
        sides.append("left")
    if (quad[:, 0] >= width - 1 - near_x).sum() >= 2:
        sides.append("right")
    if (quad[:, 1] <= near_y).sum() >= 2:
        sides.append("top")
    if (quad[:, 1] >= height - 1 - near_y).sum() >= 2:
        sides.append("bottom")
    return tuple(sides)


def grow_tray(quad: Quad, points: Iterable[Point], pad: float) -> Quad:
    """The tray widened until every point lies at least `pad` inside it.

    The empty tray shows the floor; a die resting against a wall that is in shadow shows its top
    above that wall. Each point outside moves the side nearest to it outwards, parallel.
    """
    corners = np.float32(quad).copy()
    for x, y in points:
        for _ in range(4):
            inside = cv2.pointPolygonTest(corners.reshape(-1, 1, 2), (float(x), float(y)), True)
            if inside >= pad:
                break
            centre = corners.mean(axis=0)
            sides = []
            for i in range(4):
                a, b = corners[i], corners[(i + 1) % 4]
                edge = b - a
                normal = np.float32([edge[1], -edge[0]]) / max(float(np.hypot(*edge)), 1e-6)
                if float(np.dot(normal, (a + b) / 2 - centre)) < 0:
                    normal = -normal
                # How far beyond this side the point lies (negative: on the tray's side of it).
                sides.append((float(np.dot(normal, np.float32([x, y]) - a)), i, normal))
            beyond, best, normal = max(sides, key=lambda s: s[0])
            shift = (beyond + pad) * normal
            corners[best] += shift
            corners[(best + 1) % 4] += shift
    return tuple((float(a), float(b)) for a, b in corners)  # type: ignore[return-value]


#: A black level above this is not stray light but a picture that is far too bright or foggy.
MAX_BLACK_LEVEL = 64.0
#: ...and one whose strongest channel stays under this is the shadows' own tint (light
#: bounced off a coloured tray or wall), not room light: taking it off only darkens dice in
#: shadow. Dev tables, calibrated as the wizard does it: the warm, half-light look +0.2
#: points of recall, the bluish room light +0.2 of precision, the unchanged look the same.
MIN_BLACK_LEVEL = 15.0
#: ...and one whose weakest channel is above this has no black under it: nothing in view is
#: dark enough to show the stray light alone, and the darkest parts' colour is their own (a
#: green cloth's shadows, green). Taking that off makes the dice another colour. With its
#: first roll, the Tally check set's green table (tallycheck s14) measures 26 in its own light
#: and 22 under the bench's bluish room light (10 under the warm lamp: still taken off); every
#: other table of the Tally and Toss Up fixtures at most 19 in any of the bench's lights.
MAX_GREY_LEVEL = 20.0
#: The share of a roll photo's pixels (per cent) darker than its black level: the creases where
#: dice meet the floor are dark in scenes whose tray and walls are light, but few.
ROLL_DARK_PERCENTILE = 0.05


def black_level(empty: np.ndarray, rolls: Sequence[np.ndarray] = ()) -> tuple[float, float, float]:
    """Per channel (B, G, R), the colour of the stray light in an empty-tray photo and the
    table's roll photos: the level of their darkest parts, less the same amount in every channel.

    The shadows along the walls would be near black under the lamp alone; what lifts them is
    room light (often of another colour) or lens flare. Its colour tints the dice's insets
    alike (a bluish window turns yellow insets green), and is taken off. Its grey part only
    lifts every pixel a little, which the reader's thresholds, relative to the lamp's white,
    allow for, while taking it off would darken rims in a wall's shadow below them (measured
    on the dev tables' calibration: as good or better with every look).

    A light tray with wooden walls has no black: its darkest parts are the walls' brown, and
    the level measured on it alone is too high in red. The creases under the dice of a roll
    are darker (`crease_levels`); each channel keeps the lower of the two. Under the bench's
    bluish room light, calibrated as the wizard does it on the first roll: the level found
    within 2 of the light's own on 24 of the 29 Tally dev and check set tables (on the empty
    tray alone: 17), on 10 of the 12 Toss Up dev tables (5).
    """
    return stray_light(shadow_levels(empty), *(crease_levels(roll) for roll in rolls))


def shadow_levels(empty: np.ndarray) -> np.ndarray:
    """Per channel, the level of an empty-tray photo's darkest parts: half a per cent of its
    pixels may be darker (noise)."""
    return np.percentile(empty.reshape(-1, 3)[::7], 0.5, axis=0)


def crease_levels(roll: np.ndarray) -> np.ndarray:
    """Per channel, the level of a roll photo's darkest pixels (ROLL_DARK_PERCENTILE): the
    creases where its dice meet the floor. Measured on the camera's own picture: a JPEG's
    coarser colour blurs a crease's colour into its neighbours'."""
    return np.percentile(roll.reshape(-1, 3), ROLL_DARK_PERCENTILE, axis=0)


def stray_light(*measured: Sequence[float]) -> tuple[float, float, float]:
    """black_level from the per-channel levels of a table's darkest parts (shadow_levels,
    crease_levels): each channel's lowest of them."""
    levels = np.round(np.minimum.reduce([np.float64(m) for m in measured]), 1)
    if levels.min() > MAX_GREY_LEVEL:
        return (0.0, 0.0, 0.0)
    levels = np.minimum(levels, MAX_BLACK_LEVEL)
    tint = levels - levels.min()
    if tint.max() < MIN_BLACK_LEVEL:
        return (0.0, 0.0, 0.0)
    return tuple(float(v) for v in tint)  # type: ignore[return-value]


def check_quad(corners: Any, frame_size: tuple[int, int]) -> Quad:
    """Four [x, y] corners a user dragged, checked and ordered; ValueError says what is wrong."""
    if not (isinstance(corners, (list, tuple)) and len(corners) == 4):
        raise ValueError("the tray needs exactly four corners [[x, y], ...]")
    points = []
    for index, point in enumerate(corners):
        if not (isinstance(point, (list, tuple)) and len(point) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in point)):
            raise ValueError(f"corner {index} must be [x, y] in pixels, got {point!r}")
        x, y = float(point[0]), float(point[1])
        if not (-1 <= x <= frame_size[0] and -1 <= y <= frame_size[1]):
            raise ValueError(f"corner {index} ({x:g}, {y:g}) lies outside the {frame_size[0]}x{frame_size[1]} picture")
        points.append((x, y))
    ordered = order_clockwise(np.float32(points))
    if not cv2.isContourConvex(ordered.reshape(-1, 1, 2)) or cv2.contourArea(ordered) < 0.02 * frame_size[0] * frame_size[1]:
        raise ValueError("the four corners must outline the tray (a convex shape, not a sliver)")
    return tuple((float(x), float(y)) for x, y in ordered)  # type: ignore[return-value]


# -- confirmed readings -----------------------------------------------------------------------


@dataclass(frozen=True)
class ConfirmedDie:
    """One die as the user confirmed it: where it lies and what it shows."""

    die: str
    face: str
    center: Point
    corners: tuple[Point, ...]
    read_as: str | None = None  # what the scanner had read ("die face"), None when the user added it

    @property
    def size(self) -> float:
        return self.labelled().size

    def labelled(self) -> LabelledDie:
        return LabelledDie(self.die, self.face, self.center, self.corners, False)

    def to_json(self) -> dict[str, Any]:
        return {"die": self.die, "face": self.face, "center": [round(self.center[0], 1), round(self.center[1], 1)],
                "corners": [[round(x, 1), round(y, 1)] for x, y in self.corners], "read_as": self.read_as}


def square_at(center: Point, side: float) -> tuple[Point, ...]:
    """A die's top face where the user tapped: an upright square of the typical size."""
    x, y = center
    h = side / 2
    return ((x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h))


def confirmed_from_labels(dice: Iterable[LabelledDie]) -> list[ConfirmedDie]:
    """Labelled dice (fixtures) as if a user had confirmed them: what tests and the bench feed."""
    return [ConfirmedDie(d.die, d.face, d.center, d.corners, None) for d in dice if not d.cocked]


def check_die(die: str, face: str) -> None:
    faces = ("green", "yellow", "red") if die == "tossup" else DIE_FACES.get(die)
    if faces is None:
        raise ValueError(f"unknown die {die!r}; expected tossup or one of {', '.join(DIE_FACES)}")
    if face not in faces:
        raise ValueError(f"the {die} die has no face {face!r}; it shows {', '.join(faces)}")


# -- step 4: die size and Toss Up colours ----------------------------------------------------


@dataclass(frozen=True)
class TossUpLearned:
    """What one or more confirmed Toss Up rolls taught: reader parameters and the die size."""

    params: TossUpParams
    die_size: float
    frame_size: tuple[int, int]
    chroma: dict[str, float]  # per colour: median colourfulness of the inset against its rim
    found: int  # confirmed dice the learned reader finds (in the tray, right face)
    confirmed: int
    false: int  # readings that are no confirmed die
    gains: tuple[float, float, float] | None = None  # see light_gains

    def to_json(self) -> dict[str, Any]:
        return {"die_size": round(self.die_size, 1), "frame_size": list(self.frame_size),
                "light_gains": [round(g, 3) for g in self.gains] if self.gains else None,
                "chroma": {k: round(v, 3) for k, v in self.chroma.items()}, "found": self.found,
                "confirmed": self.confirmed, "false": self.false,
                "params": {k: getattr(self.params, k) for k in SEARCHED}}


#: The reader parameters the Toss Up step adjusts, and the values it tries (base value first).
SEARCHED = ("white_value", "white_saturation", "inset_chroma", "min_chroma")
_GRID = {
    "white_value": (0.42, 0.5, 0.6),
    "white_saturation": (0.26, 0.3, 0.35),
    "inset_chroma": (0.4, 0.34, 0.28),
    "min_chroma": (0.22, 0.18),
}


#: A lamp whose white (the brightest channel of the rims) is below this grey level leaves the
#: picture dark: an exposure too short for the light. The renders' lamps measure 240-255 on
#: the first roll of every table; half of a warm lamp's light measures 170 or less.
DIM_LAMP = 215.0
#: ...and the light gains bring that white to this level, each channel by at most MAX_GAIN.
LAMP_TARGET = 250.0
MAX_GAIN = 4.0


def light_gains(images: Sequence[np.ndarray]) -> tuple[float, float, float] | None:
    """Per channel, how much to brighten a dim table's pictures (None: the light is enough).

    Measured on roll photos (the dice's white rims are the brightest surfaces in them), with
    the black level already off. A fixed camera under a dim or coloured lamp gives dark,
    tinted pictures; the white-rim balance takes the tint out of each die's colour, but the
    die finder and the rims in a wall's shadow see the picture itself.
    """
    if not images:
        return None
    lamp = np.median([illuminant(image) for image in images], axis=0)
    if float(np.max(lamp)) >= DIM_LAMP:
        return None
    gains = np.clip(LAMP_TARGET / lamp, 1.0, MAX_GAIN)
    return (round(float(gains[0]), 3), round(float(gains[1]), 3), round(float(gains[2]), 3))


def inset_chroma(image: np.ndarray, dice: Sequence[ConfirmedDie], params: TossUpParams) -> dict[str, list[float]]:
    """Per confirmed colour, how colourful each die's inset is against its own white rim."""
    image, scale = work_frame(image)
    loose = dataclasses.replace(params, white_saturation=max(params.white_saturation, 0.3))
    insets, white = find_insets(image, loose)
    found: dict[str, list[float]] = {}
    for die in dice:
        centre = ((die.center[0] - (scale - 1) / 2) / scale, (die.center[1] - (scale - 1) / 2) / scale)
        near = [i for i in insets if math.dist(i.center, centre) < 0.4 * die.size / scale]
        if not near:
            continue
        inset = min(near, key=lambda i: math.dist(i.center, centre))
        _, _, chroma = read_colour(image, white, inset, params)
        if chroma > 0:
            found.setdefault(die.face, []).append(float(chroma))
    return found


def _score(params: TossUpParams, rolls: Sequence[tuple[np.ndarray, Sequence[ConfirmedDie]]],
           tray: Quad | None, die_size: float | None, frame_size: tuple[int, int] | None,
           level: tuple[float, float, float] | None = None,
           gains: tuple[float, float, float] | None = None) -> tuple[int, int, int]:
    """(right, wrong, false) against the confirmed dice of the scanner that a profile with
    `params`, the black level `level` and the light gains `gains` gives (it takes the level
    off and moves its white thresholds with it)."""
    scanner = Scanner("tossup", tossup=params, tray=tray, die_size=die_size, frame_size=frame_size, black_level=level,
                      light_gains=gains)
    right = wrong = false = 0
    for image, dice in rolls:
        readings = scanner.read(image)
        labels = [d.labelled() for d in dice]
        pairs = match(labels, readings)
        false += len(readings) - len(pairs)
        for li, ri in pairs:
            if readings[ri].face == labels[li].face:
                right += 1
            elif readings[ri].face != "unsure":
                wrong += 1
    return right, wrong, false


def learn_tossup(rolls: Sequence[tuple[np.ndarray, Sequence[ConfirmedDie]]], tray: Quad | None = None,
                 base: TossUpParams | None = None, level: tuple[float, float, float] | None = None) -> TossUpLearned:
    """Die size and reader parameters from confirmed Toss Up rolls (photo, dice the user confirmed).

    The palest confirmed inset sets how colourful an inset must be (with a margin), then a small
    grid of white-rim thresholds is tried, nearest the defaults first; the first that finds the
    most confirmed dice with no wrong face and no extra die wins, read as the profile's scanner
    will read them (with the black level `level` taken off, then brightened by the light gains
    the rolls ask for, see `light_gains`). Raises ValueError without dice.
    """
    base = base or TossUpParams()
    dice = [d for _, ds in rolls for d in ds if d.die == "tossup"]
    if not dice:
        raise ValueError("no confirmed Toss Up dice yet: roll them and confirm what was read")
    image0 = rolls[0][0]
    frame_size = (int(image0.shape[1]), int(image0.shape[0]))
    sizes = [d.size for d in dice]
    die_size = float(np.median(sizes))
    # Only with the stray light known (step 2): brightening a picture with a room light's tint
    # still in it strengthens the tint (bench calibration's row without the black level, under
    # the bluish room light: a die read confidently wrong).
    cleaned = [(subtract_black_level(image, level), ds) for image, ds in rolls]
    gains = None if level is None else light_gains([image for image, ds in cleaned if ds])
    chroma_by_face: dict[str, list[float]] = {}
    for image, ds in cleaned:
        for face, values in inset_chroma(brightened(image, gains), ds, base).items():
            chroma_by_face.setdefault(face, []).extend(values)
    chroma = {face: float(np.median(v)) for face, v in chroma_by_face.items()}
    palest = min((min(v) for v in chroma_by_face.values()), default=base.inset_chroma / 0.8)
    # An inset a bit paler than the palest one seen must still count; never stricter than the default.
    learned_floor = float(np.clip(0.8 * palest, 0.25, base.inset_chroma))
    grid = {**_GRID, "inset_chroma": tuple(dict.fromkeys((learned_floor, *_GRID["inset_chroma"][1:])))}
    candidates = []
    for values in itertools.product(*(grid[k] for k in SEARCHED)):
        changes = dict(zip(SEARCHED, values))
        distance = sum(abs(changes[k] - getattr(base, k)) / getattr(base, k) for k in SEARCHED)
        candidates.append((distance, dataclasses.replace(base, **changes)))
    candidates.sort(key=lambda c: c[0])
    best: tuple[int, TossUpParams, tuple[int, int, int]] | None = None
    for _, params in candidates:
        right, wrong, false = _score(params, rolls, tray, die_size, frame_size, level, gains)
        value = right - 3 * wrong - 2 * false
        if best is None or value > best[0]:
            best = (value, params, (right, wrong, false))
    assert best is not None
    right, _, false = best[2]
    log.info("Toss Up calibration: %s of %s confirmed dice found, %s extra, params %s",
             right, len(dice), false, {k: getattr(best[1], k) for k in SEARCHED})
    return TossUpLearned(best[1], die_size, frame_size, chroma, right, len(dice), false, gains)


# -- step 5: Tally Dice coverage -------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """Which faces of which Tally Dice the confirmed rolls have shown, and what is still needed."""

    counts: dict[tuple[str, str], int]
    need: int

    @property
    def faces(self) -> list[tuple[str, str]]:
        return [(die, face) for die, faces in DIE_FACES.items() for face in faces]

    @property
    def missing(self) -> list[tuple[str, str, int]]:
        """(die, face, how many more) for every face seen fewer than `need` times."""
        return [(d, f, self.need - self.counts.get((d, f), 0)) for d, f in self.faces if self.counts.get((d, f), 0) < self.need]

    @property
    def progress(self) -> float:
        total = len(self.faces) * self.need
        return sum(min(self.counts.get(k, 0), self.need) for k in self.faces) / total

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_json(self) -> dict[str, Any]:
        return {
            "need": self.need, "progress": round(self.progress, 4), "complete": self.complete,
            "dice": {die: {face: self.counts.get((die, face), 0) for face in faces} for die, faces in DIE_FACES.items()},
            "missing": [{"die": d, "face": f, "more": n} for d, f, n in self.missing],
        }


def tally_coverage(rolls: Iterable[Sequence[ConfirmedDie]], need: int = 3) -> Coverage:
    counts: Counter = Counter()
    for dice in rolls:
        for die in dice:
            if die.die in DIE_FACES:
                counts[(die.die, die.face)] += 1
    return Coverage(dict(counts), need)


# -- step 6: the check ------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """The final check: accuracy per dice set over everything confirmed, confusion matrices and a verdict."""

    summary: dict[str, dict[str, float | int]]  # dice set -> figures (scanner.evaluate.Scorecard.summary)
    confusion: dict[str, dict[str, dict[str, int]]]  # dice set -> true face -> read face -> count
    problems: tuple[str, ...]  # what to fix; empty = ready
    light: float = float("nan")  # grey level of the brightest surfaces, median over the rolls

    @property
    def ready(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        return "ready" if self.ready else "not ready: " + "; ".join(self.problems)

    def to_json(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, float):
                return None if math.isnan(value) else round(value, 4)
            return value

        return {"ready": self.ready, "verdict": self.verdict, "problems": list(self.problems),
                "light": clean(self.light),
                "summary": {name: {k: clean(v) for k, v in figures.items()} for name, figures in self.summary.items()},
                "confusion": self.confusion}


SET_NAMES = {"tossup": "Toss Up", "tallyup": "Tally"}


def check(rolls: Sequence[tuple[np.ndarray, Sequence[ConfirmedDie]]],
          read: Callable[[np.ndarray, str], Sequence[DieReading]], tray: Quad | None,
          die_size: float | None, frame_size: tuple[int, int] | None, coverage: Coverage | None = None,
          empty: np.ndarray | None = None) -> CheckResult:
    """Read every confirmed roll again with the calibrated scanner (`read(image, dice_set)`) and
    say whether the table is ready, or what to fix, in the user's words."""
    cards: dict[str, Scorecard] = {}
    brightness: list[float] = []
    shaded: list[str] = []  # where the missed dice in deep shade lay
    washed: list[str] = []  # where the dice not read right in the lamp's reflection lay
    for index, (image, dice) in enumerate(rolls):
        dice_set = "tossup" if all(d.die == "tossup" for d in dice) else "tallyup"
        card = cards.setdefault(dice_set, Scorecard())
        labels, readings = [d.labelled() for d in dice], read(image, dice_set)
        card.add(f"roll {index + 1}", labels, readings)
        brightness.append(light_level(image))
        lost_in_shade, lost_in_glare = _where_lost(image, labels, readings, brightness[-1])
        shaded.extend(lost_in_shade)
        washed.extend(lost_in_glare)
    problems: list[str] = []
    if not rolls:
        problems.append("nothing confirmed yet: roll the dice in steps 4 and 5")
    light = float(np.median(brightness)) if brightness else float("nan")
    if brightness and light < MIN_LIGHT:
        problems.append(f"light too dim (the brightest surfaces at {light:.0f} of 255): add a lamp above the tray")
    glare_image = empty if empty is not None else rolls[0][0] if rolls else None
    if glare_image is not None:
        share, where = glare_at(glare_image, tray)
        if share > MAX_CLIPPED and where:
            problems.append(f"glare on {where} of the tray: move the lamp so its reflection is outside the tray")
    if die_size is not None and frame_size is not None and die_size * 1280.0 / frame_size[0] < MIN_DIE_SIZE:
        problems.append(f"dice too small in the frame ({die_size:.0f} px): lower the camera or zoom in")
    summary: dict[str, dict[str, float | int]] = {}
    confusion: dict[str, dict[str, dict[str, int]]] = {}
    for dice_set, card in cards.items():
        figures = card.summary()
        summary[dice_set] = figures
        table: dict[str, dict[str, int]] = {}
        for (truth, got), count in sorted(card.confusion.items()):
            table.setdefault(truth, {})[got] = count
        confusion[dice_set] = table
        name = SET_NAMES[dice_set]
        recall, faces = figures["detection_recall"], figures["face_accuracy"]
        if isinstance(recall, float) and not math.isnan(recall) and recall < READY_RECALL:
            problems.append(f"the scanner missed {card.labelled - card.matched} of {card.labelled} {name} dice: "
                            "check the light and the focus, then roll again")
        if isinstance(faces, float) and not math.isnan(faces) and faces < READY_FACES:
            problems.append(f"{name} faces read right only {faces:.0%} of the time: confirm a few more rolls")
    if shaded:
        problems.append(f"{len(shaded)} of the missed dice lay in deep shadow ({_places(shaded)}): light the tray "
                        "from above, so that its walls cast no deep shadow")
    if washed:
        problems.append(f"{len(washed)} of the dice not read right lay in the lamp's reflection, their faces washed "
                        f"out white ({_places(washed)}): move the lamp off to one side of the tray, or soften it "
                        "with a shade, so that the dice do not mirror it")
    if coverage is not None and not coverage.complete:
        problems.append(f"{len(coverage.missing)} Tally faces not seen often enough yet: roll the Tally Dice again")
    return CheckResult(summary, confusion, tuple(problems), light)


def _where_lost(image: np.ndarray, labels: Sequence[LabelledDie], readings: Sequence[DieReading],
                light: float) -> tuple[list[str], list[str]]:
    """Where (`_where`) the flat dice of `labels` lay that `readings` did not read right, and why
    it can be seen: (those missed in deep shade (DEEP_SHADE, against the frame's `light_level`),
    those missed, unsure or wrong whose top face the lamp's reflection washed out
    (scanner.shade.washed_out)).

    Of the flat dice the Tally reader did not read right on the dev split, the teach and lean
    sets and the check set (fixtures/tallycheck), 33 of 76 are washed out so (29 of the 44 whose
    die it named but whose face it left unsure); of those it read right, 18 of 1492 (a print that
    still shows)."""
    pairs = dict(match(labels, readings))
    white = functools.cache(lambda: Brightness(image).white)
    height, width = image.shape[:2]
    shaded: list[str] = []
    washed: list[str] = []
    for index, die in enumerate(labels):
        reading = readings[pairs[index]] if index in pairs else None
        if die.cocked or reading is not None and (reading.die, reading.face) == (die.die, die.face):
            continue
        square = square_around(image, die.center, 0.6 * die.size)
        if reading is None and square.size and float(np.percentile(square.max(axis=2), 90)) < DEEP_SHADE * light:
            shaded.append(_where(*die.center, width, height))
        if washed_out(image, die.center, die.size, white()):
            washed.append(_where(*die.center, width, height))
    return shaded, washed


def _places(places: Sequence[str]) -> str:
    """'2 at the left, 1 at the middle': how many of something lay where, most first."""
    return ", ".join(f"{count} at {place}" for place, count in Counter(places).most_common())


def light_level(image: np.ndarray) -> float:
    """The grey level (0-255) of the brightest 1 % of the frame."""
    grey, _ = _grey_at(image, 320)
    return float(np.percentile(grey, 99))


def readings_json(readings: Sequence[DieReading]) -> list[dict[str, Any]]:
    return [{**d.to_json(), "size": round(float(d.size), 1)} for d in readings]


__all__ = [
    "CheckResult", "ConfirmedDie", "Coverage", "Framing", "TossUpLearned", "TrayFit", "black_level", "check", "check_die",
    "check_quad", "confirmed_from_labels", "find_tray", "framing", "glare_at", "grow_tray", "inset_chroma", "learn_tossup",
    "light_level",
    "readings_json", "square_at", "tally_coverage",
]
