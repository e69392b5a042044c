"""Create a game of any supported kind by name."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from scorekeeper.rules import tallyup, tossup
from scorekeeper.rules.base import Game, RuleError

_BUILDERS: Mapping[str, Callable[[list[str], Mapping[str, Any]], Game]] = {
    "tossup": tossup.build,
    "tallyup": tallyup.build,
}
GAME_KINDS: tuple[str, ...] = tuple(_BUILDERS)


def new_game(game: str, players: list[str], **options: Any) -> Game:
    """Start a game: `new_game("tossup", players=["Ann", "Bob"], target=100)`."""
    builder = _BUILDERS.get(game)
    if builder is None:
        raise RuleError(f"unknown game {game!r}; expected one of {list(GAME_KINDS)}")
    return builder(players, options)
