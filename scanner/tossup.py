"""Finding Toss Up dice and reading their colours.

Physical setup assumed: white dice with a large glossy coloured inset on every face, seen
from above (camera 30-50 cm high, tilted at most ~15 degrees) under any white-ish lamp.

Every inset is surrounded by the die's white rim, so an inset is a *hole* in the mask of
white pixels, whatever the tray looks like (green felt around a green inset, a white board
around a white die): holes are found with the contour tree, never by colour alone. The rim
is also each die's own white reference, which makes the colour reading independent of the
lamp's colour and brightness. A die in the shadow of a tray wall keeps a rim that is only white
against that shadow; a second, dimmer mask finds it where the first found nothing.

Cocked dice (leaning on the wall or on another die) are told from flat ones by what perspective
allows: a flat die shows its side faces toward the nadir, the more the farther it lies from it,
and a view model fitted to the frame's own flat dice says how much; a second face that is too
large or in the wrong direction means the die leans. A die propped on a neighbour's edge sits
closer to it than two flat dice can, with its top squashed toward it.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TossUpParams:
    """Tunable numbers of the Toss Up reader; a calibration profile may override them."""

    #: A pixel is white when its value is above this fraction of the bright reference level...
    white_value: float = 0.42
    #: ...and its saturation (0-1) is below this.
    white_saturation: float = 0.26
    #: In the shadow of a tray wall a rim can fall to a third of that; insets framed only by
    #: such a dim rim are looked for in a second pass, where the first found nothing. (0.15
    #: until rims in deep shade on the dev split measured 0.14: 0.11-0.14 read the dev split
    #: the same and took 3 of 5 false dice off a lean photo's patterned tray.)
    dim_white_value: float = 0.12
    #: Top-face side divided by the inset's side (median over the dev split's labels).
    face_per_inset: float = 1.21
    #: Smallest inset side in pixels at 1280 px width that we look for.
    min_inset: float = 10.0
    #: A top-face inset is at least this square (minor/major side).
    top_aspect: float = 0.62
    #: Hue bands (degrees of the rim-normalised colour) and the margin that makes "unsure".
    red_below: float = 28.0
    red_above: float = 330.0
    yellow_band: tuple[float, float] = (38.0, 80.0)
    green_band: tuple[float, float] = (95.0, 190.0)
    min_chroma: float = 0.22
    #: Candidates less colourful than this against their rim are shadows or gaps, not insets
    #: (the palest real inset, a yellow in warm light, measures about 0.5 on the dev split).
    inset_chroma: float = 0.4
    #: A Toss Up set has 10 dice; more candidates than this means a patterned tray.
    max_dice: int = 10
    #: Below this confidence a face is reported as "unsure" rather than guessed.
    min_confidence: float = 0.6
    #: No longer used (cocked dice are judged by the view model below); kept so that saved
    #: calibration profiles, which list every parameter, still load.
    cocked_side_ratio: float = 0.55
    #: Two insets closer than this many die sides belong to one die (adjacent faces of a cube
    #: are at most 0.71 sides apart, two flat dice at least 1).
    same_die: float = 0.8
    #: A die's second face counts when its inset is at least this share of a typical top's
    #: (twice that for the faces of a die whose top inset was not found).
    min_face_share: float = 0.12
    #: A single face away from every top is a die when at least this square (a side seen
    #: edge-on is thinner); its confidence is scaled by lone_confidence.
    lone_aspect: float = 0.4
    lone_confidence: float = 0.8
    #: Prior of the view model (see _solve_view): focal length in frame widths, and its weight
    #: against the dice of the frame.
    focal_prior: float = 0.9
    view_prior_weight: float = 1.0
    #: A die leans when its side face (side/top area ratio along its direction) is larger than
    #: a flat die's there by lean_slack, or off the nadir's direction by lean_across...
    lean_slack: float = 0.15
    lean_across: float = 0.25
    #: ...plus this share of the flat die's expected side vector.
    lean_relative: float = 0.2
    #: A die propped on a neighbour: closer to it than touch_lean face sides (flat dice: >= 1,
    #: but the inset's size, which measures it, has a pixel's error), its inset less square
    #: than lean_aspect (after perspective) and by lean_aspect_gap less square than the
    #: neighbour's.
    touch_lean: float = 1.0
    lean_aspect: float = 0.95
    lean_aspect_gap: float = 0.06
    #: (lean_relative 0.3, touch_lean 0.95 and lean_aspect 0.93 until the lean set: with these
    #: the dev split flags 14 of 19 cocked dice, not 12, and the lean set 25 of 47, not 20, with
    #: no more false alarms on either.)


@dataclass(eq=False)  # compared by identity: two insets are never "the same"
class Inset:
    contour: np.ndarray  # in full-resolution pixels
    center: tuple[float, float]
    side: float
    aspect: float
    area: float
    quad: np.ndarray  # 4x2 float, the inset's corners
    open: bool = False  # its rim is cut open (partly hidden)
    dim: bool = False  # its rim is white only against the shadow it lies in

    @property
    def weak(self) -> bool:
        """Weaker evidence than an inset framed by a whole rim in the lamp's light."""
        return self.open or self.dim


@dataclass(frozen=True)
class WhiteMasks:
    """Where a frame is white: in the lamp's light, and also in the shadow of a wall or die."""

    bright: np.ndarray
    dim: np.ndarray

    def rims_of(self, inset: Inset) -> np.ndarray:
        return self.dim if inset.dim else self.bright


def illuminant(image: np.ndarray) -> np.ndarray:
    """The lamp's colour and level, per channel, from the brightest pixels ("white patch").

    White rims are the brightest pixels in every channel at once, while a coloured inset is
    bright in only some; a tiny top fraction suffices for a single die and ignores the tray.
    """
    height, width = image.shape[0] // 2, image.shape[1] // 2
    if image.ndim == 3 and image.shape[2] == 3 and image.shape[0] % 2 == 0 and image.shape[1] % 2 == 0:
        # A nearest-neighbour halving of an even frame takes every other pixel of every other
        # row: every other row, read as pixels of twice the channels, holds them in its first
        # three, so the histograms count the very pixels of the resize without making it.
        small = image[::2].reshape(height, width, 6)
    else:
        small = cv2.resize(image, (width, height), interpolation=cv2.INTER_NEAREST)
    top = max(1.0, height * width * 0.0005)
    levels = []
    for channel in range(3):
        histogram = cv2.calcHist([small], [channel], None, [256], [0, 256]).ravel()
        from_top = np.cumsum(histogram[::-1])
        levels.append(255 - int(np.searchsorted(from_top, top)))
    return np.maximum(np.array(levels, np.float32), 8.0)


def _white_mask(balanced: np.ndarray, params: TossUpParams) -> tuple[WhiteMasks, np.ndarray, np.ndarray]:
    """White pixels of a balanced image (see _balanced): bright (or dim) and nearly neutral.

    Also returns the balanced image's value (max channel) and spread (max - min channel).
    """
    b, g, r = cv2.split(balanced)
    high = cv2.max(cv2.max(b, g), r)
    low = cv2.min(cv2.min(b, g), r)
    # neutral: (high - low) < white_saturation * high, in saturating uint8 arithmetic
    difference = cv2.subtract(high, low)
    spread = cv2.multiply(difference, 1.0 / params.white_saturation)
    neutral = cv2.compare(spread, high, cv2.CMP_LT)
    bright = cv2.bitwise_and(neutral, cv2.compare(high, params.white_value * 235, cv2.CMP_GT))
    dim = cv2.bitwise_and(neutral, cv2.compare(high, params.dim_white_value * 235, cv2.CMP_GT))
    return WhiteMasks(bright, dim), high, difference


def _balanced(image: np.ndarray, lamp: np.ndarray | None = None) -> np.ndarray:
    """The image with the lamp's tint and level divided out (its white at 235); `lamp`: the
    lamp's `illuminant`, when measured on more than this image."""
    lamp = illuminant(image) if lamp is None else lamp
    return cv2.transform(image, np.diag(235.0 / lamp).astype(np.float32))


def _quad(contour: np.ndarray) -> np.ndarray:
    perimeter = cv2.arcLength(contour, True)
    for epsilon in (0.04, 0.06, 0.08, 0.1, 0.13):
        approx = cv2.approxPolyDP(contour, epsilon * perimeter, True)
        if len(approx) == 4 and cv2.isContourConvex(approx):
            return approx.reshape(4, 2).astype(np.float32)
    return cv2.boxPoints(cv2.minAreaRect(contour)).astype(np.float32)


def order_clockwise(points: np.ndarray) -> np.ndarray:
    """Four points clockwise in the image (y down), starting nearest the top-left."""
    center = points.mean(axis=0)
    angles = np.arctan2(points[:, 1] - center[1], points[:, 0] - center[0])
    ordered = points[np.argsort(angles)]
    start = int(np.argmin(ordered[:, 0] + ordered[:, 1]))
    # Indexing, not np.roll: the same rows, without roll's generic set-up (every die found
    # in every frame comes through here).
    return ordered[(np.arange(len(ordered)) + start) % len(ordered)]


#: Insets are convex squircles; gaps between dice and shadows are ragged.
MIN_SOLIDITY = 0.84


def _inset(contour: np.ndarray, min_side: float, open_: bool = False) -> Inset | None:
    if len(contour) < 4:
        return None
    area = cv2.contourArea(contour)
    if area < min_side * min_side * 0.6:
        return None
    (cx, cy), (w, h), _ = cv2.minAreaRect(contour)
    # A framed inset fills its box like a squircle does; an open one is cut by the wall.
    if min(w, h) < min_side * 0.5 or area / max(w * h, 1.0) < (0.6 if open_ else 0.75):
        return None
    if area < MIN_SOLIDITY * cv2.contourArea(cv2.convexHull(contour)):
        return None
    return Inset(contour, (cx, cy), max(w, h), min(w, h) / max(w, h), area, _quad(contour), open_)


def _hull_insets(white: np.ndarray, taken: np.ndarray, outline: np.ndarray, min_side: float) -> list[Inset]:
    """Insets in a U of white (the wall hides one side of the rim): the U's hull closes it."""
    x, y, w, h = cv2.boundingRect(outline)
    hull = cv2.convexHull(outline) - np.array([x, y])
    closed = np.zeros((h, w), np.uint8)
    cv2.fillConvexPoly(closed, hull, 255)
    free = cv2.bitwise_not(cv2.bitwise_or(white[y:y + h, x:x + w], taken[y:y + h, x:x + w]))
    gaps = cv2.bitwise_and(closed, free)
    gaps = cv2.erode(gaps, np.ones((3, 3), np.uint8))
    found = []
    for contour in cv2.findContours(gaps, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]:
        inset = _inset(contour + np.array([x, y]), min_side, open_=True)
        if inset is not None and inset.area >= 2 * min_side**2:
            found.append(inset)
    return found


#: Share of the ring around a coloured blob that must be white for it to count as an inset: a
#: die in the shadow of the tray wall keeps a white rim on its lit sides only, often less than
#: half of the ring.
FRAMED_SHARE = 0.3


#: Hue bands (OpenCV's 0-180 scale, of the rim-balanced frame) in which coloured blobs are also
#: looked for one colour at a time, so that an inset touching a differently coloured floor or
#: wall is not merged with it: red (up to 18 degrees, as wood and orange cloth sit at 20-35),
#: yellow and green as in TossUpParams.
INSET_HUES = ((0, 9), (171, 180), (19, 40), (47, 95))


def _coloured_insets(high: np.ndarray, spread: np.ndarray, hue: np.ndarray, white: np.ndarray, taken: np.ndarray,
                     min_side: float) -> list[Inset]:
    """Insets whose white rim is cut open and merged with other white (a pale floor).

    Such an inset is no hole in the white mask, so look for strongly coloured, die-sized,
    squarish blobs that are mostly framed by white instead: first of any colour, then of each
    inset colour alone (a red inset whose rim merges with a wooden wall).
    """
    coloured = cv2.bitwise_and(
        cv2.compare(spread, cv2.multiply(high, 0.45), cv2.CMP_GT), cv2.compare(high, 30, cv2.CMP_GT)
    )
    coloured = cv2.bitwise_and(coloured, cv2.bitwise_not(taken))
    masks = [coloured, *(cv2.bitwise_and(coloured, cv2.inRange(hue, low, high_)) for low, high_ in INSET_HUES)]
    found: list[Inset] = []
    covered = np.zeros_like(coloured)  # the insets found so far, to skip finding one again
    for mask in masks:
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        for contour in cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]:
            inset = _inset(contour, min_side, open_=True)
            if inset is None or inset.area < 2 * min_side**2 or inset.side > 12 * min_side or inset.aspect < 0.5:
                continue
            if not _untaken(inset, covered):
                continue  # the same inset, found again in its colour's band
            if _framed(inset, white) >= FRAMED_SHARE:
                found.append(inset)
                cv2.drawContours(covered, [inset.contour], -1, 255, -1)
    return found


def _framed(inset: Inset, white: np.ndarray) -> float:
    """The share of a thin ring around an inset that is white."""
    contour = inset.contour
    x, y, w, h = cv2.boundingRect(contour)
    pad = max(3, int(0.2 * inset.side))
    x0, y0 = max(x - pad, 0), max(y - pad, 0)
    x1, y1 = min(x + w + pad, white.shape[1]), min(y + h + pad, white.shape[0])
    blob = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.drawContours(blob, [contour - np.array([x0, y0])], -1, 255, -1)
    ring = cv2.bitwise_and(cv2.dilate(blob, np.ones((2 * pad + 1, 2 * pad + 1), np.uint8)), cv2.bitwise_not(blob))
    return cv2.countNonZero(cv2.bitwise_and(ring, white[y0:y1, x0:x1])) / max(cv2.countNonZero(ring), 1)


def _holes(white: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(holes, outer outlines) of a white mask."""
    contours, hierarchy = cv2.findContours(white, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if hierarchy is None:
        return [], []
    parents = hierarchy[0][:, 3]
    return [contours[i] for i in np.flatnonzero(parents >= 0)], [contours[i] for i in np.flatnonzero(parents < 0)]


def _untaken(inset: Inset, taken: np.ndarray) -> bool:
    x, y = int(round(inset.center[0])), int(round(inset.center[1]))
    return 0 <= y < taken.shape[0] and 0 <= x < taken.shape[1] and not taken[y, x]


def find_insets(image: np.ndarray, params: TossUpParams) -> tuple[list[Inset], WhiteMasks]:
    balanced = _balanced(image)
    white, high, spread = _white_mask(balanced, params)
    min_side = params.min_inset * image.shape[1] / 1280.0
    holes, outlines = _holes(white.bright)
    insets = [i for i in (_inset(c, min_side) for c in holes) if i is not None]  # framed by a rim
    # Open insets never overlap one found framed by its whole rim.
    taken = np.zeros_like(white.bright)
    cv2.drawContours(taken, [i.contour for i in insets], -1, 255, -1)
    taken = cv2.dilate(taken, np.ones((5, 5), np.uint8))
    for contour in outlines:
        if min_side**2 <= cv2.contourArea(contour) <= (12 * min_side) ** 2:
            insets.extend(_hull_insets(white.bright, taken, contour, min_side))
    cv2.drawContours(taken, [i.contour for i in insets], -1, 255, -1)
    # A plane of its own: OpenCV copies a strided view (the hue of an HSV image) on every call,
    # and _coloured_insets passes it to four.
    hue = cv2.extractChannel(cv2.cvtColor(balanced, cv2.COLOR_BGR2HSV), 0)
    insets.extend(_coloured_insets(high, spread, hue, white.bright, taken, min_side))
    # Dice in a wall's shadow: framed by a rim too dim for the first pass.
    cv2.drawContours(taken, [i.contour for i in insets], -1, 255, -1)
    for contour in _holes(white.dim)[0]:
        inset = _inset(contour, min_side)
        if inset is not None and _untaken(inset, taken):
            inset.dim = True
            insets.append(inset)
    return insets, white


def _ring_and_core(shape: tuple[int, int], inset: Inset) -> tuple[tuple[slice, slice], np.ndarray, np.ndarray]:
    pad = int(inset.side * 0.35) + 3
    x, y, w, h = cv2.boundingRect(inset.contour)
    x0, y0 = max(x - pad, 0), max(y - pad, 0)
    x1, y1 = min(x + w + pad, shape[1]), min(y + h + pad, shape[0])
    local = inset.contour - np.array([x0, y0])
    hole = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.drawContours(hole, [local], -1, 255, -1)
    grow = max(2, int(inset.side * 0.18))
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * grow + 1, 2 * grow + 1))
    ring = cv2.dilate(hole, kernel) & ~hole
    shrink = max(1, int(inset.side * 0.12))
    core = cv2.erode(hole, cv2.getStructuringElement(cv2.MORPH_RECT, (2 * shrink + 1, 2 * shrink + 1)))
    return (slice(y0, y1), slice(x0, x1)), ring, core


def read_colour(image: np.ndarray, white: WhiteMasks, inset: Inset, params: TossUpParams) -> tuple[str, float, float]:
    """(face, confidence, chroma) of an inset, normalised by its own white rim."""
    window, ring, core = _ring_and_core(image.shape[:2], inset)
    patch = image[window]
    white_here = white.rims_of(inset)[window]
    rim = cv2.bitwise_and(ring, white_here)
    # Specular highlights on the glossy inset are white: leave them out of its colour.
    inside = cv2.bitwise_and(core, cv2.bitwise_not(white_here))
    if cv2.countNonZero(rim) < 8 or cv2.countNonZero(inside) < 4:
        return UNSURE, 0.0, 0.0
    rim_colour = np.array(cv2.mean(patch, rim)[:3])
    colour = np.array(cv2.mean(patch, inside)[:3]) / np.maximum(rim_colour, 1.0)
    b, g, r = (float(c) for c in colour)
    top = max(r, g, b, 1e-6)
    chroma = (top - min(r, g, b)) / top
    hue = _hue(r / top, g / top, b / top)
    return (*_classify(hue, chroma, params), chroma)


def _hue(r: float, g: float, b: float) -> float:
    top, low = max(r, g, b), min(r, g, b)
    if top - low < 1e-6:
        return 0.0
    if top == r:
        h = ((g - b) / (top - low)) % 6
    elif top == g:
        h = (b - r) / (top - low) + 2
    else:
        h = (r - g) / (top - low) + 4
    return h * 60.0


def _classify(hue: float, chroma: float, params: TossUpParams) -> tuple[str, float]:
    if chroma < params.min_chroma:
        return UNSURE, 0.0
    bands = {
        "red": [(params.red_above - 360.0, params.red_below)],
        "yellow": [params.yellow_band],
        "green": [params.green_band],
    }
    unwrapped = hue - 360.0 if hue > 180.0 else hue
    best, margin = UNSURE, 0.0
    for face, ranges in bands.items():
        for low, high in ranges:
            value = unwrapped if face == "red" else hue
            if low <= value <= high:
                best, margin = face, min(value - low, high - value)
    if best == UNSURE:
        return UNSURE, 0.0
    chroma_margin = (chroma - params.min_chroma) / params.min_chroma
    confidence = min(1.0, 0.5 + margin / 20.0) * min(1.0, 0.5 + chroma_margin)
    if confidence < params.min_confidence:
        return UNSURE, round(confidence, 4)
    return best, round(confidence, 4)


#: Frames wider than this are read at half size: dice stay 20+ px, and it is 4x less work.
WORK_WIDTH = 960


def half_size(image: np.ndarray) -> np.ndarray:
    """The frame at half its size, as `read_tossup` reads a frame wider than WORK_WIDTH (the die
    finder's input halves a frame the same way, so one halved frame can serve both)."""
    return cv2.resize(image, (image.shape[1] // 2, image.shape[0] // 2), interpolation=cv2.INTER_AREA)


def square_around(image: np.ndarray, center: tuple[float, float], reach: float) -> np.ndarray:
    """The part of `image` within `reach` pixels of `center` along both axes (cut by the frame's
    edges; empty where none of it is in the frame)."""
    x0, y0 = max(int(center[0] - reach), 0), max(int(center[1] - reach), 0)
    return image[y0:max(int(center[1] + reach), y0), x0:max(int(center[0] + reach), x0)]


def work_scale(image: np.ndarray) -> float:
    """How many times smaller than `image` the frame is that the reader reads (`work_frame`)."""
    return 2.0 if image.shape[1] > WORK_WIDTH else 1.0


def work_frame(image: np.ndarray, half: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """(the frame as the reader reads it, `work_scale`): a frame wider than WORK_WIDTH at half
    size (`half`: its `half_size`, when made already), any other as it is."""
    scale = work_scale(image)
    if scale == 1.0:
        return image, scale
    return (half_size(image) if half is None else half), scale


def read_tossup(image: np.ndarray, params: TossUpParams | None = None, with_faces: bool = True,
                half: np.ndarray | None = None) -> list[DieReading]:
    """Every Toss Up die in a BGR frame: its top face, colour and whether it lies cocked.

    `half`: the frame's `half_size`, when it was made already (it is used only for a frame
    wider than WORK_WIDTH, and made here when needed but not given).
    """
    params = params or TossUpParams()
    image, scale = work_frame(image, half)
    insets, white = find_insets(image, params)
    colours = {id(i): read_colour(image, white, i, params) for i in insets}
    # Open insets are weaker evidence (no full rim): keep them only when clearly coloured.
    insets = [
        i for i in insets
        if colours[id(i)][2] >= params.inset_chroma and not (i.open and colours[id(i)][0] == UNSURE)
    ]
    if not insets:
        return []
    kept, dice = _choose_dice(insets, colours, params)
    if len(dice) > params.max_dice:
        # More dice than the game has: the tray's own pattern has inset-like patches (coloured
        # squares between pale stripes), which only ever pass as open insets, and they repeat:
        # more of one colour than a roll shows open. Drop that colour's open insets; if still
        # too many, trust only the insets framed by a whole rim, as dice and as second faces.
        pattern = _pattern_colour(insets, colours, params)
        if pattern is not None:
            insets = [i for i in insets if not (i.open and colours[id(i)][0] == pattern)]
            kept, dice = _choose_dice(insets, colours, params)
    if len(dice) > params.max_dice:
        kept, dice = _choose_dice([i for i in insets if not i.open], colours, params)
    leaning = _leaning(dice, kept, image.shape[1], image.shape[0], params)
    readings = []
    kept_ids = {id(k) for k in kept}
    for (top, partner), cocked in zip(dice, leaning):
        face, confidence, _ = colours[id(top)]
        if id(top) not in kept_ids and partner is None:
            # A lone face may be a side: weaker evidence, so an unclear colour becomes unsure.
            confidence = round(confidence * params.lone_confidence, 4)
            face = face if confidence >= params.min_confidence else UNSURE
        center = np.array(top.center, np.float32)
        corners = center + (top.quad - center) * params.face_per_inset
        if cocked and partner is not None:
            # Which of the two faces points most upward is not clear from above, and a cocked
            # die is re-rolled anyway: the midpoint lies on the die whichever it is.
            shift = (np.array(partner.center, np.float32) - center) / 2
            center, corners = center + shift, corners + shift
        corners = order_clockwise(corners) * scale
        # Pixel centres: a half-size pixel at i covers full-size pixels 2i and 2i+1.
        corners += (scale - 1) / 2
        center = center * scale + (scale - 1) / 2
        readings.append(
            DieReading(
                center=(float(center[0]), float(center[1])),
                corners=tuple((float(x), float(y)) for x, y in corners),
                die="tossup" if with_faces else None,
                face=face if with_faces else None,
                confidence=confidence if with_faces else 0.0,
                cocked=cocked,
                size=top.side * params.face_per_inset * scale,
            )
        )
    readings.sort(key=lambda d: (d.center[1], d.center[0]))
    return readings


def rim_colour(image: np.ndarray, center: tuple[float, float], side: float,
               params: TossUpParams | None = None, lamp: np.ndarray | None = None) -> tuple[str, float]:
    """(face, confidence) of the inset framed by a white rim at a die's top face found by
    other means (the die finder), read against that rim as `read_tossup` reads its own dice;
    ("unsure", 0.0) when no inset of the die's size lies there.

    `center` and `side` are the top face's, in pixels of `image` (a full BGR frame: the lamp's
    white is taken from all of it, unless its `illuminant` is given as `lamp`).

    A die deep in a wall's shadow is lit by the room, not the lamp: its rim is neither white
    nor neutral against the lamp's white. Where that reading finds no inset, the die's own
    top face (its brightest pixels, its rim) is the white reference instead.
    """
    params = params or TossUpParams()
    lamp = illuminant(image) if lamp is None else lamp
    face, confidence = _read_rim(image, center, side, params, lamp)
    if face != UNSURE:
        return face, confidence
    own = square_around(image, center, 0.6 * side)  # the top face and a little of what is around it
    if own.shape[0] < 4 or own.shape[1] < 4:
        return face, confidence
    return _read_rim(image, center, side, params, illuminant(own))


def _read_rim(image: np.ndarray, center: tuple[float, float], side: float, params: TossUpParams,
              lamp: np.ndarray) -> tuple[str, float]:
    """`rim_colour` with the white taken as `lamp`."""
    scale = work_scale(image)
    x, y, half = center[0] / scale, center[1] / scale, side / scale
    reach = int(1.2 * half) + 4
    x0, y0 = max(int(x) - reach, 0), max(int(y) - reach, 0)
    x1, y1 = min(int(x) + reach, int(image.shape[1] / scale)), min(int(y) + reach, int(image.shape[0] / scale))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return UNSURE, 0.0
    full = (slice(int(y0 * scale), int(y1 * scale)), slice(int(x0 * scale), int(x1 * scale)))
    window = image[full]
    if scale > 1:
        window = cv2.resize(window, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
    white, _, _ = _white_mask(_balanced(window, lamp), params)
    inset_side = half / params.face_per_inset
    here = (x - x0, y - y0)
    # A die in a wall's shadow has a rim white only against that shadow, as in find_insets.
    for rims, dim in ((white.bright, False), (white.dim, True)):
        insets = [i for i in (_inset(c, 0.4 * inset_side) for c in _holes(rims)[0]) if i is not None
                  and 0.6 * inset_side <= i.side <= 1.3 * inset_side and i.aspect >= params.top_aspect
                  and math.dist(i.center, here) <= 0.3 * inset_side]
        if insets:
            inset = min(insets, key=lambda i: math.dist(i.center, here))
            inset.dim = dim
            face, confidence, _ = read_colour(window, white, inset, params)
            return face, confidence
    return UNSURE, 0.0


def _median(values: list[float]) -> float:
    """What np.median gives for a short list of numbers (the middle one, or the mean of the two
    middle ones), without the array set-up that costs more than sorting ten numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def _choose_dice(
    insets: list[Inset], colours: dict[int, tuple[str, float, float]], params: TossUpParams,
) -> tuple[list[Inset], list[tuple[Inset, Inset | None]]]:
    """(the insets that are dice's tops, each die as its top and second face if one shows)."""
    tops = [i for i in insets if i.aspect >= params.top_aspect]
    # A frame of cocked or cut dice only still has a scale: an inset's long side.
    typical = _median([i.side for i in tops or insets]) if insets else 0.0
    tops = [i for i in tops if 0.6 * typical <= i.side <= 1.6 * typical]
    # A side face of one die can look square at the edge of the view; keep the larger inset
    # when two lie closer than one die. Framed, lit insets go first: an open or dim one beside
    # them is that die's side face or a tinted shadow, not a die of its own.
    tops.sort(key=lambda i: (i.weak, -i.area))
    die_size = params.face_per_inset * typical
    kept: list[Inset] = []
    for inset in tops:
        near = 0.75 * params.face_per_inset * max(inset.side, typical)
        beside_framed = 1.05 * die_size if inset.weak else near
        if all(math.dist(inset.center, k.center) > (near if k.weak else beside_framed) for k in kept):
            kept.append(inset)
    # A dim "inset" beside a lit die is as likely its shadow on a dark floor as its side face.
    kept_ids = {id(k) for k in kept}
    return kept, _pair_faces(kept, [i for i in insets if not i.dim or id(i) in kept_ids], colours, typical, params)


def _pattern_colour(insets: list[Inset], colours: dict[int, tuple[str, float, float]], params: TossUpParams) -> str | None:
    """The colour of more open insets than half a full roll: a tray pattern's, if any."""
    counts = Counter(colours[id(i)][0] for i in insets if i.open and colours[id(i)][0] != UNSURE)
    common = counts.most_common(1)
    return common[0][0] if common and common[0][1] > params.max_dice // 2 else None


def _pair_faces(
    kept: list[Inset], insets: list[Inset], colours: dict[int, tuple[str, float, float]], typical: float,
    params: TossUpParams,
) -> list[tuple[Inset, Inset | None]]:
    """Each die's top inset with the largest other face of the same die, if one shows.

    Two faces of one cube have centres at most ~0.71 face sides apart however the cube lies,
    two flat dice at least one side: an inset that close to a top is that die's side face
    (or, on a cocked die, its other top-like face). Two such faces with no top near them are a
    die standing on an edge or leaning on the wall, found by nothing else.
    """
    faces = [i for i in insets if i not in kept and colours[id(i)][0] != UNSURE
             and i.area >= params.min_face_share * typical**2]

    def same_die(a: Inset, b: Inset) -> bool:
        # An open inset may be cut short: never judge by a die smaller than the frame's typical.
        return math.dist(a.center, b.center) < params.same_die * params.face_per_inset * max(a.side, b.side, typical)

    partners: dict[int, Inset] = {}
    loose = []
    for face in faces:
        owners = [k for k in kept if same_die(k, face)]
        if owners:
            owner = min(owners, key=lambda k: math.dist(k.center, face.center))
            if id(owner) not in partners or face.area > partners[id(owner)].area:
                partners[id(owner)] = face
        elif face.area >= 2 * params.min_face_share * typical**2 and all(
            math.dist(k.center, face.center) > params.face_per_inset * max(k.side, typical) for k in kept
        ):
            loose.append(face)
    dice: list[tuple[Inset, Inset | None]] = [(k, partners.get(id(k))) for k in kept]
    loose.sort(key=lambda i: -i.area)
    used: set[int] = set()
    for a in loose:
        if id(a) in used:
            continue
        mates = [b for b in loose if b is not a and id(b) not in used and same_die(a, b)]
        if mates:
            b = max(mates, key=lambda i: i.area)
            used.update((id(a), id(b)))
            dice.append((a, b))
        elif a.aspect >= params.lone_aspect:
            # A die-sized face far from every top: a top cut by a shadow or by the wall
            # (mostly), or the side of a die whose top is too dark to see.
            used.add(id(a))
            dice.append((a, None))
    return dice


#: A flat top seen at up to ~35 degrees keeps at least this share of a face-on top's area.
OPEN_TOP_SHARE = 0.8


def _side_vector(top: Inset, side: Inset, width: float, top_area: float) -> tuple[np.ndarray, np.ndarray]:
    """(top centre in frame widths, side/top area ratio times the unit vector from top to side).

    An open top is cut by a shadow or the wall, so its area is no measure of the die: it is
    never taken as smaller than a share of the frame's typical framed top (`top_area`).
    """
    offset = np.subtract(side.center, top.center)
    reference = max(top.area, OPEN_TOP_SHARE * top_area) if top.open else top.area
    ratio = min(side.area / max(reference, 1.0), 1.5)
    return np.array(top.center) / width, ratio * offset / max(float(np.linalg.norm(offset)), 1e-6)


def _solve_view(evidence: list[tuple[np.ndarray, np.ndarray]], aspect: float, params: TossUpParams) -> tuple[float, np.ndarray]:
    """(a, b) of the flat-die model `side vector = b - a * p` (p in frame widths).

    A flat die shows its side faces toward the nadir (where vertical lines meet in the image),
    with a side/top area ratio of tan(view angle) ~ |nadir - p| / focal: so a = 1 / focal and
    b = nadir / focal. Least squares over the frame's other dice, pulled toward a weak prior
    (nadir at the frame centre, focal about one frame width) so that a frame with few visible
    side faces still has a model.
    """
    a0 = 1.0 / params.focal_prior
    w = params.view_prior_weight
    rows = [[w, 0.0, 0.0], [0.0, w, 0.0], [0.0, 0.0, w]]
    values = [w * a0, w * a0 * 0.5, w * a0 * 0.5 * aspect]
    for p, v in evidence:
        rows += [[-p[0], 1.0, 0.0], [-p[1], 0.0, 1.0]]
        values += [v[0], v[1]]
    solution = np.linalg.lstsq(np.array(rows), np.array(values), rcond=None)[0]
    return float(solution[0]), solution[1:]


def _leaning(dice: list[tuple[Inset, Inset | None]], kept: list[Inset], width: int, height: int,
             params: TossUpParams) -> list[bool]:
    """Per die: does it show its second face where, or as large as, no flat die here would?

    The view is fitted to the dice that the prior alone finds flat, leaving out the die being
    judged (one cocked die must not bend the model that judges it). Two faces with no top
    between them are a die on its edge or leaning on the wall.
    """
    aspect = height / width
    framed = [k.area for k in kept if not k.open] or [k.area for k in kept]
    top_area = _median(framed) if framed else 0.0
    evidence = {index: _side_vector(top, partner, float(width), top_area)
                for index, (top, partner) in enumerate(dice) if partner is not None and top in kept}
    prior = _solve_view([], aspect, params)
    flat = {i: e for i, e in evidence.items() if not _misfits(*e, *prior, params)}
    result = []
    for index, (top, partner) in enumerate(dice):
        if partner is None or index not in evidence:
            result.append(partner is not None)
            continue
        view = _solve_view([e for i, e in flat.items() if i != index], aspect, params)
        result.append(_misfits(*evidence[index], *view, params))
    view = _solve_view(list(flat.values()), aspect, params)
    for index, (top, _) in enumerate(dice):
        if not result[index] and top in kept and _rests_on_neighbour(top, kept, view, float(width), params):
            result[index] = True
    return result


def _squareness(inset: Inset, view: tuple[float, np.ndarray], width: float) -> float:
    """The inset's aspect over what perspective alone makes of a flat top there (cos of the view angle)."""
    a, b = view
    expected = float(np.linalg.norm(b - a * np.array(inset.center) / width))
    return inset.aspect * math.sqrt(1.0 + expected * expected)


def _rests_on_neighbour(top: Inset, kept: list[Inset], view: tuple[float, np.ndarray], width: float,
                        params: TossUpParams) -> bool:
    """A die leaning on another: closer to it than two flat dice can be, its top foreshortened.

    Two flat tops are at least one face side apart. A die propped on a neighbour's edge comes
    a little closer and tilts its top toward or away from that neighbour, so its inset is
    squashed along the line joining them, more than perspective squashes the neighbour's.
    Framed insets only (both): an open one is cut, its shape says nothing.
    """
    others = [k for k in kept if k is not top]
    if top.open or not others:
        return False
    neighbour = min(others, key=lambda k: math.dist(k.center, top.center))
    if neighbour.open:
        return False
    gap = math.dist(neighbour.center, top.center) / (params.face_per_inset * max(top.side, neighbour.side))
    squareness = _squareness(top, view, width)
    if gap >= params.touch_lean or squareness >= params.lean_aspect:
        return False
    if squareness > _squareness(neighbour, view, width) - params.lean_aspect_gap:
        return False
    (_, _), (w, h), angle = cv2.minAreaRect(top.contour)
    minor = math.radians(angle + (0.0 if w < h else 90.0))
    towards = np.subtract(neighbour.center, top.center)
    along = abs(math.cos(minor) * towards[0] + math.sin(minor) * towards[1]) / max(float(np.linalg.norm(towards)), 1e-6)
    return along >= math.cos(math.radians(35.0))


def _misfits(p: np.ndarray, seen: np.ndarray, a: float, b: np.ndarray, params: TossUpParams) -> bool:
    """The side vector `seen` of a die at p is not what a flat die shows in the view (a, b).

    Seen smaller than expected is common on flat dice (a neighbour or the wall hides part of
    the side face), so only a larger one counts; a side face off the nadir's direction, or
    on its far side, does too. The tolerance grows with the expected vector, whose direction
    is uncertain near the nadir.
    """
    expected = b - a * p
    length = float(np.linalg.norm(expected))
    direction = expected / max(length, 1e-6)
    along = float(seen @ direction)
    across = abs(float(seen[0] * direction[1] - seen[1] * direction[0]))
    slack = params.lean_relative * length
    return (along - length > params.lean_slack + slack
            or across > params.lean_across + slack
            or along < -params.lean_slack)
