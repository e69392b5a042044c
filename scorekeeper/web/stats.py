"""Dice fairness statistics: observed faces per die against the faces printed on it."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from scorekeeper.rules.dice import TALLY_DICE, TALLY_FACES, TOSSUP_FACE_LIST, UP_FACES

#: Below this many expected rolls in a face, the chi-square approximation is not trusted.
MIN_EXPECTED = 5.0

DIE_FACES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "tossup": TOSSUP_FACE_LIST,
    **{die: TALLY_FACES[die] for die in TALLY_DICE},
    "up": UP_FACES,
})


@dataclass(frozen=True)
class FaceCount:
    face: str
    observed: int
    expected: float
    probability: float


@dataclass(frozen=True)
class DieStats:
    die: str
    rolls: int
    faces: list[FaceCount]
    chi_square: float | None
    degrees_of_freedom: int
    p_value: float | None
    verdict: str
    summary: str = field(default="")

    def as_json(self) -> dict[str, Any]:
        return {
            "die": self.die,
            "rolls": self.rolls,
            "faces": [vars(face) for face in self.faces],
            "chi_square": self.chi_square,
            "degrees_of_freedom": self.degrees_of_freedom,
            "p_value": self.p_value,
            "verdict": self.verdict,
            "summary": self.summary,
        }


def face_probabilities(die: str) -> dict[str, Fraction]:
    faces = DIE_FACES[die]
    counts = Counter(faces)
    # Keep the printed order of first appearance so charts read like the die's table.
    return {face: Fraction(counts[face], len(faces)) for face in dict.fromkeys(faces)}


def chi_square_survival(x: float, dof: int) -> float:
    """P(X >= x) for a chi-square variable with `dof` degrees of freedom."""
    if x <= 0:
        return 1.0
    return _upper_regularised_gamma(dof / 2.0, x / 2.0)


def _upper_regularised_gamma(a: float, x: float) -> float:
    # Series below a+1, continued fraction above (Numerical Recipes' gammq), both to 1e-12.
    log_prefix = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1.0:
        term = total = 1.0 / a
        n = a
        for _ in range(1000):
            n += 1.0
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-12:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return min(1.0, math.exp(log_prefix) * h)


def die_stats(die: str, observed_faces: Iterable[str]) -> DieStats:
    probabilities = face_probabilities(die)
    counts = Counter(observed_faces)
    rolls = sum(counts[face] for face in probabilities)
    faces = [
        FaceCount(face, counts[face], float(p * rolls), float(p)) for face, p in probabilities.items()
    ]
    dof = len(faces) - 1
    if rolls == 0:
        return DieStats(die, 0, faces, None, dof, None, "no rolls yet", "No rolls of this die yet.")
    chi = sum((f.observed - f.expected) ** 2 / f.expected for f in faces)
    p_value = chi_square_survival(chi, dof)
    if min(f.expected for f in faces) < MIN_EXPECTED:
        needed = math.ceil(MIN_EXPECTED / float(min(probabilities.values())))
        return DieStats(
            die, rolls, faces, chi, dof, p_value, "too few rolls",
            f"{rolls} rolls so far; about {needed} are needed before the test means much.",
        )
    if p_value < 0.01:
        verdict = "looks unfair"
    elif p_value < 0.05:
        verdict = "suspicious"
    else:
        verdict = "looks fair"
    summary = f"chi-square {chi:.2f} with {dof} degrees of freedom, p = {p_value:.3f}: {verdict}."
    return DieStats(die, rolls, faces, chi, dof, p_value, verdict, summary)


def faces_rolled(events: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Every face each die showed, from a game's events (rolls and Up Die readings)."""
    seen: dict[str, list[str]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "roll":
            for item in event.get("dice", []):
                if isinstance(item, str):
                    seen.setdefault("tossup", []).append(item)
                else:
                    seen.setdefault(item["die"], []).append(item["face"])
        elif kind == "up":
            seen.setdefault("up", []).append(event["face"])
    return seen


def game_stats(game_kind: str, events: Iterable[Mapping[str, Any]]) -> list[DieStats]:
    seen = faces_rolled(events)
    dice = ["tossup"] if game_kind == "tossup" else [*TALLY_DICE, "up"]
    return [die_stats(die, seen.get(die, [])) for die in dice]


def fairness_sample(logged: Iterable[Any]) -> tuple[list[Mapping[str, Any]], int]:
    """(events, replayed): the events whose faces count towards the fairness check, and how
    many were left out because the camera replayed them (the demo's clips, the same few throws
    again and again, say nothing of the dice on the table)."""
    events, replayed = [], 0
    for item in logged:
        reading = item.reading or {}
        if reading.get("replayed"):
            replayed += 1
        else:
            events.append(item.event)
    return events, replayed
