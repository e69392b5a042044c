"""Finding Tally Up dice and reading which die and which face, from a learned look.

Physical setup assumed: six coloured Tally Dice (one of each colour) and one Up Die on a tray,
seen from above (camera 30-50 cm high, tilted at most ~15 degrees) under any white-ish lamp.
Each top face carries one printed symbol (a star, a number, a circled number, or on the Up Die
+1 ... x2) in an ink that differs from the body colour.

Nobody here knows the real dice's shades, font or star, so everything about the look comes
from a `TallyModel` learned from labelled photos (`calibration.teach`): per die, its body colour
after white balance; per (die, face), a mean ink template on a canonical square (the look and
the reader's numbers, `TallyParams`, are scanner/tally_model.py's). Reading a frame then is
(this module's `TallyReader` takes the steps in turn):

1. White balance with the white-patch estimate (as for Toss Up), so lamp colour and brightness
   drop out (scanner/tally_colour.py), then label every pixel with the die whose learned body
   colour it matches (scanner/tally_blobs.py: a 3-D lookup table, one back-projection per
   frame). Each colour occurs at most once in the set, so touching dice of different colours
   come apart by colour alone.
2. Per colour, the blobs that look like a die (scanner/tally_blobs.py). A die seen off-axis
   shows side faces too: its outline is the top square swept by the offset of its bottom, so
   the side and the two squares that may be the top face follow from the outline's extents and
   cut corners (`top_face_candidates`, no brightness rule: a side lamp or a cast shadow breaks
   those). The candidate whose print looks most like one of the die's faces is the top face; a
   top face found much smaller than the frame's other dice (print or shadow cut its body apart)
   is looked for again at their size.
3. Identities (scanner/tally_colour.py): the nearest learned body colour, measured on the more
   saturated half of the top face (glare pales colours); a colour already held by a die that
   matches it better is not available (a set has one die of each colour).
4. The top face is warped to a canonical square; the ink is what differs from the body colour
   (in whichever direction: white or dark print); it is compared with that die's templates at
   all four right-angle turns, a few shifts and scales (scanner/tally_prints.py). The margin
   between the best face and the best *different* face gives the confidence; a small margin or
   a weak match gives "unsure", never a confident guess. Whoever reads a face, two checks can
   overrule it: a star needs a concave outline (glare is a convex blob), and where the
   runner-up is a face of nearly the same print (+100 and -100), the strokes they differ by
   must not show it.
5. With a face net (scanner/face_net.py) and the codes teaching stored for each face, the net
   reads the ink where the templates are unsure: the mean of its codes for the print cut at
   every scale and turn must lie nearest one face, by a wide margin, or by a narrower one
   where the templates rank that face first too. (Asking it where the templates read a face
   as well, and calling a disagreement unsure, changed no reading on the test, dev, lean or
   alt photos and cost 4 ms a frame.) Where the print must also tell the die from others its
   colour lies as near, and the templates find their faces nearly as alike (a circled 20 and
   a circled 10), the net may tell them apart.
6. A face still unsure is read again with a shadow's shade divided out of it
   (`shadow_flattened`), then on a square placed where its print looks most like a face,
   and last on a square placed so on the face with the shade divided out (the colour blob
   of a half-shaded die is its lit part only, so its square lies off the face).
7. A white blob whose face stays unread is the coloured die whose colour the ring inside its
   face's edge has (a white star and glare on a blue die), when the print agrees; a face read
   weakly on a square far smaller than the dice the finder is sure of is read again at their
   size. Where the blobs leave a die of the set unfound or unread, the finder's dice are
   looked at (`_read_where_found`, `_with_found`); one whose colour a clipped blob holds (an
   orange die the lamp clipped to yellow) claims it back when the finder and its print agree.
   A clipped die whose print cannot tell it from the dice clipping turns into its colour is
   the one of them whose body colour its edge shows (the rim and sides keep the hue).
8. A die of the set still unnamed may lie in a wall's shadow, too dark for the colour bands
   and for the finder: the finder looks again at the frame's shade lifted (scanner.shade), and
   a die it finds there, dark in the frame as it comes, is read on the lifted picture
   (`_with_shaded`); so is a die found there that the blobs found too but could not name.
"""
from __future__ import annotations

import functools
import logging
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Mapping, Sequence

import cv2
import numpy as np

from scanner.face_net import NO_FACE, FaceNet, unit_rows
from scanner.finder import DieFinder, FinderRules, FoundDie, find_in_shade
from scanner.frames import UNSURE, DieReading
from scanner.labels import mean_side
from scanner.shade import Brightness, in_deep_shade, lifted_around, measure_shade
from scanner.tally_blobs import Blob, blown_share, choose_dice, clip_levels, find_blobs, label_pixels
from scanner.tally_colour import (
    among_nearest, assign_identities, balance_gains, balanced, clipped_distances, colour_distances, held_elsewhere,
    lab_of, nearest_die, nearest_free, relit_distances,
)
from scanner.tally_model import DIE_FACES, PATCH_SIDE, TallyModel, TallyParams, default_model, ink_sign_of
from scanner.tally_prints import (
    REGION_REACH, Compiled, best_over_shifts, compile_model, decide_face, distance_ratio, face_patch, face_scores_of,
    ink_of, ink_rows_of, ink_solidity, ink_whiteness, inks_as, pair_vote, print_scores, ring_body, ring_sectors, ring_shown,
    row_mean, shade_gain, shadow_flattened, square_reach, times_gains, warped_around, warped_face,
)
from scanner.top_face import TopFaceNet
from scanner.tossup import half_size
from scanner.dice import STAR, UP_DIE

log = logging.getLogger(__name__)


def _narrowed(params: TallyParams, factor: float) -> TallyParams:
    """`params` with the margins a face must win by (max_ratio, close_ratio, code_ratio,
    twin_ratio, agree_code_ratio) times `factor`."""
    if factor == 1.0:
        return params
    return replace(params, max_ratio=params.max_ratio * factor, close_ratio=params.close_ratio * factor,
                   code_ratio=params.code_ratio * factor, twin_ratio=params.twin_ratio * factor,
                   agree_code_ratio=params.agree_code_ratio * factor)


def _scaled(quad: np.ndarray, factor: float) -> np.ndarray:
    """`quad` scaled by `factor` about its centre."""
    centre = row_mean(quad)
    return ((quad - centre) * factor + centre).astype(np.float32)


def _turned(quad: np.ndarray, angle: float) -> np.ndarray:
    """`quad` turned by `angle` (radians) about its centre."""
    centre = row_mean(quad)
    turn = np.float32([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    return ((quad - centre) @ turn.T + centre).astype(np.float32)


#: The identity confidence of a die the finder named where the colour could not (it chose among
#: colours that lie as near, or named two dice whose colours a lamp moved).
FINDER_CHOICE_CONFIDENCE = 0.5
#: How far past the largest size the first look allows a square placed on a face may grow: a
#: hair, so that the largest grow itself, its side rounded in floating point, stays allowed.
PLACE_SIZE_SLACK = 1.01


def _found_blob(name: str, die: FoundDie, quad: np.ndarray) -> Blob:
    """A die the finder found, as a blob named `name` on its square `quad` (the finder
    measures no outline or colour: a full square, no body colour)."""
    return Blob(name, quad, die.center, die.side, 1.0, 1.0, np.zeros(3, np.float32))


def _found_at(found: Sequence[FoundDie], blob: Blob) -> FoundDie | None:
    """The die the finder found nearest `blob`'s centre, within half its side; else None."""
    near = [f for f in found if math.dist(f.center, blob.center) <= 0.5 * blob.side]
    return min(near, key=lambda f: math.dist(f.center, blob.center), default=None)


@dataclass
class DieRead:
    """One die as read, with what the decision rested on (for diagnostics and tuning)."""

    blob: Blob
    die: str | None
    die_confidence: float
    distances: dict[str, float]  # normalised colour distance to every die's body
    face: str | None
    confidence: float
    scores: dict[str, float]  # best correlation per face of the identified die
    #: The die finder judged it cocked (a die only the finder found).
    leaning: bool = False

    def reading(self, params: TallyParams) -> DieReading:
        return DieReading(
            center=self.blob.center, corners=tuple((float(x), float(y)) for x, y in self.blob.quad), die=self.die,
            face=self.face, confidence=self.confidence,
            cocked=self.leaning or self.blob.aspect < params.cocked_aspect, size=self.blob.side,
        )


def _nearest_faces(faces: Sequence[str], similarities: np.ndarray) -> list[tuple[str, float]]:
    """Every face with its similarity (cosine), best first."""
    return sorted(zip(faces, similarities.tolist()), key=lambda kv: -kv[1])


def code_twins(faces: Sequence[str], taught: np.ndarray, cosine: float) -> dict[str, tuple[str, float]]:
    """Per face, its twin and their codes' cosine: the face whose taught code lies nearest
    its own, at least `cosine` alike, where each is the other's nearest (never NO_FACE)."""
    similar = taught @ taught.T
    np.fill_diagonal(similar, -np.inf)
    nearest = similar.argmax(axis=1)
    return {faces[i]: (faces[int(j)], float(similar[i, j])) for i, j in enumerate(nearest)
            if nearest[j] == i and similar[i, j] >= cosine and NO_FACE not in (faces[i], faces[int(j)])}


@dataclass
class TallyReader:
    """A compiled model, ready to read frames; build once, call `read` per frame."""

    model: TallyModel
    params: TallyParams = field(default_factory=TallyParams)
    #: The learned die finder: adds the dice the colour blobs missed (see _with_found).
    finder: DieFinder | None = None
    finder_rules: FinderRules = field(default_factory=FinderRules)
    #: The face net that reads prints beside the templates, when the model holds its codes.
    face_net: FaceNet | None = None
    #: The top-face locator that places the square of a face left unsure (see _read_or_place).
    top_face: TopFaceNet | None = None

    def __post_init__(self) -> None:
        self.compiled = compile_model(self.model, self.params)
        #: The params with narrowed margins (see _narrowed), per (params, factor): made once.
        self._narrowings: dict[tuple[TallyParams, float], TallyParams] = {}
        #: Per colour, _clipped_towards it (a fixed model and params): each worked out once.
        self._towards: dict[str, dict[str, float]] = {}
        #: Per die, (its faces that have codes, their codes as rows).
        self._codes: dict[str, tuple[list[str], np.ndarray]] = {}
        if self.face_net is not None and self.model.codes:
            if self.model.code_net != self.face_net.fingerprint:
                log.warning("the Tally look's face codes came from another face net (%s, not %s): reading with "
                            "templates only; teach the dice again", self.model.code_net, self.face_net.fingerprint)
            else:
                for die, faces in DIE_FACES.items():
                    known = [face for face in (*faces, NO_FACE) if face in self.model.codes]
                    if len(known) >= 2:
                        self._codes[die] = (known, np.float32([self.model.codes[face] for face in known]))
        #: Per die, its faces' twins (see TallyParams.twin_cosine); none without codes.
        self._twins = {die: code_twins(faces, taught, self.params.twin_cosine) for die, (faces, taught) in self._codes.items()}

    def read(self, image: np.ndarray, with_faces: bool = True) -> list[DieReading]:
        readings = [d.reading(self.params) for d in self.read_dice(image, with_faces)]
        readings.sort(key=lambda d: (d.center[1], d.center[0]))
        return readings

    def _narrowed_params(self, factor: float) -> TallyParams:
        """_narrowed(self.params, factor), each made once (dataclasses.replace costs more than
        the arithmetic of a face read)."""
        if factor == 1.0:
            return self.params
        key = (self.params, factor)
        if key not in self._narrowings:
            self._narrowings[key] = _narrowed(self.params, factor)
        return self._narrowings[key]

    def _neutral(self, die: str) -> bool:
        """Whether the die's body has no hue (white or black)."""
        lab = self.model.bodies[die].lab
        return math.hypot(lab[1] - 128.0, lab[2] - 128.0) < self.params.neutral_chroma

    def _print_scores(self, image: np.ndarray, gains: np.ndarray, quads: Sequence[np.ndarray], die: str) -> list[float]:
        """How much the print inside each quad looks like any face of `die` (mean templates only)."""
        return print_scores([ink_of(face_patch(image, quad, gains))[0] for quad in quads], die, self.compiled)

    def _regrow(self, image: np.ndarray, gains: np.ndarray, blob: Blob, side: float) -> None:
        """Replace a too small top face by the best-printed square of `side` around it."""
        tries = [blob.quad]
        for quad in blob.candidates or [blob.quad]:
            tries.append(_scaled(quad, side / max(blob.side, 1e-6)))
        scores = self._print_scores(image, gains, tries, blob.die)
        best = int(np.argmax(scores))
        if best > 0:
            blob.place(tries[best], side)

    def _reads_the_same_grown(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, face: str,
                              typical: float | None, rivals: Collection[str]) -> bool:
        """Whether `face`, read on `blob` as `die`, reads the same on a square of the frame's
        common die size (`typical`) about the blob's centre, placed as any face is, where the
        blob's square is much smaller than that (see TallyParams.small_face): the print seen
        may be a part of the face's. True where the square is not that small."""
        if typical is None or blob.side >= self.params.small_face * typical:
            return True
        grown = replace(blob)  # placing moves a blob: the reading's own stays as it was
        grown.place(_scaled(grown.quad, typical / grown.side), typical)
        again = self._read_or_place(image, gains, grown, die, typical, rivals, locate=True)[0]
        if again != face and again != UNSURE:
            log.debug("%s %s at %s reads %s on a square of the common size: unsure", die, face, blob.center, again)
            return False
        return True

    def _placed(self, image: np.ndarray, gains: np.ndarray, quad: np.ndarray, die: str,
                typical: float | None = None, flatten: bool = False) -> np.ndarray:
        """The top face moved, resized and turned to where its print looks most like a face
        of `die` (the mean templates' best correlation): the best of a coarse set of larger
        squares (and of `typical` size, the frame's common die size, when the found one is
        larger), a few turns of it, then hill-climbing from there in small steps. `flatten`:
        the print is looked at with a shadow's shade divided out (see shadow_flattened)."""
        found = np.float32(quad)
        found_side = mean_side(found)
        # A square found too small lies inside the top face, often along an edge or in a
        # corner: it is grown about its centre, each corner and each edge's middle. Never
        # smaller than found, unless larger than the frame's other dice: part of a print can
        # look like another face (the "00" of a 100 like a 50). A quick first look: the found
        # square's body and ink colours for all (measuring them for each would cost more
        # than the correlations), centred only (the squares lie a few pixels apart).
        anchors = (row_mean(found), *found, *((found + np.roll(found, 1, axis=0)) / 2))
        largest = found_side * max(self.params.place_grow)
        smallest = found_side
        shrinks: list[float] = []
        if typical and found_side > typical * self.params.place_shrink_above:
            # Larger than the frame's other dice: a neighbour or a shadow joined the outline,
            # and a square grown much past the dice's size takes in more of them (or of a
            # patterned tray) than of the face.
            shrinks = [typical / found_side * f for f in self.params.place_shrink]
            smallest = typical * min(self.params.place_shrink)
            largest = min(largest, typical * self.params.place_largest)
        grows = [grow for grow in self.params.place_grow if found_side * grow <= largest * PLACE_SIZE_SLACK] + shrinks
        tries = [found] + [(found - anchor) * grow + anchor for grow in grows for anchor in anchors]
        source, source_gains, to_source = image, gains, None
        if flatten:
            # The shade is divided out once, of a patch around every square tried, which are
            # then cut from it (at the canonical grid's density: the same kernel fits).
            warped, to_source = warped_around(image, found, REGION_REACH, int(round(PATCH_SIDE * REGION_REACH)))
            source = shadow_flattened(warped.astype(np.float32) * gains, ink_sign_of(self.model, die), self.params)
            source_gains = np.ones(3, np.float32)

        def warp_at(q: np.ndarray) -> np.ndarray:
            if to_source is None:
                return warped_face(image, q)
            moved = cv2.perspectiveTransform(np.float32(q).reshape(-1, 1, 2), to_source).reshape(-1, 2)
            return warped_face(source, moved)

        _, body, ink = ink_of(times_gains(warp_at(found), source_gains))
        # Every later look uses the found square's body and ink colours too: measuring them
        # for each square would cost more than the correlations. So a square's ink depends on
        # the square alone, and one tried again (the best of a look, looked at again with
        # every shift) is not cut again.
        cut: dict[bytes, np.ndarray] = {}

        def inks_at(quads: Sequence[np.ndarray]) -> list[np.ndarray]:
            keys = [np.float32(q).tobytes() for q in quads]
            new = {key: q for key, q in zip(keys, quads) if key not in cut}
            if new:
                cut.update(zip(new, inks_as([warp_at(q) for q in new.values()], source_gains, body, ink)))
            return [cut[key] for key in keys]

        inks = inks_at(tries)
        best_quad = tries[int(np.argmax(print_scores(inks, die, self.compiled, shifts=False)))].astype(np.float32)

        def looks(quads: Sequence[np.ndarray]) -> list[float]:
            return print_scores(inks_at(quads), die, self.compiled)

        best = looks([best_quad])[0]
        # The outline's edges may run off the top face's (a neighbour or a shadow joined the
        # outline): the print decides the turn too, which the templates' right-angle turns
        # do not cover.
        if self.params.place_turns:
            tries = [_turned(best_quad, math.radians(turn)) for turn in self.params.place_turns]
            scores = looks(tries)
            index = int(np.argmax(scores))
            if scores[index] > best:
                best, best_quad = scores[index], tries[index]
        for _ in range(self.params.place_steps):
            centre = row_mean(best_quad)
            across, down = best_quad[1] - best_quad[0], best_quad[3] - best_quad[0]
            step = self.params.place_shift * mean_side(best_quad)
            across, down = across / max(np.linalg.norm(across), 1e-6) * step, down / max(np.linalg.norm(down), 1e-6) * step
            grow = self.params.place_scale
            tries = [best_quad + across, best_quad - across, best_quad + down, best_quad - down]
            # Within the sizes the first look tried: a square grown far past the die takes in
            # its neighbours' prints and the tray.
            if mean_side(best_quad) * grow <= largest * PLACE_SIZE_SLACK:
                tries.append((best_quad - centre) * grow + centre)
            if mean_side(best_quad) / grow >= smallest:
                tries.append((best_quad - centre) / grow + centre)
            scores = looks(tries)
            index = int(np.argmax(scores))
            if scores[index] <= best:
                break
            best, best_quad = scores[index], tries[index].astype(np.float32)
        return best_quad

    def _read_or_place(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, typical: float | None,
                       rivals: Collection[str] = (), locate: bool = False) -> tuple[str, float, dict[str, float]]:
        """(face, face confidence, scores) of `blob` as `die`; an unsure face is read again on
        the square placed where its print looks most like a face, and moves the blob there.
        `locate`: then on the top face where the locator sees it (only for a die named by its
        own colour: where a name is on trial, a face read is taken as the name's proof, and a
        face read on a located square is weaker proof than the print that placed it)."""
        read = self._read_face(image, gains, blob.quad, die, blob.clipped, rivals=rivals)
        if read[0] != UNSURE:
            return read
        if self.params.flatten_strictness > 0:
            # A shadow across the face (half of it lit) makes the ink mask the shadow's edge;
            # divided out, the print reads on the square found, before any is placed.
            flat = self._read_face(image, gains, blob.quad, die, blob.clipped, self.params.flatten_strictness,
                                   rivals, flatten=True)
            if flat[0] != UNSURE:
                return flat
        placed = self._placed(image, gains, blob.quad, die, typical)
        # The square was placed to look like some face: that one must win by more.
        again = self._read_face(image, gains, placed, die, blob.clipped, self.params.placed_ratio, rivals)
        if again[0] == UNSURE and self.params.flatten_strictness > 0:
            # Half in shade, the die's colour blob is its lit part: the square placed on the
            # print as seen runs along the shadow's edge. With the shade divided out the whole
            # print shows, and the square is placed on it.
            placed = self._placed(image, gains, blob.quad, die, typical, flatten=True)
            again = self._read_face(image, gains, placed, die, blob.clipped,
                                    self.params.placed_ratio * self.params.flatten_strictness, rivals, flatten=True)
        if again[0] == UNSURE and locate and self.top_face is not None:
            # Placing moves the square only where the print looks more like a face; the
            # locator sees where the top face lies, print or none (a side face, the shadow,
            # the rounded edges around it).
            located = self._read_located(image, gains, blob, die, rivals)
            if located is not None:
                placed, again = located
        # Only a face read for sure moves the die: an unsure one keeps what the tray checks
        # judge (a patch of tray would look more printed).
        if again[0] == UNSURE:
            return read
        blob.place(placed, mean_side(placed))
        return again

    def _read_located(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, rivals: Collection[str]
                      ) -> tuple[np.ndarray, tuple[str, float, dict[str, float]]] | None:
        """(the top face where the locator sees it, its face read there), or None when that
        face is unsure. It is read as seen and with the shade divided out: both must agree
        where both are sure, and a face mostly in shade (at least located_shade of it lifted
        more than shade_lift times) is read with the shade divided out only: the shadow's
        edge across a print can look like another face's strokes."""
        assert self.top_face is not None
        located = self.top_face.locate(image, gains, [blob.quad])[0]
        seen = self._read_face(image, gains, located, die, blob.clipped, rivals=rivals)
        flat = self._read_face(image, gains, located, die, blob.clipped, self.params.flatten_strictness, rivals,
                               flatten=True)
        lift = shade_gain(face_patch(image, located, gains), ink_sign_of(self.model, die), self.params)
        if seen[0] == UNSURE or float(np.mean(lift > self.params.shade_lift)) >= self.params.located_shade:
            read = flat
        elif flat[0] in (UNSURE, seen[0]):
            read = seen
        else:
            return None
        return None if read[0] == UNSURE else (located, read)

    def _identify_by_print(self, image: np.ndarray, gains: np.ndarray, blob: Blob, distances: Mapping[str, float],
                           taken: Mapping[str, float]) -> tuple[str, float, str, float, dict[str, float]]:
        """(die, its confidence, face, face confidence, scores) of a die whose colour lies
        between two dice (blue and purple under a lamp the balance left over): the print
        decides when it is a face that only one of them has, and clearly that one's (a
        circled 10 is blue's; a 20 or a star, which both have, stays unsure)."""
        best = min(distances.values())
        candidates = [die for die, d in distances.items() if die in self.compiled.templates
                      and d <= min(best + self.params.identity_margin, self.params.identity_max_distance)
                      and not held_elsewhere(die, d, taken)]
        if len(candidates) < 2:
            return UNSURE, 0.0, UNSURE, 0.0, {}
        reads = {die: self._read_face(image, gains, blob.quad, die, blob.clipped) for die in candidates}
        # The die whose faces the print matches best, if its face is read and clearly better.
        die = max(candidates, key=lambda d: max(reads[d][2].values(), default=-1.0))
        face, face_confidence, scores = reads[die]
        others = [other for other in candidates if other != die]
        rival = max(max(reads[other][2].values(), default=-1.0) for other in others)
        if (face != UNSURE and not any(face in DIE_FACES[other] for other in others)
                and distance_ratio(scores[face], rival) <= self.params.max_ratio):
            return die, self.params.print_identity_confidence, face, face_confidence, scores
        return UNSURE, 0.0, UNSURE, 0.0, {}

    def _pair_decision(self, ink: np.ndarray, die: str, scores: Mapping[str, float],
                       params: TallyParams, second: np.ndarray | None = None) -> tuple[str, float]:
        """(face, confidence) when the two best faces, nearly the same print, are the only
        contenders and the strokes that differ tell them apart; else unsure. Where they do not
        on `ink`, a clear vote on `second` (another cut) decides, if `ink` leans its way."""
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        if len(ranked) < 2 or ranked[0][1] < params.min_score:
            return UNSURE, 0.0
        (face, score), (other, _) = ranked[:2]
        if len(ranked) > 2 and distance_ratio(score, ranked[2][1]) > params.max_ratio:
            return UNSURE, 0.0
        pair = self.compiled.pairs.get(die, {}).get((face, other))
        vote = None if pair is None else pair_vote(ink, *pair, params.pair_difference)
        if vote is None:
            return UNSURE, 0.0
        if 1.0 - params.pair_vote < vote < params.pair_vote and second is not None:
            again = pair_vote(second, *pair, params.pair_difference)
            if again is not None and (again >= params.pair_vote and vote >= 0.5
                                      or again <= 1.0 - params.pair_vote and vote <= 0.5):
                voted = face if again >= 0.5 else other
                # A second sign must agree: the face net's nearest face for the print.
                if self._net_nearest(second, die) == voted:
                    return voted, params.second_cut_confidence
        if 1.0 - params.pair_vote < vote < params.pair_vote:
            return UNSURE, 0.0
        # As sure as the vote is clear, never more than a margin well won.
        return (face if vote >= params.pair_vote else other), round(0.5 + 0.4 * min(1.0, abs(vote - 0.5) * 2), 4)

    def _net_nearest(self, ink: np.ndarray, die: str) -> str:
        """The face (or NO_FACE) whose taught code lies nearest the face net's code of `ink`,
        read at params.code_turns; unsure without a net or codes for `die`."""
        if die not in self._codes:
            return UNSURE
        return self._net_faces(ink, die)[0][0]

    def _net_faces(self, ink: np.ndarray, die: str) -> list[tuple[str, float]]:
        """_nearest_to_mean of the face net's codes of `ink` (see _net_codes; `die` must have
        codes)."""
        return self._nearest_to_mean(die, self._net_codes(ink))

    def _net_codes(self, ink: np.ndarray) -> np.ndarray:
        """The face net's codes of `ink` read at params.code_turns."""
        return self.face_net.codes([np.rot90(ink, k) for k in self.params.code_turns])

    def _nearest_to_mean(self, die: str, codes: np.ndarray) -> list[tuple[str, float]]:
        """The faces of `die` (and NO_FACE) by how near their taught codes lie to the mean of
        `codes`, nearest first, with their cosines."""
        faces, taught = self._codes[die]
        return _nearest_faces(faces, taught @ unit_rows(codes.mean(axis=0, keepdims=True))[0])

    def _runner_up_pair(self, die: str, face: str, scores: Mapping[str, float]
                        ) -> tuple[str | None, tuple[np.ndarray, np.ndarray] | None]:
        """(the best-scoring face other than `face`, the aligned mean templates of the two when
        their prints are nearly the same, else None)."""
        other = max((f for f in scores if f != face), key=scores.__getitem__, default=None)
        return other, self.compiled.pairs.get(die, {}).get((face, other)) if other else None

    def _vote_against(self, ink: np.ndarray, die: str, face: str, scores: Mapping[str, float],
                      params: TallyParams) -> bool:
        """Whether the strokes that tell `face` from the runner-up, a face of nearly the same
        print (+100 and -100, 20 and 70), show the runner-up: a print cut a little too large or
        small can fit the other face's templates better, while the strokes they differ by
        stay where they are."""
        other, pair = self._runner_up_pair(die, face, scores)
        if pair is None or distance_ratio(scores[face], scores[other]) <= params.pair_veto_ratio:
            return False  # a runner-up that far behind is no contest
        vote = pair_vote(ink, *pair, params.pair_difference)
        return vote is not None and vote < params.pair_veto

    def _net_against(self, ink: np.ndarray, die: str, face: str, score: float) -> bool:
        """Whether the face net, reading the print (at params.code_turns), disagrees with the
        face the templates read (`score`: their best correlation):
        - it finds the print nearer the twin of `face` (see TallyParams.twin_cosine): the
          two readers disagree on a print that scores the player 200 points one way or the
          other. On the teach set this stops a +100 the templates read as -100 (the flattened
          cut then reads it right); the alt look loses a +100 read right.
        - or, where the templates' match is weak (score below params.net_check_below), it
          finds the print nearer no face than any face: a square half off the top face, or
          a print cut by a shadow's edge, whose strokes the templates took for another face's
          (see TallyParams.net_check_below);
        - or, where the templates' weak match is a star, it does not find the print clearly
          nearer the star than anything else (see TallyParams.star_net_ratio);
        - or, where the templates' match is weak, it finds the print clearly nearer another
          face (see TallyParams.net_overrule_ratio)."""
        twin = self._twins.get(die, {}).get(face)
        weak = score < self.params.net_check_below
        if die not in self._codes or (twin is None and not weak):
            return False
        similar = self._net_faces(ink, die)
        if weak and similar[0][0] == NO_FACE:
            return True
        nearness = dict(similar)
        (nearest, closest), own = similar[0], nearness.get(face)
        if (weak and nearest != face and own is not None
                and distance_ratio(closest, own) <= self.params.net_overrule_ratio):
            return True
        if weak and face == STAR and STAR in nearness:
            nearest_other = max(similarity for other, similarity in similar if other != STAR)
            if distance_ratio(nearness[STAR], nearest_other) > self.params.star_net_ratio:
                return True
        return twin is not None and nearness[twin[0]] > nearness[face]

    def _clipped_decision(self, ink: np.ndarray, die: str, scores: Mapping[str, float],
                          params: TallyParams) -> tuple[str, float]:
        """(face, confidence) of a clipped coloured die's print when its best face wins by the
        margins of an unclipped one and the strokes only it has (against the runner-up, a
        similar print) are seen; else unsure."""
        face, confidence, _ = decide_face(scores, params, self.compiled.close.get(die, frozenset()))
        if face == UNSURE:
            return UNSURE, 0.0
        other, pair = self._runner_up_pair(die, face, scores)
        if pair is None:
            return UNSURE, 0.0
        vote = pair_vote(ink, *pair, params.pair_difference)
        if vote is None or vote < params.clipped_pair_vote:
            return UNSURE, 0.0
        return face, round(min(confidence, 0.6), 4)

    def _code_decision(self, inks: Sequence[np.ndarray], die: str, params: TallyParams,
                       templates: Mapping[str, float] | None = None) -> tuple[str, float]:
        """(face, confidence) by the face net of a print cut at a few scales (the likeliest
        first), each also turned (params.code_turns; the likeliest cut alone unless the
        first code lies nearest a face with a twin): the mean of their codes must lie
        clearly nearest one face. A print read right has about the same code however it is
        cut and turned, so the mean keeps it; a square that misses the print reads
        differently as it grows (more of a neighbour, less of the print), and the mean of
        such codes lies near no face. Of two twin faces (see TallyParams.twin_cosine) the
        nearer is read when both lie clearly nearest and it is clearly the nearer one.
        `templates`: the templates' scores per face, where they could not decide: a face both
        rank first is read by a narrower win (see TallyParams.agree_code_ratio), and by a
        narrower one still where both rank the same pair of nearly alike prints first and the
        strokes that tell them apart show it (see TallyParams.pair_code_ratio)."""
        faces, taught = self._codes[die]
        twins = self._twins.get(die, {})
        first = self.face_net.codes(inks[:1])
        # The first cut alone: most prints the templates leave unsure the net leaves unsure
        # too, at a sixth of the cost. (Twins count as one face here: see twin_cosine.)
        (face, best), *others = _nearest_faces(faces, taught @ first[0])
        second = next((s for f, s in others if f != twins.get(face, (None,))[0]), -1.0)
        if face == NO_FACE or distance_ratio(best, second) > params.code_early:
            return UNSURE, 0.0
        if face in twins:
            turned = [np.rot90(ink, k) for ink in inks for k in params.code_turns][1:]
        else:
            # The likeliest cut turned, the others as they are (see TallyParams.code_turns);
            # every cut turned where the first reads as a face with a twin.
            turned = [np.rot90(inks[0], k) for k in params.code_turns][1:] + list(inks[1:])
        (face, best), (other, second), *rest = self._nearest_to_mean(die, np.concatenate([first, self.face_net.codes(turned)]))
        if face == NO_FACE or best < params.min_code:
            return UNSURE, 0.0
        ratio = distance_ratio(best, second)
        if ratio <= params.code_ratio:
            return face, round(0.5 + 0.5 * (1.0 - ratio / params.code_ratio), 4)
        twin, alike = twins.get(face, (None, 1.0))
        if (other == twin and rest and distance_ratio(best, rest[0][1]) <= params.twin_ratio
                and best - second >= params.twin_split * (1.0 - alike)):
            return face, params.twin_confidence
        scores = templates or {}
        by_templates = sorted(scores.items(), key=lambda kv: -kv[1])
        if (len(by_templates) > 1 and by_templates[0][0] == face != STAR and ratio <= params.agree_code_ratio
                and distance_ratio(by_templates[0][1], by_templates[1][1]) <= params.agree_template_ratio
                and not self._vote_against(inks[0], die, face, scores, params)):
            return face, params.agree_confidence
        runner_up, pair = self._runner_up_pair(die, face, scores)
        if (pair is not None and by_templates[0][0] == face and runner_up == other != twin
                and ratio <= params.pair_code_ratio):
            vote = pair_vote(inks[0], *pair, params.pair_difference)
            if vote is not None and vote >= params.pair_vote:
                return face, params.agree_confidence
        return UNSURE, 0.0

    def _read_face(self, image: np.ndarray, gains: np.ndarray, quad: np.ndarray, die: str,
                   clipped: float, strictness: float = 1.0, rivals: Collection[str] = (),
                   flatten: bool = False) -> tuple[str, float, dict[str, float]]:
        """(face, face confidence, scores per face) of the print inside `quad`; `strictness`
        below 1 narrows the margins the best face must win by. The face must also win by
        that margin over every face of the `rivals` (dice it may be, whose faces differ).
        `flatten`: a shadow's shade is divided out of the face first (see shadow_flattened)."""
        # The found quad may be a little off in size (a sliver of side face, a rounded edge
        # in shadow): the print is compared at a few scales.
        patches = [face_patch(image, quad, gains, scale) for scale in self.params.scales]
        if flatten:
            sign = ink_sign_of(self.model, die)
            patches = [shadow_flattened(patch, sign, self.params) for patch in patches]
        looks = [ink_of(patch) for patch in patches]
        inks = [look[0] for look in looks]
        # The scale is chosen with the mean templates; every template decides there. (As
        # print_scores and face_scores do, with the chosen ink's rows and its products with
        # the mean templates taken once.)
        if die in self.compiled.templates:
            ink_rows = ink_rows_of(inks)
            by_mean = best_over_shifts(ink_rows, self.compiled.means[die][1])
            chosen = int(np.argmax([max(score, -1.0) for score in by_mean.max(axis=1).tolist()]))
            chosen_rows = ink_rows.of(chosen)
            scores = face_scores_of(chosen_rows, die, self.compiled, by_mean[chosen])
        else:
            chosen, chosen_rows, scores = 0, None, {}
        ink = inks[chosen]
        close = self.compiled.close
        unclipped = params = self._narrowed_params(strictness)
        if clipped > self.params.max_clipped:
            params = self._narrowed_params(strictness * self.params.clipped_ratio)
            close = self.compiled.faint
        face, confidence, score = decide_face(scores, params, close.get(die, frozenset()))
        bright_white = clipped > params.max_clipped and self._neutral(die)
        middle = inks[len(inks) // 2]
        if face == UNSURE:
            # The vote weighs a few thin strokes (the upright of +100's plus). A white Up Die
            # the camera clipped keeps its black print sharp, but the body's glow thins the
            # strokes, and a cut larger than the found square fits the print best: the vote
            # is taken on the middle cut, nearest the found square's size. (Glare over the
            # print itself leaves no face matching well, which the vote needs.)
            face, confidence = self._pair_decision(middle if bright_white else ink, die, scores, params,
                                                   None if bright_white or chosen == len(inks) // 2 else middle)
        # A coloured body clips its brightest channels long before its print fades.
        if face == UNSURE and clipped > params.max_clipped and not self._neutral(die):
            # Two weaker signs that agree: the margin that would do on an unclipped die, and
            # the strokes that tell the two best faces apart.
            face, confidence = self._clipped_decision(ink, die, scores, unclipped)
        by_templates = face != UNSURE
        if face == UNSURE and die in self._codes:
            # The templates cannot tell: the net reads the print.
            face, confidence = self._code_decision([inks[chosen], *inks[:chosen], *inks[chosen + 1:]], die, params, scores)
        if face != UNSURE and face in self.compiled.circled.get(die, {}):
            if not ring_shown(ring_sectors(ink, self.compiled.circled[die][face]), params):
                return UNSURE, 0.0, scores
        if face == STAR and ink_solidity(ink) > params.max_star_solidity:
            return UNSURE, 0.0, scores
        if face != UNSURE and not flatten and self._lit_part_for_print(die, *looks[chosen][1:]):
            return UNSURE, 0.0, scores
        # Only against the templates: where they could not tell, the net read the print as a whole.
        if by_templates and self._vote_against(middle, die, face, scores, params):
            return UNSURE, 0.0, scores
        if by_templates and self._net_against(ink, die, face, score):
            return UNSURE, 0.0, scores
        if face != UNSURE and rivals:
            if any(face in DIE_FACES.get(other, ()) for other in rivals):
                return UNSURE, 0.0, scores  # the print cannot tell which of them it is
            rows = chosen_rows if chosen_rows is not None else ink_rows_of([ink])
            rival = max(max(face_scores_of(rows, other, self.compiled).values(), default=-1.0) for other in rivals)
            if distance_ratio(score, rival) > params.max_ratio and not self._net_tells_apart(ink, die, face, rivals, params):
                return UNSURE, 0.0, scores
        return face, confidence, scores

    def _lit_part_for_print(self, die: str, body: np.ndarray, ink: np.ndarray) -> bool:
        """Whether the "print" found on a face of `die`, whose print is lighter than its
        coloured body, is only the body's own colour brighter: the lit part of a face half in
        a shadow (see TallyParams.min_ink_whiteness)."""
        return (not self._neutral(die) and ink_sign_of(self.model, die) > 0
                and ink_whiteness(body, ink) < self.params.min_ink_whiteness)

    def _net_tells_apart(self, ink: np.ndarray, die: str, face: str, rivals: Collection[str],
                         params: TallyParams) -> bool:
        """Whether the face net, reading the print (at params.code_turns), finds it clearly nearer
        `face` of `die` than any face of the `rivals` (distance_ratio at most code_ratio), where
        the templates cannot tell them apart: a circled (20) and a circled (10) are mostly the
        same ring, and the templates match both nearly as well, while the net tells the numbers
        inside. The alt look's pale purple (20), whose colour lies as near the blue die and the
        Up Die, is so named; over the dev, teach and lean sets and dev as other cameras would
        take it, one more die is read right (a lean yellow 20 whose colour lay near the orange
        die's) and none wrong."""
        if die not in self._codes or face not in self._codes[die][0] or any(other not in self._codes for other in rivals):
            return False
        codes = self._net_codes(ink)
        own = dict(self._nearest_to_mean(die, codes))[face]
        rival = max(similarity for other in rivals for other_face, similarity in self._nearest_to_mean(other, codes)
                    if other_face != NO_FACE)
        return distance_ratio(own, rival) <= params.code_ratio

    def read_dice(self, image: np.ndarray, with_faces: bool = True) -> list[DieRead]:
        """Every die found, with its identity, face and the scores behind them."""
        gains = balance_gains(image)
        # The colour blobs are found on the frame halved, as the finder's input is made from it.
        half = half_size(image)
        # The finder's dice are looked at only where the colour blobs leave something to do
        # (see below): on most frames every die is found and read without it.
        finder = self.finder
        # One look of the finder gives both its dice (its own bar, DieFinder.threshold) and the
        # fainter traces a die in a wall's deep shadow leaves (FinderRules.shade_trace).
        traced_by_net = functools.cache(lambda: [] if finder is None else finder.find(
            image, half, min(self.finder_rules.shade_trace, finder.threshold)))
        found_by_net = functools.cache(lambda: [die for die in traced_by_net() if die.score >= finder.threshold])
        # Where this frame clips (a profile's black level taken off moves a clipped 255 down).
        clip = clip_levels(image)
        found = find_blobs(image, self.compiled, self.model, self.params, gains, half, clip)
        dice, typical = self._read_blobs(image, gains, found, found_by_net, with_faces)
        if with_faces and self.finder is not None:
            dice = self._swapped_by_finder(image, gains, dice, found_by_net, typical)
        complete = with_faces and {d.die for d in dice if d.face not in (None, UNSURE)} >= set(self.model.bodies)
        if self.finder is not None and not complete:
            # A set has one die of each: with every one of them read there is none to add.
            if with_faces:
                dice = self._without_specks(dice, found_by_net())
                # Before the finder's dice are named: a light patch of tray read as the Up Die
                # would hold that name from the die itself (unnamed dice wait for the shade pass).
                dice = self._without_unseen(image, dice, traced_by_net(), unnamed=False)
            dice = self._with_found(image, gains, dice, found_by_net(), typical, with_faces, clip)
        if with_faces and not complete:
            dice = self._with_shaded(image, gains, half, dice, traced_by_net(), typical)
        if with_faces and self.finder is not None and any(d.face in (None, UNSURE) for d in dice):
            dice = self._without_unseen(image, dice, traced_by_net())
        return dice

    def _read_blobs(self, image: np.ndarray, gains: np.ndarray, found: Sequence[Blob],
                    found_by_net: Callable[[], Sequence[FoundDie]], with_faces: bool
                    ) -> tuple[list[DieRead], float | None]:
        """(the dice read from the colour blobs `found`, the frame's common die size when
        enough of them agree on it)."""
        # A patch of tray or rim in a die's colour carries no print like that die's: the best
        # template of its colour must match at least a little (before choosing one per colour,
        # so such a patch cannot take the real die's place).
        printed = []
        patterned = {die for die, count in Counter(b.die for b in found).items()
                     if count >= (self.params.pattern_blobs_neutral if self._neutral(die) else self.params.pattern_blobs)}
        for blob in found:
            if blob.die not in self.compiled.templates:
                printed.append(blob)
                continue
            # The top face is the candidate square whose print looks most like a face of
            # this die (a side face's print is foreshortened, a half-square cut is no print).
            scored = self._print_scores(image, gains, blob.candidates or [blob.quad], blob.die)
            best = int(np.argmax(scored))
            if scored[best] >= self.params.min_print_score:
                blob.print_score = scored[best]
                if blob.candidates:
                    blob.place(blob.candidates[best])
                if blob.colours:
                    blob.lab = blob.colours[best]
                printed.append(blob)
        chosen = choose_dice(printed, self.model, self.params)
        typical = self._common_side(chosen, found_by_net)
        if typical is not None:
            # Every die in a set is the same size: a top face found much smaller than the
            # others is a part of it (print cut the body apart, a shadow took a corner). The
            # face is looked for again at the common size, around each candidate and its print.
            for blob in chosen:
                if blob.side < 0.88 * typical and blob.die in self.compiled.templates:
                    self._regrow(image, gains, blob, typical)
        distances_all = [colour_distances(blob.lab, self.model, self.params) for blob in chosen]
        identities = assign_identities(distances_all, self.params)
        if not with_faces:
            return [DieRead(blob, None, 0.0, {}, None, 0.0, {}) for blob in chosen], typical
        # A blob of a colour the tray is patterned in is a die only once its face reads (it is
        # taken for tray below): it holds no name against another blob. Squares of a wooden rim
        # in a taught look's orange held "orange" from the orange die itself, clipped to look
        # yellow, whose star then read as the yellow die's with no rival to tell it from: taught
        # on the 20 teach photos and read on the Tally test split, confident mistakes 3 -> 0 of
        # 308 dice (identity .986 -> .997, faces .969 -> .980); with the built-in look no die of
        # any set reads otherwise, through the bench's seven cameras and under its two lamps.
        on_pattern = {index for index, blob in enumerate(chosen) if blob.die in patterned}

        def read(index: int, nameless: Collection[int]) -> DieRead | None:
            """The die read from chosen[index], the blobs `nameless` holding no name against it;
            None where it is taken for tray."""
            blob, distances = chosen[index], distances_all[index]
            die, die_confidence = identities[index]
            face, confidence, scores = UNSURE, 0.0, {}
            # The dice other blobs are, with how well each matches: not this one's to be.
            taken = {other_die: distances_all[other][other_die] for other, (other_die, _) in enumerate(identities)
                     if other != index and other_die != UNSURE and other not in nameless}
            if die == UNSURE:
                die, die_confidence = self._tie_broken(blob, distances, taken, found_by_net())
            if die == UNSURE and blob.clipped <= self.params.max_clipped:
                die, die_confidence, face, face_confidence, scores = self._identify_by_print(
                    image, gains, blob, distances, taken)
                confidence = min(die_confidence, face_confidence) if face != UNSURE else 0.0
            elif die != UNSURE:
                # Clipping shifts a body's hue (orange turns yellow, blue and green pale
                # towards the white Up Die): a clipped die's print must also tell it from
                # every die of nearby colour that no other blob matches better.
                rivals = self._clip_rivals(blob, distances, taken, die) if blob.clipped > self.params.rival_clipped else []
                face, face_confidence, scores = self._read_or_place(image, gains, blob, die, typical, rivals, locate=True)
                if face == UNSURE:
                    face, face_confidence, scores = self._read_where_found(
                        image, gains, blob, die, typical, rivals, found_by_net(), (face, face_confidence, scores))
                if face == UNSURE and rivals:
                    # Clipping leaves the colour between dice (an orange die clipped reads as
                    # yellow), and a star, on both, cannot tell them apart: the finder, which
                    # sees the whole die, chooses among them when sure, as for two colours
                    # that lie as near (_tie_broken); the face is then read as that die's.
                    picked, picked_confidence = self._finder_choice(blob, [die, *rivals], found_by_net(),
                                                                    self.params.clipped_finder_identity)
                    if picked != UNSURE:
                        again = self._read_or_place(image, gains, blob, picked, typical)
                        if again[0] != UNSURE:
                            die, die_confidence = picked, picked_confidence
                            face, face_confidence, scores = again
                if face == UNSURE and rivals:
                    # Measured once: _rival_by_rim moves the blob only where it returns a read.
                    excess = self._blob_edge_excess(image, gains, blob)
                    renamed = self._rival_by_rim(image, gains, blob, die, rivals, typical, excess)
                    if renamed is not None:
                        die, die_confidence, (face, face_confidence, scores) = renamed
                    else:
                        kept = self._kept_by_rim(image, gains, blob, die, rivals, typical, excess)
                        if kept is not None:
                            die_confidence = min(die_confidence, self.params.rim_identity_confidence)
                            face, face_confidence, scores = kept
                        else:
                            renamed = self._rival_by_print(image, gains, blob, die, rivals, typical, scores)
                            if renamed is not None:
                                die, die_confidence, (face, face_confidence, scores) = renamed
                elif face != UNSURE and self.params.rim_rival_clipped < blob.clipped <= self.params.rival_clipped:
                    # Less clipped, the print decides between the dice it is nearest without
                    # the rivals' check; a face its rival has too (a star, a 70 of the
                    # orange and yellow dice) cannot. Its edge still can.
                    shared = [other for other in self._clip_rivals(blob, distances, taken, die)
                              if face in DIE_FACES.get(other, ())]
                    renamed = (self._rival_by_rim(image, gains, blob, die, shared, typical,
                                                  self._blob_edge_excess(image, gains, blob)) if shared else None)
                    if renamed is not None:
                        die, die_confidence, (face, face_confidence, scores) = renamed
                if face != UNSURE and blob.clipped > self.params.finder_rival_clipped and self.finder is not None:
                    renamed = self._renamed_by_finder(image, gains, blob, die, taken, typical, found_by_net)
                    if renamed is not None:
                        die, die_confidence, (face, face_confidence, scores) = renamed
                if face == UNSURE and self._neutral(die):
                    # A white blob may be a coloured die's white print and glare (a star
                    # fills much of a face): its face's edge shows the die's own colour.
                    renamed = self._renamed_by_ring(image, gains, blob, taken, typical, found_by_net())
                    if renamed is not None:
                        die, die_confidence, (face, face_confidence, scores) = renamed
                if face != UNSURE and face_confidence < self.params.weak_read and self.finder is not None:
                    face, face_confidence, scores = self._read_at_finder_size(
                        image, gains, blob, die, rivals, found_by_net(), (face, face_confidence, scores))
                if face != UNSURE and not self._reads_the_same_grown(image, gains, blob, die, face, typical, rivals):
                    face, face_confidence = UNSURE, 0.0
                confidence = min(die_confidence, face_confidence) if face != UNSURE else 0.0
                # An unread face on a patch of patterned tray, on a white or black patch
                # whose print looks like none of the Up Die's faces, or with hardly any print
                # like a face of its die (a square of a plaid rim), is tray, not a die.
                if face == UNSURE and (blob.die in patterned or blob.print_score < self.params.unread_min_print
                                       or self._neutral(die)
                                       and max(scores.values(), default=0.0) < self.params.neutral_min_score):
                    log.debug("%s blob at %s taken for tray (patterned: %s)", blob.die, blob.center, blob.die in patterned)
                    return None
                if face == UNSURE and self._neutral(die) and blob.clipped >= self.params.blown_rim_clipped:
                    # Glare blows a coloured die's top out white (its colour fringing where
                    # some channels clip); its rim and sides keep the body's colour.
                    name, chance = self._rim_winner(rim_shares(image, gains, blob.quad, self.compiled), set(taken))
                    if name != UNSURE:
                        log.debug("blown %s blob at %s is %s by its edge's colour", blob.die, blob.center, name)
                        die, die_confidence = name, chance
            return DieRead(blob, die, die_confidence, distances, face, confidence, scores)

        reads = [read(index, on_pattern) for index in range(len(chosen))]
        # A blob whose face did not read holds no name either, but that is known only once all
        # are read: a clipped die read while such a blob held a name it turns into (three squares
        # of wooden rim, too few for a pattern, one holding "orange" from the orange die clipped
        # to look yellow) is read again with that name free. A look taught as the wizard teaches
        # (the teach photos until every face is seen three times: 18) read on the Tally test
        # split: confident mistakes 4 -> 0 of 308 dice, identity .976 -> .990, faces .959 -> .973.
        # With the built-in look, through the bench's seven cameras: one confident mistake fewer
        # (s08-r08's orange star through JPEG q60, now unsure), one die more read right, nothing
        # else read otherwise; under its two lamps nothing.
        unread = {index for index, dice_read in enumerate(reads)
                  if dice_read is None or dice_read.face == UNSURE} - on_pattern
        for index, dice_read in enumerate(reads):
            if (not unread or dice_read is None or dice_read.face == UNSURE
                    or chosen[index].clipped <= self.params.rival_clipped):
                continue
            holders = {identities[other][0] for other in range(len(chosen))
                       if other != index and other not in unread and other not in on_pattern}
            freed = {identities[other][0] for other in unread if other != index} - holders
            if any(name != UNSURE and self._turns_into(name, dice_read.die) for name in freed):
                reads[index] = read(index, on_pattern | unread)
        return [dice_read for dice_read in reads if dice_read is not None], typical

    def _common_side(self, chosen: Sequence[Blob], found_by_net: Callable[[], Sequence[FoundDie]]) -> float | None:
        """The frame's common die size: the median top face of the colour blobs where at
        least three agree on it, else the median of the finder's dice (it measures each die
        it finds, and a roll of one or two dice is common in a game); None where neither can
        tell."""
        if len(chosen) >= 3:
            return float(np.median([b.side for b in chosen]))
        sides = [die.side for die in found_by_net()]
        return float(np.median(sides)) if sides else None

    def _with_shaded(self, image: np.ndarray, gains: np.ndarray, half: np.ndarray, dice: list[DieRead],
                     traced: Sequence[FoundDie], typical: float | None) -> list[DieRead]:
        """`dice` plus the dice the finder finds in the frame's shade lifted, read there as
        _with_found reads the finder's dice: a die in a wall's shadow on a white board is too
        dark for the colour bands learned under the lamp, and for the finder in the frame as it
        comes. Only a die whose name no die of the frame has, dark where it lies (see
        FinderRules.shade_dark), with its face read, or unread where the finder is sure of it
        (FinderRules.shade_unread_score). An unnamed die of `dice`, dark where it
        lies, that the finder finds there too is read again the same way, and so replaced
        (its colour, too dark in the frame as it comes for the bands, shows there lifted).

        The finder looks in the shade lifted where its first look (`traced`: its dice down to
        FinderRules.shade_trace) left a trace of a die in shade that no die read is, not only a
        die it is sure of. With the unnamed dice read again, that reads 3 more flat dice of the
        Tally check set's rolls r00-r04 (fixtures/tallycheck, tables nothing had been tuned on)
        and a leaning one, 4 of its rolls r05-r08 (looked at only afterwards), 1 of the dev
        split, 7 of dev as other cameras would take it, and 9 more flat dice of dev, lean and
        the check set in the calibration bench's lamps, uncalibrated; no confident mistake more
        on any of them."""
        rules = self.finder_rules
        held = {d.die for d in dice if d.die not in (None, UNSURE)}
        if self.finder is None or held >= set(self.model.bodies):
            return dice
        read = [(d.blob.center, d.blob.side) for d in dice]
        found, shade = find_in_shade(self.finder, image, half, rules, traced, read)
        if shade is None:
            return dice
        # Measured only where a die found there is to be judged dark: it costs a pass over the frame.
        brightness = functools.cache(lambda: Brightness(image))
        shaded = [die for die in found if rules.admits(die, read, read=True)]
        unnamed = self._unnamed_in_shade(dice, found, brightness)
        if not shaded and not unnamed:
            return dice
        bright = lifted_around(image, shade, ((die.center, die.side) for die in [*shaded, *unnamed.values()]))
        clip = clip_levels(bright)
        result = list(dice)

        def named(die: DieRead) -> bool:
            return die.die not in (None, UNSURE) and die.die not in held and die.face not in (None, UNSURE)

        def sure_unread(die: DieRead) -> bool:
            # Too dark for the print to read: the finder, sure it is this die (as its colour
            # says), shows the player which die to set by hand rather than leaving it out of the roll.
            if die.die in (None, UNSURE) or die.die in held:
                return False
            same = [other for other in shaded if rules.same(other, die.blob.center, die.blob.side)]
            return any(other.score >= rules.shade_unread_score
                       and other.chances().get(die.die, 0.0) >= rules.shade_unread_identity
                       for other in same)

        for die in self._with_found(bright, gains, dice, shaded, typical, True, clip)[len(dice):]:
            if (named(die) or sure_unread(die)) and brightness().of(die.blob.quad) <= rules.shade_dark:
                log.debug("%s %s found in the shade at %s", die.die, die.face, die.blob.center)
                held.add(die.die)
                result.append(die)
        for index, found_die in unnamed.items():
            others = result[:index] + result[index + 1:]
            again = self._with_found(bright, gains, others, [found_die], typical, True, clip)[len(others):]
            if again and named(again[0]):
                log.debug("an unnamed die at %s read in the shade as %s %s", result[index].blob.center,
                          again[0].die, again[0].face)
                held.add(again[0].die)
                result[index] = again[0]
        return result

    def _unnamed_in_shade(self, dice: Sequence[DieRead], found: Sequence[FoundDie],
                          brightness: Callable[[], Brightness]) -> dict[int, FoundDie]:
        """Per unnamed die of `dice` dark where it lies (FinderRules.shade_dark, against the
        frame's `brightness`), the die of `found` (the finder's in the shade lifted) surest to
        be the same one, where it found one at least min_score sure."""
        rules = self.finder_rules
        unnamed = {}
        for index, die in enumerate(dice):
            if die.die not in (None, UNSURE):
                continue
            same = [other for other in found if other.score >= rules.min_score
                    and rules.same(other, die.blob.center, die.blob.side)]
            if same and brightness().of(die.blob.quad) <= rules.shade_dark:
                unnamed[index] = max(same, key=lambda other: other.score)
        return unnamed

    def _without_unseen(self, image: np.ndarray, dice: list[DieRead], traced: Sequence[FoundDie],
                        unnamed: bool = True) -> list[DieRead]:
        """`dice` less the unread ones whose top face runs off the frame (`image`), which shows
        the whole tray (a corner of the table beyond it); the unread white or unnamed ones
        where the finder, looking at the whole frame (`traced`), scores no die at least
        FinderRules.min_score, its own bar for adding one: a light patch of wood grain, cloth
        or wall, or the lamp's glare on the floor, that the colour blobs took for the white
        Up Die or for a die they could not name; and the unread ones named by their colour
        where it leaves no trace at all (FinderRules.shade_trace) and they lie in no wall's
        deep shade: a square of wooden rim in a taught look's orange. Such a reading is nothing
        the player can fix by tapping ("could not tell which die this is"), and an empty tray's
        stays there roll after roll. Every die of a set whose Up Die is dark stays: the finder
        knows white Up Dice only. `unnamed` False: the unnamed ones stay too (the shade pass
        may yet name them).

        Over the dev split, teach and lean sets and the Tally check set (rolls and empty trays),
        the unread white or unnamed readings the finder scored below 0.3 were 14, none of them a
        die, while the unread dice scored 0.43 and up; every labelled die's top face lies at
        least 19 pixels inside the frame. Unread dice named by colour stayed however the
        finder scored them until the look the calibration wizard teaches (18 teach photos)
        took 8 squares of table s08's wooden rim for orange dice on the Tally test split; the
        finder traces 6 of them below shade_trace (those measured: 0.03-0.06), while a die it
        traces no more than that lies in a wall's shade (0.05: s17's purple die through noise
        and JPEG). Over every labelled Tally set, that look now finds 78 false dice instead of
        92 and reads 3 dice more right (on the test split, precision .968 -> .987, identity
        .990 -> .993); the built-in look through the bench's seven cameras 524 instead of 534
        (4 more right), under its warm lamp 3 fewer, under its bluish one 89 instead of 116
        (patches of tray named purple; 7 more right, a confident mistake fewer); no die is
        lost. (Without the shade's exception, s17's purple die is lost, and 15 more false dice
        under the bluish lamp are dropped.)"""
        rules = self.finder_rules
        height, width = image.shape[:2]
        finder_knows = ink_sign_of(self.model, UP_DIE) < 0  # a white Up Die, its print darker
        # Measured only for a die that needs it (few frames have one).
        shade = functools.cache(lambda: (measure_shade(image, rules.shade_gain), Brightness(image)))

        def in_shade(die: DieRead) -> bool:
            return in_deep_shade(*shade(), die.reading(self.params), rules.shade_gain, rules.shade_dark)

        def kept(die: DieRead) -> bool:
            if die.face not in (None, UNSURE):
                return True
            quad = np.asarray(die.blob.quad)
            if (quad < 0).any() or (quad[:, 0] > width - 1).any() or (quad[:, 1] > height - 1).any():
                return False
            if die.die in (None, UNSURE) and not unnamed:
                return True
            if not finder_knows:
                return True
            if die.die not in (None, UNSURE) and not self._neutral(die.die):
                # `traced` holds every trace of at least shade_trace.
                traced_here = any(rules.same(found, die.blob.center, die.blob.side) for found in traced)
                return traced_here or in_shade(die)
            return any(found.score >= rules.min_score and rules.same(found, die.blob.center, die.blob.side)
                       for found in traced)

        return [d for d in dice if kept(d)]

    def _without_specks(self, dice: list[DieRead], found: Sequence[FoundDie]) -> list[DieRead]:
        """`dice` less the unread ones far smaller than the dice the finder is sure of, where it
        found nothing: a square of a plaid rim or a cloth's check, not a die."""
        rules = self.finder_rules
        sure = [die.side for die in found if die.score >= rules.sizing_score]
        if not sure:
            return dice
        size = float(np.median(sure))
        return [d for d in dice if not (d.face in (None, UNSURE) and d.blob.side < rules.speck_size * size
                                        and not any(rules.same(die, d.blob.center, d.blob.side) for die in found
                                                    if die.score >= rules.min_score))]

    def _read_where_found(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, typical: float | None,
                          rivals: Collection[str], found: Sequence[FoundDie],
                          read: tuple[str, float, dict[str, float]]) -> tuple[str, float, dict[str, float]]:
        """`read`, the unsure face of `blob` as `die`, or the face read on a square the finder
        found for the same die nearby, which then becomes the die's top face. The blobs'
        outline can take in a shadow or a side face (a white Up Die on a white board); the
        finder's square sits on the top face. Where no square's print reads, the die still
        moves to the finder's square when its own lies well off it."""
        rules = self.finder_rules
        moved: tuple[Blob, tuple[str, float, dict[str, float]]] | None = None
        for other in found:
            gap = math.dist(other.center, blob.center)
            if other.score < rules.reread_score or not rules.reread_apart * blob.side <= gap <= rules.reread_near * blob.side:
                continue
            chances = other.chances()
            if max(chances, key=chances.__getitem__) != die or chances[die] < rules.min_identity:
                continue
            trial = Blob(die, np.float32(other.corners()), other.center, other.side, 1.0, 1.0, blob.lab, blob.clipped)
            again = self._read_or_place(image, gains, trial, die, typical, rivals, locate=True)
            if again[0] != UNSURE:
                blob.place(trial.quad, trial.side)
                return again
            if moved is None and gap >= rules.move_apart * blob.side:
                moved = trial, again
        if moved is not None:
            blob.place(moved[0].quad, moved[0].side)
            return moved[1]
        return read

    def _tie_broken(self, blob: Blob, distances: Mapping[str, float], taken: Mapping[str, float],
                    found: Sequence[FoundDie]) -> tuple[str, float]:
        """(die, confidence) of a die whose colour lies as near two dice (blue and purple under
        some lamps) when the finder, at the same place, is sure it is one of them and no other
        die of the frame is (less sure where it chooses the nearer colour: see
        FinderRules.nearer_identity); else unsure. The colours stay the user's: the net only
        chooses among those they allow."""
        near = [die for die in distances if die in self.compiled.templates and among_nearest(distances, die, self.params)
                and not held_elsewhere(die, distances[die], taken)]
        if len(near) < 2:
            return UNSURE, 0.0
        die, confidence = self._finder_choice(blob, near, found, self.finder_rules.nearer_identity)
        if die not in (UNSURE, min(near, key=distances.__getitem__)):
            # It chose the farther colour: only its own word names the die.
            return self._finder_choice(blob, near, found, self.finder_rules.sure_identity)
        return die, confidence

    def _finder_choice(self, blob: Blob, candidates: Sequence[str], found: Sequence[FoundDie],
                       sure: float) -> tuple[str, float]:
        """(die, FINDER_CHOICE_CONFIDENCE) of the `candidates` the finder, at the blob, gives at least
        `sure` probability given that it is a Tally die; else unsure.

        The blob is a Tally die by its colour, so what the finder gives a Toss Up die is its
        doubt about a look it has not seen (it learned our renders' dice), not another answer.
        A yellow 70 in a wall's shade on the alt look, its colour as near orange (2.6 against
        2.7): yellow 0.77, Toss Up 0.21, orange 0.00. Given Tally: all sets x seven cameras 8
        more read right (that die through all seven, a play orange 70 through gamma 0.8), under
        the calibration bench's warm and bluish lamps 1 and 2 more; nothing read otherwise.
        Not where the finder names a die the blobs missed (_finder_guess): there its doubt may
        be whether it is a die at all (made that way too, 8 right reads were lost and a
        confident mistake made). Not given the candidates alone either: one confident mistake
        more under the bluish lamp (an alt purple (20) named blue, purple not a candidate).
        """
        at = _found_at(found, blob)
        if at is None:
            return UNSURE, 0.0
        chances = at.chances(DIE_FACES)
        guess = max(candidates, key=lambda die: chances.get(die, 0.0))
        return (guess, FINDER_CHOICE_CONFIDENCE) if chances.get(guess, 0.0) >= sure else (UNSURE, 0.0)

    def _with_found(self, image: np.ndarray, gains: np.ndarray, dice: list[DieRead], found: Sequence[FoundDie],
                    typical: float | None, with_faces: bool, clip: Sequence[int]) -> list[DieRead]:
        """`dice` plus the dice the finder found that the colour blobs missed (a white Up Die
        on a white board, a die in a wall's shadow): named when the finder and the body colour
        agree, or the body colour and the print do, or the finder and the print do (see
        _named_by_print), and no other die is that one, the face read
        by the templates. A blown die taken for the Up Die, its face unread, is the die its
        edge shows, if any (see _rim_winner). The finder's word on leaning flags one only where
        FinderRules.tally_leaning says so. A die touching another that the finder scores below
        near_score is added only when it is named and its face read (see
        FinderRules.read_near_score). `clip`: the image's clip_levels."""
        rules = self.finder_rules
        result = list(dice)
        held = {d.die for d in dice if d.die not in (None, UNSURE)}
        for die in found:
            if with_faces and self._displaced_unread(image, gains, die, result, held, typical):
                continue
            others = [(d.blob.center, d.blob.side) for d in result]
            if not rules.admits(die, others, read=with_faces):
                continue
            must_read = not rules.admits(die, others)
            quad = np.float32(die.corners())
            colours = self._body_distances(image, gains, quad)
            name, chance = self._found_identity(die, colours, held)
            blown = blown_share(image, quad, clip) > self.params.max_clipped
            by_rim = False
            if name == UNSURE and blown:
                name, chance = self._named_by_rim(die, rim_shares(image, gains, quad, self.compiled), held)
                by_rim = name != UNSURE
            blob = _found_blob(name, die, quad)
            face, confidence, scores = (None, 0.0, {}) if not with_faces else (UNSURE, 0.0, {})
            likely, _ = self._finder_likely(die, held)  # the finder's word, if it has one
            if with_faces and name == UNSURE:
                # The finder knows our renders' dice only (a black Up Die is none of them to it):
                # the user's own body colour and print, agreeing, name the die without it. Where
                # the finder takes it for another die, the print must not be one of that die's
                # faces too, and must beat them by the usual margins.
                by_colour = self._named_by_colour(colours, held)
                if by_colour != UNSURE:
                    rivals = [likely] if likely not in (UNSURE, by_colour) else []
                    read = self._read_or_place(image, gains, blob, by_colour, typical, rivals=rivals)
                    if read[0] != UNSURE:
                        name, chance = by_colour, self.params.colour_print_identity_confidence
                        face, face_confidence, scores = read
                        confidence = min(chance, face_confidence)
            if with_faces and name == UNSURE and likely != UNSURE:
                named = self._named_by_print(image, gains, blob, likely, colours, typical)
                if named is not None:
                    name, chance, (face, face_confidence, scores) = named
                    confidence = min(chance, face_confidence)
            if with_faces and name != UNSURE and face == UNSURE:
                face, face_confidence, scores = self._read_or_place(image, gains, blob, name, typical, locate=True)
                confidence = min(chance, face_confidence) if face != UNSURE else 0.0
            if with_faces and blown and name != UNSURE and self._neutral(name) and face == UNSURE:
                # The finder sees a blown top as white as the Up Die's; the die's edge keeps
                # its body's colour.
                on_edge, edge_chance = self._rim_winner(rim_shares(image, gains, quad, self.compiled), held)
                if on_edge != UNSURE:
                    name, chance, by_rim = on_edge, edge_chance, True
            if with_faces and name == UNSURE:
                claimed = self._claimed_from_clipped(image, gains, die, blob, colours, result, held, found, typical)
                if claimed is None:
                    claimed = self._claimed_from_unread(image, gains, die, blob, colours, result, typical)
                if claimed is None:
                    claimed = self._claimed_from_shifted(image, gains, die, blob, result, held, found, typical)
                if claimed is not None:
                    name, chance, (face, confidence, scores) = claimed
            if name == UNSURE and not rules.unnamed_tally:
                continue
            if must_read and (name == UNSURE or face in (None, UNSURE)):
                continue
            if face in (None, UNSURE) and die.score < rules.blown_score and blown and not by_rim:
                # Mostly blown out, no print read, the net not sure of it and no rim of a die's
                # colour: a lamp's mirror image on the tray (a white Up Die under the lamp's
                # glare, the net is sure of).
                continue
            if name != UNSURE:
                held.add(name)
            result.append(DieRead(blob, name if with_faces else None, chance, {}, face, confidence,
                                  scores, leaning=rules.tally_leaning and die.cocked >= rules.cocked))
        return result

    def _displaced_unread(self, image: np.ndarray, gains: np.ndarray, die: FoundDie, result: list[DieRead],
                          held: set[str], typical: float | None) -> bool:
        """Whether the die the finder found at `die`, which it is sure of (FinderRules.displace_score
        and sure_identity), took the place of the one die of `result` there, read with another
        name and its face unread: a patch of tray or a shadow in a die's colour, found beside a
        die of another colour and taken for a die over it (a green felt's patch beside a white
        Up Die), holds the place the finder's die needs. The finder's die must be the die its
        body colour names, which no other die of the frame is (`held`), and its print must read
        as that die's: then it replaces the unread one (`result` and `held` change); else
        nothing changes. (The finder learned our renders' dice only: its word alone never
        names a die against the user's own colours.)"""
        rules = self.finder_rules
        if die.score < rules.displace_score:
            return False
        there = [index for index, d in enumerate(result) if rules.same(die, d.blob.center, d.blob.side)]
        if len(there) != 1 or result[there[0]].face not in (None, UNSURE):
            return False
        holder = result[there[0]]
        elsewhere = held - {holder.die}
        guess, chance = self._finder_guess(die, elsewhere)
        if guess == UNSURE or guess == holder.die or chance < rules.sure_identity:
            return False
        quad = np.float32(die.corners())
        if self._named_by_colour(self._body_distances(image, gains, quad), elsewhere) != guess:
            return False
        blob = _found_blob(guess, die, quad)
        face, face_confidence, scores = self._read_or_place(image, gains, blob, guess, typical)
        if face == UNSURE:
            return False
        held.discard(holder.die)
        held.add(guess)
        chance = round(chance, 4)
        result[there[0]] = DieRead(blob, guess, chance, {}, face, min(chance, face_confidence), scores)
        log.debug("%s die at %s takes the place of the unread %s at %s", guess, die.center, holder.die, holder.blob.center)
        return True

    def _claimed_from_clipped(self, image: np.ndarray, gains: np.ndarray, die: FoundDie, blob: Blob,
                              colours: Sequence[Mapping[str, float]], result: list[DieRead], held: set[str],
                              found: Sequence[FoundDie], typical: float | None
                              ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a die the finder found, left
        unnamed because a clipped blob holds the die its colour is, when it is that die: the
        clipped blob's hue is the shifted one (an orange die clipped under the lamp looks
        yellow, and takes the yellow die's place), so it is read again as the die that
        clipping turns into that colour, or left unsure. Else None; `result` and `held` change
        only when the die is claimed.

        The claim needs four signs that agree: the die's body colour, the finder's guess here
        and not at the clipped blob, and a print that reads as a face of that die."""
        claimed = self._claim(die, colours, result)
        if claimed is None or self._neutral(claimed[0]):
            return None
        claim, _, holder = claimed
        clipped = result[holder]
        there = _found_at(found, clipped.blob)
        there_guess = UNSURE if there is None else self._finder_guess(there, ())[0]
        if clipped.blob.clipped <= self.params.claim_clipped or there_guess == claim:
            return None
        read = self._read_or_place(image, gains, blob, claim, typical)
        if read[0] == UNSURE:
            return None
        brighter = clipped_distances(clipped.blob.lab, self.model, self.params)
        free = [other for other in self.compiled.templates if other not in held and not self._neutral(other)
                and brighter[other] <= brighter[claim] + self.params.rival_clip_margin]
        renamed = (UNSURE, 0.0, (UNSURE, 0.0, {}))
        if free:
            other = there_guess if there_guess in free else min(free, key=brighter.__getitem__)
            again = self._read_or_place(image, gains, clipped.blob, other, typical)
            if again[0] != UNSURE:
                renamed = (other, self.params.colour_print_identity_confidence, again)
                held.add(other)
        other, other_chance, (face, face_confidence, scores) = renamed
        confidence = min(other_chance, face_confidence) if face != UNSURE else 0.0
        result[holder] = replace(clipped, die=other, die_confidence=other_chance, face=face, confidence=confidence,
                                 scores=scores)
        log.debug("%s die at %s claimed from the clipped blob at %s, now %s", claim, die.center,
                  clipped.blob.center, other)
        return claim, self.params.colour_print_identity_confidence, read

    def _claim(self, die: FoundDie, colours: Sequence[Mapping[str, float]], result: Sequence[DieRead]
               ) -> tuple[str, float, int] | None:
        """(the die a die the finder found is, by its body colour and the finder agreeing,
        the finder's probability, the index in `result` of the die that holds that name); None
        where they do not agree or no die holds it."""
        claim = self._named_by_colour(colours, ())
        guess, chance = self._finder_likely(die, ())
        holder = next((index for index, d in enumerate(result) if d.die == claim), None)
        if claim == UNSURE or guess != claim or holder is None:
            return None
        return claim, chance, holder

    def _claimed_from_unread(self, image: np.ndarray, gains: np.ndarray, die: FoundDie, blob: Blob,
                             colours: Sequence[Mapping[str, float]], result: list[DieRead], typical: float | None
                             ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a die the finder found, left
        unnamed because a die of the frame whose face is not read holds the die it is, when it
        is that die: its body colour and the finder name it, and its print reads as one of that
        die's faces, where the holder's did not (a shaded patch of white wall taken for the
        white Up Die). The holder keeps its place, unnamed. Else None; `result` changes only
        when the die is claimed."""
        claimed = self._claim(die, colours, result)
        if claimed is None or result[claimed[2]].face not in (None, UNSURE):
            return None
        claim, chance, holder = claimed
        read = self._read_or_place(image, gains, blob, claim, typical)
        if read[0] == UNSURE:
            return None
        result[holder] = replace(result[holder], die=UNSURE, die_confidence=0.0)
        log.debug("%s die at %s claimed from the unread one at %s", claim, die.center, result[holder].blob.center)
        return claim, round(chance, 4), read

    def _claimed_from_shifted(self, image: np.ndarray, gains: np.ndarray, die: FoundDie, blob: Blob,
                              result: list[DieRead], held: set[str], found: Sequence[FoundDie], typical: float | None
                              ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a die the finder found, left
        unnamed because a neighbouring colour's die holds its name: under a very warm lamp the
        yellow die's colour moves onto the orange die's, its blob takes that name, and the
        orange die (its blob merged with the red one's) is found by the finder only. Where the
        finder is sure (FinderRules.sure_identity) that `die` is the held die and that the
        holder is a die no reading holds, whose colour the holder's lies within
        identity_max_distance of, and both prints read as the swapped dice's faces, the two
        are named so, at the finder's choice confidence. Else None; `result` and `held`
        change only when the die is claimed.

        Over the dev, teach, lean and alt sets, the Tally check set and dev, lean and the
        check set in the calibration bench's lamps it fired once: check tallycheck-tallyup-s15-r01
        (2,800 K), where a yellow star read as an orange star and the orange 60 was unnamed;
        both are now read right."""
        sure = self.finder_rules.sure_identity
        claim, chance = self._finder_guess(die, ())
        holder = next((index for index, d in enumerate(result) if d.die == claim), None)
        if claim == UNSURE or chance < sure or holder is None or self._neutral(claim):
            return None
        other = result[holder]
        there = _found_at(found, other.blob)
        free, free_chance = (UNSURE, 0.0) if there is None else self._finder_guess(there, held)
        if (free in (UNSURE, claim) or free_chance < sure or self._neutral(free)
                or other.distances.get(free, math.inf) > self.params.identity_max_distance):
            return None
        read = self._read_or_place(image, gains, blob, claim, typical)
        if read[0] == UNSURE:
            return None
        moved = replace(other.blob)  # placing moves a blob: the holder's own stays as it was
        again = self._read_or_place(image, gains, moved, free, typical)
        if again[0] == UNSURE:
            return None
        confidence = FINDER_CHOICE_CONFIDENCE
        result[holder] = replace(other, blob=moved, die=free, die_confidence=confidence, face=again[0],
                                 confidence=min(confidence, again[1]), scores=again[2])
        held.add(free)
        log.debug("%s die at %s claimed from the one at %s, which is %s", claim, die.center, moved.center, free)
        return claim, confidence, read

    def _read_at_finder_size(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, rivals: Collection[str],
                             found: Sequence[FoundDie], read: tuple[str, float, dict[str, float]]
                             ) -> tuple[str, float, dict[str, float]]:
        """`read`, the face of `blob` as `die` read weakly, or (see TallyParams.weak_read) the
        face read again on a square of the size of the dice the finder is sure of, when `blob`
        is far smaller: the die is regrown to it."""
        sure = [f.side for f in found if f.score >= self.finder_rules.sizing_score]
        if len(sure) < 2:
            return read
        size = float(np.median(sure))
        if blob.side >= self.params.small_square * size:
            return read
        self._regrow(image, gains, blob, size)
        return self._read_or_place(image, gains, blob, die, size, rivals, locate=True)

    def _renamed_by_finder(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, taken: Mapping[str, float],
                           typical: float | None, found_by_net: Callable[[], Sequence[FoundDie]]
                           ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a clipped blob named `die` by its
        colour and read: a die that turns into `die`'s colour where it clips and that no other
        blob is (`taken`), where the finder, which sees the whole die, is sure of it (see
        TallyParams.finder_rival_clipped) and its print reads as one of that die's faces; else
        None. Clipping turns a hue one way only: a yellow die never looks orange."""
        turned = [other for other in self.compiled.templates if other not in taken and self._turns_into(other, die)]
        if not turned:
            return None
        chosen, confidence = self._finder_choice(blob, [die, *turned], found_by_net(), self.params.clipped_finder_identity)
        if chosen in (UNSURE, die):
            return None
        read = self._read_or_place(image, gains, blob, chosen, typical)
        if read[0] == UNSURE:
            return None
        log.debug("clipped %s blob at %s is %s by the finder", die, blob.center, chosen)
        return chosen, confidence, read

    def _swapped_by_finder(self, image: np.ndarray, gains: np.ndarray, dice: list[DieRead],
                           found_by_net: Callable[[], Sequence[FoundDie]], typical: float | None) -> list[DieRead]:
        """`dice`, with the names of two swapped back (see TallyParams.swap_identity): a clipped
        die read as the colour it turns into (an orange die as yellow) pushes the die of that
        colour onto its own name, one die of each colour being in a set. Where the finder gives
        each of the two the other's name and the clipped die's print reads as one of its new
        die's faces (a face both dice show: its print cannot tell them apart), the names are
        swapped; the other die's face is read again as its new die's (unsure where it reads as
        none of them)."""
        result = list(dice)
        for index, held in enumerate(result):
            if (held.die in (None, UNSURE) or held.face in (None, UNSURE)
                    or held.blob.clipped <= self.params.finder_rival_clipped):
                continue
            for other_index, other in enumerate(result):
                # A face only the held die has is its print's word for its name (a blue 50:
                # no purple die shows 50); a star or a 70, on both, tells nothing.
                if (other_index == index or other.die in (None, UNSURE) or not self._turns_into(other.die, held.die)
                        or held.face not in DIE_FACES.get(other.die, ())):
                    continue
                at_held, at_other = _found_at(found_by_net(), held.blob), _found_at(found_by_net(), other.blob)
                if (at_held is None or at_other is None
                        or at_held.chances().get(other.die, 0.0) < self.params.swap_identity
                        or at_other.chances().get(held.die, 0.0) < self.params.swap_identity):
                    continue
                face, confidence, scores = self._read_or_place(image, gains, held.blob, other.die, typical)
                if face == UNSURE:
                    continue
                again, again_confidence, again_scores = self._read_or_place(image, gains, other.blob, held.die, typical)
                log.debug("clipped %s blob at %s and %s blob at %s swap names by the finder",
                          held.die, held.blob.center, other.die, other.blob.center)
                result[index] = DieRead(held.blob, other.die, FINDER_CHOICE_CONFIDENCE, held.distances, face,
                                        min(FINDER_CHOICE_CONFIDENCE, confidence), scores)
                result[other_index] = DieRead(other.blob, held.die, FINDER_CHOICE_CONFIDENCE, other.distances, again,
                                              0.0 if again == UNSURE else min(FINDER_CHOICE_CONFIDENCE, again_confidence),
                                              again_scores)
                break
        return result

    def _clip_rivals(self, blob: Blob, distances: Mapping[str, float], taken: Mapping[str, float], die: str) -> list[str]:
        """The dice other than `die` that `blob`, clipped, may be: clipping shifts a body's hue
        (orange turns yellow, blue and green pale towards the white Up Die), so each die of
        nearby colour (rival_margin, clipped_identity_distance) that would look about as near
        lit until it clips (rival_clip_margin), and that no other blob matches better
        (`taken`)."""
        nearest = min(distances.values())
        brighter = clipped_distances(blob.lab, self.model, self.params)
        return [other for other, d in distances.items() if other != die and other in self.compiled.templates
                and d <= min(self.params.clipped_identity_distance, nearest + self.params.rival_margin)
                and brighter[other] <= nearest + self.params.rival_clip_margin
                and not held_elsewhere(other, d, taken)]

    def _blob_edge_excess(self, image: np.ndarray, gains: np.ndarray, blob: Blob) -> dict[str, float]:
        """_edge_excess of the edge band about `blob`'s top face, nothing held, taken side by
        side and none below 0, averaged over the four sides: what the rim rules of a clipped
        blob (_rival_by_rim, _kept_by_rim) weigh.

        By one side the tray's ring may be a die's colour where the other sides' is not (a die
        against a wooden wall, the wall in a taught look's orange): the whole ring's share of it
        would cancel the die's own edge on the other sides. An orange 70 of table s08, clipped
        to look yellow and lying against the wall, showed orange 0.07 more on its edge than
        around it as a whole (yellow 0.60), and 0.22 side by side. Over every labelled Tally
        set, each also as the six other cameras would take it, the look the calibration wizard
        teaches reads 6 dice more right, one of them a confident mistake before (the play set's
        s00-r00 orange star through noise and JPEG, read as the yellow star); the built-in look
        1 more; nothing else is read otherwise, nor under the calibration bench's two lamps."""
        sides = [self._edge_excess(shares, ()) for shares in rim_side_shares(image, gains, blob.quad, self.compiled)]
        return {name: sum(max(side[name], 0.0) for side in sides) / len(sides) for name in self.compiled.dice}

    def _rival_by_rim(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, rivals: Sequence[str],
                      typical: float | None, excess: Mapping[str, float]
                      ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a clipped blob named `die` whose
        print cannot tell it from its `rivals` (the dice clipping turns into its colour): the rival
        whose body colour shows on the die's edge (`excess`: _blob_edge_excess; see
        TallyParams.rival_rim_share), when its print reads as one of that die's faces; else None.

        Not a rival that `die` itself turns into where it clips (within rival_clip_margin of
        its body lit brighter): a die named against its colour (by the finder, say orange for a
        blob yellow as clipped orange is) shows that colour on its edge's clipped part too.
        Clipping turns a hue one way only, so the rival's colour there tells nothing."""
        for other in rivals:
            if self._clipped_towards(other)[die] <= self.params.rival_clip_margin:
                continue
            if excess[other] < self.params.rival_rim_share:
                continue
            read = self._read_or_place(image, gains, blob, other, typical)
            if read[0] != UNSURE:
                log.debug("clipped %s blob at %s is %s by its edge's colour", blob.die, blob.center, other)
                return other, self.params.rim_identity_confidence, read
        return None

    def _rival_by_print(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, rivals: Sequence[str],
                        typical: float | None, own: Mapping[str, float]
                        ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a clipped blob named `die` whose
        print cannot tell it from its `rivals` and whose edge names none of them: the rival that
        turns into `die`'s colour where it clips (orange into yellow) whose print reads as a face
        `die` does not have, nearer to it by max_ratio (as any face read must be to the next)
        than to the best of `die`'s own faces (`own`: their scores); else None. The blob moves
        only where it returns a read.

        An orange 60 clipped to look yellow beside a wooden rim, which covered its edge in the
        orange of a look taught on other tables: its print is no yellow face (the 20 at best,
        0.85) and clearly the orange 60 (0.93). Over every labelled Tally set, each also as the
        six other cameras would take it, the built-in look reads 1 die more right and the look
        the calibration wizard teaches 2; nothing else is read otherwise, nor under the
        calibration bench's two lamps. The look taught on 20 teach photos reads the Tally test
        split as the built-in look does: identity .997 -> 1.000, faces .980 -> .983. (Not only
        rivals that turn into `die`: a cocked red (50) of the play set was read as the purple
        (20).)"""
        best_own = max(own.values(), default=None)
        if best_own is None:
            return None
        for other in rivals:
            if not self._turns_into(other, die):
                continue
            moved = replace(blob)
            read = self._read_or_place(image, gains, moved, other, typical)
            if (read[0] != UNSURE and read[0] not in DIE_FACES.get(die, ())
                    and distance_ratio(read[2][read[0]], best_own) <= self.params.max_ratio):
                log.debug("clipped %s blob at %s is %s by its print", blob.die, blob.center, other)
                blob.place(moved.quad, moved.side)
                return other, self.params.rim_identity_confidence, read
        return None

    def _kept_by_rim(self, image: np.ndarray, gains: np.ndarray, blob: Blob, die: str, rivals: Sequence[str],
                     typical: float | None, excess: Mapping[str, float]) -> tuple[str, float, dict[str, float]] | None:
        """(face, face confidence, scores) of a clipped blob named `die` whose print cannot tell
        it from its `rivals`, read as `die` alone, when `die`'s own body colour shows on its
        edge (`excess`: _blob_edge_excess; see TallyParams.rival_rim_share) more than any
        rival's and no rival turns into `die`'s colour where it clips: an orange die's edge
        shows orange where its glaring top reads between orange and yellow, a clipped yellow
        die's never does. Else None (no such edge, or the print reads as no face of `die`)."""
        if excess[die] < self.params.rival_rim_share:
            return None
        towards = self._clipped_towards(die)
        if any(towards[other] <= self.params.rival_clip_margin or excess[other] >= excess[die] for other in rivals):
            return None
        read = self._read_or_place(image, gains, blob, die, typical)
        if read[0] == UNSURE:
            return None
        log.debug("clipped %s blob at %s keeps its name by its edge's colour", die, blob.center)
        return read

    def _renamed_by_ring(self, image: np.ndarray, gains: np.ndarray, blob: Blob, taken: Mapping[str, float],
                         typical: float | None, found: Sequence[FoundDie]
                         ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a blob taken for the white or
        black Up Die whose face is not read: the coloured die that the ring inside its face's
        edge has the colour of, when no other blob is that die and the print reads as one of
        its faces; else None.

        A blob of white print and glare can be placed beside the face it lies on (its best
        printed candidate square takes in tray), so that its ring has the tray's colour: the
        square the finder found at the blob is tried too, named as a die the finder adds is
        (its colour and the finder agree), and becomes the die's top face when its print reads.
        """
        for distances in self._lit_and_relit(ring_body(face_patch(image, blob.quad, gains))):
            name, _ = nearest_die(distances, self.params)
            if name == UNSURE or self._neutral(name) or name not in self.compiled.templates or name in taken:
                continue
            read = self._read_or_place(image, gains, blob, name, typical)
            if read[0] != UNSURE:
                return name, self.params.colour_print_identity_confidence, read
        at = _found_at(found, blob)
        if at is None:
            return None
        quad = np.float32(at.corners())
        name, chance = self._found_identity(at, self._body_distances(image, gains, quad), taken)
        if name == UNSURE or self._neutral(name):
            return None
        trial = Blob(name, quad, at.center, at.side, 1.0, 1.0, blob.lab, blob.clipped)
        read = self._read_or_place(image, gains, trial, name, typical)
        if read[0] == UNSURE:
            return None
        blob.place(trial.quad, trial.side)
        return name, chance, read

    def _body_distances(self, image: np.ndarray, gains: np.ndarray, quad: np.ndarray) -> tuple[dict[str, float], ...]:
        """The top face's body colour against every learned body: as lit, and lit as brightly
        as the dice were learned (a die the finder found where the blobs did not is often in
        a wall's shadow; see relit_distances); measured on a ring inside the face's edge,
        then over the whole face."""
        # A star or a "20" in white covers so much of a small face, glare more, that the whole
        # face's median is the print's and a blue die passes for the white Up Die; the ring
        # lies outside the print. A square the finder put a little off the face takes in tray
        # on the ring, where the whole face's median still has the body.
        patch = face_patch(image, quad, gains)
        return self._lit_and_relit(ring_body(patch)) + self._lit_and_relit(ink_of(patch)[1])

    def _lit_and_relit(self, body: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
        """A balanced BGR body colour's distances to every learned body, as lit and relit."""
        return colour_distances(lab_of(body), self.model, self.params), relit_distances(body, self.model, self.params)

    def _named_by_colour(self, colours: Sequence[Mapping[str, float]], held: Collection[str]) -> str:
        """The die whose learned body colour the top face clearly has (`colours`: see
        _body_distances) and that no other die of the frame is (`held`; see nearest_free);
        else unsure."""
        for distances in colours:
            by_colour, _ = nearest_free(distances, held, self.params)
            if by_colour != UNSURE and by_colour in self.compiled.templates:
                return by_colour
        return UNSURE

    def _named_by_print(self, image: np.ndarray, gains: np.ndarray, blob: Blob, guess: str,
                        colours: Sequence[Mapping[str, float]], typical: float | None
                        ) -> tuple[str, float, tuple[str, float, dict[str, float]]] | None:
        """(die, confidence, (face, face confidence, scores)) of a die the finder found whose
        body colour lies nearer another die's (on the dev split through a stronger JPEG: an
        orange 60 nearer the yellow die, a purple (20)'s pale top nearer the Up Die): `guess`,
        the finder's (a die no other one of the frame is, at least min_identity likely), when
        its colour is still within identity_max_distance and the print reads as one of its
        faces, winning by the usual margins over every face of the dice its colour cannot tell
        it from (nearer, or not farther by identity_margin), and not one of theirs (a 60 is
        the orange die's; a 70, on orange and yellow, cannot tell). Else None.

        The finder knows our renders' dice and the body colour the user's, so neither names a
        die alone where they disagree; a print only the finder's die has breaks the tie. The
        print is read where the square was found, placed, and where the top-face locator sees
        the top face (the alt look's blue star: the finder's square lay 9 pixels, a fifth of
        a side, off it).
        On the dev split as other cameras would take it 3 dice more read right, on the alt
        look (taught from 20 photos) 1, the same on dev, teach and lean; under the calibration
        bench's lamps (uncalibrated) the dev split and lean set +0.4 to +0.8 points of
        identity; none wrong more on any. (Letting the print beat only the dice strictly
        nearer in colour read more, but also took a finder not sure of it at its word between
        two dice as near in colour, where a print both have cannot tell.)"""
        if not colours:
            return None
        nearest = min(colours, key=lambda distances: distances[guess])
        if nearest[guess] > self.params.identity_max_distance:
            return None
        # The dice its colour cannot tell it from: nearer, or not clearly farther.
        rivals = [other for other, distance in nearest.items()
                  if other != guess and distance <= nearest[guess] + self.params.identity_margin]
        read = self._read_or_place(image, gains, blob, guess, typical, rivals=rivals, locate=True)
        if read[0] == UNSURE:
            return None
        return guess, self.params.colour_print_identity_confidence, read

    def _found_identity(self, die: FoundDie, colours: Sequence[Mapping[str, float]],
                        held: Collection[str]) -> tuple[str, float]:
        """(die, confidence) of a die the finder found: the learned body colour of its top
        face (`colours`: see _body_distances) and the finder must name the same die (the net
        may break a tie between two colours that lie as near, when it is sure), and no other
        die of the frame be it. The finder learned our renders' colours only; the body colours
        are the user's own. The colour is told among the dice not `held` (see nearest_free):
        a pale orange die beside the yellow one is orange."""
        guess, chance = self._finder_guess(die, held)
        if guess == UNSURE:
            return UNSURE, 0.0
        for distances in colours:
            by_colour, colour_confidence = nearest_free(distances, held, self.params)
            if by_colour == guess and chance >= self.finder_rules.min_identity:
                return guess, round(min(chance, colour_confidence), 4)
            if among_nearest(distances, guess, self.params) and chance >= self.finder_rules.sure_identity:
                return guess, FINDER_CHOICE_CONFIDENCE  # the net breaks the colour's tie
        return UNSURE, 0.0

    def _finder_guess(self, die: FoundDie, held: Collection[str]) -> tuple[str, float]:
        """(the Tally die the finder thinks `die` likeliest is, its probability), or unsure
        when that die is another one of the frame or one this look cannot read."""
        chances = {name: p for name, p in die.chances().items() if name in DIE_FACES}
        if not chances:
            return UNSURE, 0.0
        guess = max(chances, key=chances.__getitem__)
        if guess in held or guess not in self.compiled.templates:
            return UNSURE, 0.0
        return guess, chances[guess]

    def _finder_likely(self, die: FoundDie, held: Collection[str]) -> tuple[str, float]:
        """_finder_guess where the finder gives it at least min_identity; else unsure."""
        guess, chance = self._finder_guess(die, held)
        return (guess, chance) if guess != UNSURE and chance >= self.finder_rules.min_identity else (UNSURE, 0.0)

    def _named_by_rim(self, die: FoundDie, shares: Mapping[str, tuple[float, float]],
                      held: Collection[str]) -> tuple[str, float]:
        """(die, confidence) of a die the finder found whose top face the camera blew out
        (glare leaves it white, whatever its colour): the finder's likeliest identity, when
        no other die of the frame is it and the die's own edge shows that die's body colour,
        more than the tray around it does (see _edge_excess); where the finder is
        unsure which die it is, or takes it for the Up Die another die of the frame is, the
        die the edge clearly shows (see _rim_winner); else unsure."""
        guess, chance = self._finder_guess(die, ())
        if guess == UNSURE:
            return UNSURE, 0.0
        if guess in held:
            # The finder takes it for another die of the frame: for the white Up Die where it
            # sees the white top alone.
            return self._rim_winner(shares, held) if self._neutral(guess) else (UNSURE, 0.0)
        if chance < self.finder_rules.min_identity:
            return self._rim_winner(shares, held)
        if self._edge_excess(shares, held)[guess] < self.params.rim_share:
            return UNSURE, 0.0
        return guess, self.params.rim_identity_confidence

    def _clipped_towards(self, colour: str) -> dict[str, float]:
        """Per die, how near it comes to `colour`'s learned body when lit brighter until the
        camera clips it (clipped_distances of that body): small where clipping turns the die
        into that colour (orange into yellow). The rim rules ask it for every pair of dice they
        weigh, each time a blown die is read: it is worked out on the first ask only."""
        if colour not in self._towards:
            self._towards[colour] = clipped_distances(np.float32(self.model.bodies[colour].lab), self.model, self.params)
        return self._towards[colour]

    def _turns_into(self, die: str, other: str) -> bool:
        """Whether coloured `die`, lit until the camera clips it, looks like coloured `other`
        (within rim_clip_margin: see _clipped_towards)."""
        return (other != die and not self._neutral(other)
                and self._clipped_towards(other)[die] <= self.params.rim_clip_margin)

    def _edge_excess(self, shares: Mapping[str, tuple[float, float]], held: Collection[str]) -> dict[str, float]:
        """Per die, how much more of a die's edge band than of the tray ring around it has that
        die's body colour (`shares`: see rim_shares; the ring's share times rim_over_tray
        taken off). For a coloured die no other die of the frame (`held`) is, the same of
        each colour it turns into where it clips is added where a die of that colour is held
        elsewhere: the purple on a blown blue die's edge, the yellow on a blown orange one's."""
        plain = {name: edge - self.params.rim_over_tray * tray for name, (edge, tray) in shares.items()}
        return {name: value if name in held or self._neutral(name)
                else value + sum(plain[other] for other in held if self._turns_into(name, other))
                for name, value in plain.items()}

    def _rim_winner(self, shares: Mapping[str, tuple[float, float]], held: Collection[str]) -> tuple[str, float]:
        """(die, confidence) of the coloured die not `held` whose body colour covers the most
        of a blown die's edge band, less rim_over_tray times the tray ring's share (`shares`:
        see rim_shares), when that is at least rim_alone_share and rim_alone_margin more than
        any other such die's; else unsure. Not a colour another die not held turns into where
        it clips (within rim_clip_margin: an orange die's edge in glare shows yellow, a blue
        die's purple) and whose own colour shows on the edge at all, nor the Up Die's white or
        black (glare spills white over the edge). The colour a die turns into where it clips
        counts as its own where a die of that colour is held (see _edge_excess)."""
        excess = self._edge_excess(shares, held)
        free = sorted(((excess[name], name) for name in shares if name not in held and not self._neutral(name)),
                      reverse=True)
        if not free:
            return UNSURE, 0.0
        best, winner = free[0]
        runner_up = free[1][0] if len(free) > 1 else 0.0
        if best < self.params.rim_alone_share or best - runner_up < self.params.rim_alone_margin:
            return UNSURE, 0.0
        # Where it clips, the other die's rim and sides would not: none of its colour, not it.
        if any(self._turns_into(other, winner) and shares[other][0] > 0 for _, other in free[1:]):
            return UNSURE, 0.0
        return winner, self.params.rim_identity_confidence


#: Side of the patch a die's edge is measured on (see rim_shares).
RIM_PATCH = 48
#: The patch holds the top face grown this much about its centre: its edge and the tray around.
RIM_REACH = 1.6


def _rim_rings() -> tuple[np.ndarray, np.ndarray]:
    """(edge band, tray ring) of a RIM_PATCH square patch: square rings about its centre, at
    0.8-1.1 and 1.3-1.55 of the top face's half side."""
    reach = square_reach(RIM_PATCH, RIM_REACH)
    edge, tray = (reach >= 0.8) & (reach <= 1.1), (reach >= 1.3) & (reach <= 1.55)
    edge.setflags(write=False)
    tray.setflags(write=False)
    return edge, tray


_RIM_EDGE, _RIM_TRAY = _rim_rings()


def _rim_sides() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(edge band, tray ring) of each side of the patch's top face: the quarters of the rings
    nearer that side than either side beside it."""
    across = np.arange(RIM_PATCH) - (RIM_PATCH - 1) / 2.0
    dy, dx = np.meshgrid(across, across, indexing="ij")
    quarters = (dy < -np.abs(dx), dx > np.abs(dy), dy > np.abs(dx), dx < -np.abs(dy))  # top, right, bottom, left
    sides = tuple((_RIM_EDGE & quarter, _RIM_TRAY & quarter) for quarter in quarters)
    for edge, tray in sides:
        edge.setflags(write=False)
        tray.setflags(write=False)
    return sides


_RIM_SIDES = _rim_sides()


def rim_shares(image: np.ndarray, gains: np.ndarray, quad: np.ndarray, compiled: Compiled) -> dict[str, tuple[float, float]]:
    """Per die, the shares of pixels of its body colour on the die's edge (its rounded rim
    and what shows of its sides, around the top face `quad`) and on the tray just around it.

    Glare turns a die's top face white; its rim and sides, turned away from the lamp, keep the
    body's colour.
    """
    return _ring_shares(_rim_labels(image, gains, quad, compiled), _RIM_EDGE, _RIM_TRAY, compiled)


def rim_side_shares(image: np.ndarray, gains: np.ndarray, quad: np.ndarray, compiled: Compiled
                    ) -> list[dict[str, tuple[float, float]]]:
    """rim_shares of each side of the top face `quad` alone (the four quarters of the edge band
    and the tray ring that face its sides)."""
    labels = _rim_labels(image, gains, quad, compiled)
    return [_ring_shares(labels, edge, tray, compiled) for edge, tray in _RIM_SIDES]


def _rim_labels(image: np.ndarray, gains: np.ndarray, quad: np.ndarray, compiled: Compiled) -> np.ndarray:
    """label_pixels of the RIM_PATCH square patch about the top face `quad`."""
    patch, _ = warped_around(image, quad, RIM_REACH, RIM_PATCH)
    return label_pixels(cv2.cvtColor(balanced(patch, gains), cv2.COLOR_BGR2LAB), compiled)


def _ring_shares(labels: np.ndarray, edge: np.ndarray, tray: np.ndarray, compiled: Compiled) -> dict[str, tuple[float, float]]:
    """Per die, the shares of the pixels of `edge` and of `tray` (masks of the patch's `labels`)
    in its body colour."""
    on_edge, on_tray = labels[edge], labels[tray]
    return {die: (float(np.count_nonzero(on_edge == index + 1)) / on_edge.size,
                  float(np.count_nonzero(on_tray == index + 1)) / on_tray.size)
            for index, die in enumerate(compiled.dice)}


def read_tally(image: np.ndarray, model: TallyModel | None = None, params: TallyParams | None = None,
               with_faces: bool = True) -> list[DieReading]:
    """Read one frame (compiles the model each call: use TallyReader for a stream)."""
    return TallyReader(model or default_model(), params or TallyParams()).read(image, with_faces)
