"""Tally Up!: choose three dice, push the running total, go OUT before it busts.

Rules as dicetray plays them: docs/rules-decisions.md.
"""

from __future__ import annotations

from typing import Any, Mapping

from scorekeeper.rules.base import (
    Game,
    RuleError,
    require,
    validate_flag,
    validate_players,
    validate_target,
)
from scorekeeper.rules.dice import STAR, TALLY_DICE, TALLY_FACES, UP_FACES, face_points, is_circled

MIN_PLAYERS = 2
MAX_PLAYERS = 10
DEFAULT_TARGET = 2500
CHOSEN_COUNT = 3
TALLY_UP_SHOUTER_POINTS = 200
TALLY_UP_IN_POINTS = 100
BONUS_COUNTS = {"+1": 1, "+2": 2, "+3": 3}

# What is due next; each phase admits exactly one event type.
CHOOSE, MAIN_ROLL, TALLY_UP, REVEAL, UP, BONUS_ROLL = (
    "choose", "main_roll", "tally_up", "reveal", "up", "bonus_roll",
)
_EVENT_FOR_PHASE = {
    CHOOSE: "choose", MAIN_ROLL: "roll", TALLY_UP: "tally_up",
    REVEAL: "reveal", UP: "up", BONUS_ROLL: "roll",
}
_EVENT_KEYS = {
    "choose": {"type", "dice"},
    "roll": {"type", "dice"},
    "up": {"type", "face"},
    "reveal": {"type", "out"},
    "tally_up": {"type", "player"},
}


class TallyUpGame(Game):
    kind = "tallyup"

    def __init__(
        self,
        players: list[str],
        target: int = DEFAULT_TARGET,
        one_turn_each: bool = False,
        high_stakes: bool = False,
    ) -> None:
        self._players = validate_players(players, MIN_PLAYERS, MAX_PLAYERS, "Tally Up")
        self.target = validate_target(target)
        self.one_turn_each = validate_flag(one_turn_each, "one_turn_each")
        self.high_stakes = validate_flag(high_stakes, "high_stakes")
        self.scores = [0] * len(self._players)
        self.active = 0
        self.round = 1
        self.running_total = 0
        self.is_in = [True] * len(self._players)
        self.chosen: list[str] = []
        self.phase = CHOOSE
        # What the pending reveal leads to: the Up Die or the next main roll.
        self.after_reveal = MAIN_ROLL
        self.main_stars = 0
        self.bonus_count = 0
        self.over = False
        self.last: dict[str, Any] | None = None

    def options(self) -> dict[str, Any]:
        return {"target": self.target, "one_turn_each": self.one_turn_each, "high_stakes": self.high_stakes}

    def expects(self) -> list[str]:
        return [] if self.over else [_EVENT_FOR_PHASE[self.phase]]

    def unchosen(self) -> list[str]:
        return [die for die in TALLY_DICE if die not in self.chosen]

    # -- events ---------------------------------------------------------------

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        unknown = set(event) - _EVENT_KEYS[kind]
        require(not unknown, f"unknown field(s) {sorted(unknown)} in a {kind} event")
        if kind == "choose":
            self._choose(event.get("dice"))
        elif kind == "roll":
            if self.phase == MAIN_ROLL:
                self._main_roll(self._read_roll(event.get("dice"), self.chosen, "main roll"))
            else:
                self._bonus_roll(self._read_roll(event.get("dice"), None, "bonus roll"))
        elif kind == "tally_up":
            self._tally_up(event.get("player"))
        elif kind == "reveal":
            self._reveal(event.get("out"))
        else:
            self._up(event.get("face"))

    def _choose(self, dice: Any) -> None:
        require(
            isinstance(dice, list) and len(dice) == CHOSEN_COUNT,
            f"choose exactly {CHOSEN_COUNT} Tally Dice from {list(TALLY_DICE)}, got {dice!r}",
        )
        for die in dice:
            require(die in TALLY_DICE, f"unknown Tally Die {die!r}; choose from {list(TALLY_DICE)}")
        require(len(set(dice)) == CHOSEN_COUNT, f"the three chosen dice must differ, got {dice}")
        self.chosen = list(dice)
        self.phase = MAIN_ROLL
        self.last = {"kind": "choose", "player": self._players[self.active], "dice": list(dice)}

    def _read_roll(self, dice: Any, required: list[str] | None, what: str) -> list[tuple[str, str]]:
        if required is None:
            allowed = self.unchosen()
            expected = f"{self.bonus_count} of the unchosen dice {allowed}"
        else:
            allowed = required
            expected = f"exactly the chosen dice {required}"
        require(isinstance(dice, list), f"a {what} needs 'dice': {expected}, each as {{die, face}}")
        pairs: list[tuple[str, str]] = []
        for item in dice:
            require(
                isinstance(item, Mapping) and set(item) == {"die", "face"},
                f"each die in a {what} is {{'die': name, 'face': face}}, got {item!r}",
            )
            die, face = item["die"], item["face"]
            require(die in allowed, f"{die!r} cannot be in this {what}; expected {expected}")
            require(
                face in TALLY_FACES[die],
                f"the {die} die has no face {face!r}; its faces are {sorted(set(TALLY_FACES[die]))}",
            )
            pairs.append((die, face))
        names = [die for die, _ in pairs]
        require(len(set(names)) == len(names), f"a die appears twice in the {what}: {names}")
        count = len(required) if required is not None else self.bonus_count
        require(len(pairs) == count, f"the {what} must show {expected}, got {len(pairs)} dice")
        return pairs

    def _main_roll(self, pairs: list[tuple[str, str]]) -> None:
        faces = [face for _, face in pairs]
        stars = faces.count(STAR)
        self.main_stars = stars
        self.last = {
            "kind": "main_roll", "player": self._players[self.active],
            "dice": [{"die": d, "face": f} for d, f in pairs], "stars": stars, "points": 0,
        }
        if stars == 2:
            self.last["outcome"] = "bust"
            self._end_round("bust")
            return
        if stars == 3:
            self.last["outcome"] = "tally_up"
            self.phase = TALLY_UP
            return
        points = sum(face_points(face) for face in faces)
        circled = any(is_circled(face) for face in faces)
        self.running_total += points
        self.last.update(outcome="scored", points=points, circled=circled)
        if circled and self.high_stakes:
            self.phase = UP
        else:
            self.phase = REVEAL
            self.after_reveal = UP if circled else MAIN_ROLL

    def _bonus_roll(self, pairs: list[tuple[str, str]]) -> None:
        faces = [face for _, face in pairs]
        stars = self.main_stars + faces.count(STAR)
        self.last = {
            "kind": "bonus_roll", "player": self._players[self.active],
            "dice": [{"die": d, "face": f} for d, f in pairs], "stars": stars, "points": 0,
        }
        if stars >= 2:
            self.last["outcome"] = "bust"
            self._end_round("bust")
            return
        points = sum(face_points(face) for face in faces)
        self.running_total += points
        self.last.update(outcome="scored", points=points)
        self.phase, self.after_reveal = REVEAL, MAIN_ROLL

    def _tally_up(self, player: Any) -> None:
        require(player in self._players, f"tally_up needs the player who shouted first, one of {self._players}")
        shouter = self._players.index(player)
        for seat in range(len(self._players)):
            if seat == shouter:
                self.scores[seat] += TALLY_UP_SHOUTER_POINTS
            elif self.is_in[seat]:
                self.scores[seat] += TALLY_UP_IN_POINTS
        self.last = {"kind": "tally_up", "player": player}
        self.phase, self.after_reveal = REVEAL, MAIN_ROLL

    def _reveal(self, out: Any) -> None:
        still_in = self.in_players()
        require(
            isinstance(out, list),
            f"a reveal needs 'out': the list of players going OUT now (possibly empty), from {still_in}",
        )
        for name in out:
            require(name in still_in, f"{name!r} cannot go OUT now; players still IN are {still_in}")
        require(len(set(out)) == len(out), f"a player is named twice in the reveal: {out}")
        for name in out:
            seat = self._players.index(name)
            self.scores[seat] += self.running_total
            self.is_in[seat] = False
        self.last = {"kind": "reveal", "out": list(out), "banked": self.running_total}
        if not any(self.is_in):
            self._end_round("all_out")
        else:
            self.phase = self.after_reveal

    def _up(self, face: Any) -> None:
        require(face in UP_FACES, f"unknown Up Die face {face!r}; expected one of {list(UP_FACES)}")
        self.last = {"kind": "up", "player": self._players[self.active], "face": face}
        if face in BONUS_COUNTS:
            self.bonus_count = BONUS_COUNTS[face]
            self.phase = BONUS_ROLL
            return
        if face == "x2":
            self.running_total *= 2
        else:
            self.running_total += int(face)
        self.phase, self.after_reveal = REVEAL, MAIN_ROLL

    # -- rounds and the end of the game ---------------------------------------

    def _end_round(self, reason: str) -> None:
        assert self.last is not None
        self.last["round_over"] = reason
        self.running_total = 0
        self.is_in = [True] * len(self._players)
        self.chosen = []
        self.main_stars = self.bonus_count = 0
        self.phase, self.after_reveal = CHOOSE, MAIN_ROLL
        if self._game_ends_after(self.round):
            self.over = True
            return
        self.round += 1
        self.active = (self.active + 1) % len(self._players)

    def _game_ends_after(self, rounds_played: int) -> bool:
        if self.one_turn_each:
            decided = rounds_played >= len(self._players)
        else:
            decided = max(self.scores) >= self.target
        best = max(self.scores)
        # A tied lead means one more round, then check again.
        return decided and self.scores.count(best) == 1

    def in_players(self) -> list[str]:
        return [name for name, is_in in zip(self._players, self.is_in) if is_in]

    def state(self) -> dict[str, Any]:
        return {
            **self._common_state(),
            "round": self.round,
            "running_total": self.running_total,
            "in": self.in_players(),
            "out": [n for n, is_in in zip(self._players, self.is_in) if not is_in],
            "chosen": list(self.chosen),
            "unchosen": self.unchosen() if self.chosen else [],
            "phase": None if self.over else self.phase,
            "reveal_before": (self.after_reveal if self.phase == REVEAL and not self.over else None),
            "bonus_dice": self.bonus_count if self.phase == BONUS_ROLL else 0,
            "main_stars": self.main_stars if self.phase in (UP, BONUS_ROLL, REVEAL) else 0,
            "last": dict(self.last) if self.last else None,
        }


def build(players: list[str], options: Mapping[str, Any]) -> TallyUpGame:
    allowed = {"target", "one_turn_each", "high_stakes"}
    unknown = set(options) - allowed
    if unknown:
        raise RuleError(f"unknown Tally Up option(s) {sorted(unknown)}; options are {sorted(allowed)}")
    return TallyUpGame(
        players,
        target=options.get("target", DEFAULT_TARGET),
        one_turn_each=options.get("one_turn_each", False),
        high_stakes=options.get("high_stakes", False),
    )
