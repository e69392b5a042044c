"""White balance and the Tally dice's body colours: how far a colour lies from each die's, and
which die each die found in a frame is by its colour.

Physical setup assumed: the Tally reader's (scanner/tally.py): the tray seen from above under
any white-ish lamp (2700-6500 K), a white patch somewhere in view. The lamp's white is mapped to
WHITE_LEVEL (`balance_gains`), so lamp colour and brightness drop out; colours are then compared
in 8-bit Lab with each learned body colour, in units of its spread (at least the spread floor of
TallyParams). A set has one die of each colour: `assign_identities` shares the colours out among
the dice of a frame. A die in a wall's shadow (`relit_distances`) or clipped by the camera
(`clipped_distances`) is compared with the bodies as they would look so lit.
"""

from __future__ import annotations

import functools
import math
from typing import Collection, Mapping, Sequence

import cv2
import numpy as np

from scanner.frames import UNSURE
from scanner.tally_model import WHITE_LEVEL, TallyModel, TallyParams
from scanner.tossup import illuminant


#: The lamp colours we expect (2700-6500 K, a camera's imperfect white balance): blue and
#: green relative to red. A "white patch" outside this range is no white at all (a tray
#: with no white in view, only yellow print and an orange die: blue under a third of red),
#: and is not trusted. Green down to 0.65 of red: a warm lamp at half the light (the
#: calibration bench's, on a render whose own lamp was warm) gives 0.69, and with 0.7 its
#: white went untrusted, its tint stayed, and yellow dice read as orange: on the dev split in
#: that light, uncalibrated, 10 confident mistakes -> 1, identity 95.5 -> 98.8 %; no reading
#: changes in the fixtures' own light (dev, teach, lean, alt, dev as other cameras would take it).
#: Blue down to 0.35 of red for the same reason: in that light the Tally check set's warm tables
#: (fixtures/tallycheck, nothing tuned on them before) and the lean set's give 0.36-0.45, and
#: with 0.45 their white went untrusted: uncalibrated, read right 472 -> 509 of 564 dice and
#: confident mistakes 18 -> 9; on the dev split, where only empty trays lie below 0.45, the same.
LAMP_BLUE_PER_RED = (0.35, 1.25)
LAMP_GREEN_PER_RED = (0.65, 1.2)


def balance_gains(image: np.ndarray) -> np.ndarray:
    """Per-channel gains that map the lamp's white (white patch) to WHITE_LEVEL.

    When the brightest pixels have no lamp's colour, only their level is used: a wrong
    colour correction would move every die's colour, no correction moves it by the lamp's
    tint only, which the learned colour spread covers.
    """
    b, g, r = (float(v) for v in illuminant(image))
    if not (LAMP_BLUE_PER_RED[0] <= b / r <= LAMP_BLUE_PER_RED[1] and LAMP_GREEN_PER_RED[0] <= g / r <= LAMP_GREEN_PER_RED[1]):
        b = g = r = max(b, g, r)
    return (WHITE_LEVEL / np.float32([b, g, r])).astype(np.float32)


def balanced(image: np.ndarray, gains: np.ndarray) -> np.ndarray:
    return cv2.transform(image, np.diag(gains).astype(np.float32))


def lab_of(bgr: np.ndarray) -> np.ndarray:
    """8-bit Lab (OpenCV scale) of balanced BGR colours, any leading shape."""
    pixels = np.clip(np.asarray(bgr, np.float32).reshape(-1, 1, 3), 0, 255).astype(np.uint8)
    return cv2.cvtColor(pixels, cv2.COLOR_BGR2LAB).reshape(np.shape(bgr)).astype(np.float32)


def _spreads(model: TallyModel, floor: Sequence[float]) -> dict[str, np.ndarray]:
    return {die: np.maximum(np.float32(body.spread), np.float32(floor)) for die, body in model.bodies.items()}


def grid_distances(grid: np.ndarray, model: TallyModel, dice: Sequence[str], floor: Sequence[float]) -> np.ndarray:
    """Per die (first axis), the normalised distance of every colour in `grid` to its body."""
    spreads = _spreads(model, floor)
    return np.stack([np.sqrt((((grid - np.float32(model.bodies[d].lab)) / spreads[d]) ** 2).sum(-1)) for d in dice])


def colour_distances(lab: np.ndarray, model: TallyModel, params: TallyParams) -> dict[str, float]:
    """Normalised distance of one Lab colour to every learned body colour."""
    dice = tuple(model.bodies)
    # grid_distances' arithmetic for all dice at once, one row each (this runs for every die read):
    # the same elementwise steps, and each row's three terms summed in the same order.
    bodies = np.float32([model.bodies[d].lab for d in dice])
    spreads = np.maximum(np.float32([model.bodies[d].spread for d in dice]), np.float32(params.spread_floor))
    return dict(zip(dice, np.sqrt((((np.float32(lab) - bodies) / spreads) ** 2).sum(-1)).tolist()))


def among_nearest(distances: Mapping[str, float], die: str, params: TallyParams) -> bool:
    """Whether `die`'s body colour is (one of) the nearest: within the identity margin of the
    nearest and near enough at all."""
    return distances[die] <= min(min(distances.values()) + params.identity_margin, params.identity_max_distance)


def nearest_free(distances: Mapping[str, float], held: Collection[str], params: TallyParams) -> tuple[str, float]:
    """(die, confidence) of the body colour clearly nearest among the dice not `held` by
    another die of the frame (a set has one of each), when it is also one of the nearest of
    all (see among_nearest); else unsure. A die whose colour lies as near a held die as its
    own is told apart from the others only; one clearly nearer a held die is that die's
    double (the holder may be named wrong), and no other die."""
    free = {die: distance for die, distance in distances.items() if die not in held}
    if not free:
        return UNSURE, 0.0
    die, confidence = nearest_die(free, params)
    if die == UNSURE or not among_nearest(distances, die, params):
        return UNSURE, 0.0
    return die, confidence


def held_elsewhere(die: str, distance: float, taken: Mapping[str, float]) -> bool:
    """Whether another blob is `die`, matching its colour at least as well (`taken`: each die
    other blobs are, with that blob's distance to it) as one at `distance` would."""
    return die in taken and taken[die] <= distance


def assign_identities(distances: Sequence[Mapping[str, float]], params: TallyParams) -> list[tuple[str, float]]:
    """(die, confidence) per die found in one frame, from each one's colour distances.

    A set holds one die of each colour, so two dice never share a colour. Where every die
    found is nearest a colour of its own, that is its colour; the margin to the nearest colour
    still available (not held by a die that matches it better) gives the confidence. Where two
    are nearest the same colour (a lamp that clips an orange body towards yellow beside the
    yellow die), the colours are shared out together (`_joint_identities`): the clipped orange
    die nearer yellow than the yellow die is must not take yellow from it when orange fits it
    and nothing fits the yellow die but yellow. A small margin gives "unsure".
    """
    nearest = [min(row, key=row.__getitem__) if row else None for row in distances]
    if len({die for die in nearest if die is not None}) < sum(die is not None for die in nearest):
        return _joint_identities(distances, params)
    owner = {die: index for index, die in enumerate(nearest) if die is not None}
    result = []
    for index, (row, die) in enumerate(zip(distances, nearest)):
        if die is None:
            result.append((UNSURE, 0.0))
            continue
        best = row[die]
        # Another colour is an alternative unless a die that matches it better holds it.
        alternatives = [d for other, d in row.items() if other != die
                        and (other not in owner or distances[owner[other]][other] >= d)]
        margin = min(alternatives) - best if alternatives else 10.0
        if best > params.identity_max_distance or margin < params.identity_margin:
            result.append((UNSURE, 0.0))
        else:
            result.append((die, min(1.0, 0.5 + margin / 4.0)))
    return result


def _joint_identities(distances: Sequence[Mapping[str, float]], params: TallyParams) -> list[tuple[str, float]]:
    """assign_identities where dice compete for a colour: the sharing-out of colours (each
    to one die at most, a die may get none) of least total distance, a die left without one
    costing a margin more than the farthest colour a die may be named by. A die's confidence
    is how much more the best sharing-out that gives it another colour (or none) costs."""
    colours = sorted({die for row in distances for die in row})
    unnamed = params.identity_max_distance + params.identity_margin
    # Per die found, its options: (colour index or -1 for none, cost). Colours much farther
    # than a die may be named by only matter as alternatives, and then as "none" does.
    options = [[(colours.index(die), d) for die, d in row.items() if d < unnamed] + [(-1, unnamed)]
               for row in distances]

    def best(forbidden: tuple[int, int] | None) -> tuple[float, list[int]]:
        @functools.cache
        def solve(index: int, used: int) -> tuple[float, tuple[int, ...]]:
            if index == len(options):
                return 0.0, ()
            found = (math.inf, ())
            for colour, cost in options[index]:
                if colour >= 0 and used >> colour & 1 or forbidden == (index, colour):
                    continue
                rest, picks = solve(index + 1, used | (1 << colour) if colour >= 0 else used)
                if cost + rest < found[0]:
                    found = (cost + rest, (colour, *picks))
            return found

        total, picks = solve(0, 0)
        return total, list(picks)

    total, picks = best(None)
    result = []
    for index, colour in enumerate(picks):
        if colour < 0 or distances[index][colours[colour]] > params.identity_max_distance:
            result.append((UNSURE, 0.0))
            continue
        margin = best((index, colour))[0] - total
        if margin < params.identity_margin:
            result.append((UNSURE, 0.0))
        else:
            result.append((colours[colour], min(1.0, 0.5 + margin / 4.0)))
    return result


def _bgr_of(lab: Sequence[float]) -> np.ndarray:
    """The balanced BGR colour (3 floats) of an 8-bit Lab one: lab_of's inverse."""
    return cv2.cvtColor(np.uint8(np.clip(lab, 0, 255)).reshape(1, 1, 3), cv2.COLOR_LAB2BGR).reshape(3).astype(np.float32)


def relit_distances(body: np.ndarray, model: TallyModel, params: TallyParams) -> dict[str, float]:
    """Normalised distance of a balanced BGR body colour to every learned body, each coloured
    body compared as if the die were lit as brightly as that body was learned.

    A die in a wall's shadow is darker than its learned body by a factor, and in 8-bit Lab
    its chroma shrinks with its lightness until every dark die is nearest a dark grey: the
    balanced sRGB values, though, keep their ratios (sRGB is a power of linear light). A die
    without hue (the white Up Die) has only its lightness to tell it by: it keeps the plain
    distance.
    """
    observed = np.float32(body).reshape(3)
    plain = colour_distances(lab_of(observed), model, params)
    result = {}
    for die, learned in model.bodies.items():
        if math.hypot(learned.lab[1] - 128.0, learned.lab[2] - 128.0) < params.neutral_chroma:
            result[die] = plain[die]
            continue
        target = _bgr_of(learned.lab)
        # Only brighter: a die lit brighter than its body was learned is what glare looks like.
        gain = min(max(float(observed @ target) / max(float(observed @ observed), 1e-6), 1.0), params.max_relight)
        result[die] = colour_distances(lab_of(np.clip(observed * gain, 0, 255)), model, params)[die]
    return result


def clipped_distances(lab: np.ndarray, model: TallyModel, params: TallyParams) -> dict[str, float]:
    """Normalised distance of a body colour (balanced Lab) to every learned body as that body
    looks lit brighter until the camera clips it: its balanced sRGB times each of
    params.clip_gains, clipped at 255, the nearest of them.

    Clipping moves a hue one way only: an orange die's red clips first and it turns yellow,
    but no green die turns yellow (its green clips, its red stays low).
    """
    observed = np.float32(lab).reshape(1, 3)
    spreads = _spreads(model, params.spread_floor)
    gains = np.float32(params.clip_gains).reshape(-1, 1)
    result = {}
    for die, learned in model.bodies.items():
        brighter = lab_of(np.clip(_bgr_of(learned.lab) * gains, 0, 255))
        result[die] = float(np.sqrt((((brighter - observed) / spreads[die]) ** 2).sum(-1)).min())
    return result


def identify(lab: np.ndarray, model: TallyModel, params: TallyParams) -> tuple[str, float]:
    """(die, confidence) from the body colour; "unsure" when two dice are nearly as close."""
    return nearest_die(colour_distances(lab, model, params), params)


def nearest_die(distances: Mapping[str, float], params: TallyParams) -> tuple[str, float]:
    """(die, confidence) of the nearest body colour; "unsure" when another is nearly as near."""
    ranked = sorted(distances.items(), key=lambda kv: kv[1])
    die, best = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else best + 10
    margin = second - best
    if best > params.identity_max_distance or margin < params.identity_margin:
        return UNSURE, 0.0
    return die, min(1.0, 0.5 + margin / 4.0)
