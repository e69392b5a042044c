"""Exact odds: checked against closed forms and brute force over every physical face."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, product

import pytest

from scorekeeper import (
    RuleError,
    tally_bust_chance,
    tally_expected_points,
    tally_loss_chance,
    tossup_expected_gain,
    tossup_red_light_chance,
)
from scorekeeper.rules.dice import TALLY_DICE, TALLY_FACES, TOSSUP_FACE_LIST, UP_FACES, face_points


@pytest.mark.parametrize("dice", range(1, 11))
def test_red_light_chance_matches_the_closed_form(dice):
    assert tossup_red_light_chance(dice) == Fraction(1, 2) ** dice - Fraction(1, 3) ** dice


@pytest.mark.parametrize("dice", [1, 2, 3, 4])
def test_red_light_and_gain_match_brute_force_over_faces(dice):
    red_lights = Fraction(0)
    gain = Fraction(0)
    each = Fraction(1, 6**dice)
    for faces in product(TOSSUP_FACE_LIST, repeat=dice):
        greens = faces.count("green")
        if greens:
            gain += each * greens
        elif "red" in faces:
            red_lights += each
            gain -= each * 7
    assert tossup_red_light_chance(dice) == red_lights
    assert tossup_expected_gain(dice, 7) == gain


def test_expected_gain_closed_form():
    for dice in range(1, 11):
        for points in (0, 5, 40):
            assert tossup_expected_gain(dice, points) == Fraction(dice, 2) - points * tossup_red_light_chance(dice)


@pytest.mark.parametrize("bad", [0, 11, -1, "3", 2.0])
def test_tossup_odds_refuse_impossible_hands(bad):
    with pytest.raises(RuleError):
        tossup_red_light_chance(bad)
    with pytest.raises(RuleError):
        tossup_expected_gain(bad, 0)
    with pytest.raises(RuleError):
        tossup_expected_gain(3, -1)


def _stars(faces):
    return sum(f == "star" for f in faces)


def test_bust_chance_worked_example():
    # red, orange: 1/2 star each; yellow: 1/3. Exactly two: 1/4*2/3 + 2 * (1/2*1/3*1/2) = 1/3
    assert tally_bust_chance(["red", "orange", "yellow"]) == Fraction(1, 3)


@pytest.mark.parametrize("chosen", list(combinations(TALLY_DICE, 3)))
def test_bust_and_expected_points_match_brute_force(chosen):
    bust = Fraction(0)
    points = Fraction(0)
    for faces in product(*(TALLY_FACES[d] for d in chosen)):
        if _stars(faces) == 2:
            bust += Fraction(1, 216)
        if _stars(faces) <= 1:
            points += Fraction(1, 216) * sum(face_points(f) for f in faces)
    assert tally_bust_chance(chosen) == bust
    assert tally_expected_points(chosen) == points
    assert tally_loss_chance(chosen) == bust


def _bonus_bust_brute(main_stars, unchosen):
    total = Fraction(0)
    for up in UP_FACES:
        if not up.startswith("+") or up == "+100":
            continue
        k = int(up[1])
        options = []
        for subset in combinations(unchosen, k):
            busts = sum(
                1 for faces in product(*(TALLY_FACES[d] for d in subset)) if main_stars + _stars(faces) >= 2
            )
            options.append(Fraction(busts, 6**k))
        total += Fraction(1, 6) * min(options)
    return total


@pytest.mark.parametrize("chosen", [("red", "blue", "purple"), ("orange", "yellow", "green"), ("blue", "purple", "green")])
def test_high_stakes_loss_includes_the_bonus_roll(chosen):
    unchosen = [d for d in TALLY_DICE if d not in chosen]
    expected = Fraction(0)
    for faces in product(*(TALLY_FACES[d] for d in chosen)):
        stars = _stars(faces)
        if stars == 2:
            expected += Fraction(1, 216)
        elif stars <= 1 and any(f.startswith("(") for f in faces):
            expected += Fraction(1, 216) * _bonus_bust_brute(stars, unchosen)
    assert tally_loss_chance(chosen, high_stakes=True) == expected
    assert tally_loss_chance(chosen, high_stakes=True) > tally_loss_chance(chosen)


def test_loss_before_the_up_die():
    chosen = ["red", "blue", "purple"]
    unchosen = ["orange", "yellow", "green"]
    for stars in (0, 1):
        assert tally_loss_chance(chosen, before_up_die=True, main_stars=stars) == _bonus_bust_brute(stars, unchosen)
    with pytest.raises(RuleError):
        tally_loss_chance(chosen, before_up_die=True, main_stars=2)


@pytest.mark.parametrize("chosen", [["red", "blue"], ["red", "red", "blue"], ["red", "blue", "up"]])
def test_tally_odds_refuse_bad_choices(chosen):
    with pytest.raises(RuleError):
        tally_bust_chance(chosen)
    with pytest.raises(RuleError):
        tally_loss_chance(chosen)
    with pytest.raises(RuleError):
        tally_expected_points(chosen)
