"""Small builders shared by the rules tests (plain functions, no state)."""

from __future__ import annotations

from typing import Any

from scorekeeper import new_game
from scorekeeper.rules.base import Game


def roll(*faces: str) -> dict[str, Any]:
    return {"type": "roll", "dice": list(faces)}


def greens(n: int, rest: str = "yellow", total: int | None = None) -> dict[str, Any]:
    """A Toss Up roll of `total` dice (default n) with n greens and the rest `rest`."""
    total = n if total is None else total
    return roll(*(["green"] * n + [rest] * (total - n)))


STOP = {"type": "stop"}


def tally_roll(**faces: str) -> dict[str, Any]:
    """tally_roll(red="(50)", blue="10") -> a roll event."""
    return {"type": "roll", "dice": [{"die": die, "face": face} for die, face in faces.items()]}


def choose(*dice: str) -> dict[str, Any]:
    return {"type": "choose", "dice": list(dice)}


def reveal(*out: str) -> dict[str, Any]:
    return {"type": "reveal", "out": list(out)}


def up(face: str) -> dict[str, Any]:
    return {"type": "up", "face": face}


def shout(player: str) -> dict[str, Any]:
    return {"type": "tally_up", "player": player}


def scores(game: Game) -> dict[str, int]:
    return {p["name"]: p["score"] for p in game.state()["players"]}


def play(game: Game, *events: dict[str, Any]) -> Game:
    for event in events:
        game.apply(event)
    return game


def tossup(players: int = 2, target: int = 100) -> Game:
    return new_game("tossup", players=["Ann", "Bob", "Cy", "Dee", "Eve", "Fay"][:players], target=target)


def tallyup(players: int = 3, **options: Any) -> Game:
    names = ["Ann", "Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jo"][:players]
    return new_game("tallyup", players=names, **options)


def tossup_turn(game: Game, points: int) -> Game:
    """Score exactly `points` this turn (10 greens at a time, then the remainder) and stop."""
    while points >= 10:
        game.apply(greens(10))
        points -= 10
    if points:
        game.apply(greens(points, total=game.state()["dice_in_hand"]))
    elif not game.state()["rolls_this_turn"]:
        game.apply(greens(0, total=10))
    game.apply(STOP)
    return game
