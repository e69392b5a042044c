"""The physical dice the scanner knows: each die's name and the faces printed on it.

Both the scanner (which die and face it sees) and the rules (what a face scores) take their
names from here, so the scanner needs nothing from the rules (see docs/dice.md).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

TOSSUP_DIE = "tossup"
#: Faces of one Toss Up die, one entry per physical face.
TOSSUP_FACE_LIST: tuple[str, ...] = ("green", "green", "green", "yellow", "yellow", "red")

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


def is_circled(face: str) -> bool:
    """A number printed inside a circle (a Tally face that triggers the Up Die)."""
    return face.startswith("(") and face.endswith(")")
