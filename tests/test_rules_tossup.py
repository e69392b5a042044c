"""Toss Up! scenarios, one per rule in the sheets and every decision in docs/rules-decisions.md."""

from __future__ import annotations

import pytest

from scorekeeper import RuleError, new_game
from tests.helpers_rules import STOP, greens, play, roll, scores, tossup, tossup_turn


def test_turn_starts_with_ten_dice_and_the_first_player():
    game = tossup()
    state = game.state()
    assert state["game"] == "tossup"
    assert state["active"] == "Ann"
    assert state["dice_in_hand"] == 10
    assert state["turn_points"] == 0
    assert state["expects"] == ["roll"]
    assert state["over"] is False and state["winners"] == []


def test_greens_are_set_aside_and_score_one_each():
    game = play(tossup(), roll("green", "green", "green", "yellow", "red", "red", "yellow", "yellow", "red", "yellow"))
    state = game.state()
    assert state["turn_points"] == 3
    assert state["dice_in_hand"] == 7
    assert state["expects"] == ["roll", "stop"]


def test_next_roll_uses_only_the_dice_not_set_aside():
    game = play(tossup(), greens(4, total=10))
    with pytest.raises(RuleError, match="6 dice in hand"):
        game.apply(greens(4, total=10))
    game.apply(greens(2, total=6))
    assert game.state()["dice_in_hand"] == 4
    assert game.state()["turn_points"] == 6


def test_one_green_among_reds_is_not_a_red_light():
    game = play(tossup(), roll("green", *["red"] * 9))
    assert game.state()["active"] == "Ann"
    assert game.state()["turn_points"] == 1


def test_all_ten_set_aside_means_rolling_all_ten_again_and_adding():
    game = play(tossup(), greens(6, total=10), greens(4, total=4))
    state = game.state()
    assert state["turn_points"] == 10
    assert state["dice_in_hand"] == 10
    game.apply(greens(3, total=10))
    assert game.state()["turn_points"] == 13
    game.apply(STOP)
    assert scores(game)["Ann"] == 13


def test_red_light_ends_the_turn_with_zero_points():
    game = play(tossup(), greens(5, total=10), greens(3, total=5), roll("red", "yellow"))
    state = game.state()
    assert scores(game) == {"Ann": 0, "Bob": 0}
    assert state["active"] == "Bob"
    assert state["turn_points"] == 0
    assert state["dice_in_hand"] == 10
    assert state["last"]["outcome"] == "red_light"
    assert state["last"]["points"] == -8


def test_red_light_on_the_first_roll():
    game = play(tossup(), roll(*["red"] * 4, *["yellow"] * 6))
    assert game.state()["active"] == "Bob"


def test_earlier_scores_are_safe_from_a_red_light():
    game = tossup_turn(tossup(), 7)
    tossup_turn(game, 2)
    play(game, greens(3, total=10), roll("red", *["yellow"] * 6))
    assert scores(game) == {"Ann": 7, "Bob": 2}


def test_caution_changes_nothing_and_the_player_may_roll_on():
    game = play(tossup(), greens(2, total=10), roll(*["yellow"] * 8))
    state = game.state()
    assert state["active"] == "Ann"
    assert state["turn_points"] == 2
    assert state["dice_in_hand"] == 8
    assert state["last"]["outcome"] == "caution"
    game.apply(greens(1, total=8))
    assert game.state()["turn_points"] == 3


def test_stop_after_a_caution_keeps_the_points():
    game = play(tossup(), greens(2, total=10), roll(*["yellow"] * 8), STOP)
    assert scores(game)["Ann"] == 2
    assert game.state()["active"] == "Bob"


def test_stop_with_zero_points_after_a_caution_is_legal():
    game = play(tossup(), roll(*["yellow"] * 10), STOP)
    assert scores(game)["Ann"] == 0
    assert game.state()["active"] == "Bob"


def test_stopping_before_the_first_roll_is_illegal():
    game = tossup()
    with pytest.raises(RuleError, match="expected one of \\['roll'\\]"):
        game.apply(STOP)
    play(game, greens(1, total=10), STOP)
    with pytest.raises(RuleError):
        game.apply(STOP)


def test_a_roll_must_show_exactly_the_dice_in_hand():
    game = tossup()
    for count in (0, 9, 11):
        with pytest.raises(RuleError, match=f"shows {count}"):
            game.apply(greens(0, total=count))


def test_reaching_exactly_the_target_is_not_over_it():
    game = tossup(target=10)
    tossup_turn(game, 10)
    assert game.state()["final_round"] is False
    tossup_turn(game, 0)
    assert game.state()["active"] == "Ann"


def test_going_over_the_target_gives_every_other_player_one_last_turn():
    game = tossup(players=3, target=10)
    tossup_turn(game, 3)  # Ann
    tossup_turn(game, 11)  # Bob goes over
    state = game.state()
    assert state["final_round"] is True
    assert state["last_turns_left"] == ["Cy", "Ann"]
    assert state["active"] == "Cy"
    tossup_turn(game, 20)  # Cy overtakes; it does not extend the game
    assert game.state()["active"] == "Ann"
    assert game.state()["over"] is False
    tossup_turn(game, 5)
    state = game.state()
    assert state["over"] is True
    assert state["winners"] == ["Cy"]
    assert state["expects"] == []
    assert scores(game) == {"Ann": 8, "Bob": 11, "Cy": 20}


def test_a_red_light_still_counts_as_the_last_turn():
    game = tossup(target=5)
    tossup_turn(game, 6)
    play(game, roll(*["red"] * 10))
    assert game.state()["over"] is True
    assert game.state()["winners"] == ["Ann"]


def test_the_first_player_over_the_target_may_not_win():
    game = tossup(target=5)
    tossup_turn(game, 6)
    tossup_turn(game, 9)
    assert game.state()["winners"] == ["Bob"]


def test_tied_highest_scores_share_the_win():
    game = tossup(target=5)
    tossup_turn(game, 6)
    tossup_turn(game, 6)
    assert game.state()["winners"] == ["Ann", "Bob"]


def test_no_event_is_legal_once_the_game_is_over():
    game = tossup(target=1)
    tossup_turn(game, 2)
    tossup_turn(game, 0)
    for event in (greens(10), STOP):
        with pytest.raises(RuleError, match="game is over"):
            game.apply(event)


def test_default_target_is_100():
    game = new_game("tossup", players=["Ann", "Bob"])
    assert game.state()["options"] == {"target": 100}
    for _ in range(10):
        game.apply(greens(10))
    game.apply(STOP)
    assert game.state()["final_round"] is False
    tossup_turn(game, 0)
    tossup_turn(game, 1)
    assert game.state()["final_round"] is True


@pytest.mark.parametrize("count", [2, 6])
def test_two_to_six_players(count):
    game = tossup(players=count)
    assert len(game.state()["players"]) == count


@pytest.mark.parametrize(
    "players, message",
    [
        (["Ann"], "2 to 6 players"),
        (["A", "B", "C", "D", "E", "F", "G"], "2 to 6 players"),
        (["Ann", "Ann"], "unique"),
        (["Ann", ""], "non-empty"),
        (["Ann", 3], "non-empty"),
        ("AnnBob", "list of names"),
    ],
)
def test_bad_players_are_refused(players, message):
    with pytest.raises(RuleError, match=message):
        new_game("tossup", players=players)


@pytest.mark.parametrize("target", [0, -5, 2.5, "100", True])
def test_bad_targets_are_refused(target):
    with pytest.raises(RuleError, match="target"):
        new_game("tossup", players=["Ann", "Bob"], target=target)


def test_unknown_options_and_games_are_refused():
    with pytest.raises(RuleError, match="unknown Toss Up option"):
        new_game("tossup", players=["Ann", "Bob"], high_stakes=True)
    with pytest.raises(RuleError, match="unknown game"):
        new_game("yahtzee", players=["Ann", "Bob"])


def test_turn_order_wraps_around():
    game = tossup(players=3)
    for expected in ("Ann", "Bob", "Cy", "Ann"):
        assert game.state()["active"] == expected
        tossup_turn(game, 1)


def test_state_is_json_serialisable():
    import json

    game = play(tossup(), greens(3, total=10))
    assert json.loads(json.dumps(game.state())) == game.state()
