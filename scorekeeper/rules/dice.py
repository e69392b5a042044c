"""What the rules need of the physical dice: counts, odds and points (the dice and their
faces are in scanner/dice.py, see docs/dice.md)."""

from __future__ import annotations

from fractions import Fraction
from types import MappingProxyType
from typing import Mapping

from scanner.dice import STAR, TALLY_DICE, TALLY_FACES, TOSSUP_DIE, TOSSUP_FACE_LIST, UP_DIE, UP_FACES, is_circled

__all__ = [
    "FACES_BY_DIE", "STAR", "TALLY_DICE", "TALLY_FACES", "TOSSUP_DICE_COUNT", "TOSSUP_DIE", "TOSSUP_FACES",
    "TOSSUP_FACE_LIST", "TOSSUP_FACE_WEIGHTS", "UP_DIE", "UP_FACES", "face_points", "is_circled",
]

TOSSUP_DICE_COUNT = 10
TOSSUP_FACES: frozenset[str] = frozenset(TOSSUP_FACE_LIST)
TOSSUP_FACE_WEIGHTS: Mapping[str, Fraction] = MappingProxyType(
    {face: Fraction(TOSSUP_FACE_LIST.count(face), len(TOSSUP_FACE_LIST)) for face in ("green", "yellow", "red")}
)

#: Every die name and the faces it can show, for validating labels and readings.
FACES_BY_DIE: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        TOSSUP_DIE: TOSSUP_FACES,
        **{die: frozenset(faces) for die, faces in TALLY_FACES.items()},
        UP_DIE: frozenset(UP_FACES),
    }
)


def face_points(face: str) -> int:
    """Points a Tally face adds to the running total (a star adds none)."""
    if face == STAR:
        return 0
    return int(face.strip("()"))
