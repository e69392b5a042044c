"""The physical dice of both games, as tables (see docs/dice.md)."""

from __future__ import annotations

from fractions import Fraction
from types import MappingProxyType
from typing import Mapping

TOSSUP_DIE = "tossup"
TOSSUP_DICE_COUNT = 10

#: Faces of one Toss Up die, one entry per physical face.
TOSSUP_FACE_LIST: tuple[str, ...] = ("green", "green", "green", "yellow", "yellow", "red")
TOSSUP_FACES: frozenset[str] = frozenset(TOSSUP_FACE_LIST)
TOSSUP_FACE_WEIGHTS: Mapping[str, Fraction] = MappingProxyType(
    {face: Fraction(TOSSUP_FACE_LIST.count(face), len(TOSSUP_FACE_LIST)) for face in ("green", "yellow", "red")}
)

STAR = "star"

#: Faces of each Tally Die, one entry per physical face. "(50)" is a circled 50.
TALLY_FACES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "red": ("star", "star", "star", "50", "(50)", "100"),
        "orange": ("star", "star", "star", "60", "(70)", "70"),
        "yellow": ("star", "star", "20", "20", "(40)", "70"),
        "green": ("star", "star", "30", "(40)", "40", "40"),
        "blue": ("star", "(10)", "(10)", "10", "20", "50"),
        "purple": ("star", "(20)", "(20)", "20", "20", "20"),
    }
)
TALLY_DICE: tuple[str, ...] = tuple(TALLY_FACES)

UP_DIE = "up"
UP_FACES: tuple[str, ...] = ("+1", "+2", "+3", "-100", "+100", "x2")

#: Every die name and the faces it can show, for validating labels and readings.
FACES_BY_DIE: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        TOSSUP_DIE: TOSSUP_FACES,
        **{die: frozenset(faces) for die, faces in TALLY_FACES.items()},
        UP_DIE: frozenset(UP_FACES),
    }
)


def is_circled(face: str) -> bool:
    """A circled number on a Tally Die triggers the Up Die."""
    return face.startswith("(") and face.endswith(")")


def face_points(face: str) -> int:
    """Points a Tally face adds to the running total (a star adds none)."""
    if face == STAR:
        return 0
    return int(face.strip("()"))
