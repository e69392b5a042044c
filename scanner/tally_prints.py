"""Reading a Tally die's print: its top face warped to the canonical square, the ink told from
the body, and the ink compared with the die's learned face templates.

Physical setup assumed: the Tally reader's (scanner/tally.py): a die's top face, found in a frame
from a camera 30-50 cm above the tray, as a quad of image pixels that may be a few pixels off;
one printed symbol on it in an ink lighter or darker than the body, under any white-ish lamp,
perhaps with a shadow across it.

A model compiles (`compile_model`) into a colour lookup table and template matrices (every
template at all four right-angle turns, padded for the shifts). A face is warped to a PATCH_SIDE
patch (`face_patch`), its ink is whatever differs most from the body (`ink_of`; a shadow's shade
can be divided out first, `shadow_flattened`), and the ink mask is correlated with every template
at every shift (`face_scores`). The margin between the best face and the best different face
decides (`decide_face`). The strokes that tell two nearly alike prints apart (`pair_vote`), the
ring of a circled face (`ring_sectors`) and a star's concave outline (`ink_solidity`) are checked
by the reader.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Collection, Mapping, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE
from scanner.tally_colour import grid_distances
from scanner.tally_model import (
    DIE_FACES, FACE_CROP, LUT_BINS, PATCH_SIDE, SHIFT, TEMPLATE_SIDE, FaceTemplate, TallyModel, TallyParams,
)
from scanner.dice import is_circled


@dataclass
class Compiled:
    """What a model turns into for fast reading: the colour lookup table, template matrices."""

    dice: tuple[str, ...]
    lut: np.ndarray  # LUT_BINS**3 uint8, flattened (L, a, b) bins: die index + 1, or 0
    templates: dict[str, tuple[list[str], np.ndarray]]  # die -> (face per row, rows x side^2), 4 turns each
    tight: dict[str, np.ndarray]  # die -> LUT_BINS**3 uint8: 255 within half the body distance
    #: Like `templates`, only the first (mean) template of each face: a quicker first look.
    means: dict[str, tuple[list[str], np.ndarray]] = field(default_factory=dict)
    #: Per die, the pairs of its faces whose prints are nearly the same (see close_faces).
    close: dict[str, set[frozenset[str]]] = field(default_factory=dict)
    #: Likewise with the lower bar for a clipped, faint print (see faint_close_faces).
    faint: dict[str, set[frozenset[str]]] = field(default_factory=dict)
    #: Per die and (face, other face) of similar prints: both mean templates, the other's
    #: turned and shifted onto the face's (see pair_similarity).
    pairs: dict[str, dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)
    #: Per die, the mean template of each circled face (see ring_sectors).
    circled: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: Per die, the rows of `templates` that are not in `means` (the same rows as there, bit
    #: for bit), and where each row of `templates` lies in `means`' rows followed by these:
    #: a print's products with the mean templates, already taken, are not taken again.
    rest: dict[str, np.ndarray] = field(default_factory=dict)
    order: dict[str, np.ndarray] = field(default_factory=dict)
    #: Per die, for scores in `templates`' row order (see _per_face_of): each face once, in
    #: the order the rows first name it, the rows sorted face by face, and where each starts.
    by_face: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = field(default_factory=dict)


def compile_model(model: TallyModel, params: TallyParams) -> Compiled:
    dice = tuple(sorted(model.bodies))
    step = 256 / LUT_BINS
    centres = (np.arange(LUT_BINS, dtype=np.float32) + 0.5) * step
    grid = np.stack(np.meshgrid(centres, centres, centres, indexing="ij"), axis=-1)
    distances = grid_distances(grid, model, dice, params.spread_floor)
    best = distances.argmin(0)
    lut = np.where(distances.min(0) <= params.body_distance, best + 1, 0).astype(np.uint8).ravel()
    # Per die, the colours within half the distance of its own shade (the narrow floor: not
    # widened for other tables' light): to tell a die from a tray of nearly its colour.
    core = grid_distances(grid, model, dice, params.core_spread_floor)
    tight = {d: np.where(core[i] <= params.body_distance / 2, 255, 0).astype(np.uint8).ravel()
             for i, d in enumerate(dice)}
    templates: dict[str, tuple[list[str], np.ndarray]] = {}
    for die in dice:
        # Padded with body to the patch size, so ink that a shift moves off the template
        # (a "+" at the edge of "+100") still counts against it instead of vanishing.
        rows = [(t.face, _normalised(np.pad(np.rot90(t.array(), k), SHIFT))) for t in model.templates
                if t.die == die and t.face in DIE_FACES[die] for k in range(4)]
        if rows:
            templates[die] = ([f for f, _ in rows], np.ascontiguousarray(np.stack([r for _, r in rows]), np.float32))
    means: dict[str, tuple[list[str], np.ndarray]] = {}
    close: dict[str, set[frozenset[str]]] = {}
    faint: dict[str, set[frozenset[str]]] = {}
    pairs: dict[str, dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]] = {}
    circled: dict[str, dict[str, np.ndarray]] = {}
    for die in templates:
        first = _first_templates(model, die)
        circled[die] = {face: template.array() for face, template in first.items() if is_circled(face)}
        rows = [(t.face, _normalised(np.pad(np.rot90(t.array(), k), SHIFT))) for t in first.values() for k in range(4)]
        means[die] = ([f for f, _ in rows], np.ascontiguousarray(np.stack([r for _, r in rows]), np.float32))
        # Mean template against mean template, at every turn and shift.
        alone = Compiled(dice, lut, {die: means[die]}, tight)
        similar = {(face, other): score for face, template in first.items()
                   for other, score in face_scores(np.pad(template.array(), SHIFT), die, alone).items() if other != face}
        close[die] = {frozenset(pair) for pair, score in similar.items() if score >= params.close_faces}
        faint[die] = {frozenset(pair) for pair, score in similar.items() if score >= params.faint_close_faces}
        pairs[die] = {(face, other): (first[face].array(), _aligned(first[other].array(), first[face].array()))
                      for (face, other), score in similar.items() if score >= params.pair_similarity}
    rest: dict[str, np.ndarray] = {}
    order: dict[str, np.ndarray] = {}
    for die in templates:
        # The rows in the order `templates` was built in: the first template of each face
        # makes `means`' rows (face by face, four turns each), every other one `rest`'s.
        first = list(_first_templates(model, die).values())
        _, matrix = templates[die]
        mean_rows = len(means[die][1])
        positions, rest_rows = [], []
        row = 0
        for t in model.templates:
            if t.die != die or t.face not in DIE_FACES[die]:
                continue
            mean_at = next((index for index, f in enumerate(first) if f is t), None)
            for k in range(4):
                if mean_at is not None:
                    positions.append(mean_at * 4 + k)
                else:
                    positions.append(mean_rows + len(rest_rows))
                    rest_rows.append(matrix[row])
                row += 1
        order[die] = np.array(positions, np.intp)
        rest[die] = np.ascontiguousarray(np.stack(rest_rows) if rest_rows else matrix[:0], np.float32)
        assert np.array_equal(np.concatenate([means[die][1], rest[die]])[order[die]], matrix)
    by_face: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
    for die, (faces, _) in templates.items():
        names = list(dict.fromkeys(faces))
        counts = Counter(faces)
        by_face[die] = (names, np.argsort([names.index(f) for f in faces], kind="stable"),
                        np.cumsum([0] + [counts[name] for name in names[:-1]]))
    return Compiled(dice, lut, templates, tight, means, close, faint, pairs, circled, rest, order, by_face)


def _first_templates(model: TallyModel, die: str) -> dict[str, FaceTemplate]:
    """The mean (first) template of each face of `die` that the model has."""
    first: dict[str, FaceTemplate] = {}
    for t in model.templates:
        if t.die == die and t.face in DIE_FACES[die]:
            first.setdefault(t.face, t)
    return first


def _best_pose(ink: np.ndarray, template: np.ndarray) -> tuple[int, int, int]:
    """(quarter turns, row, column): where in an ink mask at least TEMPLATE_SIDE wide, and
    turned how far, a TEMPLATE_SIDE template matches best."""
    # OpenCV's normalised correlation of every window with each turn: the correlations of
    # the windows' rows with the turns' (np.corrcoef's), without taking the windows apart
    # into rows (0.25 -> 0.16 ms a call in a face read). Stacked turn last, so that equal
    # scores pick the same pose.
    ink = np.ascontiguousarray(ink, np.float32)
    scores = np.stack([cv2.matchTemplate(ink, np.ascontiguousarray(np.rot90(template, k), np.float32),
                                         cv2.TM_CCOEFF_NORMED) for k in range(4)], axis=-1)
    window, turn = divmod(int(np.argmax(scores)), 4)
    row, column = divmod(window, ink.shape[1] - TEMPLATE_SIDE + 1)
    return turn, row, column


def _aligned(template: np.ndarray, onto: np.ndarray) -> np.ndarray:
    """`template` turned and shifted to lie best on `onto` (both TEMPLATE_SIDE squares)."""
    turn, row, column = _best_pose(np.pad(onto, SHIFT), template)
    canvas = np.zeros((PATCH_SIDE, PATCH_SIDE), np.float32)
    canvas[row:row + TEMPLATE_SIDE, column:column + TEMPLATE_SIDE] = np.rot90(template, turn)
    return canvas[SHIFT:SHIFT + TEMPLATE_SIDE, SHIFT:SHIFT + TEMPLATE_SIDE]


def _laid(ink: np.ndarray, template: np.ndarray) -> tuple[np.ndarray, int]:
    """(the TEMPLATE_SIDE square of a PATCH_SIDE ink mask where `template` fits it best, the
    template's quarter turns there), looking further than the reading's own shifts."""
    wider = np.pad(ink, SHIFT)
    turn, row, column = _best_pose(wider, template)
    return wider[row:row + TEMPLATE_SIDE, column:column + TEMPLATE_SIDE], turn


def pair_vote(ink: np.ndarray, face: np.ndarray, other: np.ndarray, difference: float) -> float | None:
    """How much a PATCH_SIDE ink mask shows `face` rather than `other` (two aligned mean
    templates of similar prints): 1 when it is inked just where only `face` is and blank
    where only `other` is, 0 the other way round; None when their prints do not differ.

    The print is laid where `face` fits it best, looking further than the reading's own
    shifts: a print a pixel off from the stroke it is judged by votes wrongly.
    """
    seen, turn = _laid(ink, face)
    face, other = np.rot90(face, turn), np.rot90(other, turn)
    # The print's own ink and body levels, where both templates agree.
    both_inked, both_blank = (face > 0.6) & (other > 0.6), (face < 0.15) & (other < 0.15)
    blank = float(np.median(seen[both_blank])) if both_blank.any() else 0.0
    inked = float(np.median(seen[both_inked])) if np.count_nonzero(both_inked) >= 3 else 1.0
    span = max(inked - blank, 0.2)
    votes = []
    only_face, only_other = face - other > difference, other - face > difference
    if np.count_nonzero(only_face) >= 2:
        votes.append((float(seen[only_face].mean()) - blank) / span)
    if np.count_nonzero(only_other) >= 2:
        votes.append(1.0 - (float(seen[only_other].mean()) - blank) / span)
    return float(np.mean(votes)) if votes else None


#: A circled print's ring: its ink beyond this share of the print's outer radius.
RING_RADIUS = 0.78


def ring_shown(sectors: Sequence[float], params: TallyParams) -> bool:
    """Whether a circled face's ring shows all the way round (`sectors`: its ring_sectors):
    every eighth with at least params.min_ring ink, or every eighth but one with at least
    params.min_ring_rest. A die's rounded edge in shade, or its side face, seen through a
    misplaced square looks like part of a ring, never like all of it."""
    least = sorted(sectors)
    return not least or least[0] >= params.min_ring or len(least) > 1 and least[1] >= params.min_ring_rest


def ring_sectors(ink: np.ndarray, template: np.ndarray, sectors: int = 8) -> list[float]:
    """The mean ink (0-1) a PATCH_SIDE ink mask shows over each of `sectors` equal arcs of a
    circled face's ring, in order round it, with the circled mean template laid where it fits
    the print best; empty for a template without ink."""
    seen, turn = _laid(ink, template)
    ys, xs = np.nonzero(np.rot90(template, turn) > 0.5)
    if len(ys) == 0:
        return []
    centre = (TEMPLATE_SIDE - 1) / 2
    radius = np.hypot(ys - centre, xs - centre)
    # The ring is the print's outermost ink.
    ring = radius > RING_RADIUS * float(np.percentile(radius, 98))
    angle = (np.arctan2(ys[ring] - centre, xs[ring] - centre) + math.pi) / (2 * math.pi)
    sector = np.minimum((angle * sectors).astype(int), sectors - 1)
    values = seen[ys[ring], xs[ring]]
    return [float(values[sector == k].mean()) for k in range(sectors) if np.any(sector == k)]


def ink_solidity(ink: np.ndarray) -> float:
    """The largest shape of an ink mask (0-1, cut at 0.5): its area over its convex hull's
    (1 for a convex blob; 0 without ink)."""
    contours, _ = cv2.findContours(np.uint8(ink > 0.5), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return 0.0
    largest = max(contours, key=cv2.contourArea)
    hull = cv2.contourArea(cv2.convexHull(largest))
    return cv2.contourArea(largest) / hull if hull > 0 else 0.0


def ink_whiteness(body: np.ndarray, ink: np.ndarray) -> float:
    """How far (0-1, the sine of the angle) the ink colour's difference from the body colour
    turns from the body colour's own direction: near 0 when the ink is the body's colour only
    brighter or darker, near 1 for white print on a saturated body."""
    body = np.asarray(body, np.float64)
    difference = np.asarray(ink, np.float64) - body
    length = float(np.linalg.norm(difference))
    direction = float(np.linalg.norm(body))
    if length < 1e-6 or direction < 1e-6:
        return 0.0
    along = float(difference @ body) / direction
    return math.sqrt(max(length * length - along * along, 0.0)) / length


def _normalised(ink: np.ndarray) -> np.ndarray:
    """Zero mean, unit length: the dot product of two is their correlation."""
    flat = ink.astype(np.float32).ravel() - float(ink.mean())
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 1e-6 else flat


# ------------------------------------------------------------------------------ reading


def face_patch(image: np.ndarray, quad: np.ndarray, gains: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """The top face warped to the canonical grid plus SHIFT pixels around (float BGR, balanced).

    The central TEMPLATE_SIDE square holds the central FACE_CROP of the face (`scale` > 1
    magnifies: for a quad found a little too large).
    """
    return times_gains(warped_face(image, quad, scale), gains)


def _face_target(scale: float) -> np.ndarray:
    """The corners a face's quad goes to in its PATCH_SIDE patch (see face_patch)."""
    half = TEMPLATE_SIDE / FACE_CROP / 2 * scale
    c = PATCH_SIDE / 2
    target = np.float32([(c - half, c - half), (c + half, c - half), (c + half, c + half), (c - half, c + half)])
    target.setflags(write=False)
    return target


#: The corners of an unscaled face patch: most warps are unscaled (every square _placed
#: tries), so they are made once.
_FACE_TARGET = _face_target(1.0)


def warped_face(image: np.ndarray, quad: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """face_patch before the gains: the warp alone, in the image's own dtype."""
    target = _FACE_TARGET if scale == 1.0 else _face_target(scale)
    matrix = cv2.getPerspectiveTransform(np.float32(quad), target)
    return cv2.warpPerspective(image, matrix, (PATCH_SIDE, PATCH_SIDE), flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REPLICATE)


def inks_as(warps: Sequence[np.ndarray], gains: np.ndarray, body: np.ndarray, ink: np.ndarray) -> list[np.ndarray]:
    """[ink_as(times_gains(w, gains), body, ink) for w in warps], bit for bit, with one call
    of each per-pixel operation for them all (every pixel's value is its own: the same
    arithmetic, in one image or in many)."""
    stack = np.stack(warps)
    patches = times_gains(stack.reshape(-1, *stack.shape[2:]), gains)
    masks = ink_as(patches, body, ink).reshape(stack.shape[:3])
    return list(masks)


def times_gains(patch: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """patch.astype(np.float32) * gains, bit for bit: cv2.multiply rounds each float32
    product once, as numpy does, at half its cost on a face patch (this runs for every
    square looked at). Other dtypes keep numpy's promotion."""
    if (isinstance(gains, np.ndarray) and gains.dtype == np.float32 and gains.shape == (3,) and patch.ndim == 3
            and patch.shape[2] == 3 and patch.dtype in (np.uint8, np.float32)):
        return cv2.multiply(patch, (*gains.tolist(), 0.0), dtype=cv2.CV_32F)
    return patch.astype(np.float32) * gains


def windows(ink: np.ndarray) -> np.ndarray:
    """Every TEMPLATE_SIDE square of an ink mask (a PATCH_SIDE one: each shift), as raw rows."""
    view = np.lib.stride_tricks.sliding_window_view(ink, (TEMPLATE_SIDE, TEMPLATE_SIDE))
    return view.reshape(-1, TEMPLATE_SIDE * TEMPLATE_SIDE)


def shifted(ink: np.ndarray) -> np.ndarray:
    """A PATCH_SIDE ink mask at every shift of up to SHIFT pixels (body moving in), as rows."""
    if ink.shape != (PATCH_SIDE, PATCH_SIDE):
        padded = np.pad(ink, SHIFT)
        view = np.lib.stride_tricks.sliding_window_view(padded, (PATCH_SIDE, PATCH_SIDE))
        return view.reshape(-1, PATCH_SIDE * PATCH_SIDE)
    return _shifted_rows([ink])


def _shifted_rows(inks: Sequence[np.ndarray]) -> np.ndarray:
    """np.concatenate([shifted(ink) for ink in inks]) of PATCH_SIDE ink masks, the same
    values (in numpy's common dtype of the inks), from one padded stack."""
    count = 2 * SHIFT + 1
    padded = np.zeros((len(inks), PATCH_SIDE + 2 * SHIFT, PATCH_SIDE + 2 * SHIFT), np.result_type(*inks))
    padded[:, SHIFT:-SHIFT, SHIFT:-SHIFT] = inks
    # Each shift is a window of a padded mask: a strided view (np.ndarray on the buffer, not
    # as_strided: its set-up costs more than the copy here), copied once into rows.
    ink_step, row, column = padded.strides
    view = np.ndarray((len(inks), count, count, PATCH_SIDE, PATCH_SIDE), padded.dtype, padded, 0,
                      (ink_step, row, column, row, column))
    return view.reshape(len(inks) * count * count, PATCH_SIDE * PATCH_SIDE)


def normalised_rows(rows: np.ndarray) -> np.ndarray:
    # rows.mean(axis=1) and np.linalg.norm(centred, axis=1) bit for bit (their own sums),
    # without their dispatch cost (this runs for every ink read).
    centred = rows - np.add.reduce(rows, axis=1, keepdims=True) / rows.shape[1]
    norms = np.sqrt(np.add.reduce(centred * centred, axis=1, keepdims=True))
    return centred / np.maximum(norms, 1e-6)


def _middle(side: int) -> np.ndarray:
    """Flat boolean mask of the central disc of a side x side patch (the print's area)."""
    grid = (np.arange(side, dtype=np.float32) + 0.5) / side - 0.5
    mask = (np.hypot(grid[:, None], grid[None, :]) < 0.33).ravel()
    mask.setflags(write=False)
    return mask


#: The central disc of a canonical patch: every face read uses it, so it is made once.
_PATCH_MIDDLE = _middle(PATCH_SIDE)


def square_reach(side: int, half_span: float) -> np.ndarray:
    """Per pixel of a side x side patch whose half width is `half_span`, how far out its
    centre lies along the farther axis: the square rings about the centre are its levels."""
    grid = ((np.arange(side, dtype=np.float32) + 0.5) / side * 2 - 1) * half_span
    return np.maximum(np.abs(grid[:, None]), np.abs(grid[None, :]))


def _square_ring(side: int, inner: float, outer: float) -> np.ndarray:
    """Boolean mask of a side x side patch: the square ring between `inner` and `outer` (half
    widths, in patch sides) about its centre."""
    reach = square_reach(side, 0.5)
    mask = (reach >= inner) & (reach < outer)
    mask.setflags(write=False)
    return mask


#: A canonical patch's ring from 0.71 to 0.9 of the face's half width: outside its print,
#: inside the rounded edge's shade.
_PATCH_RING = _square_ring(PATCH_SIDE, 0.36, 0.46)

def ring_body(patch: np.ndarray) -> np.ndarray:
    """The body colour (BGR) of a canonical face patch measured on its ring, clear of the print."""
    return median(patch[_PATCH_RING].reshape(-1, 3))


#: How far around a found square, in its sides, the squares placed on its print reach (grown
#: 1.6 times about a corner, turned and stepped: 3.1 at most).
REGION_REACH = 3.6


def warped_around(image: np.ndarray, quad: np.ndarray, reach: float, side: int) -> tuple[np.ndarray, np.ndarray]:
    """(side x side patch of `image` holding `quad` grown `reach` times about its centre, the
    perspective transform from image to patch); past the frame's edge its border repeats."""
    quad = np.float32(quad)
    centre = row_mean(quad)
    grown = ((quad - centre) * reach + centre).astype(np.float32)
    square = np.float32([(0, 0), (side, 0), (side, side), (0, side)])
    matrix = cv2.getPerspectiveTransform(grown, square)
    patch = cv2.warpPerspective(image, matrix, (side, side), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return patch, matrix


def row_mean(rows: np.ndarray) -> np.ndarray:
    """rows.mean(axis=0), bit for bit: the same sum and division, without mean's dispatch (a
    quad's centre is taken for every square tried, turned or placed, a body's colour for every
    candidate top face)."""
    return np.add.reduce(rows, axis=0) / len(rows)


def median(values: np.ndarray) -> np.ndarray:
    """np.median(values, axis=0) of a 1-D or 2-D array (no NaN), bit for bit, without its
    generic machinery (which costs more than the partition itself on a patch): the same
    order statistics, the same mean of the middle two. Columns are partitioned as
    contiguous rows: the same values, found faster."""
    rows = np.ascontiguousarray(values.T) if values.ndim == 2 else values.copy()
    count = rows.shape[-1]
    half = count // 2
    rows.partition(half, axis=-1)
    if count % 2:
        return rows[..., half]
    # The lower middle one is the largest below the upper: one partition and a max cost less
    # than partitioning for both (a face patch holds many equal values, which slow each).
    return (rows[..., :half].max(axis=-1) + rows[..., half]) / 2


def _percentile(values: np.ndarray, q: float) -> float:
    """float(np.percentile(values, q)) (linear method, 1-D, no NaN), bit for bit, at a
    fraction of its cost: the same partition, the same interpolation in the values' dtype."""
    count = len(values)
    virtual = (count - 1) * (q / 100)
    low = math.floor(virtual)
    if virtual >= count - 1:
        return float(np.partition(values, count - 1)[count - 1])
    # The next order statistic is the least above `low`'s (as in median).
    part = np.partition(values, low)
    a, b = part[low], part[low + 1:].min()
    gamma = virtual - low
    difference = b - a
    return float(b - difference * (1 - gamma) if gamma >= 0.5 else a + difference * gamma)


def shadow_flattened(patch: np.ndarray, sign: int, params: TallyParams) -> np.ndarray:
    """A canonical face patch with the shade of a shadow across it divided out.

    A neighbour's, the wall's or a hand's shadow darkens part of the face: `ink_of` then
    takes the lit part's edge for the print. A shadow multiplies every channel alike, so
    dividing each pixel by its body's brightness there undoes it. That brightness is the
    patch's with the print's strokes taken away: a grey opening removes strokes lighter than
    the body (`sign` +1), a closing darker ones (-1); the shadow, wider than a stroke, stays.
    """
    return patch * shade_gain(patch, sign, params)[..., None]


def shade_gain(patch: np.ndarray, sign: int, params: TallyParams) -> np.ndarray:
    """Per pixel of a canonical face patch, how much shadow_flattened lifts it: 1 in the
    light, more in a shadow's shade."""
    # The channels' maximum pairwise: the same values, at an eighth of the cost of numpy's
    # reduction over a three-long axis.
    brightness = np.maximum(np.maximum(patch[..., 0], patch[..., 1]), patch[..., 2])
    side = params.flatten_kernel
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (side, side))
    body = cv2.morphologyEx(brightness, cv2.MORPH_CLOSE if sign < 0 else cv2.MORPH_OPEN, kernel,
                            borderType=cv2.BORDER_REPLICATE)
    body = cv2.blur(body, (3, 3))
    # Lifted to the lit body's brightness (most of a face lies in the light).
    target = _percentile(body.ravel(), 75)
    return np.minimum(target / np.maximum(body, 1.0), params.flatten_max_gain)


def ink_of(patch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ink mask 0-1, body colour, ink colour) of a canonical face patch.

    The body is the face's dominant colour; the ink is whatever differs most from it, white
    or dark, in the middle of the face (the print is there; the shaded rounded edges and a
    glimpse of a side face are not): the mask is each pixel's position on the line from body
    to ink colour.
    """
    pixels = patch.reshape(-1, 3)
    body = median(pixels)
    # OpenCV's per-pixel arithmetic: numpy's broadcasting over three channels steps through
    # them one pixel at a time.
    difference = cv2.subtract(patch, (*body.tolist(), 0.0)).reshape(-1, 3)
    distance = cv2.sqrt(cv2.transform(cv2.multiply(difference, difference).reshape(-1, 1, 3), _ONES)).ravel()
    middle = _PATCH_MIDDLE if patch.shape[0] == PATCH_SIDE else _middle(patch.shape[0])
    # The central pixels far enough from the body (as one mask: the same pixels as setting
    # the central ones' test into an empty mask, without the scatter).
    far = (distance >= max(_percentile(distance[middle], 80) * 0.7, 12.0)) & middle
    if np.count_nonzero(far) < 4:
        return np.zeros(patch.shape[:2], np.float32), body, body
    ink = np.float32(cv2.mean(patch, far.reshape(patch.shape[:2]).view(np.uint8))[:3])
    # copy=False: _ink_mask's result is a new array of its own, float32 already on a float32 patch.
    return _ink_mask(difference, ink - body).reshape(patch.shape[:2]).astype(np.float32, copy=False), body, ink


#: Sums a pixel's three channels (cv2.transform).
_ONES = np.ones((1, 3), np.float32)


def _ink_mask(difference: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Each pixel's position (0-1) on the line from body to ink colour, from its difference
    to the body colour (pixels x 3) and the ink's (3)."""
    scale = 1.0 / max(float((direction * direction).sum()), 1e-6)
    along = cv2.transform(difference.reshape(-1, 1, 3), (np.float32(direction) * scale).reshape(1, 3))
    return np.clip(along.ravel(), 0, 1)


def ink_as(patch: np.ndarray, body: np.ndarray, ink: np.ndarray) -> np.ndarray:
    """The ink mask of a face patch with body and ink colours already known (from `ink_of`
    on a patch of the same die): a quick look at many places around it."""
    difference = cv2.subtract(patch, (*np.asarray(body).tolist(), 0.0))
    return _ink_mask(difference, ink - body).reshape(patch.shape[:2]).astype(np.float32, copy=False)


def _correlations(inks: Sequence[np.ndarray], matrix: np.ndarray, shifts: bool = True) -> np.ndarray:
    """Per ink (rows) and template row (columns), their best correlation over every shift
    (`shifts` False: centred only)."""
    return best_over_shifts(ink_rows_of(inks, shifts), matrix)


@dataclass(frozen=True)
class _InkRows:
    """Ink masks as the rows their template products take (see ink_rows_of)."""

    rows: np.ndarray  # float32, per ink its shifts (one row when centred only), each flattened
    norms: np.ndarray  # per row, its spread (at least 1e-6)
    inks: int

    def of(self, index: int) -> _InkRows:
        """The rows of one ink alone: the same values, so the same products."""
        per = len(self.rows) // self.inks
        return _InkRows(self.rows[index * per:(index + 1) * per], self.norms[index * per:(index + 1) * per], 1)


def ink_rows_of(inks: Sequence[np.ndarray], shifts: bool = True) -> _InkRows:
    """The rows of `inks` for `best_over_shifts`: made once where several products use them."""
    if not shifts:
        rows = np.stack([i.ravel() for i in inks])
    elif all(np.shape(i) == (PATCH_SIDE, PATCH_SIDE) for i in inks):
        rows = _shifted_rows(inks)
    else:
        rows = shifted(inks[0]) if len(inks) == 1 else np.concatenate([shifted(i) for i in inks])
    rows = rows.astype(np.float32, copy=False)
    # The templates have zero mean, so a row's own mean drops out of its dot product with
    # them: only its spread is divided out, from two sums, instead of centring every row.
    count = rows.shape[1]
    sums = np.vecdot(rows, np.ones(count, np.float32)) if hasattr(np, "vecdot") else rows.sum(axis=1)
    squares = np.vecdot(rows, rows) if hasattr(np, "vecdot") else np.einsum("ij,ij->i", rows, rows)
    norms = np.sqrt(np.maximum(squares - sums * sums / count, 0.0))
    return _InkRows(rows, np.maximum(norms, 1e-6), len(inks))


def best_over_shifts(ink_rows: _InkRows, matrix: np.ndarray) -> np.ndarray:
    """Per ink (rows) and template row (columns), their best correlation over the ink's rows.
    Each (row, template) product is one dot product of its own, so a product's value does
    not depend on which other rows or templates share the call."""
    rows = ink_rows.rows
    # Not numpy's matmul: OpenBLAS starts threads for it, which on a busy small machine (a Pi
    # reading a camera, a server with other work) costs ten times the product. One dot
    # product per (row, template) pair (np.vecdot: BLAS's dot, which OpenBLAS never threads
    # at this length: process time equals wall time) is about five times quicker than
    # cv2.gemm here; einsum's own loop (numpy 1.x has no vecdot) three times.
    if hasattr(np, "vecdot"):
        scores = np.vecdot(rows[:, None, :], matrix[None, :, :])
    else:
        scores = np.einsum("ij,kj->ik", rows, matrix)
    scores /= ink_rows.norms[:, None]
    return scores.reshape(ink_rows.inks, -1, len(matrix)).max(axis=1)


def face_scores(ink: np.ndarray | Sequence[np.ndarray], die: str, compiled: Compiled,
                quick: bool = False) -> dict[str, float]:
    """Per face this die can show, its best correlation with `ink` (one canonical ink mask or
    several: the same face cut at a few scales or places), over every shift and right-angle
    turn of every template of that face (`quick`: of its mean template only)."""
    if die not in compiled.templates:
        return {}
    faces, matrix = (compiled.means if quick else compiled.templates)[die]
    inks = [ink] if isinstance(ink, np.ndarray) else list(ink)
    return _per_face(faces, _correlations(inks, matrix).max(axis=0))


def _per_face(faces: Sequence[str], scores: np.ndarray) -> dict[str, float]:
    """Per face (in the order of `faces`, one per template row), the best of its rows' scores."""
    best: dict[str, float] = {}
    for face, score in zip(faces, scores.tolist()):
        best[face] = max(best.get(face, -1.0), score)
    return best


def face_scores_of(ink_rows: _InkRows, die: str, compiled: Compiled,
                    by_mean: np.ndarray | None = None) -> dict[str, float]:
    """face_scores(ink, die, compiled) of the one ink whose rows `ink_rows` are, bit for bit;
    `by_mean`: its products with the mean templates (best_over_shifts' row), when taken
    already (the rest of the templates' rows are taken here)."""
    if die not in compiled.templates:
        return {}
    faces, matrix = compiled.templates[die]
    if by_mean is None:
        return _per_face_of(compiled, die, best_over_shifts(ink_rows, matrix)[0])
    rest = compiled.rest[die]
    rows = [by_mean, best_over_shifts(ink_rows, rest)[0]] if len(rest) else [by_mean]
    return _per_face_of(compiled, die, np.concatenate(rows)[compiled.order[die]])


def _per_face_of(compiled: Compiled, die: str, scores: np.ndarray) -> dict[str, float]:
    """_per_face(compiled.templates[die][0], scores), bit for bit: each face's best by one
    reduction over its rows (the loop over a hundred-odd rows costs more than the products
    of a centred cut)."""
    faces = compiled.templates[die][0]
    if die not in compiled.by_face:
        return _per_face(faces, scores)
    names, rows, starts = compiled.by_face[die]
    best = np.maximum.reduceat(scores[rows], starts)
    # Equal scores are one number, but for a zero's sign: of equal ones the loop keeps the first.
    if not best.all():
        return _per_face(faces, scores)
    return dict(zip(names, np.maximum(best, -1.0).tolist()))


def print_scores(inks: Sequence[np.ndarray], die: str, compiled: Compiled, shifts: bool = True) -> list[float]:
    """Per ink, how much it looks like any face of `die` (mean templates only): the same as
    max(face_scores(ink, die, compiled, quick=True).values(), default=0.0) for each ink, with
    one product for them all (`shifts` False: centred only, a quicker first look)."""
    if die not in compiled.templates or not inks:
        return [0.0] * len(inks)
    best = _correlations(inks, compiled.means[die][1], shifts).max(axis=1)
    return [max(score, -1.0) for score in best.tolist()]  # -1: face_scores' floor


def distance_ratio(best: float, other: float) -> float:
    """How much closer a print lies to its best face than to another (correlations or
    cosines): the ratio of their distances, 1 - similarity; lower is a clearer win."""
    return (1.0 - best) / max(1.0 - other, 1e-6)


def decide_face(scores: Mapping[str, float], params: TallyParams,
                close: Collection[frozenset[str]] = frozenset()) -> tuple[str, float, float]:
    """(face, confidence, best correlation) from per-face scores; "unsure" on a small margin.

    `close` holds the pairs of faces whose prints are nearly the same: against such a face
    the margin must be larger (a "+" lost to blur or a misplaced cut makes +100 a -100).
    """
    if not scores:
        return UNSURE, 0.0, 0.0
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    face, score = ranked[0]
    if score < params.min_score:
        return UNSURE, 0.0, score
    # What counts is how much closer the patch is to the best template than to each other
    # face, i.e. the ratio of their distances (1 - correlation), not the raw difference.
    worst = 0.0
    for other, other_score in ranked[1:]:
        ratio = distance_ratio(score, other_score)
        limit = params.close_ratio if frozenset((face, other)) in close else params.max_ratio
        if ratio > limit:
            return UNSURE, 0.0, score
        worst = max(worst, ratio / limit)
    confidence = 0.5 + 0.5 * (1.0 - worst)
    return face, round(confidence * min(1.0, score / 0.7), 4), score


def match_face(ink: np.ndarray | Sequence[np.ndarray], die: str, compiled: Compiled,
               params: TallyParams) -> tuple[str, float, float]:
    """(face, confidence, best correlation) among the faces this die can show."""
    if die not in compiled.templates:
        return UNSURE, 0.0, 0.0
    return decide_face(face_scores(ink, die, compiled), params, compiled.close.get(die, frozenset()))
