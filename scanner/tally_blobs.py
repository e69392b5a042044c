"""Finding Tally dice by colour: each die's body colour blobs in a frame, the squares that may be
their top faces, and at most one die of each colour.

Physical setup assumed: the Tally reader's (scanner/tally.py): six coloured Tally Dice and one
Up Die on a tray, seen from above (camera 30-50 cm high, tilted at most ~15 degrees), so a die's
outline is its top square swept by the offset at which the camera sees its bottom, its side
faces showing; the frame white balanced (`tally_colour.balance_gains`).

Every pixel is labelled with the die whose learned body colour it has (`label_pixels`). Per
colour, the blobs that look like a die are found at half resolution and measured at full
(`find_blobs`); the squares that may be a blob's top face follow from its outline
(`top_face_candidates`), and the print decides among them (the reader). `choose_dice` keeps the
most die-like blob of each colour at the frame's common size.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import cv2
import numpy as np

from scanner.tally_colour import balanced, colour_distances
from scanner.tally_model import LUT_BINS, TallyModel, TallyParams, ink_sign_of
from scanner.tally_prints import Compiled, median, row_mean
from scanner.tossup import half_size, order_clockwise
from scanner.dice import UP_DIE


#: Where a camera's 8-bit channel counts as clipped when its frame shows no pile below 255
#: (see clip_levels): JPEG's ringing leaves a clipped 255 at 253-255.
CAMERA_CLIP = (253, 253, 253)
#: clip_levels: a channel's top value (held by at least CLIP_MIN_SHARE of the pixels) is a pile
#: of clipped pixels when it holds CLIP_PILE times as many as any of the CLIP_REACH values below
#: it and lies at CLIP_LOWEST or above. A camera's picture clips near the top, also with a
#: profile's black level taken off (it would take one of 55) or brightened back by its light
#: gains. The calibration bench's renders dimmed in code and read uncalibrated pile at 96-172:
#: marking those piles read as many dice worse as better over the tuning sets.
CLIP_MIN_SHARE = 0.0005
CLIP_PILE = 2.0
CLIP_REACH = 6
CLIP_LOWEST = 200


def clip_levels(image: np.ndarray) -> tuple[int, int, int]:
    """Per channel (B, G, R), the value from which a pixel of `image` counts as clipped.

    A sensor clips at its full well, and the picture shows it as a pile of pixels at one top
    value: 255 as the camera gives it, lower once a profile's black level is taken off (stray
    light of 10 puts a clipped 255 at 245, and 253 would find no clipping at all). A channel
    clipped there has lost a die's hue as much (an orange die turns yellow), so clipping is
    looked for where the pile lies, as far below it as 253 is below 255 (CAMERA_CLIP).
    """
    levels = []
    # Every fourth pixel each way shows the pile as well, in a fifth of the time.
    sample = np.ascontiguousarray(image[::4, ::4])
    pixels = sample.shape[0] * sample.shape[1]
    for channel in range(3):
        counts = cv2.calcHist([sample], [channel], None, [256], [0, 256]).ravel()
        top = int(np.flatnonzero(counts >= CLIP_MIN_SHARE * pixels).max(initial=0))
        below = counts[max(top - CLIP_REACH, 0):top]
        piled = top >= CLIP_LOWEST and counts[top] >= CLIP_PILE * max(float(below.max(initial=0.0)), 1.0)
        levels.append(min(top - round(2 * top / 255), CAMERA_CLIP[channel]) if piled else CAMERA_CLIP[channel])
    return levels[0], levels[1], levels[2]


def at_clip(image: np.ndarray, clip: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(255 where any channel of `image` is at its `clip` level, 255 where all three are)."""
    masks = [cv2.compare(image[..., channel], int(clip[channel]), cv2.CMP_GE) for channel in range(3)]
    return (cv2.bitwise_or(cv2.bitwise_or(masks[0], masks[1]), masks[2]),
            cv2.bitwise_and(cv2.bitwise_and(masks[0], masks[1]), masks[2]))


@dataclass
class Blob:
    die: str
    quad: np.ndarray  # 4x2 float, full-resolution pixels, clockwise from top-left
    center: tuple[float, float]
    side: float
    aspect: float
    fill: float  # blob area / its bounding rectangle's area: how die-like it is
    lab: np.ndarray  # mean balanced Lab of the top face's body pixels
    clipped: float = 0.0  # share of those pixels that the camera clipped (a channel, not all three, at its clip level)
    #: Every square that may be the top face (the print decides); `quad` is the first.
    candidates: list[np.ndarray] = field(default_factory=list)
    colours: list[np.ndarray] = field(default_factory=list)  # body Lab on each candidate
    #: How much the top face's print looks like a face of this die (0 when not measured).
    print_score: float = 0.0

    def place(self, quad: np.ndarray, side: float | None = None) -> None:
        """Make `quad` the top face, its centre the die's (`side`: its new size, if any)."""
        centre = row_mean(quad)
        self.quad, self.center = quad, (float(centre[0]), float(centre[1]))
        if side is not None:
            self.side = side


def lut_index(lab: np.ndarray) -> np.ndarray:
    """Per pixel, its (L, a, b) bin in the flattened lookup tables."""
    shift = int(math.log2(256 // LUT_BINS))
    bits = int(math.log2(LUT_BINS))
    # 3 * bits <= 16: uint16 holds every index, and moves a quarter of int32's memory. The
    # channels split into contiguous planes first: the same integers, at half the cost of
    # converting strided channel views (on the halved frame, every frame).
    lightness, a, b = cv2.split(np.right_shift(lab, shift))
    return (lightness.astype(np.uint16) << (2 * bits)) | (a.astype(np.uint16) << bits) | b


def label_pixels(lab: np.ndarray, compiled: Compiled) -> np.ndarray:
    """Per pixel, the index + 1 of the die whose body colour it has, or 0 (uint8 image)."""
    # np.take: the same lookup as indexing, at half the cost on a frame.
    return np.take(compiled.lut, lut_index(lab))


def _refine(image: np.ndarray, gains: np.ndarray, compiled: Compiled, index: int, box: tuple[int, int, int, int],
            min_side: float, max_side: float, band: np.ndarray | None = None, blob: np.ndarray | None = None,
            ink_sign: int = 0, clip: Sequence[int] = CAMERA_CLIP
            ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray, float] | None:
    """(die outline, top-face candidate quads, body mask, Lab window, clipped share) inside `box`.

    The half-resolution blob only says where to look: the outline and the body colour are
    measured at full resolution, where a die is 30-60 pixels wide. Quads are in `box`
    coordinates.
    """
    x, y, w, h = box
    window = image[y:y + h, x:x + w]
    lab = cv2.cvtColor(balanced(window, gains), cv2.COLOR_BGR2LAB)
    if band is None:
        mask = cv2.compare(label_pixels(lab, compiled), index, cv2.CMP_EQ)
    else:  # the narrower colour band that told the die from a tray of its colour
        mask = np.take(band, lut_index(lab))
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    if blob is not None:
        # Only the pixels of the blob found at low resolution: print may cut the body into
        # pieces, none of which is the die alone, while a neighbour of the tray's colour is
        # no part of it.
        mask = cv2.bitwise_and(mask, blob)
    if cv2.countNonZero(mask) < 20:
        return None
    # A die is convex: print reaching near its edge (a circle) must not bite into it. The hull
    # of every pixel is the hull of the edge pixels (those with a neighbour outside the mask
    # or the window: every other pixel lies between two of them), which are far fewer points
    # to sort; given in the same (raster) order, they give the very same hull, point for point.
    edge = cv2.subtract(mask, cv2.erode(mask, np.ones((3, 3), np.uint8), borderType=cv2.BORDER_CONSTANT,
                                        borderValue=0))
    outline = cv2.convexHull(cv2.findNonZero(edge))
    quads = top_face_candidates(outline.reshape(-1, 2).astype(np.float32))
    if not quads:
        return None
    side = float(np.linalg.norm(quads[0][1] - quads[0][0]))
    if not min_side <= side <= max_side:
        return None
    region = np.zeros_like(mask)
    cv2.drawContours(region, [outline], -1, 255, -1)
    body = cv2.bitwise_and(region, mask)
    if ink_sign:
        printed = _print_square(lab[..., 0], region, body, quads[0], ink_sign)
        if printed is not None and all(np.abs(row_mean(printed) - row_mean(q)).max() > 0.12 * side for q in quads):
            quads.append(printed)
    # Clipping some channels but not all changes a colour's hue (a white die clips in all
    # three and stays white).
    some, every = at_clip(window, clip)
    saturated = cv2.bitwise_and(some, cv2.bitwise_not(every))
    clipped = cv2.countNonZero(cv2.bitwise_and(saturated, body)) / max(cv2.countNonZero(body), 1)
    return outline, quads, body, lab, clipped


def _print_square(light: np.ndarray, region: np.ndarray, body: np.ndarray, quad: np.ndarray,
                  ink_sign: int) -> np.ndarray | None:
    """`quad` moved onto the die's largest print: the top face's print is its centre, while
    the print on a side face seen at a slant is squeezed, and so smaller."""
    level = cv2.mean(light, body)[0]
    contrast = cv2.subtract(light, level) if ink_sign > 0 else cv2.subtract(np.full_like(light, int(level)), light)
    ink = cv2.bitwise_and(cv2.compare(contrast, 25, cv2.CMP_GT), cv2.bitwise_and(region, cv2.bitwise_not(body)))
    ink = cv2.morphologyEx(ink, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, _, stats, centroids = cv2.connectedComponentsWithStats(ink, connectivity=8)
    if count < 2:
        return None
    # Digits are separate strokes: join the components near the largest one.
    biggest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    side = float(np.linalg.norm(quad[1] - quad[0]))
    # The area test first (vectorised): most components of a noisy face are specks.
    big_enough = (np.flatnonzero(stats[1:, cv2.CC_STAT_AREA] >= 3) + 1).tolist()
    near = [i for i in big_enough if math.dist(centroids[i], centroids[biggest]) < 0.35 * side]
    if not near:
        return None
    weights = stats[near, cv2.CC_STAT_AREA].astype(np.float32)
    centre = (centroids[near] * weights[:, None]).sum(0) / weights.sum()
    return (quad - row_mean(quad) + np.float32(centre)).astype(np.float32)


def _edge_angle(points: np.ndarray) -> float:
    """The direction (radians, modulo a right angle) that most of an outline's length runs in.

    A die's outline is its top square swept along the direction the camera sees its sides
    in: four of its six edges run along the square's sides, two (shorter) along the sweep.
    """
    # np.concatenate, not np.roll: the same values, without roll's generic set-up (this runs
    # for every blob).
    edges = np.concatenate((points[1:], points[:1])) - points
    lengths = np.hypot(edges[:, 0], edges[:, 1])
    angles = np.mod(np.arctan2(edges[:, 1], edges[:, 0]), math.pi / 2)
    bins = 45
    histogram = np.bincount(np.minimum((angles / (math.pi / 2) * bins).astype(int), bins - 1), lengths, bins)
    smooth = histogram + 0.5 * (np.concatenate((histogram[-1:], histogram[:-1]))
                                + np.concatenate((histogram[1:], histogram[:1])))
    mode = (int(np.argmax(smooth)) + 0.5) / bins * (math.pi / 2)
    # Refine: the length-weighted mean of the edges near the mode (angles times four wrap).
    offset = np.angle(np.exp(4j * (angles - mode))) / 4
    near = np.abs(offset) < math.radians(8)
    if lengths[near].sum() > 0:
        mode += float((offset[near] * lengths[near]).sum() / lengths[near].sum())
    return mode


#: How far (share of the outline's size) an outline point may lie inside the side of its box
#: and still touch it. Perspective and a rounded edge in shade tilt a side of the outline by a
#: few degrees against the box: with a narrow band only one end of that side touches, and the
#: gap to the other corner passes for a side face (on a 30 px die, a leg of half its side).
OUTLINE_CONTACT = 0.12


def top_face_candidates(points: np.ndarray) -> list[np.ndarray]:
    """Squares that can be a die's top face, given the die's convex outline (N x 2 pixels).

    Seen from above, a die's outline is its top square swept by the offset at which the
    camera sees its bottom: in the square's own axes, a box of side + |offset| with two
    opposite corners cut off by triangles whose legs are the offset's components. The top
    face fills one uncut corner, the bottom the other; which is which, the print decides, so
    both are returned (one when no side face shows), fullest first. The legs are measured
    against the other corners' rounding, so a rounded die gives no false offset.
    """
    if len(points) < 3:
        return []
    theta = _edge_angle(points)
    u1 = np.float32([math.cos(theta), math.sin(theta)])
    u2 = np.float32([-math.sin(theta), math.cos(theta)])
    p1, p2 = points @ u1, points @ u2
    lo1, hi1, lo2, hi2 = float(p1.min()), float(p1.max()), float(p2.min()), float(p2.max())
    e1, e2 = hi1 - lo1, hi2 - lo2
    if min(e1, e2) <= 2:
        return []
    # Where the outline touches each side of its box: the gap to each corner is a leg.
    tolerance = max(1.0, OUTLINE_CONTACT * max(e1, e2))

    def contact(along: np.ndarray, across: np.ndarray, level: float, low: float, high: float) -> tuple[float, float]:
        on = np.abs(across - level) <= tolerance
        if not on.any():
            return (high - low) / 2, (high - low) / 2
        return float(along[on].min()) - low, high - float(along[on].max())

    # legs[(i, j)] = (leg along u1, leg along u2) at the corner (low/high of u1, low/high of u2).
    top_l, top_h = contact(p1, p2, lo2, lo1, hi1)
    bottom_l, bottom_h = contact(p1, p2, hi2, lo1, hi1)
    left_l, left_h = contact(p2, p1, lo1, lo2, hi2)
    right_l, right_h = contact(p2, p1, hi1, lo2, hi2)
    legs = {(0, 0): (top_l, left_l), (1, 0): (top_h, right_l), (0, 1): (bottom_l, left_h), (1, 1): (bottom_h, right_h)}
    # The cut pair of opposite corners has the longer legs; the other pair shows the rounding.
    diagonal = sum(legs[(0, 0)]) + sum(legs[(1, 1)])
    anti = sum(legs[(1, 0)]) + sum(legs[(0, 1)])
    cut, uncut = (((0, 0), (1, 1)), ((1, 0), (0, 1))) if diagonal > anti else (((1, 0), (0, 1)), ((0, 0), (1, 1)))
    a = max(0.0, (legs[cut[0]][0] + legs[cut[1]][0] - legs[uncut[0]][0] - legs[uncut[1]][0]) / 2)
    b = max(0.0, (legs[cut[0]][1] + legs[cut[1]][1] - legs[uncut[0]][1] - legs[uncut[1]][1]) / 2)
    side = min(e1 - a, e2 - b) if a < 1.0 or b < 1.0 else (e1 - a + e2 - b) / 2
    side = min(max(side, 0.5 * max(e1, e2)), e1, e2)
    unit = np.float32([(0, 0), (1, 0), (1, 1), (0, 1)]) * side
    outline = points.reshape(-1, 1, 2)
    starts = {0: (lo1, lo2), 1: (hi1 - side, hi2 - side)}
    candidates = []
    for i, j in uncut:
        local = unit + np.float32([starts[i][0], starts[j][1]])
        # np.outer's products by broadcasting: the same values, without its set-up.
        quad = (local[:, :1] * u1 + local[:, 1:] * u2).astype(np.float32)
        inside, _ = cv2.intersectConvexConvex(quad, outline)
        candidates.append((inside / max(side * side, 1e-6), quad))
    candidates.sort(key=lambda c: -c[0])
    kept: list[np.ndarray] = []
    centres: list[np.ndarray] = []  # of the kept quads, each taken once
    for _, quad in candidates:
        centre = row_mean(quad)
        if all(np.abs(centre - k).max() > 0.12 * side for k in centres):
            kept.append(quad)
            centres.append(centre)
    return kept


def blown_share(image: np.ndarray, quad: np.ndarray, clip: Sequence[int] = CAMERA_CLIP) -> float:
    """The share of the pixels inside `quad` that the camera blew out (a channel at its `clip`)."""
    x, y, w, h = cv2.boundingRect(np.int32(np.round(quad)))
    x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, image.shape[1]), min(y + h, image.shape[0])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    blown, _ = at_clip(image[y0:y1, x0:x1], clip)
    mask = np.zeros(blown.shape, np.uint8)
    cv2.fillConvexPoly(mask, np.int32(np.round(quad)) - np.int32([x0, y0]), 255)
    inside = max(cv2.countNonZero(mask), 1)
    return cv2.countNonZero(cv2.bitwise_and(blown, mask)) / inside


def _outer_contours(mask: np.ndarray) -> list[np.ndarray]:
    """The outer boundary of every connected part of `mask`, also of parts lying inside a hole
    of another (a black Up Die on felt framed by a black rim is such an island)."""
    contours, hierarchy = cv2.findContours(mask, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if hierarchy is None:
        return []
    return [c for c, h in zip(contours, hierarchy[0]) if h[3] < 0]


def _tighter(index: np.ndarray, contour: np.ndarray, tight: np.ndarray) -> list[np.ndarray]:
    """Contours (image coordinates) of the pixels inside `contour` in the die's tight band."""
    x, y, w, h = cv2.boundingRect(contour)
    inside = np.zeros((h, w), np.uint8)
    cv2.drawContours(inside, [contour - np.array([x, y])], -1, 255, -1)
    mask = cv2.bitwise_and(inside, np.take(tight, index[y:y + h, x:x + w]))
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    return [c + np.array([x, y]) for c in _outer_contours(mask)]


def _body_colour(lab: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean Lab of the more saturated half of the body pixels: a lamp's mirror image (glare)
    adds white, which pales a colour towards its neighbours (orange towards yellow), while
    the pixels it spares keep the body's hue."""
    # np.compress of the flat pixels: the same pixels in the same (raster) order as boolean
    # indexing, at half its cost (this runs for every candidate top face).
    pixels = np.compress(mask.ravel() > 0, lab.reshape(-1, 3), axis=0).astype(np.float32)
    if len(pixels) < 8:
        return np.float32(cv2.mean(lab, mask)[:3])
    chroma = np.hypot(pixels[:, 1] - 128, pixels[:, 2] - 128)
    return row_mean(np.compress(chroma >= median(chroma), pixels, axis=0))


def find_blobs(image: np.ndarray, compiled: Compiled, model: TallyModel, params: TallyParams,
               gains: np.ndarray, half: np.ndarray | None = None, clip: Sequence[int] = CAMERA_CLIP) -> list[Blob]:
    """Candidate top faces per die colour: found at half resolution, measured at full.

    `half`: the frame's `tossup.half_size`, when made already (the die finder's input starts
    from the same halved frame); `clip`: the frame's clip_levels.
    """
    scale = 2
    small = half_size(image) if half is None else half
    small_index = lut_index(cv2.cvtColor(balanced(small, gains), cv2.COLOR_BGR2LAB))
    labels = np.take(compiled.lut, small_index)
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
        # Most colours cover a small part of the frame: close and trace only around their
        # pixels. Two pixels of margin make it exact (the closing reaches one pixel out).
        bx, by, bw, bh = cv2.boundingRect(mask)
        if bw == 0:
            continue
        x0, y0 = max(bx - 2, 0), max(by - 2, 0)
        x1, y1 = min(bx + bw + 2, mask.shape[1]), min(by + bh + 2, mask.shape[0])
        # Close only: the body between a circled number's ring and the face's edge is a
        # strip of two or three pixels that an opening would cut; specks fail the size test.
        closed = cv2.morphologyEx(mask[y0:y1, x0:x1], cv2.MORPH_CLOSE, kernel)
        # A patterned cloth gives hundreds of same-coloured squares: measuring each would cost
        # far more than the frame budget. The largest few per colour include the die (each
        # area measured once; a stable sort keeps the order of equal ones).
        sized = [(area, c) for c in _outer_contours(closed)
                 if (area := cv2.contourArea(c)) * scale * scale >= (min_side**2) * 0.5]
        sized.sort(key=lambda ac: ac[0])
        corner = np.int32([x0, y0])
        pending = [(c + corner, True) for _, c in sized[-params.max_candidates:]]
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
            # A strip (a rim, the tray's edge in shade) stays far less square than a die at
            # full resolution too: not worth measuring there.
            (_, _), (sw, sh), _ = cv2.minAreaRect(contour)
            if min(sw, sh) < 0.3 * max(sw, sh):
                continue
            bx, by, bw, bh = cv2.boundingRect(contour)
            # Wider than a die with its side faces and shadow could be (those measured span at
            # most 2.4 max_side): a ring of rim or a stripe of floor round the dice, whose box
            # would cost a die's measuring many times over.
            if max(bw, bh) * scale > params.max_blob_span * max_side:
                continue
            # Cut by the frame's edge at half resolution: the table or the tray's outside (see
            # _touches_edge below), not worth measuring at full resolution.
            if bx <= 0 or by <= 0 or bx + bw >= labels.shape[1] or by + bh >= labels.shape[0]:
                continue
            pad = 3
            x0, y0 = max(bx * scale - pad, 0), max(by * scale - pad, 0)
            x1, y1 = min((bx + bw) * scale + pad, image.shape[1]), min((by + bh) * scale + pad, image.shape[0])
            band = None if may_split else compiled.tight[die]
            footprint = np.zeros((y1 - y0, x1 - x0), np.uint8)
            cv2.drawContours(footprint, [contour * scale - np.int32([x0, y0])], -1, 255, -1)
            footprint = cv2.dilate(footprint, np.ones((2 * scale + 1, 2 * scale + 1), np.uint8))
            refined = _refine(image, gains, compiled, index, (x0, y0, x1 - x0, y1 - y0), min_side, max_side, band,
                              footprint, ink_sign_of(model, die), clip)
            if refined is None:
                continue
            outline, quads, body, lab, clipped = refined
            # The camera sees the whole tray: a blob cut by the frame's edge is the table or the
            # tray's outside, and a die half out of view could not be read anyway.
            if _touches_edge(outline + np.int32([x0, y0]), image.shape):
                continue
            (_, _), (rw, rh), _ = cv2.minAreaRect(outline)
            if min(rw, rh) < 0.4 * max(rw, rh):
                continue
            fill = cv2.contourArea(outline) / max(rw * rh, 1.0)
            side = float(np.linalg.norm(quads[0][1] - quads[0][0]))
            # The top face's share of the die's outline: a die seen far off-axis or leaning on
            # something shows much of a side face.
            aspect = min(1.0, side * side / max(cv2.contourArea(outline), 1.0))
            offset = np.float32([x0, y0])
            tops = [order_clockwise(q + offset) for q in quads]
            # The body colour is measured on each candidate top face: side faces are shaded.
            colours = []
            for quad in quads:
                square = np.zeros_like(body)
                cv2.fillConvexPoly(square, np.round(quad).astype(np.int32), 255)
                inside = cv2.bitwise_and(square, body)
                colours.append(_body_colour(lab, inside if cv2.countNonZero(inside) else body))
            centre = row_mean(tops[0])
            blobs.append(Blob(die, tops[0], (float(centre[0]), float(centre[1])), side, aspect, fill, colours[0],
                              clipped, tops, colours))
            if die != UP_DIE:
                cv2.drawContours(taken[by:by + bh, bx:bx + bw], [contour - np.array([bx, by])], -1, 255, -1)
    return blobs


def _touches_edge(outline: np.ndarray, shape: Sequence[int]) -> bool:
    """Whether an outline (image pixels) reaches the frame's edge."""
    x, y, w, h = cv2.boundingRect(outline)
    return x <= 1 or y <= 1 or x + w >= shape[1] - 1 or y + h >= shape[0] - 1


def choose_dice(blobs: Sequence[Blob], model: TallyModel, params: TallyParams | None = None) -> list[Blob]:
    """At most one die per colour: the most die-like blob of the common size.

    With `params`, a second blob of a colour already taken is kept too when its colour also
    lies within identity_max_distance of a die that no blob has the colour of (a blue die
    under a warm lamp may be found purple beside the purple die), unless pattern_blobs
    blobs have that colour: `assign_identities` then gives each die its colour.
    """
    if not blobs:
        return []
    typical = model.die_size * 1.0 if model.die_size else None
    good = [b for b in blobs if b.fill > 0.6 and b.aspect > 0.3]
    if not good:
        return []
    if typical is None:
        # The size the most die-like *colours* agree on: every die in a set is the same size,
        # while a patterned cloth repeats one or two colours at its own size many times, with
        # no print like a die's. Each colour counts once, by its most die-like blob there
        # (square, filled, printed like a face of that die).
        def support(size: float) -> float:
            best: dict[str, float] = {}
            for b in good:
                if abs(b.side / size - 1) < 0.25:
                    best[b.die] = max(best.get(b.die, 0.0), b.fill * b.aspect * max(b.print_score, 0.2))
            return sum(best.values())

        typical = max((b.side for b in good), key=support)
    chosen: dict[str, Blob] = {}  # by the die whose place the blob takes
    colours_found = {b.die for b in good}
    counts = Counter(b.die for b in blobs)
    # A die's print is the surest sign of it: a dark shadow or rim in the black Up Die's
    # colour may be squarer than the die itself (seen at a slant, joined by its shadow).
    # A top face found too small (its shadow in the die's colour took part of the outline)
    # is grown to the common size later (TallyReader._regrow), so it may be quite small here.
    def rank(b: Blob) -> float:  # lower first
        return -(b.fill * b.aspect) - b.print_score + abs(b.side / typical - 1)

    sized = [b for b in good if 0.55 * typical <= b.side <= 1.6 * typical]
    for blob in sorted(sized, key=rank):
        if any(math.dist(blob.center, other.center) < 0.6 * typical for other in chosen.values()):
            continue
        slot = blob.die
        if slot in chosen:
            # Not on a tray patterned in that colour: its squares are not hidden dice.
            if params is None or counts[blob.die] >= params.pattern_blobs:
                continue
            distances = colour_distances(blob.lab, model, params)
            unseen = [die for die in model.bodies if die not in chosen and die not in colours_found
                      and distances[die] <= params.identity_max_distance]
            if unseen:
                slot = min(unseen, key=distances.__getitem__)
            else:
                # Or the die holding the colour was also found in a colour not taken yet (the
                # blue die found blue and purple, chosen as purple before the purple die came):
                # it takes that colour, and this blob the one it held.
                holder = chosen[slot]
                other = [b for b in sized if b.die not in chosen and math.dist(b.center, holder.center) < 0.6 * typical]
                if not other:
                    continue
                moved = min(other, key=rank)
                chosen[moved.die] = moved
        chosen[slot] = blob
    return list(chosen.values())
