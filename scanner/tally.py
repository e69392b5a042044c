"""Finding Tally Up dice and reading which die and which face, from a learned look.

Physical setup assumed: six coloured Tally Dice (one of each colour) and one Up Die on a tray,
seen from above (camera 30-50 cm high, tilted at most ~15 degrees) under any white-ish lamp.
Each top face carries one printed symbol (a star, a number, a circled number, or on the Up Die
+1 ... x2) in an ink that differs from the body colour.

Nobody here knows the real dice's shades, font or star, so everything about the look comes
from a `TallyModel` learned from labelled photos (`calibration.teach`): per die, its body colour
after white balance; per (die, face), a mean ink template on a canonical square. Reading a
frame then is:

1. White balance with the white-patch estimate (as for Toss Up), so lamp colour and brightness
   drop out, then label every pixel with the die whose learned body colour it matches (a 3-D
   lookup table, one back-projection per frame). Each colour occurs at most once in the set, so
   touching dice of different colours come apart by colour alone.
2. Per colour, the blob that looks most like a die top; side faces seen at the edge of the view
   are darker than the lit top face and are cut off by brightness.
3. The top face is warped to a canonical square; the ink is what differs from the body colour
   (in whichever direction: white or dark print); it is compared with that die's templates at
   all four right-angle turns. The margin between the best face and the best *different* face
   gives the confidence; a small margin gives "unsure", never a confident guess.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Mapping, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE, DieReading
from scanner.tossup import _illuminant, order_clockwise
from scorekeeper.rules.dice import TALLY_FACES, UP_DIE, UP_FACES

log = logging.getLogger(__name__)

#: The faces each die can show: identity narrows the face to these.
DIE_FACES: Mapping[str, tuple[str, ...]] = {**{d: tuple(dict.fromkeys(f)) for d, f in TALLY_FACES.items()},
                                            UP_DIE: tuple(UP_FACES)}
TALLY_DICE: tuple[str, ...] = tuple(DIE_FACES)
MODEL_VERSION = 1
#: Canonical face grid, pixels per side: enough for a two-digit number with a circle.
TEMPLATE_SIDE = 28
#: How far (pixels of the canonical grid) a face may sit off-centre: matching tries every shift.
SHIFT = 2
PATCH_SIDE = TEMPLATE_SIDE + 2 * SHIFT
#: The share of the top face (centred) that is warped to the canonical grid: the print lies
#: inside it, the rounded edges and their shading outside.
FACE_CROP = 0.86
#: The white level the balance maps the lamp's white to (leaves headroom for glare).
WHITE_LEVEL = 235.0
LUT_BINS = 32


@dataclass(frozen=True)
class TallyParams:
    """Tunable numbers of the Tally reader (dimensionless unless said)."""

    #: A pixel belongs to a die's body when its colour lies within this many learned spreads.
    body_distance: float = 3.2
    #: Smallest spreads (8-bit Lab units) assumed for L, a, b: shading on the top face and
    #: lamp differences the balance leaves over are never smaller than this.
    spread_floor: tuple[float, float, float] = (14.0, 7.0, 7.0)
    #: Top-face side in pixels at 1280 px width: the dice are never smaller or larger.
    min_side: float = 22.0
    max_side: float = 110.0
    #: Identity: "unsure" when the second-best die is within this much normalised distance.
    identity_margin: float = 1.2
    identity_max_distance: float = 4.5
    #: Face: the best template's correlation must reach min_score, and its distance
    #: (1 - correlation) must be at most max_ratio times the best different face's.
    min_score: float = 0.45
    max_ratio: float = 0.7
    #: Candidate blobs measured per colour (the largest first).
    max_candidates: int = 6
    #: Scales at which a face is compared with the templates.
    scales: tuple[float, ...] = (0.9, 1.0, 1.12)
    #: A blob whose best template (any face of its colour) correlates less is no die.
    min_print_score: float = 0.2
    #: Above this share of clipped body pixels the face is not read (overexposed camera).
    max_clipped: float = 0.3
    #: A top face much less square than this in the image is a die leaning on something.
    cocked_aspect: float = 0.6
    #: A blob less square than this is a top face plus a side face: keep the brighter square.
    square_aspect: float = 0.86


@dataclass(frozen=True)
class BodyColour:
    """A die's body colour after white balance, 8-bit Lab (OpenCV scale), with its spread."""

    lab: tuple[float, float, float]
    spread: tuple[float, float, float]
    examples: int = 0


@dataclass(frozen=True)
class FaceTemplate:
    """The mean ink of one face of one die on the canonical grid, upright as first taught."""

    die: str
    face: str
    ink: bytes  # TEMPLATE_SIDE**2 bytes, 0 = body, 255 = ink
    examples: int = 0

    def array(self) -> np.ndarray:
        return np.frombuffer(self.ink, np.uint8).reshape(TEMPLATE_SIDE, TEMPLATE_SIDE).astype(np.float32) / 255.0


@dataclass(frozen=True)
class TallyModel:
    """The learned look of one Tally Up set: body colours and face templates."""

    bodies: Mapping[str, BodyColour]
    templates: tuple[FaceTemplate, ...]
    die_size: float | None = None  # typical top-face side in pixels at 1280 px width, if known
    source: str = ""  # what it was learned from

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TallyModel) and self.to_json() == other.to_json()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": MODEL_VERSION,
            "side": TEMPLATE_SIDE,
            "source": self.source,
            "die_size": self.die_size,
            "bodies": {die: {"lab": [round(v, 2) for v in body.lab], "spread": [round(v, 2) for v in body.spread],
                             "examples": body.examples} for die, body in sorted(self.bodies.items())},
            "faces": [{"die": t.die, "face": t.face, "examples": t.examples,
                       "ink": base64.b64encode(t.ink).decode("ascii")} for t in self.templates],
        }


def _numbers(value: Any, count: int, where: str) -> tuple[float, ...]:
    if not (isinstance(value, list) and len(value) == count
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)):
        raise ValueError(f"{where} must be a list of {count} numbers, got {value!r}")
    return tuple(float(v) for v in value)


def model_from_json(data: Any, where: str = "tallyup") -> TallyModel:
    """A TallyModel from its JSON form; ValueError naming the field at fault otherwise."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} must be an object")
    if data.get("version") != MODEL_VERSION:
        raise ValueError(f"{where}.version is {data.get('version')!r}; this dicetray reads {MODEL_VERSION}")
    if data.get("side") != TEMPLATE_SIDE:
        raise ValueError(f"{where}.side is {data.get('side')!r}; this dicetray reads {TEMPLATE_SIDE}")
    unknown = sorted(set(data) - {"version", "side", "source", "die_size", "bodies", "faces"})
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}")
    bodies_raw = data.get("bodies")
    if not isinstance(bodies_raw, Mapping) or not bodies_raw:
        raise ValueError(f"{where}.bodies must be an object with one entry per die")
    bodies = {}
    for die, raw in bodies_raw.items():
        if die not in DIE_FACES:
            raise ValueError(f"{where}.bodies: unknown die {die!r}; expected one of {list(TALLY_DICE)}")
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where}.bodies.{die} must be an object")
        spread = _numbers(raw.get("spread"), 3, f"{where}.bodies.{die}.spread")
        if min(spread) <= 0:
            raise ValueError(f"{where}.bodies.{die}.spread must be positive")
        bodies[die] = BodyColour(_numbers(raw.get("lab"), 3, f"{where}.bodies.{die}.lab"), spread,
                                 int(raw.get("examples", 0)))
    faces_raw = data.get("faces")
    if not isinstance(faces_raw, list):
        raise ValueError(f"{where}.faces must be a list")
    templates = []
    for index, raw in enumerate(faces_raw):
        here = f"{where}.faces[{index}]"
        if not isinstance(raw, Mapping):
            raise ValueError(f"{here} must be an object")
        die, face = raw.get("die"), raw.get("face")
        if die not in DIE_FACES or face not in DIE_FACES[die]:
            raise ValueError(f"{here}: {die!r} has no face {face!r}")
        try:
            ink = base64.b64decode(str(raw.get("ink", "")), validate=True)
        except ValueError as error:
            raise ValueError(f"{here}.ink is not base64") from error
        if len(ink) != TEMPLATE_SIDE**2:
            raise ValueError(f"{here}.ink holds {len(ink)} bytes, expected {TEMPLATE_SIDE**2}")
        templates.append(FaceTemplate(die, face, ink, int(raw.get("examples", 0))))
    die_size = data.get("die_size")
    if die_size is not None and (not isinstance(die_size, (int, float)) or isinstance(die_size, bool) or die_size <= 0):
        raise ValueError(f"{where}.die_size must be a positive number or null")
    return TallyModel(bodies, tuple(templates), None if die_size is None else float(die_size), str(data.get("source", "")))


def default_model() -> TallyModel:
    """The built-in look, learned from the project's own fixture renders (scanner/data)."""
    text = resources.files("scanner").joinpath("data/tally_default.json").read_text()
    return model_from_json(json.loads(text), "scanner/data/tally_default.json")


# ------------------------------------------------------------------------------ pixels


#: The lamp colours we expect (2700-6500 K, a camera's imperfect white balance): blue and
#: green relative to red. A "white patch" outside this range is no white at all (a tray
#: with no white in view, only yellow print and an orange die), and is not trusted.
LAMP_BLUE_PER_RED = (0.45, 1.25)
LAMP_GREEN_PER_RED = (0.7, 1.2)


def balance_gains(image: np.ndarray) -> np.ndarray:
    """Per-channel gains that map the lamp's white (white patch) to WHITE_LEVEL.

    When the brightest pixels have no lamp's colour, only their level is used: a wrong
    colour correction would move every die's colour, no correction moves it by the lamp's
    tint only, which the learned colour spread covers.
    """
    b, g, r = (float(v) for v in _illuminant(image))
    if not (LAMP_BLUE_PER_RED[0] <= b / r <= LAMP_BLUE_PER_RED[1] and LAMP_GREEN_PER_RED[0] <= g / r <= LAMP_GREEN_PER_RED[1]):
        b = g = r = max(b, g, r)
    return (WHITE_LEVEL / np.float32([b, g, r])).astype(np.float32)


def balanced(image: np.ndarray, gains: np.ndarray) -> np.ndarray:
    return cv2.transform(image, np.diag(gains).astype(np.float32))


def lab_of(bgr: np.ndarray) -> np.ndarray:
    """8-bit Lab (OpenCV scale) of balanced BGR colours, any leading shape."""
    pixels = np.clip(np.asarray(bgr, np.float32).reshape(-1, 1, 3), 0, 255).astype(np.uint8)
    return cv2.cvtColor(pixels, cv2.COLOR_BGR2LAB).reshape(np.shape(bgr)).astype(np.float32)


def _spreads(model: TallyModel, params: TallyParams) -> dict[str, np.ndarray]:
    floor = np.float32(params.spread_floor)
    return {die: np.maximum(np.float32(body.spread), floor) for die, body in model.bodies.items()}


def colour_distances(lab: np.ndarray, model: TallyModel, params: TallyParams) -> dict[str, float]:
    """Normalised distance of one Lab colour to every learned body colour."""
    spreads = _spreads(model, params)
    return {die: float(np.sqrt((((lab - np.float32(body.lab)) / spreads[die]) ** 2).sum()))
            for die, body in model.bodies.items()}


@dataclass
class _Compiled:
    """What a model turns into for fast reading: the colour lookup table, template matrices."""

    dice: tuple[str, ...]
    lut: np.ndarray  # LUT_BINS**3 uint8, flattened (L, a, b) bins: die index + 1, or 0
    templates: dict[str, tuple[list[str], np.ndarray]]  # die -> (face per row, rows x side^2), 4 turns each
    tight: dict[str, np.ndarray]  # die -> LUT_BINS**3 uint8: 255 within half the body distance


def compile_model(model: TallyModel, params: TallyParams) -> _Compiled:
    dice = tuple(sorted(model.bodies))
    step = 256 / LUT_BINS
    centres = (np.arange(LUT_BINS, dtype=np.float32) + 0.5) * step
    grid = np.stack(np.meshgrid(centres, centres, centres, indexing="ij"), axis=-1)
    spreads = _spreads(model, params)
    distances = np.stack([np.sqrt((((grid - np.float32(model.bodies[d].lab)) / spreads[d]) ** 2).sum(-1)) for d in dice])
    best = distances.argmin(0)
    lut = np.where(distances.min(0) <= params.body_distance, best + 1, 0).astype(np.uint8).ravel()
    # Per die, the colours within half the distance: to tell a die from a tray of its colour.
    tight = {d: np.where(distances[i] <= params.body_distance / 2, 255, 0).astype(np.uint8).ravel()
             for i, d in enumerate(dice)}
    templates: dict[str, tuple[list[str], np.ndarray]] = {}
    for die in dice:
        rows = [(t.face, _normalised(np.rot90(t.array(), k))) for t in model.templates
                if t.die == die and t.face in DIE_FACES[die] for k in range(4)]
        if rows:
            templates[die] = ([f for f, _ in rows], np.ascontiguousarray(np.stack([r for _, r in rows]), np.float32))
    return _Compiled(dice, lut, templates, tight)


def _normalised(ink: np.ndarray) -> np.ndarray:
    """Zero mean, unit length: the dot product of two is their correlation."""
    flat = ink.astype(np.float32).ravel() - float(ink.mean())
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 1e-6 else flat


# ------------------------------------------------------------------------------ finding


@dataclass
class Blob:
    die: str
    quad: np.ndarray  # 4x2 float, full-resolution pixels, clockwise from top-left
    center: tuple[float, float]
    side: float
    aspect: float
    fill: float  # blob area / its bounding rectangle's area: how die-like it is
    lab: np.ndarray  # mean balanced Lab of the top face's body pixels
    clipped: float = 0.0  # share of those pixels that the camera clipped (a channel at 255)


def _quad(contour: np.ndarray) -> np.ndarray:
    perimeter = cv2.arcLength(contour, True)
    hull = cv2.convexHull(contour)
    for epsilon in (0.04, 0.06, 0.08, 0.1):
        approx = cv2.approxPolyDP(hull, epsilon * perimeter, True)
        if len(approx) == 4 and cv2.isContourConvex(approx):
            return approx.reshape(4, 2).astype(np.float32)
    return cv2.boxPoints(cv2.minAreaRect(contour)).astype(np.float32)


def _top_face(region: np.ndarray, body: np.ndarray, light: np.ndarray) -> np.ndarray:
    """The lit top face inside a die's blob: side faces seen obliquely are darker.

    The threshold comes from the body pixels only (print would add a third brightness level)
    and is applied to the whole filled region, so light print stays inside the top face.
    """
    mask = region
    values = light[body > 0]
    if values.size < 20:
        return mask
    threshold, _ = cv2.threshold(values.reshape(-1, 1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    high, low = values[values > threshold], values[values <= threshold]
    # Only split when there really are two brightness levels (a side face in view).
    if high.size == 0 or low.size == 0 or float(high.mean()) - float(low.mean()) < 30:
        return mask
    top = cv2.bitwise_and(mask, cv2.compare(light, float(threshold), cv2.CMP_GT))
    top = cv2.morphologyEx(top, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(top, connectivity=4)
    if count < 2:
        return mask
    biggest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    if stats[biggest, cv2.CC_STAT_AREA] < 0.35 * cv2.countNonZero(mask):
        return mask
    return np.where(labels == biggest, 255, 0).astype(np.uint8)


def lut_index(lab: np.ndarray) -> np.ndarray:
    """Per pixel, its (L, a, b) bin in the flattened lookup tables."""
    shift = int(math.log2(256 // LUT_BINS))
    bits = int(math.log2(LUT_BINS))
    q = np.right_shift(lab, shift).astype(np.int32)
    return (q[..., 0] << (2 * bits)) | (q[..., 1] << bits) | q[..., 2]


def label_pixels(lab: np.ndarray, compiled: _Compiled) -> np.ndarray:
    """Per pixel, the index + 1 of the die whose body colour it has, or 0 (uint8 image)."""
    return compiled.lut[lut_index(lab)]


def _refine(image: np.ndarray, gains: np.ndarray, compiled: _Compiled, index: int, box: tuple[int, int, int, int],
            min_side: float, max_side: float, band: np.ndarray | None = None,
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """(top-face outline, its body mask, Lab window) at full resolution inside `box`.

    The half-resolution blob only says where to look: corners and the body colour are
    measured at full resolution, where a die is 30-60 pixels wide.
    """
    x, y, w, h = box
    window = image[y:y + h, x:x + w]
    lab = cv2.cvtColor(balanced(window, gains), cv2.COLOR_BGR2LAB)
    if band is None:
        mask = cv2.compare(label_pixels(lab, compiled), index, cv2.CMP_EQ)
    else:  # the narrower colour band that told the die from a tray of its colour
        mask = band[lut_index(lab)]
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    found = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]
    if not found:
        return None
    # A top face is convex: print reaching near its edge (a circle) must not bite into it.
    contour = cv2.convexHull(max(found, key=cv2.contourArea))
    region = np.zeros_like(mask)
    cv2.drawContours(region, [contour], -1, 255, -1)
    body = cv2.bitwise_and(region, mask)
    top = _top_face(region, body, lab[..., 0])
    found = cv2.findContours(top, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]
    if not found:
        return None
    outline = cv2.convexHull(max(found, key=cv2.contourArea))
    side = math.sqrt(max(cv2.contourArea(outline), 1.0))
    if not min_side <= side <= max_side:
        return None
    filled = np.zeros_like(top)
    cv2.drawContours(filled, [outline], -1, 255, -1)
    body = cv2.bitwise_and(filled, mask)
    # Clipping some channels but not all changes a colour's hue (a white die clips in all
    # three and stays white).
    high = cv2.max(cv2.max(window[..., 0], window[..., 1]), window[..., 2])
    low = cv2.min(cv2.min(window[..., 0], window[..., 1]), window[..., 2])
    saturated = cv2.bitwise_and(cv2.compare(high, 253, cv2.CMP_GE), cv2.compare(low, 253, cv2.CMP_LT))
    clipped = cv2.countNonZero(cv2.bitwise_and(saturated, body)) / max(cv2.countNonZero(body), 1)
    return outline, body, lab, clipped


def _brighter_square(light: np.ndarray, body: np.ndarray, centre: tuple[float, float], size: tuple[float, float],
                     angle: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The top face inside an elongated blob (top face plus a side face seen obliquely).

    The top face is a square as wide as the blob's short side, at the end of its long side
    that is lit better (a side face is lit at a grazing angle).
    """
    (cx, cy), (w, h) = centre, size
    side = min(w, h)
    theta = math.radians(angle)
    axis = (math.cos(theta), math.sin(theta)) if w >= h else (-math.sin(theta), math.cos(theta))
    offset = (max(w, h) - side) / 2
    best, best_level = ((cx, cy), (side, side)), -1.0
    for sign in (-1, 1):
        centre_here = (cx + sign * offset * axis[0], cy + sign * offset * axis[1])
        square = np.zeros_like(body)
        cv2.fillConvexPoly(square, cv2.boxPoints((centre_here, (side, side), angle)).astype(np.int32), 255)
        inside = cv2.bitwise_and(square, body)
        if cv2.countNonZero(inside) == 0:
            continue
        level = cv2.mean(light, inside)[0]
        if level > best_level:
            best, best_level = (centre_here, (side, side)), level
    return best


def _tighter(index: np.ndarray, contour: np.ndarray, tight: np.ndarray) -> list[np.ndarray]:
    """Contours (image coordinates) of the pixels inside `contour` in the die's tight band."""
    x, y, w, h = cv2.boundingRect(contour)
    inside = np.zeros((h, w), np.uint8)
    cv2.drawContours(inside, [contour - np.array([x, y])], -1, 255, -1)
    mask = cv2.bitwise_and(inside, tight[index[y:y + h, x:x + w]])
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    return [c + np.array([x, y]) for c in cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]]


def find_blobs(image: np.ndarray, compiled: _Compiled, model: TallyModel, params: TallyParams,
               gains: np.ndarray) -> list[Blob]:
    """Candidate top faces per die colour: found at half resolution, measured at full."""
    scale = 2
    small = cv2.resize(image, (image.shape[1] // scale, image.shape[0] // scale), interpolation=cv2.INTER_AREA)
    small_index = lut_index(cv2.cvtColor(balanced(small, gains), cv2.COLOR_BGR2LAB))
    labels = compiled.lut[small_index]
    px = image.shape[1] / 1280.0
    min_side, max_side = params.min_side * px, params.max_side * px
    kernel = np.ones((3, 3), np.uint8)
    taken = np.zeros(labels.shape, np.uint8)  # filled coloured dice: white print inside is no Up Die
    blobs: list[Blob] = []
    order = sorted(compiled.dice, key=lambda d: d == UP_DIE)  # the white/black Up Die last
    for die in order:
        index = compiled.dice.index(die) + 1
        mask = cv2.compare(labels, index, cv2.CMP_EQ)
        if die == UP_DIE:
            mask = cv2.bitwise_and(mask, cv2.bitwise_not(taken))
        # Close only: the body between a circled number's ring and the face's edge is a
        # strip of two or three pixels that an opening would cut; specks fail the size test.
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, kernel)
        contours = [c for c in cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]
                    if cv2.contourArea(c) * scale * scale >= (min_side**2) * 0.5]
        # A patterned cloth gives hundreds of same-coloured squares: measuring each would cost
        # far more than the frame budget. The largest few per colour include the die.
        contours.sort(key=cv2.contourArea)
        pending = [(c, True) for c in contours[-params.max_candidates:]]
        while pending:
            contour, may_split = pending.pop()
            area = cv2.contourArea(contour) * scale * scale
            if area > (max_side**2) * 2.5 and may_split:
                # A tray of nearly the die's colour (green felt, orange wood) merges with it:
                # look again inside with a colour band half as wide.
                inner = sorted(_tighter(small_index, contour, compiled.tight[die]), key=cv2.contourArea)
                pending.extend((c, False) for c in inner[-params.max_candidates:]
                               if cv2.contourArea(c) * scale * scale >= (min_side**2) * 0.5)
                continue
            if area < (min_side**2) * 0.5 or area > (max_side**2) * 2.5:
                continue
            bx, by, bw, bh = cv2.boundingRect(contour)
            pad = 3
            x0, y0 = max(bx * scale - pad, 0), max(by * scale - pad, 0)
            x1, y1 = min((bx + bw) * scale + pad, image.shape[1]), min((by + bh) * scale + pad, image.shape[0])
            band = None if may_split else compiled.tight[die]
            refined = _refine(image, gains, compiled, index, (x0, y0, x1 - x0, y1 - y0), min_side, max_side, band)
            if refined is None:
                continue
            outline, body, lab, clipped = refined
            (cx, cy), (rw, rh), angle = cv2.minAreaRect(outline)
            if min(rw, rh) < 0.4 * max(rw, rh):
                continue
            fill = cv2.contourArea(outline) / max(rw * rh, 1.0)
            aspect = min(rw, rh) / max(rw, rh, 1e-6)
            if aspect < params.square_aspect:
                (cx, cy), (rw, rh) = _brighter_square(lab[..., 0], body, (cx, cy), (rw, rh), angle)
            colour = np.float32(cv2.mean(lab, body)[:3])
            quad = cv2.boxPoints(((cx + x0, cy + y0), (rw, rh), angle)).astype(np.float32)
            blobs.append(Blob(die, order_clockwise(quad), (cx + x0, cy + y0), math.sqrt(rw * rh), aspect, fill,
                              colour, clipped))
            if die != UP_DIE:
                cv2.drawContours(taken[by:by + bh, bx:bx + bw], [contour - np.array([bx, by])], -1, 255, -1)
    return blobs


def choose_dice(blobs: Sequence[Blob], model: TallyModel) -> list[Blob]:
    """At most one die per colour: the most die-like blob of the common size."""
    if not blobs:
        return []
    typical = model.die_size * 1.0 if model.die_size else None
    good = [b for b in blobs if b.fill > 0.6 and b.aspect > 0.45]
    if not good:
        return []
    if typical is None:
        # The size most *colours* agree on: every die in a set is the same size, while a
        # patterned cloth repeats one or two colours at its own size many times.
        def support(size: float) -> tuple[int, float]:
            colours = {b.die for b in good if abs(b.side / size - 1) < 0.25}
            return len(colours), sum(b.fill * b.aspect for b in good if abs(b.side / size - 1) < 0.25)

        typical = max((b.side for b in good), key=support)
    chosen: dict[str, Blob] = {}
    for blob in sorted(good, key=lambda b: -(b.fill * b.aspect) + abs(b.side / typical - 1)):
        if not 0.6 * typical <= blob.side <= 1.6 * typical:
            continue
        if blob.die in chosen:
            continue
        if any(math.dist(blob.center, other.center) < 0.6 * typical for other in chosen.values()):
            continue
        chosen[blob.die] = blob
    return list(chosen.values())


# ------------------------------------------------------------------------------ reading


def face_patch(image: np.ndarray, quad: np.ndarray, gains: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """The top face warped to the canonical grid plus SHIFT pixels around (float BGR, balanced).

    The central TEMPLATE_SIDE square holds the central FACE_CROP of the face (`scale` > 1
    magnifies: for a quad found a little too large).
    """
    half = TEMPLATE_SIDE / FACE_CROP / 2 * scale
    c = PATCH_SIDE / 2
    target = np.float32([(c - half, c - half), (c + half, c - half), (c + half, c + half), (c - half, c + half)])
    matrix = cv2.getPerspectiveTransform(np.float32(quad), target)
    patch = cv2.warpPerspective(image, matrix, (PATCH_SIDE, PATCH_SIDE), flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_REPLICATE)
    return patch.astype(np.float32) * gains


def windows(ink: np.ndarray) -> np.ndarray:
    """Every TEMPLATE_SIDE square of a PATCH_SIDE ink mask (each shift), as raw rows."""
    view = np.lib.stride_tricks.sliding_window_view(ink, (TEMPLATE_SIDE, TEMPLATE_SIDE))
    return view.reshape(-1, TEMPLATE_SIDE * TEMPLATE_SIDE)


def normalised_rows(rows: np.ndarray) -> np.ndarray:
    centred = rows - rows.mean(axis=1, keepdims=True)
    return centred / np.maximum(np.linalg.norm(centred, axis=1, keepdims=True), 1e-6)


def _middle(side: int) -> np.ndarray:
    """Flat boolean mask of the central disc of a side x side patch (the print's area)."""
    grid = (np.arange(side, dtype=np.float32) + 0.5) / side - 0.5
    return (np.hypot(grid[:, None], grid[None, :]) < 0.33).ravel()


def ink_of(patch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ink mask 0-1, body colour, ink colour) of a canonical face patch.

    The body is the face's dominant colour; the ink is whatever differs most from it, white
    or dark, in the middle of the face (the print is there; the shaded rounded edges and a
    glimpse of a side face are not): the mask is each pixel's position on the line from body
    to ink colour.
    """
    pixels = patch.reshape(-1, 3)
    body = np.median(pixels, axis=0)
    difference = pixels - body
    distance = np.sqrt((difference**2).sum(1))
    middle = _middle(patch.shape[0])
    central = distance[middle]
    far = np.zeros_like(middle)
    far[middle] = central >= max(float(np.percentile(central, 80)) * 0.7, 12.0)
    if far.sum() < 4:
        return np.zeros(patch.shape[:2], np.float32), body, body
    ink = pixels[far].mean(axis=0)
    direction = ink - body
    mask = np.clip((difference * direction).sum(1) / max(float((direction * direction).sum()), 1e-6), 0, 1)
    return mask.reshape(patch.shape[:2]).astype(np.float32), body, ink


def match_face(ink: np.ndarray | Sequence[np.ndarray], die: str, compiled: _Compiled,
               params: TallyParams) -> tuple[str, float, float]:
    """(face, confidence, best correlation) among the faces this die can show.

    `ink` is one canonical ink mask or several (the same face cut at a few scales).
    """
    if die not in compiled.templates:
        return UNSURE, 0.0, 0.0
    faces, matrix = compiled.templates[die]
    inks = [ink] if isinstance(ink, np.ndarray) else list(ink)
    # Best over every shift and scale of the patch and every right-angle turn of every template.
    rows = np.concatenate([windows(i) for i in inks])
    # cv2.gemm, not numpy's matmul: OpenBLAS starts threads for it, which on a busy small
    # machine (a Pi reading a camera, a server with other work) costs ten times the product.
    scores = cv2.gemm(np.ascontiguousarray(normalised_rows(rows), np.float32), matrix, 1.0, None, 0.0,
                      flags=cv2.GEMM_2_T).max(axis=0)
    best = int(np.argmax(scores))
    face, score = faces[best], float(scores[best])
    others = [float(s) for f, s in zip(faces, scores) if f != face]
    runner_up = max(others) if others else 0.0
    # Near-identical faces (+100 / -100) differ in a few pixels: what counts is how much
    # closer the patch is to the best template than to the runner-up, i.e. the ratio of
    # their distances (1 - correlation), not the raw difference of correlations.
    ratio = (1.0 - score) / max(1.0 - runner_up, 1e-6)
    if score < params.min_score or ratio > params.max_ratio:
        return UNSURE, 0.0, score
    confidence = 0.5 + 0.5 * (params.max_ratio - ratio) / params.max_ratio
    return face, round(confidence * min(1.0, score / 0.7), 4), score


def identify(lab: np.ndarray, model: TallyModel, params: TallyParams) -> tuple[str, float]:
    """(die, confidence) from the body colour; "unsure" when two dice are nearly as close."""
    distances = colour_distances(lab, model, params)
    ranked = sorted(distances.items(), key=lambda kv: kv[1])
    die, best = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else best + 10
    margin = second - best
    if best > params.identity_max_distance or margin < params.identity_margin:
        return UNSURE, 0.0
    return die, min(1.0, 0.5 + margin / 4.0)


@dataclass
class TallyReader:
    """A compiled model, ready to read frames; build once, call `read` per frame."""

    model: TallyModel
    params: TallyParams = field(default_factory=TallyParams)

    def __post_init__(self) -> None:
        self.compiled = compile_model(self.model, self.params)

    def read(self, image: np.ndarray, with_faces: bool = True) -> list[DieReading]:
        gains = balance_gains(image)
        readings = []
        # A patch of tray or rim in a die's colour carries no print like that die's: the best
        # template of its colour must match at least a little (before choosing one per colour,
        # so such a patch cannot take the real die's place).
        printed = []
        for blob in find_blobs(image, self.compiled, self.model, self.params, gains):
            ink = ink_of(face_patch(image, blob.quad, gains))[0]
            _, _, score = match_face(ink, blob.die, self.compiled, self.params)
            if score >= self.params.min_print_score or blob.die not in self.compiled.templates:
                printed.append(blob)
        for blob in choose_dice(printed, self.model):
            cocked = blob.aspect < self.params.cocked_aspect
            die, face, confidence = None, None, 0.0
            if with_faces:
                die, die_confidence = identify(blob.lab, self.model, self.params)
                face = UNSURE
                # A body the camera clipped has lost its colour: which die it is, is a guess.
                if die != UNSURE and blob.clipped <= self.params.max_clipped:
                    # The found quad may be a little off in size (a sliver of side face, a
                    # rounded edge in shadow): the print is compared at a few scales.
                    inks = [ink_of(face_patch(image, blob.quad, gains, scale))[0] for scale in self.params.scales]
                    face, face_confidence, _ = match_face(inks, die, self.compiled, self.params)
                    confidence = min(die_confidence, face_confidence) if face != UNSURE else 0.0
            readings.append(DieReading(
                center=blob.center, corners=tuple((float(x), float(y)) for x, y in blob.quad), die=die, face=face,
                confidence=confidence, cocked=cocked, size=blob.side,
            ))
        readings.sort(key=lambda d: (d.center[1], d.center[0]))
        return readings


def read_tally(image: np.ndarray, model: TallyModel | None = None, params: TallyParams | None = None,
               with_faces: bool = True) -> list[DieReading]:
    """Read one frame (compiles the model each call: use TallyReader for a stream)."""
    return TallyReader(model or default_model(), params or TallyParams()).read(image, with_faces)
