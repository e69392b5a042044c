"""Tally Up! scenarios, one per rule in the sheet and every decision in docs/rules-decisions.md."""

from __future__ import annotations

import json

import pytest

from scorekeeper import RuleError, new_game
from tests.helpers_rules import choose, play, reveal, scores, shout, tallyup, tally_roll, up

RBP = ("red", "blue", "purple")
PLAIN = tally_roll(red="50", blue="10", purple="20")  # 80, no star, no circle
ONE_STAR = tally_roll(red="star", blue="50", purple="20")  # 70, one star
CIRCLED = tally_roll(red="(50)", blue="(10)", purple="20")  # 80, two circles
BUST = tally_roll(red="star", blue="star", purple="20")
THREE_STARS = tally_roll(red="star", blue="star", purple="star")


def started(players: int = 3, **options):
    return play(tallyup(players, **options), choose(*RBP))


def test_first_player_in_the_list_chooses_three_dice_first():
    state = tallyup().state()
    assert state["game"] == "tallyup"
    assert state["active"] == "Ann"
    assert state["expects"] == ["choose"]
    assert state["round"] == 1
    assert state["running_total"] == 0
    assert state["in"] == ["Ann", "Bob", "Cy"]
    assert state["chosen"] == []


def test_nobody_decides_before_the_first_main_roll():
    game = started()
    assert game.state()["expects"] == ["roll"]
    assert game.state()["chosen"] == list(RBP)
    with pytest.raises(RuleError):
        game.apply(reveal("Bob"))


def test_zero_stars_add_every_number_and_decisions_follow():
    game = play(started(), PLAIN)
    state = game.state()
    assert state["running_total"] == 80
    assert state["expects"] == ["reveal"]
    assert state["reveal_before"] == "main_roll"


def test_one_star_still_adds_the_numbers():
    game = play(started(), ONE_STAR)
    assert game.state()["running_total"] == 70


def test_circled_numbers_count_as_points():
    game = play(started(), tally_roll(red="(50)", blue="10", purple="(20)"))
    assert game.state()["running_total"] == 80


def test_running_total_accumulates_over_main_rolls():
    game = play(started(), PLAIN, reveal(), ONE_STAR)
    assert game.state()["running_total"] == 150


def test_the_chosen_dice_stay_for_the_whole_round():
    game = play(started(), PLAIN, reveal())
    with pytest.raises(RuleError, match="chosen dice"):
        game.apply(tally_roll(red="50", blue="10", orange="60"))
    with pytest.raises(RuleError, match="choose"):
        game.apply(choose("orange", "yellow", "green"))


def test_two_stars_bust_in_players_score_nothing_and_the_round_ends():
    game = play(started(), PLAIN, reveal("Cy"), BUST)
    state = game.state()
    assert scores(game) == {"Ann": 0, "Bob": 0, "Cy": 80}
    assert state["running_total"] == 0
    assert state["active"] == "Bob"
    assert state["round"] == 2
    assert state["in"] == ["Ann", "Bob", "Cy"]
    assert state["chosen"] == []
    assert state["expects"] == ["choose"]
    assert state["last"]["round_over"] == "bust"


def test_going_out_banks_the_running_total():
    game = play(started(), PLAIN, reveal("Bob"), ONE_STAR, reveal("Ann"))
    assert scores(game) == {"Ann": 150, "Bob": 80, "Cy": 0}
    assert game.state()["in"] == ["Cy"]
    assert game.state()["out"] == ["Ann", "Bob"]


def test_players_who_are_out_cannot_decide_again():
    game = play(started(), PLAIN, reveal("Bob"), PLAIN)
    with pytest.raises(RuleError, match="cannot go OUT"):
        game.apply(reveal("Bob"))
    with pytest.raises(RuleError, match="cannot go OUT"):
        game.apply(reveal("Zed"))
    with pytest.raises(RuleError, match="twice"):
        game.apply(reveal("Ann", "Ann"))


def test_the_active_player_keeps_rolling_after_going_out():
    game = play(started(), PLAIN, reveal("Ann"))
    state = game.state()
    assert state["active"] == "Ann"
    assert state["expects"] == ["roll"]
    game.apply(PLAIN)
    assert game.state()["running_total"] == 160


def test_round_ends_when_everyone_is_out_and_the_next_player_starts():
    game = play(started(), PLAIN, reveal("Ann", "Bob", "Cy"))
    state = game.state()
    assert scores(game) == {"Ann": 80, "Bob": 80, "Cy": 80}
    assert state["active"] == "Bob"
    assert state["round"] == 2
    assert state["running_total"] == 0
    assert state["last"]["round_over"] == "all_out"


def test_active_player_wraps_around_the_table():
    game = tallyup(players=2)
    for expected in ("Ann", "Bob", "Ann"):
        assert game.state()["active"] == expected
        play(game, choose(*RBP), BUST)


def test_three_stars_tally_up_shouter_200_others_in_100():
    game = play(started(players=4), PLAIN, reveal("Dee"), THREE_STARS)
    assert game.state()["expects"] == ["tally_up"]
    game.apply(shout("Bob"))
    assert scores(game) == {"Ann": 100, "Bob": 200, "Cy": 100, "Dee": 80}
    state = game.state()
    assert state["running_total"] == 80
    assert state["expects"] == ["reveal"]
    game.apply(reveal())
    assert game.state()["expects"] == ["roll"]


def test_tally_up_shouter_scores_200_even_when_out():
    game = play(started(), PLAIN, reveal("Cy"), THREE_STARS, shout("Cy"))
    assert scores(game) == {"Ann": 100, "Bob": 100, "Cy": 280}


def test_tally_up_needs_a_player_of_this_game():
    game = play(started(), THREE_STARS)
    with pytest.raises(RuleError, match="shouted first"):
        game.apply(shout("Zed"))
    with pytest.raises(RuleError):
        game.apply(reveal())


def test_circle_means_reveal_then_up_die_then_reveal_then_main_roll():
    game = play(started(), CIRCLED)
    state = game.state()
    assert state["running_total"] == 80
    assert state["expects"] == ["reveal"]
    assert state["reveal_before"] == "up"
    game.apply(reveal("Cy"))
    assert game.state()["expects"] == ["up"]
    game.apply(up("+100"))
    assert game.state()["running_total"] == 180
    assert game.state()["expects"] == ["reveal"]
    game.apply(reveal("Bob"))
    assert scores(game) == {"Ann": 0, "Bob": 180, "Cy": 80}
    assert game.state()["expects"] == ["roll"]


def test_up_die_is_rolled_once_however_many_circles():
    game = play(started(), CIRCLED, reveal(), up("-100"), reveal())
    assert game.state()["expects"] == ["roll"]
    assert game.state()["running_total"] == -20


def test_running_total_may_go_below_zero_and_banking_it_costs_points():
    game = play(started(), CIRCLED, reveal(), up("-100"), reveal("Bob"))
    assert scores(game)["Bob"] == -20


def test_x2_doubles_the_running_total():
    game = play(started(), PLAIN, reveal(), CIRCLED, reveal(), up("x2"))
    assert game.state()["running_total"] == 320


def test_up_die_is_skipped_when_everyone_went_out_before_it():
    game = play(started(), CIRCLED, reveal("Ann", "Bob", "Cy"))
    state = game.state()
    assert state["expects"] == ["choose"]
    assert state["active"] == "Bob"
    assert scores(game) == {"Ann": 80, "Bob": 80, "Cy": 80}


@pytest.mark.parametrize("face, count", [("+1", 1), ("+2", 2), ("+3", 3)])
def test_bonus_roll_uses_that_many_unchosen_dice(face, count):
    game = play(started(), CIRCLED, reveal(), up(face))
    state = game.state()
    assert state["expects"] == ["roll"]
    assert state["bonus_dice"] == count
    assert state["unchosen"] == ["orange", "yellow", "green"]
    faces = {"orange": "60", "yellow": "20", "green": "30"}
    bonus = dict(list(faces.items())[:count])
    game.apply(tally_roll(**bonus))
    state = game.state()
    assert state["running_total"] == 80 + sum(int(v) for v in bonus.values())
    assert state["expects"] == ["reveal"]
    assert state["reveal_before"] == "main_roll"


def test_bonus_roll_must_use_unchosen_dice_and_the_right_count():
    game = play(started(), CIRCLED, reveal(), up("+2"))
    with pytest.raises(RuleError, match="unchosen"):
        game.apply(tally_roll(red="50", orange="60"))
    with pytest.raises(RuleError, match="got 1 dice"):
        game.apply(tally_roll(orange="60"))
    with pytest.raises(RuleError, match="got 3 dice"):
        game.apply(tally_roll(orange="60", yellow="20", green="30"))


def test_bonus_star_with_a_main_star_busts():
    main = tally_roll(red="(50)", blue="star", purple="20")
    game = play(started(), main, reveal("Bob"), up("+1"), tally_roll(orange="star"))
    assert scores(game) == {"Ann": 0, "Bob": 70, "Cy": 0}
    assert game.state()["active"] == "Bob"
    assert game.state()["last"]["round_over"] == "bust"


def test_one_bonus_star_alone_does_not_bust():
    game = play(started(), CIRCLED, reveal(), up("+2"), tally_roll(orange="star", yellow="(40)"))
    state = game.state()
    assert state["running_total"] == 120
    assert state["expects"] == ["reveal"]


def test_two_bonus_stars_bust():
    game = play(started(), CIRCLED, reveal(), up("+3"), tally_roll(orange="star", yellow="star", green="30"))
    assert game.state()["round"] == 2


def test_circles_on_a_bonus_roll_do_not_roll_the_up_die_again():
    game = play(started(), CIRCLED, reveal(), up("+1"), tally_roll(yellow="(40)"))
    assert game.state()["reveal_before"] == "main_roll"
    game.apply(reveal())
    assert game.state()["expects"] == ["roll"]


def test_a_bonus_roll_never_makes_a_tally_up():
    main = tally_roll(red="(50)", blue="10", purple="20")
    game = play(started(), main, reveal(), up("+3"), tally_roll(orange="70", yellow="20", green="(40)"))
    assert game.state()["expects"] == ["reveal"]


def test_high_stakes_has_no_reveal_before_the_up_die():
    game = play(started(high_stakes=True), CIRCLED)
    assert game.state()["expects"] == ["up"]
    game.apply(up("+100"))
    assert game.state()["expects"] == ["reveal"]
    game.apply(reveal("Cy"))
    assert scores(game)["Cy"] == 180


def test_high_stakes_still_decides_before_each_main_roll():
    game = play(started(high_stakes=True), PLAIN)
    assert game.state()["expects"] == ["reveal"]
    game = play(started(high_stakes=True), THREE_STARS, shout("Ann"))
    assert game.state()["expects"] == ["reveal"]


def test_reaching_the_target_ends_the_game_at_the_end_of_the_round():
    game = play(started(target=100), PLAIN, reveal("Bob"), PLAIN, reveal("Cy"))
    assert game.state()["over"] is False  # Cy has 160 but the round goes on
    game.apply(BUST)
    state = game.state()
    assert state["over"] is True
    assert state["winners"] == ["Cy"]
    assert state["expects"] == []
    with pytest.raises(RuleError, match="game is over"):
        game.apply(choose(*RBP))


def test_tied_leaders_play_another_round():
    game = play(started(players=2, target=50), PLAIN, reveal("Ann", "Bob"))
    assert scores(game) == {"Ann": 80, "Bob": 80}
    assert game.state()["over"] is False
    assert game.state()["active"] == "Bob"
    play(game, choose(*RBP), PLAIN, reveal("Bob"), BUST)
    assert game.state()["over"] is True
    assert game.state()["winners"] == ["Bob"]


def test_one_turn_each_ends_after_everyone_was_active_once():
    game = tallyup(players=2, one_turn_each=True, target=10)
    play(game, choose(*RBP), PLAIN, reveal("Ann"), BUST)
    assert game.state()["over"] is False  # the target does not apply in this variant
    play(game, choose(*RBP), BUST)
    assert game.state()["over"] is True
    assert game.state()["winners"] == ["Ann"]


def test_one_turn_each_with_a_tie_plays_on():
    game = tallyup(players=2, one_turn_each=True)
    play(game, choose(*RBP), BUST, choose(*RBP), BUST)
    assert game.state()["over"] is False
    assert game.state()["round"] == 3
    play(game, choose(*RBP), PLAIN, reveal("Ann", "Bob"))
    assert game.state()["over"] is False
    play(game, choose(*RBP), PLAIN, reveal("Bob"), BUST)
    assert game.state()["winners"] == ["Bob"]


def test_default_options():
    game = new_game("tallyup", players=["Ann", "Bob"])
    assert game.state()["options"] == {"target": 2500, "one_turn_each": False, "high_stakes": False}


@pytest.mark.parametrize("count", [2, 10])
def test_two_to_ten_players(count):
    assert len(tallyup(players=count).state()["players"]) == count


def test_eleven_players_are_refused():
    with pytest.raises(RuleError, match="2 to 10 players"):
        new_game("tallyup", players=[f"P{i}" for i in range(11)])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"one_turn_each": "yes"}, "one_turn_each"),
        ({"high_stakes": 1}, "high_stakes"),
        ({"target": 0}, "target"),
        ({"turbo": True}, "unknown Tally Up option"),
    ],
)
def test_bad_options_are_refused(options, message):
    with pytest.raises(RuleError, match=message):
        new_game("tallyup", players=["Ann", "Bob"], **options)


@pytest.mark.parametrize(
    "dice, message",
    [
        (["red", "blue"], "exactly 3"),
        (["red", "blue", "blue"], "must differ"),
        (["red", "blue", "up"], "unknown Tally Die"),
        ("red", "exactly 3"),
    ],
)
def test_bad_choices_are_refused(dice, message):
    with pytest.raises(RuleError, match=message):
        tallyup().apply(choose(*dice) if isinstance(dice, list) else {"type": "choose", "dice": dice})


@pytest.mark.parametrize(
    "dice, message",
    [
        ([{"die": "red", "face": "50"}, {"die": "blue", "face": "10"}], "got 2 dice"),
        ([{"die": "red", "face": "60"}, {"die": "blue", "face": "10"}, {"die": "purple", "face": "20"}], "no face '60'"),
        ([{"die": "red", "face": "50"}, {"die": "red", "face": "50"}, {"die": "blue", "face": "10"}], "twice"),
        ([{"die": "red"}, {"die": "blue", "face": "10"}, {"die": "purple", "face": "20"}], "'die': name"),
        (["red", "blue", "purple"], "'die': name"),
        ("red", "needs 'dice'"),
    ],
)
def test_bad_main_rolls_are_refused(dice, message):
    with pytest.raises(RuleError, match=message):
        started().apply({"type": "roll", "dice": dice})


def test_unknown_up_face_and_unknown_fields_are_refused():
    game = play(started(), CIRCLED, reveal())
    with pytest.raises(RuleError, match="Up Die face"):
        game.apply(up("+4"))
    with pytest.raises(RuleError, match="unknown field"):
        game.apply({"type": "up", "face": "x2", "extra": 1})
    with pytest.raises(RuleError, match="needs 'out'"):
        play(started(), PLAIN).apply({"type": "reveal"})


def test_state_is_json_serialisable():
    game = play(started(), CIRCLED, reveal("Bob"))
    assert json.loads(json.dumps(game.state())) == game.state()
