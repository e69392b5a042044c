"""What every rules engine shares: the error type and the transactional apply."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any, Mapping, Sequence


class RuleError(ValueError):
    """An event that the rules do not allow now. The game is left exactly as it was."""


def require(condition: bool, message: str) -> None:
    if not condition:
        raise RuleError(message)


def validate_players(players: Any, low: int, high: int, game: str) -> list[str]:
    require(
        isinstance(players, Sequence) and not isinstance(players, (str, bytes)),
        f"players must be a list of names, got {type(players).__name__}",
    )
    names = list(players)
    require(
        low <= len(names) <= high,
        f"{game} is played by {low} to {high} players, got {len(names)}",
    )
    for name in names:
        require(
            isinstance(name, str) and name.strip() == name and name != "",
            f"player names must be non-empty strings without surrounding spaces, got {name!r}",
        )
    require(len(set(names)) == len(names), f"player names must be unique, got {names}")
    return names


def validate_target(target: Any) -> int:
    require(
        isinstance(target, int) and not isinstance(target, bool) and target > 0,
        f"target must be a positive whole number, got {target!r}",
    )
    return target


def validate_flag(value: Any, name: str) -> bool:
    require(isinstance(value, bool), f"{name} must be true or false, got {value!r}")
    return value


class Game(ABC):
    """A game in progress: apply events, read the state.

    Subclasses implement `_apply` by mutating `self`; `apply` makes that
    all-or-nothing by working on a deep copy and only adopting it on success.
    """

    kind: str

    def apply(self, event: Mapping[str, Any]) -> "Game":
        """Apply one JSON-style event, or raise RuleError and change nothing."""
        require(isinstance(event, Mapping), f"an event must be an object, got {type(event).__name__}")
        kind = event.get("type")
        expected = self.expects()
        require(
            kind in expected,
            f"event type {kind!r} is not legal now; expected one of {expected}"
            if expected
            else f"event type {kind!r} is not legal: the game is over",
        )
        trial = copy.deepcopy(self)
        trial._apply(event)
        self.__dict__.update(trial.__dict__)
        return self

    # Every engine keeps these: seats in order, their scores, whose turn, and whether it is over.
    _players: list[str]
    scores: list[int]
    active: int
    over: bool

    @property
    def players(self) -> list[str]:
        return list(self._players)

    def winners(self) -> list[str]:
        """The top scorers once the game is over (ties share the win); empty before."""
        if not self.over:
            return []
        best = max(self.scores)
        return [name for name, score in zip(self._players, self.scores) if score == best]

    def _common_state(self) -> dict[str, Any]:
        return {
            "game": self.kind,
            "players": [{"name": n, "score": s} for n, s in zip(self._players, self.scores)],
            "active": self._players[self.active],
            "over": self.over,
            "winners": self.winners(),
            "expects": self.expects(),
            "options": self.options(),
        }

    @abstractmethod
    def _apply(self, event: Mapping[str, Any]) -> None: ...

    @abstractmethod
    def expects(self) -> list[str]:
        """The event types that are legal now (empty once the game is over)."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot of the game."""

    @abstractmethod
    def options(self) -> dict[str, Any]:
        """The options the game was created with, as `new_game` keyword arguments."""

