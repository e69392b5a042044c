"""Exact odds for the table view, by enumerating every outcome (no simulation)."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, product
from math import factorial
from typing import Iterator, Sequence

from scorekeeper.rules.base import RuleError, require
from scorekeeper.rules.dice import (
    STAR,
    TALLY_DICE,
    TALLY_FACES,
    TOSSUP_DICE_COUNT,
    TOSSUP_FACE_WEIGHTS,
    UP_FACES,
    face_points,
    is_circled,
)
from scorekeeper.rules.tallyup import BONUS_COUNTS


def _tossup_outcomes(dice: int) -> Iterator[tuple[int, int, int, Fraction]]:
    """Every (greens, yellows, reds) count for `dice` dice, with its exact probability."""
    g, y, r = (TOSSUP_FACE_WEIGHTS[f] for f in ("green", "yellow", "red"))
    for greens in range(dice + 1):
        for yellows in range(dice - greens + 1):
            reds = dice - greens - yellows
            ways = factorial(dice) // (factorial(greens) * factorial(yellows) * factorial(reds))
            yield greens, yellows, reds, ways * g**greens * y**yellows * r**reds


def _check_tossup_dice(dice: int) -> None:
    require(
        isinstance(dice, int) and 1 <= dice <= TOSSUP_DICE_COUNT,
        f"dice in hand must be 1 to {TOSSUP_DICE_COUNT}, got {dice!r}",
    )


def tossup_red_light_chance(dice: int) -> Fraction:
    """Chance that the next roll of `dice` dice is a red light (no green, at least one red)."""
    _check_tossup_dice(dice)
    return sum(
        (p for greens, _, reds, p in _tossup_outcomes(dice) if greens == 0 and reds > 0),
        Fraction(0),
    )


def tossup_expected_gain(dice: int, turn_points: int) -> Fraction:
    """Expected change in the turn's points from one more roll.

    Greens add a point each; a red light loses the `turn_points` banked so far this turn.
    """
    _check_tossup_dice(dice)
    require(isinstance(turn_points, int) and turn_points >= 0, f"turn points must be >= 0, got {turn_points!r}")
    total = Fraction(0)
    for greens, _, reds, p in _tossup_outcomes(dice):
        if greens:
            total += p * greens
        elif reds:
            total -= p * turn_points
    return total


def _tally_outcomes(dice: Sequence[str]) -> Iterator[tuple[tuple[str, ...], Fraction]]:
    """Every face combination of the given Tally Dice with its probability (faces may repeat)."""
    for faces in product(*(TALLY_FACES[d] for d in dice)):
        yield faces, Fraction(1, 6 ** len(dice))


def _check_chosen(chosen: Sequence[str]) -> None:
    require(
        len(chosen) == 3 and len(set(chosen)) == 3 and all(d in TALLY_DICE for d in chosen),
        f"odds need three different Tally Dice, got {list(chosen)!r}",
    )


def tally_bust_chance(chosen: Sequence[str]) -> Fraction:
    """Chance that the next main roll of the chosen dice shows exactly two stars (a bust)."""
    _check_chosen(chosen)
    return sum(
        (p for faces, p in _tally_outcomes(chosen) if faces.count(STAR) == 2),
        Fraction(0),
    )


def _bonus_bust_chance(main_stars: int, unchosen: Sequence[str]) -> Fraction:
    """Chance that the Up Die leads to a busting bonus roll.

    When the Up Die asks for fewer bonus dice than are free, we assume the player picks the
    safest ones (the subset with the lowest bust chance).
    """
    total = Fraction(0)
    for up_face in UP_FACES:
        count = BONUS_COUNTS.get(up_face)
        if count is None:
            continue
        total += Fraction(1, len(UP_FACES)) * min(
            sum(
                (p for faces, p in _tally_outcomes(subset) if main_stars + faces.count(STAR) >= 2),
                Fraction(0),
            )
            for subset in combinations(unchosen, count)
        )
    return total


def tally_loss_chance(
    chosen: Sequence[str],
    *,
    high_stakes: bool = False,
    before_up_die: bool = False,
    main_stars: int = 0,
) -> Fraction:
    """Chance that the running total is lost (a bust) before the players' next decision.

    Normally players decide right after each main roll and again before the Up Die, so only
    the main roll itself can bust before then. In high stakes there is no decision before the
    Up Die, so a bonus roll after a circled main roll counts too. `before_up_die` asks about the
    moment between a decision and a pending Up Die roll (the main roll showed `main_stars`).
    """
    _check_chosen(chosen)
    unchosen = [d for d in TALLY_DICE if d not in chosen]
    if before_up_die:
        require(main_stars in (0, 1), f"a main roll before the Up Die shows 0 or 1 star, got {main_stars!r}")
        return _bonus_bust_chance(main_stars, unchosen)
    chance = tally_bust_chance(chosen)
    if high_stakes:
        for faces, p in _tally_outcomes(chosen):
            stars = faces.count(STAR)
            if stars <= 1 and any(is_circled(f) for f in faces):
                chance += p * _bonus_bust_chance(stars, unchosen)
    return chance


def tally_expected_points(chosen: Sequence[str]) -> Fraction:
    """Expected points the next main roll adds when it does not bust or Tally Up."""
    _check_chosen(chosen)
    return sum(
        (p * sum(face_points(f) for f in faces) for faces, p in _tally_outcomes(chosen) if faces.count(STAR) <= 1),
        Fraction(0),
    )


__all__ = [
    "RuleError",
    "tally_bust_chance",
    "tally_expected_points",
    "tally_loss_chance",
    "tossup_expected_gain",
    "tossup_red_light_chance",
]
