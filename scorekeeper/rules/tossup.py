"""Toss Up!: push your luck with ten traffic-light dice.

Rules as dicetray plays them: docs/rules-decisions.md.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from scorekeeper.rules.base import (
    Game,
    RuleError,
    require,
    validate_players,
    validate_target,
)
from scorekeeper.rules.dice import TOSSUP_DICE_COUNT, TOSSUP_FACES

MIN_PLAYERS = 2
MAX_PLAYERS = 6
DEFAULT_TARGET = 100

_EVENT_KEYS = {"roll": {"type", "dice"}, "stop": {"type"}}


def classify_roll(faces: list[str]) -> str:
    """Name a roll's outcome: 'greens', 'red_light' or 'caution'."""
    counts = Counter(faces)
    if counts["green"]:
        return "greens"
    if counts["red"]:
        return "red_light"
    return "caution"


class TossUpGame(Game):
    kind = "tossup"

    def __init__(self, players: list[str], target: int = DEFAULT_TARGET) -> None:
        self._players = validate_players(players, MIN_PLAYERS, MAX_PLAYERS, "Toss Up")
        self.target = validate_target(target)
        self.scores = [0] * len(self._players)
        self.active = 0
        self.turn_points = 0
        self.dice_in_hand = TOSSUP_DICE_COUNT
        self.rolls_this_turn = 0
        # Once someone ends a turn over the target, the seat indexes still owed a last turn.
        self.final_turns: list[int] | None = None
        self.over = False
        self.last: dict[str, Any] | None = None
        self.turn = 1

    def options(self) -> dict[str, Any]:
        return {"target": self.target}

    def expects(self) -> list[str]:
        if self.over:
            return []
        if self.rolls_this_turn:
            return ["roll", "stop"]
        return ["roll"]

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        unknown = set(event) - _EVENT_KEYS[kind]
        require(not unknown, f"unknown field(s) {sorted(unknown)} in a {kind} event")
        if kind == "roll":
            self._roll(event.get("dice"))
        else:
            self._stop()

    def _roll(self, dice: Any) -> None:
        require(
            isinstance(dice, list),
            f"a roll needs 'dice': a list of {self.dice_in_hand} faces (green, yellow or red)",
        )
        require(
            len(dice) == self.dice_in_hand,
            f"{self.players[self.active]} has {self.dice_in_hand} dice in hand, "
            f"but the roll shows {len(dice)}",
        )
        for face in dice:
            require(
                isinstance(face, str) and face in TOSSUP_FACES,
                f"unknown Toss Up face {face!r}; expected green, yellow or red",
            )
        outcome = classify_roll(dice)
        greens = dice.count("green")
        player = self.players[self.active]
        self.rolls_this_turn += 1
        self.last = {"player": player, "dice": list(dice), "outcome": outcome, "points": 0}
        if outcome == "red_light":
            self.last["points"] = -self.turn_points
            self.turn_points = 0
            self._end_turn()
            return
        self.turn_points += greens
        self.last["points"] = greens
        self.dice_in_hand -= greens
        if self.dice_in_hand == 0:
            # All ten set aside: pick them all up again and keep adding to this turn.
            self.dice_in_hand = TOSSUP_DICE_COUNT

    def _stop(self) -> None:
        player = self.players[self.active]
        self.scores[self.active] += self.turn_points
        self.last = {"player": player, "outcome": "stop", "points": self.turn_points}
        self._end_turn()

    def _end_turn(self) -> None:
        ender = self.active
        if self.final_turns is None:
            if self.scores[ender] > self.target:
                count = len(self._players)
                self.final_turns = [(ender + step) % count for step in range(1, count)]
        else:
            self.final_turns.remove(ender)
        self.turn_points = 0
        self.dice_in_hand = TOSSUP_DICE_COUNT
        self.rolls_this_turn = 0
        if self.final_turns == []:
            self.over = True
            return
        self.active = self.final_turns[0] if self.final_turns else (ender + 1) % len(self._players)
        self.turn += 1

    def state(self) -> dict[str, Any]:
        return {
            **self._common_state(),
            "turn": self.turn,
            "turn_points": self.turn_points,
            "dice_in_hand": self.dice_in_hand,
            "dice_set_aside": TOSSUP_DICE_COUNT - self.dice_in_hand,
            "rolls_this_turn": self.rolls_this_turn,
            "final_round": self.final_turns is not None,
            "last_turns_left": [self._players[i] for i in self.final_turns] if self.final_turns is not None else [],
            "last": dict(self.last) if self.last else None,
        }


def build(players: list[str], options: Mapping[str, Any]) -> TossUpGame:
    unknown = set(options) - {"target"}
    if unknown:
        raise RuleError(f"unknown Toss Up option(s) {sorted(unknown)}; the only option is 'target'")
    return TossUpGame(players, target=options.get("target", DEFAULT_TARGET))
