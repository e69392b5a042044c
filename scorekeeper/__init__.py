"""dicetray's scorekeeper: rules engines, the game log and the scoreboard."""

__version__ = "0.1.0"

from scorekeeper.rules import GAME_KINDS, Game, RuleError, new_game
from scorekeeper.rules.odds import (
    tally_bust_chance,
    tally_expected_points,
    tally_loss_chance,
    tossup_expected_gain,
    tossup_red_light_chance,
)

__all__ = [
    "GAME_KINDS",
    "Game",
    "RuleError",
    "new_game",
    "tally_bust_chance",
    "tally_expected_points",
    "tally_loss_chance",
    "tossup_expected_gain",
    "tossup_red_light_chance",
]
