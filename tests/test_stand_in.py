"""The demo's stand-in host: the moves it makes so that a replayed throw fits the game."""

from __future__ import annotations

from typing import Any

from scorekeeper.rules import new_game
from scorekeeper.table.stand_in import stand_in_for


def tossup_dice(*faces: str) -> list[dict[str, Any]]:
    return [{"die": "tossup", "face": face, "confidence": 0.99, "cocked": False} for face in faces]


def tally_dice(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"die": die, "face": face, "confidence": 0.99, "cocked": False} for die, face in pairs]


def test_ten_dice_mid_turn_mean_the_player_stopped():
    game = new_game("tossup", ["Ann", "Bob"])
    game.apply({"type": "roll", "dice": ["green"] * 7 + ["yellow"] * 3})  # 3 dice left in hand
    before = game.state()
    helped = stand_in_for(game, tossup_dice(*["green"] * 4, *["yellow"] * 6))
    assert helped is not None
    assert helped.moves == ({"type": "stop"},)
    assert helped.roll == ({"type": "roll", "dice": ["green"] * 4 + ["yellow"] * 6},)
    assert game.state() == before  # tried on a copy
    for event in helped.events:  # and the events are legal in that order: Bob throws next
        game.apply(event)
    assert [p["score"] for p in game.state()["players"]] == [7, 0]
    assert game.state()["active"] == "Bob" and game.state()["turn_points"] == 4


def test_a_throw_that_no_stop_explains_is_left_to_the_host():
    game = new_game("tossup", ["Ann", "Bob"])
    assert stand_in_for(game, tossup_dice(*["green"] * 9)) is None  # a missed die at the turn's start
    game.apply({"type": "roll", "dice": ["green"] * 7 + ["yellow"] * 3})
    assert stand_in_for(game, tossup_dice("green", "red")) is None  # a misread: 2 dice, 3 in hand


def test_the_stop_that_ends_the_game_is_made_without_the_throw():
    game = new_game("tossup", ["Ann", "Bob"], target=5)
    game.apply({"type": "roll", "dice": ["green"] * 7 + ["yellow"] * 3})
    game.apply({"type": "stop"})  # Ann is over 5: Bob has one last turn
    game.apply({"type": "roll", "dice": ["green"] * 2 + ["yellow"] * 8})
    helped = stand_in_for(game, tossup_dice(*["yellow"] * 10))
    assert helped is not None and helped.moves == ({"type": "stop"},) and helped.roll == ()
    game.apply(helped.moves[0])
    assert game.state()["over"]


def _tally_after_first_roll(first: list[tuple[str, str]]) -> Any:
    game = new_game("tallyup", ["Ann", "Bob"])
    game.apply({"type": "choose", "dice": [die for die, _ in first]})
    game.apply({"type": "roll", "dice": [{"die": die, "face": face} for die, face in first]})
    return game


def test_a_second_main_roll_of_the_same_dice_follows_a_reveal_with_nobody_out():
    game = _tally_after_first_roll([("red", "50"), ("orange", "60"), ("yellow", "20")])
    assert game.state()["phase"] == "reveal"
    throw = [("red", "100"), ("orange", "star"), ("yellow", "70")]
    helped = stand_in_for(game, tally_dice(*throw))
    assert helped is not None
    assert helped.moves == ({"type": "reveal", "out": []},)
    assert helped.roll == ({"type": "roll", "dice": [{"die": d, "face": f} for d, f in throw]},)


def test_a_throw_of_other_dice_means_everybody_went_out_and_the_next_player_chose():
    game = _tally_after_first_roll([("red", "50"), ("orange", "60"), ("yellow", "20")])
    helped = stand_in_for(game, tally_dice(("green", "30"), ("blue", "20"), ("purple", "star")))
    assert helped is not None
    assert helped.moves == ({"type": "reveal", "out": ["Ann", "Bob"]},)
    assert helped.roll[0] == {"type": "choose", "dice": ["green", "blue", "purple"]}
    for event in helped.events:
        game.apply(event)
    state = game.state()
    assert state["active"] == "Bob" and [p["score"] for p in state["players"]] == [130, 130]


def test_the_up_die_after_a_circle_follows_a_reveal_with_nobody_out():
    game = _tally_after_first_roll([("blue", "(10)"), ("purple", "star"), ("yellow", "20")])
    assert game.state()["reveal_before"] == "up"
    helped = stand_in_for(game, tally_dice(("red", "star"), ("up", "+100")))
    assert helped is not None
    assert helped.moves == ({"type": "reveal", "out": []},)
    assert helped.roll == ({"type": "up", "face": "+100"},)


def test_an_up_die_asking_for_bonus_dice_the_tray_does_not_show_ends_the_round():
    # The clips never throw bonus dice: scoring the +3 would leave the game waiting for three.
    game = _tally_after_first_roll([("blue", "(10)"), ("purple", "star"), ("yellow", "20")])
    helped = stand_in_for(game, tally_dice(("red", "star"), ("up", "+3")))
    assert helped is not None
    assert helped.moves == ({"type": "reveal", "out": ["Ann", "Bob"]},) and helped.roll == ()
    # With the three bonus dice in the tray as well, the +3 is scored.
    shown = tally_dice(("red", "star"), ("orange", "60"), ("green", "30"), ("up", "+3"))
    helped = stand_in_for(game, shown)
    assert helped is not None and helped.roll == ({"type": "up", "face": "+3"},)


def test_three_stars_are_shouted_by_the_active_player_before_the_next_roll():
    game = _tally_after_first_roll([("red", "star"), ("orange", "star"), ("yellow", "star")])
    assert game.state()["phase"] == "tally_up"
    throw = [("red", "50"), ("orange", "60"), ("yellow", "20")]
    helped = stand_in_for(game, tally_dice(*throw))
    assert helped is not None
    assert helped.moves == ({"type": "tally_up", "player": "Ann"}, {"type": "reveal", "out": []})
    for event in helped.events:
        game.apply(event)
    assert [p["score"] for p in game.state()["players"]] == [200, 100]


def test_a_bonus_roll_cannot_be_skipped():
    game = _tally_after_first_roll([("blue", "(10)"), ("purple", "star"), ("yellow", "20")])
    game.apply({"type": "reveal", "out": []})
    game.apply({"type": "up", "face": "+2"})
    assert stand_in_for(game, tally_dice(("blue", "10"), ("purple", "20"), ("yellow", "70"))) is None
