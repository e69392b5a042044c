"""Property tests: random legal games, random illegal events, folding and undo."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorekeeper import RuleError, new_game
from scorekeeper.rules.base import Game
from scorekeeper.rules.dice import TALLY_DICE, TALLY_FACES, TOSSUP_FACE_LIST, UP_FACES
from scorekeeper.store import fold

NAMES = ["Ann", "Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jo"]
MAX_EVENTS = 120
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def legal_event(draw: Any, game: Game) -> dict[str, Any]:
    """Draw one event that the rules allow now."""
    state = game.state()
    kind = draw(st.sampled_from(state["expects"]))
    if state["game"] == "tossup":
        if kind == "stop":
            return {"type": "stop"}
        faces = draw(st.lists(st.sampled_from(TOSSUP_FACE_LIST), min_size=state["dice_in_hand"], max_size=state["dice_in_hand"]))
        return {"type": "roll", "dice": faces}
    if kind == "choose":
        return {"type": "choose", "dice": draw(st.permutations(TALLY_DICE))[:3]}
    if kind == "roll":
        if state["phase"] == "main_roll":
            dice = state["chosen"]
        else:
            dice = draw(st.permutations(state["unchosen"]))[: state["bonus_dice"]]
        return {"type": "roll", "dice": [{"die": d, "face": draw(st.sampled_from(TALLY_FACES[d]))} for d in dice]}
    if kind == "reveal":
        out = [name for name in state["in"] if draw(st.integers(0, 3)) == 0]
        return {"type": "reveal", "out": out}
    if kind == "up":
        return {"type": "up", "face": draw(st.sampled_from(UP_FACES))}
    return {"type": "tally_up", "player": draw(st.sampled_from([p["name"] for p in state["players"]]))}


@st.composite
def games(draw: Any) -> tuple[Game, list[dict[str, Any]], list[tuple[dict, dict, dict]]]:
    """A new game, a legal event stream for it, and (before, event, after) states."""
    kind = draw(st.sampled_from(["tossup", "tallyup"]))
    if kind == "tossup":
        players = NAMES[: draw(st.integers(2, 6))]
        options = {"target": draw(st.integers(1, 40))}
    else:
        players = NAMES[: draw(st.integers(2, 10))]
        options = {
            "target": draw(st.integers(1, 400)),
            "one_turn_each": draw(st.booleans()),
            "high_stakes": draw(st.booleans()),
        }
    game = new_game(kind, players=players, **options)
    events, steps = [], []
    for _ in range(draw(st.integers(1, MAX_EVENTS))):
        if game.state()["over"]:
            break
        event = legal_event(draw, game)
        before = game.state()
        game.apply(event)
        events.append(event)
        steps.append((before, event, game.state()))
    return game, events, steps


def test_fold_helper_names_the_bad_event():
    import pytest

    with pytest.raises(RuleError, match="event #1 \\(stop\\)"):
        fold("tossup", ["Ann", "Bob"], {}, [{"type": "roll", "dice": ["red"] * 10}, {"type": "stop"}])


@SETTINGS
@given(games())
def test_folding_the_log_equals_applying_incrementally(case):
    game, events, _ = case
    options = game.options()
    assert fold(game.kind, game.players, options, events).state() == game.state()


@SETTINGS
@given(games())
def test_undo_then_reapply_gives_the_same_state(case):
    game, events, _ = case
    undone = fold(game.kind, game.players, game.options(), events[:-1])
    undone.apply(events[-1])
    assert undone.state() == game.state()


@SETTINGS
@given(games())
def test_scores_change_only_where_the_rules_say(case):
    _, _, steps = case
    for before, event, after in steps:
        old = {p["name"]: p["score"] for p in before["players"]}
        new = {p["name"]: p["score"] for p in after["players"]}
        expected = dict(old)
        if before["game"] == "tossup":
            if event["type"] == "stop":
                expected[before["active"]] += before["turn_points"]
        elif event["type"] == "reveal":
            for name in event["out"]:
                expected[name] += before["running_total"]
        elif event["type"] == "tally_up":
            for name in old:
                if name == event["player"]:
                    expected[name] += 200
                elif name in before["in"]:
                    expected[name] += 100
        assert new == expected, (before, event, after)


@SETTINGS
@given(games())
def test_tossup_dice_are_conserved(case):
    _, _, steps = case
    for before, event, after in steps:
        if before["game"] != "tossup":
            return
        assert after["dice_in_hand"] + after["dice_set_aside"] == 10
        if event["type"] == "roll" and after["last"]["outcome"] != "red_light":
            greens = event["dice"].count("green")
            left = before["dice_in_hand"] - greens
            assert after["dice_in_hand"] == (left if left else 10)
            assert after["turn_points"] == before["turn_points"] + greens


@SETTINGS
@given(games())
def test_tally_running_total_resets_each_round(case):
    _, _, steps = case
    for before, _event, after in steps:
        if before["game"] != "tallyup":
            return
        if after["round"] != before["round"]:
            assert after["round"] == before["round"] + 1
            assert after["running_total"] == 0
            assert after["in"] == [p["name"] for p in after["players"]]
            assert after["chosen"] == []
            assert after["expects"] == ["choose"]


@SETTINGS
@given(games())
def test_winners_only_when_over_and_they_hold_the_top_score(case):
    game, _, _ = case
    state = game.state()
    if not state["over"]:
        assert state["winners"] == [] and state["expects"] != []
        return
    top = max(p["score"] for p in state["players"])
    assert state["winners"] == [p["name"] for p in state["players"] if p["score"] == top]
    if state["game"] == "tallyup":
        assert len(state["winners"]) == 1


junk_values = st.one_of(
    st.none(), st.integers(-300, 300), st.text(max_size=6), st.booleans(),
    st.sampled_from(["green", "red", "yellow", "star", "(50)", "x2", "+3", "Ann", "Zed", "red", "up"]),
)
junk_dice = st.lists(
    st.one_of(junk_values, st.fixed_dictionaries({"die": junk_values, "face": junk_values})), max_size=11
)
junk_events = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["roll", "stop", "choose", "up", "reveal", "tally_up", "bank", None])},
        optional={
            "dice": st.one_of(junk_dice, junk_values),
            "face": junk_values,
            "out": st.one_of(st.lists(junk_values, max_size=4), junk_values),
            "player": junk_values,
            "extra": junk_values,
        },
    ),
    junk_values,
    st.lists(junk_values, max_size=2),
)


@SETTINGS
@given(games(), st.lists(junk_events, min_size=1, max_size=5))
def test_illegal_events_raise_rule_error_and_change_nothing(case, junk):
    game, _, _ = case
    for event in junk:
        snapshot = copy.deepcopy(game.__dict__)
        state = game.state()
        try:
            game.apply(event)
        except RuleError as error:
            assert str(error)
            assert game.__dict__ == snapshot
            assert game.state() == state
