"""From settled readings to events: every mismatch yields problems and no events."""

from __future__ import annotations

import pytest

from scorekeeper import RuleError, new_game
from scorekeeper.readings import interpret
from scorekeeper.store import GameStore
from tests.helpers_rules import choose, play, reveal, tally_roll, up


def toss(*faces, cocked=()):
    return [{"die": "tossup", "face": f, "confidence": 0.99, "cocked": i in cocked} for i, f in enumerate(faces)]


def tally(**faces):
    return [{"die": d, "face": f, "confidence": 0.99, "cocked": False} for d, f in faces.items()]


def tossup_state(**kwargs):
    return new_game("tossup", players=["Ann", "Bob"]).state() | kwargs


def test_tossup_reading_with_the_dice_in_hand_becomes_a_roll():
    result = interpret(tossup_state(), toss(*["green"] * 4, *["red"] * 6))
    assert result.ok
    assert result.events == [{"type": "roll", "dice": ["green"] * 4 + ["red"] * 6}]


@pytest.mark.parametrize("count, hint", [(9, "roll every die"), (11, "set aside the greens")])
def test_tossup_wrong_number_of_dice(count, hint):
    result = interpret(tossup_state(), toss(*["yellow"] * count))
    assert not result.ok and result.events == []
    assert result.problems[0].code == "count"
    assert "10 dice in hand" in result.problems[0].message and hint in result.problems[0].message


def test_tossup_cocked_and_unsure_dice_are_flagged_with_their_indexes():
    result = interpret(tossup_state(), toss("green", "unsure", *["red"] * 7, "yellow", cocked={2}))
    codes = {p.code: p.dice for p in result.problems}
    assert codes == {"cocked": (2,), "unsure": (1,)}
    assert result.events == []


def test_dice_left_unread_in_the_lamps_reflection_tell_the_player_to_move_the_lamp():
    dice = toss("green", "unsure", "unsure", *["red"] * 7)
    plain = interpret(tossup_state(), dice).problems
    assert [p.message for p in plain] == ["could not read 2 dice: tap to set the face"]
    dice[2]["glare"] = True
    (unread,) = interpret(tossup_state(), dice).problems
    assert unread.code == "unsure" and unread.dice == (1, 2)
    assert unread.message == ("could not read 2 dice: tap to set the face (the lamp's reflection washed 1 of them out "
                              "white: move the lamp off to one side of the tray)")
    one = tally(red="50", blue="unsure", purple="(20)")
    one[1]["glare"] = True
    assert "washed it out white" in interpret(tally_game().state(), one).problems[0].message
    unnamed = tally(red="50", unsure="unsure", purple="(20)")
    unnamed[1]["glare"] = True
    assert interpret(tally_game().state(), unnamed).problems[0].message == (
        "could not tell which die this is: tap to set it (the lamp's reflection washed it out white: move the lamp "
        "off to one side of the tray)")


def test_dice_left_unread_in_a_walls_shadow_tell_the_player_to_light_that_side():
    dice = tally(red="50", blue="unsure", green="unsure")
    dice[2]["shade"] = True
    (unread,) = interpret(tally_game().state(), dice).problems
    assert unread.code == "unsure" and unread.dice == (1, 2)
    assert unread.message == ("could not read 2 dice: tap to set the face (1 of them lay in the shadow of the tray's "
                              "wall, too dark to read: light that side of the tray too, or raise the lamp)")
    dice[1]["glare"] = True  # one of each: both said, the lamp's reflection first
    assert interpret(tally_game().state(), dice).problems[0].message == (
        "could not read 2 dice: tap to set the face (the lamp's reflection washed 1 of them out white: move the lamp "
        "off to one side of the tray; 1 of them lay in the shadow of the tray's wall, too dark to read: light that side "
        "of the tray too, or raise the lamp)")
    unnamed = tally(red="50", unsure="unsure")
    unnamed[1]["shade"] = True
    assert "(it lay in the shadow of the tray's wall" in interpret(tally_game().state(), unnamed).problems[0].message


def test_tossup_reading_when_no_roll_is_due_or_the_wrong_dice():
    game = new_game("tossup", players=["Ann", "Bob"], target=1)
    play(game, {"type": "roll", "dice": ["green"] * 2 + ["red"] * 8}, {"type": "stop"})
    play(game, {"type": "roll", "dice": ["red"] * 10})
    assert interpret(game.state(), toss("green")).problems[0].code == "not_now"
    assert interpret(tossup_state(), tally(red="50")).problems[0].code == "wrong_set"


def tally_game(*events, **options):
    return play(new_game("tallyup", players=["Ann", "Bob"], **options), *events)


def test_first_main_roll_chooses_the_dice_and_rolls_them():
    result = interpret(tally_game().state(), tally(red="50", blue="star", purple="(20)"))
    assert result.events == [
        {"type": "choose", "dice": ["red", "blue", "purple"]},
        tally_roll(red="50", blue="star", purple="(20)"),
    ]


def test_first_main_roll_needs_three_different_dice():
    assert interpret(tally_game().state(), tally(red="50", blue="star")).problems[0].code == "count"
    dup = [{"die": "red", "face": "50"}, {"die": "red", "face": "100"}, {"die": "blue", "face": "10"}]
    assert interpret(tally_game().state(), dup).problems[0].code == "duplicate"
    unknown = [{"die": None, "face": None}, {"die": "red", "face": "100"}, {"die": "blue", "face": "10"}]
    assert interpret(tally_game().state(), unknown).problems[0].dice == (0,)


def test_later_main_rolls_must_show_the_chosen_dice_and_ignore_a_resting_up_die():
    game = tally_game(choose("red", "blue", "purple"), tally_roll(red="50", blue="10", purple="20"), reveal())
    dice = tally(red="100", blue="10", purple="star") + [{"die": "up", "face": "x2"}]
    assert interpret(game.state(), dice).events == [tally_roll(red="100", blue="10", purple="star")]
    wrong = interpret(game.state(), tally(red="100", blue="10", green="40"))
    assert {p.code for p in wrong.problems} == {"wrong_dice", "count"}
    assert wrong.events == []


def test_up_die_reading_and_bonus_roll_beside_the_resting_main_dice():
    game = tally_game(choose("red", "blue", "purple"), tally_roll(red="(50)", blue="10", purple="20"), reveal())
    main = tally(red="(50)", blue="10", purple="20")
    assert interpret(game.state(), main).problems[0].message == "roll the Up Die"
    assert interpret(game.state(), main + [{"die": "up", "face": "+2"}]).events == [up("+2")]
    game.apply(up("+2"))
    bonus = interpret(game.state(), main + tally(orange="60", green="star"))
    assert bonus.events == [tally_roll(orange="60", green="star")]
    short = interpret(game.state(), main + tally(orange="60"))
    assert short.problems[0].code == "count" and "2 bonus dice" in short.problems[0].message


def test_a_die_nobody_could_name_does_not_hold_up_a_roll_whose_own_dice_are_all_read():
    """A square of a plaid tray's pattern read as a die-like patch, with no name: once the dice
    the roll needs are all there and read, it is none of them."""
    patch = {"die": "unsure", "face": "unsure", "confidence": 0.0, "cocked": False}
    game = tally_game(choose("red", "blue", "purple"), tally_roll(red="(50)", blue="10", purple="20"), reveal())
    assert interpret(game.state(), [patch, {"die": "up", "face": "+2"}]).events == [up("+2")]
    alone = interpret(game.state(), [patch])
    assert alone.problems[0].code == "unsure" and alone.problems[0].dice == (0,)  # it may be the Up Die
    game.apply(up("+2"))
    assert interpret(game.state(), tally(orange="60", green="star") + [patch]).events == [tally_roll(orange="60", green="star")]
    assert interpret(game.state(), tally(orange="60") + [patch]).problems[0].code == "unsure"  # it may be a bonus die
    later = tally_game(choose("red", "blue", "purple"), tally_roll(red="50", blue="10", purple="20"), reveal())
    assert interpret(later.state(), [patch] + tally(red="100", blue="10", purple="star")).events == [
        tally_roll(red="100", blue="10", purple="star")]
    missing = interpret(later.state(), tally(red="100", blue="10") + [patch])
    assert [p.code for p in missing.problems] == ["unsure"] and missing.problems[0].dice == (2,)
    unread = interpret(later.state(), [patch] + tally(red="100", blue="unsure", purple="star"))
    assert [p.code for p in unread.problems] == ["unsure"] and unread.problems[0].dice == (0,)
    # The first main roll is any three dice: a fourth, unnamed, may be one of them.
    first = interpret(tally_game().state(), tally(red="50", blue="star", purple="(20)") + [patch])
    assert first.events == [] and first.problems[0].dice == (3,)


def test_cocked_up_die_and_waiting_for_decisions():
    game = tally_game(choose("red", "blue", "purple"), tally_roll(red="(50)", blue="10", purple="20"), reveal())
    cocked = [{"die": "up", "face": "x2", "cocked": True}]
    assert interpret(game.state(), cocked).problems[0].code == "cocked"
    waiting = tally_game(choose("red", "blue", "purple"), tally_roll(red="50", blue="10", purple="20"))
    assert interpret(waiting.state(), tally(red="50")).problems[0].code == "not_now"


def test_append_all_is_all_or_nothing(tmp_path):
    with GameStore.in_dir(tmp_path) as store:
        game_id = store.create("tallyup", ["Ann", "Bob"]).record.id
        bad = [choose("red", "blue", "purple"), tally_roll(red="50", blue="10", green="40")]
        with pytest.raises(RuleError):
            store.append_all(game_id, bad, reading={"image": "r.jpg"})
        assert store.get(game_id).version == 0
        good = interpret(store.get(game_id).state(), tally(red="50", blue="10", purple="20")).events
        loaded = store.append_all(game_id, good, reading={"image": "r.jpg"}, expected_version=0)
        assert loaded.version == 2
        assert [e.reading for e in loaded.events] == [None, {"image": "r.jpg"}]
        assert loaded.state()["running_total"] == 80
