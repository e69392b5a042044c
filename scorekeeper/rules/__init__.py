"""Pure rules engines for the supported dice games.

Nothing in this package does I/O, reads a clock or draws a random number: a game is
the fold of the events applied to it, so the same events always give the same state.
"""

from scorekeeper.rules.base import Game, RuleError
from scorekeeper.rules.dice import (
    TALLY_DICE,
    TALLY_FACES,
    TOSSUP_FACE_WEIGHTS,
    TOSSUP_FACES,
    UP_FACES,
)
from scorekeeper.rules.registry import GAME_KINDS, new_game

__all__ = [
    "GAME_KINDS",
    "Game",
    "RuleError",
    "TALLY_DICE",
    "TALLY_FACES",
    "TOSSUP_FACES",
    "TOSSUP_FACE_WEIGHTS",
    "UP_FACES",
    "new_game",
]
