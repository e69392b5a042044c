"""Finding Toss Up dice and reading their colours.

Physical setup assumed: white dice with a large glossy coloured inset on every face, seen
from above (camera 30-50 cm high, tilted at most ~15 degrees) under any white-ish lamp.

Every inset is surrounded by the die's white rim, so an inset is a *hole* in the mask of
white pixels, whatever the tray looks like (green felt around a green inset, a white board
around a white die): holes are found with the contour tree, never by colour alone. The rim
is also each die's own white reference, which makes the colour reading independent of the
lamp's colour and brightness.
"""

from __future__ import annotations

import logging
import math
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
    #: Below this confidence a face is reported as "unsure" rather than guessed.
    min_confidence: float = 0.6
    cocked_side_ratio: float = 0.55


@dataclass
class Inset:
    contour: np.ndarray  # in full-resolution pixels
    center: tuple[float, float]
    side: float
    aspect: float
    area: float
    quad: np.ndarray  # 4x2 float, the inset's corners
    open: bool = False  # its rim is cut open (partly hidden)


def _illuminant(image: np.ndarray) -> np.ndarray:
    """The lamp's colour and level, per channel, from the brightest pixels ("white patch").

    White rims are the brightest pixels in every channel at once, while a coloured inset is
    bright in only some; a tiny top fraction suffices for a single die and ignores the tray.
    """
    small = cv2.resize(image, (image.shape[1] // 2, image.shape[0] // 2), interpolation=cv2.INTER_NEAREST)
    top = max(1.0, small.shape[0] * small.shape[1] * 0.0005)
    levels = []
    for channel in range(3):
        histogram = cv2.calcHist([small], [channel], None, [256], [0, 256]).ravel()
        from_top = np.cumsum(histogram[::-1])
        levels.append(255 - int(np.searchsorted(from_top, top)))
    return np.maximum(np.array(levels, np.float32), 8.0)


def _white_mask(image: np.ndarray, params: TossUpParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """White pixels once the lamp's tint and level are divided out: bright and nearly neutral."""
    balanced = cv2.transform(image, np.diag(235.0 / _illuminant(image)).astype(np.float32))
    b, g, r = cv2.split(balanced)
    high = cv2.max(cv2.max(b, g), r)
    low = cv2.min(cv2.min(b, g), r)
    # neutral: (high - low) < white_saturation * high, in saturating uint8 arithmetic
    spread = cv2.multiply(cv2.subtract(high, low), 1.0 / params.white_saturation)
    bright = cv2.compare(high, params.white_value * 235, cv2.CMP_GT)
    return cv2.bitwise_and(bright, cv2.compare(spread, high, cv2.CMP_LT)), high, cv2.subtract(high, low)


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
    return np.roll(ordered, -start, axis=0)


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


def _coloured_insets(high: np.ndarray, spread: np.ndarray, white: np.ndarray, taken: np.ndarray, min_side: float) -> list[Inset]:
    """Insets whose white rim is cut open and merged with other white (a pale floor).

    Such an inset is no hole in the white mask, so look for strongly coloured, die-sized,
    squarish blobs that are mostly framed by white instead.
    """
    coloured = cv2.bitwise_and(
        cv2.compare(spread, cv2.multiply(high, 0.45), cv2.CMP_GT), cv2.compare(high, 30, cv2.CMP_GT)
    )
    coloured = cv2.bitwise_and(coloured, cv2.bitwise_not(taken))
    coloured = cv2.morphologyEx(coloured, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    found = []
    for contour in cv2.findContours(coloured, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]:
        inset = _inset(contour, min_side, open_=True)
        if inset is None or inset.area < 2 * min_side**2 or inset.side > 12 * min_side or inset.aspect < 0.5:
            continue
        x, y, w, h = cv2.boundingRect(contour)
        pad = max(3, int(0.2 * inset.side))
        x0, y0 = max(x - pad, 0), max(y - pad, 0)
        x1, y1 = min(x + w + pad, white.shape[1]), min(y + h + pad, white.shape[0])
        blob = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.drawContours(blob, [contour - np.array([x0, y0])], -1, 255, -1)
        ring = cv2.bitwise_and(cv2.dilate(blob, np.ones((2 * pad + 1, 2 * pad + 1), np.uint8)), cv2.bitwise_not(blob))
        framed = cv2.countNonZero(cv2.bitwise_and(ring, white[y0:y1, x0:x1])) / max(cv2.countNonZero(ring), 1)
        if framed >= 0.4:
            found.append(inset)
    return found


def find_insets(image: np.ndarray, params: TossUpParams) -> tuple[list[Inset], np.ndarray]:
    white, high, spread = _white_mask(image, params)
    contours, hierarchy = cv2.findContours(white, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    insets: list[Inset] = []
    min_side = params.min_inset * image.shape[1] / 1280.0
    if hierarchy is None:
        return insets, white
    for contour, (_, _, _, parent) in zip(contours, hierarchy[0]):
        if parent >= 0:  # a hole in the white: an inset framed by its rim
            inset = _inset(contour, min_side)
            if inset is not None:
                insets.append(inset)
    # Open insets never overlap one found framed by its whole rim.
    taken = np.zeros_like(white)
    cv2.drawContours(taken, [i.contour for i in insets], -1, 255, -1)
    taken = cv2.dilate(taken, np.ones((5, 5), np.uint8))
    for index, (contour, (_, _, _, parent)) in enumerate(zip(contours, hierarchy[0])):
        if parent < 0 and min_side**2 <= cv2.contourArea(contour) <= (12 * min_side) ** 2:
            insets.extend(_hull_insets(white, taken, contour, min_side))
    cv2.drawContours(taken, [i.contour for i in insets], -1, 255, -1)
    insets.extend(_coloured_insets(high, spread, white, taken, min_side))
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


def read_colour(image: np.ndarray, white: np.ndarray, inset: Inset, params: TossUpParams) -> tuple[str, float, float]:
    """(face, confidence, chroma) of an inset, normalised by its own white rim."""
    window, ring, core = _ring_and_core(image.shape[:2], inset)
    patch = image[window]
    white_here = white[window]
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


def read_tossup(image: np.ndarray, params: TossUpParams | None = None, with_faces: bool = True) -> list[DieReading]:
    params = params or TossUpParams()
    scale = 1.0
    if image.shape[1] > WORK_WIDTH:
        scale = 2.0
        image = cv2.resize(image, (image.shape[1] // 2, image.shape[0] // 2), interpolation=cv2.INTER_AREA)
    insets, white = find_insets(image, params)
    colours = {id(i): read_colour(image, white, i, params) for i in insets}
    # Open insets are weaker evidence (no full rim): keep them only when clearly coloured.
    insets = [
        i for i in insets
        if colours[id(i)][2] >= params.inset_chroma and not (i.open and colours[id(i)][0] == UNSURE)
    ]
    tops = [i for i in insets if i.aspect >= params.top_aspect]
    if not tops:
        return []
    typical = float(np.median([i.side for i in tops]))
    tops = [i for i in tops if 0.6 * typical <= i.side <= 1.6 * typical]
    # A side face of one die can look square at the edge of the view; keep the larger inset
    # when two lie closer than one die. Framed insets go first: an open one beside a framed
    # one is that die's side face or a tinted shadow, not a die of its own.
    tops.sort(key=lambda i: (i.open, -i.area))
    die_size = params.face_per_inset * typical
    kept: list[Inset] = []
    for inset in tops:
        near = 0.75 * params.face_per_inset * max(inset.side, typical)
        beside_framed = 1.05 * die_size if inset.open else near
        if all(math.dist(inset.center, k.center) > (near if k.open else beside_framed) for k in kept):
            kept.append(inset)
    sides = [i for i in insets if i.aspect < params.top_aspect]
    readings = []
    for inset in kept:
        face, confidence, _ = colours[id(inset)]
        center = np.array(inset.center, np.float32)
        corners = order_clockwise(center + (inset.quad - center) * params.face_per_inset) * scale
        # Pixel centres: a half-size pixel at i covers full-size pixels 2i and 2i+1.
        corners += (scale - 1) / 2
        center = center * scale + (scale - 1) / 2
        cocked = _looks_cocked(inset, sides, params)
        readings.append(
            DieReading(
                center=(float(center[0]), float(center[1])),
                corners=tuple((float(x), float(y)) for x, y in corners),
                die="tossup" if with_faces else None,
                face=face if with_faces else None,
                confidence=confidence if with_faces else 0.0,
                cocked=cocked,
                size=inset.side * params.face_per_inset * scale,
            )
        )
    readings.sort(key=lambda d: (d.center[1], d.center[0]))
    return readings


def _looks_cocked(top: Inset, sides: list[Inset], params: TossUpParams) -> bool:
    reach = 1.2 * params.face_per_inset * top.side
    near = [s for s in sides if math.dist(s.center, top.center) < reach]
    if not near:
        return False
    return max(s.area for s in near) / top.area >= params.cocked_side_ratio
