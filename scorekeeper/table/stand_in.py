"""The demo's stand-in host: the moves a player makes so that a replayed throw fits the game.

`dicetray serve --demo` replays fixture clips that were filmed without a game. Each Toss Up clip
is one turn (all ten dice, then the dice left), each Tally Up clip a main roll and one more throw.
Nobody at the demo's table stops a turn or reveals IN/OUT, so without a stand-in the second clip
already waits for the host (ten dice in the tray, three in hand) and the demo stands still.

When a throw does not fit, the stand-in tries the moves a cautious player would make first:
stop the turn (Toss Up), nobody or everybody goes OUT (Tally Up), the active player shouts
Tally Up!. It keeps the first short series of moves after which the throw is a legal roll.
The clips never throw bonus dice, so a fit that leaves a bonus roll the tray does not show is
no fit. When nothing fits a Tally Up throw, everybody goes OUT all the same, so that the next
clip starts a fresh round (the live table then drops the throw, an Up Die or bonus dice of the
round just ended, with a notice). A stop that ends the game is made too: the live table then
opens the rematch with the throw.

Only the live table uses it, and only with the demo source (LIVE_STAND_IN). Pure: the rules
engines and `readings.interpret` only, no I/O, no clock.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from scorekeeper.readings import interpret
from scorekeeper.rules import RuleError
from scorekeeper.rules.base import Game
from scorekeeper.rules.dice import UP_DIE

#: How many host moves in a row the stand-in may make before a throw (Tally Up!'s shout, then
#: the reveal after it, is the longest).
MAX_MOVES = 2


@dataclass(frozen=True)
class StandIn:
    """What the stand-in does with one throw: `moves` first, then `roll` (the throw's events,
    empty when it still does not fit and waits for the host)."""

    moves: tuple[dict[str, Any], ...]
    roll: tuple[dict[str, Any], ...]

    @property
    def events(self) -> list[dict[str, Any]]:
        return [*self.moves, *self.roll]


def stand_in_for(game: Game, dice: Sequence[Mapping[str, Any]]) -> StandIn | None:
    """The stand-in's moves for a throw that does not fit `game` now; None when it has none.

    The game is not changed: every try is played on a copy.
    """
    fresh = None
    frontier: list[tuple[tuple[dict[str, Any], ...], Game]] = [((), game)]
    for _depth in range(MAX_MOVES):
        deeper = []
        for moves, trial in frontier:
            for move in _host_moves(trial):
                after = copy.deepcopy(trial)
                try:
                    after.apply(move)
                except RuleError:
                    continue
                series = (*moves, move)
                result = interpret(after.state(), dice)
                if result.ok and not _strands(after, result.events, dice):
                    return StandIn(series, tuple(result.events))
                if fresh is None and _starts_fresh(game, after):
                    fresh = series
                deeper.append((series, after))
        frontier = deeper
    return StandIn(fresh, ()) if fresh is not None else None


def _host_moves(game: Game) -> list[dict[str, Any]]:
    """The moves a host may make now, in the order a cautious player tries them."""
    state = game.state()
    expects = state["expects"]
    if state["game"] == "tossup":
        return [{"type": "stop"}] if "stop" in expects else []
    if "tally_up" in expects:
        return [{"type": "tally_up", "player": state["active"]}]
    if "reveal" in expects:
        return [{"type": "reveal", "out": []}, {"type": "reveal", "out": list(state["in"])}]
    return []


def _strands(game: Game, events: Sequence[Mapping[str, Any]], dice: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the throw's events leave a Tally bonus roll that this tray does not show."""
    after = copy.deepcopy(game)
    for event in events:
        after.apply(event)
    state = after.state()
    if state["game"] != "tallyup" or not state["bonus_dice"]:
        return False
    unchosen = set(state["unchosen"])
    shown = [d for d in dice if d.get("die") in unchosen and d.get("die") != UP_DIE]
    return len(shown) < state["bonus_dice"]


def _starts_fresh(before: Game, after: Game) -> bool:
    """Whether the moves ended the game, or the Tally Up round: a throw of all dice is due next."""
    state = after.state()
    if state["over"]:
        return True
    if state["game"] != "tallyup":
        # A Toss Up throw that fits no turn is a misread (a die missed), not a new turn.
        return False
    return state["round"] != before.state()["round"]
