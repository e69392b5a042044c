"""What pages show besides the engine's state: odds, the last roll, secret-choice progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scorekeeper.rules.odds import (
    tally_bust_chance,
    tally_expected_points,
    tally_loss_chance,
    tossup_expected_gain,
    tossup_red_light_chance,
)
from scorekeeper.store import GameRecord, LoadedGame, LoggedEvent

ROLL_EVENTS = ("roll", "up")


@dataclass(frozen=True)
class ChoiceProgress:
    """Who has chosen IN or OUT in the pending reveal (never what they chose)."""

    version: int
    chosen: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"version": self.version, "chosen": list(self.chosen), "waiting": list(self.waiting)}


def percent(chance: Fraction) -> float:
    return round(float(chance) * 100, 1)


def odds(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine odds that matter at this point of the game, as labelled lines."""
    if state["over"]:
        return []
    if state["game"] == "tossup":
        dice = state["dice_in_hand"]
        red = tossup_red_light_chance(dice)
        gain = tossup_expected_gain(dice, state["turn_points"])
        return [
            {"key": "red_light", "label": f"Red light on the next roll ({dice} dice)", "percent": percent(red)},
            {"key": "expected_gain", "label": "Expected gain from one more roll",
             "value": round(float(gain), 2)},
        ]
    chosen = state["chosen"]
    if not chosen:
        return []
    high_stakes = state["options"]["high_stakes"]
    phase = state["phase"]
    lines: list[dict[str, Any]] = []
    if phase == "reveal" and state["reveal_before"] == "up":
        loss = tally_loss_chance(chosen, before_up_die=True, main_stars=state["main_stars"])
        lines.append({"key": "loss", "label": "Bust on the Up Die's bonus roll", "percent": percent(loss)})
    elif phase == "up":
        loss = tally_loss_chance(chosen, before_up_die=True, main_stars=state["main_stars"])
        lines.append({"key": "loss", "label": "Bust on the Up Die's bonus roll", "percent": percent(loss)})
    elif phase in ("main_roll", "reveal", "tally_up"):
        lines.append({"key": "bust", "label": "Bust on the next roll (two stars)",
                      "percent": percent(tally_bust_chance(chosen))})
        if high_stakes:
            lines.append({"key": "loss", "label": "Bust before the next decision (with the Up Die)",
                          "percent": percent(tally_loss_chance(chosen, high_stakes=True))})
        lines.append({"key": "expected_points", "label": "Average points a roll adds",
                      "value": round(float(tally_expected_points(chosen)), 1)})
    return lines


def last_roll(events: list[LoggedEvent]) -> dict[str, Any] | None:
    """The latest roll or Up Die reading, with its index so a tap can correct it."""
    for logged in reversed(events):
        if logged.event.get("type") in ROLL_EVENTS:
            return {
                "index": logged.index,
                "event": logged.event,
                "reading": logged.reading,
                "edited": logged.edited,
                "at": logged.at,
            }
    return None


def game_view(loaded: LoadedGame, progress: ChoiceProgress | None) -> dict[str, Any]:
    """Everything a page needs, sent as each stream message."""
    state = loaded.state()
    return {
        "id": loaded.record.id,
        "version": loaded.version,
        "state": state,
        "odds": odds(state),
        "last_roll": last_roll(loaded.events),
        "events": len(loaded.events),
        "secret": progress.as_json() if progress is not None else None,
    }


def summary(record: GameRecord) -> dict[str, Any]:
    """One line of the games list."""
    return {
        "id": record.id,
        "game": record.game,
        "players": record.players,
        "options": record.options,
        "created": record.created,
        "updated": record.updated,
        "version": record.version,
        "over": record.over,
        "winners": record.winners,
    }
