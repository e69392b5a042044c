"""From a settled camera reading to game events, or to the problems a player must fix first.

Pure: takes the game's state and the reading's dice (the scanner's JSON form: die, face,
confidence, cocked, center) and decides. Nothing is applied here; a reading with any
problem yields no events at all, so a doubtful roll never half-applies. (A Tally reading's
die nobody could name is no problem once the dice the roll needs are all there and read: it is
none of them.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from scorekeeper.rules.dice import TALLY_DICE, UP_DIE

UNSURE = "unsure"


@dataclass(frozen=True)
class Problem:
    """Why a reading cannot become a roll yet; `dice` indexes the reading's dice to highlight."""

    code: str  # "count", "cocked", "unsure", "wrong_dice", "not_now", "duplicate", "wrong_set"
    message: str
    dice: tuple[int, ...] = ()


@dataclass(frozen=True)
class Interpretation:
    events: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.events) and not self.problems


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-3]}dice" if word.endswith("die") else f"{n} {word}s"


def _common_problems(dice: Sequence[Mapping[str, Any]]) -> list[Problem]:
    problems = []
    cocked = tuple(i for i, d in enumerate(dice) if d.get("cocked"))
    if cocked:
        problems.append(Problem("cocked", f"{_plural(len(cocked), 'die')} cocked: re-roll {'it' if len(cocked) == 1 else 'them'}", cocked))
    unsure = tuple(i for i, d in enumerate(dice) if not d.get("cocked") and d.get("face") in (None, UNSURE))
    if unsure:
        problems.append(Problem("unsure", f"could not read {_plural(len(unsure), 'die')}: tap to set the face"
                                + _why_unread(dice, unsure), unsure))
    return problems


def _why_unread(dice: Sequence[Mapping[str, Any]], unread: Sequence[int]) -> str:
    """What to add to the message about the `unread` dice where the scanner saw why (the
    reading's "glare": washed out by the lamp's reflection; "shade": in a wall's deep shadow):
    the player can move or add light, not only tap the faces in."""
    glare = sum(bool(dice[i].get("glare")) for i in unread)
    shade = sum(bool(dice[i].get("shade")) for i in unread)
    reasons = []
    if glare:
        which = "it" if len(unread) == 1 else f"{glare} of them"
        reasons.append(f"the lamp's reflection washed {which} out white: move the lamp off to one side of the tray")
    if shade:
        which = "it" if len(unread) == 1 else f"{shade} of them"
        reasons.append(f"{which} lay in the shadow of the tray's wall, too dark to read: "
                       "light that side of the tray too, or raise the lamp")
    return f" ({'; '.join(reasons)})" if reasons else ""


def interpret(state: Mapping[str, Any], dice: Sequence[Mapping[str, Any]]) -> Interpretation:
    """The events a settled reading stands for in the game's current state."""
    if state.get("over"):
        return Interpretation(problems=[Problem("not_now", "the game is over")])
    if state["game"] == "tossup":
        return _tossup(state, dice)
    return _tallyup(state, dice)


def _tossup(state: Mapping[str, Any], dice: Sequence[Mapping[str, Any]]) -> Interpretation:
    if "roll" not in state["expects"]:
        return Interpretation(problems=[Problem("not_now", "no roll is due now")])
    foreign = tuple(i for i, d in enumerate(dice) if d.get("die") not in ("tossup", None))
    if foreign:
        return Interpretation(problems=[Problem("wrong_set", "these are not Toss Up dice", foreign)])
    problems = []
    expected = state["dice_in_hand"]
    if len(dice) != expected:
        extra = "set aside the greens outside the tray" if len(dice) > expected else "roll every die in hand"
        problems.append(Problem(
            "count", f"{state['active']} has {_plural(expected, 'die')} in hand but the tray shows {len(dice)}: {extra}",
        ))
    problems += _common_problems(dice)
    if problems:
        return Interpretation(problems=problems)
    return Interpretation(events=[{"type": "roll", "dice": [d["face"] for d in dice]}])


def _tallyup(state: Mapping[str, Any], dice: Sequence[Mapping[str, Any]]) -> Interpretation:
    phase = state["phase"]
    if phase in ("reveal", "tally_up"):
        waiting = "the IN/OUT reveal" if phase == "reveal" else "the Tally Up! shout"
        return Interpretation(problems=[Problem("not_now", f"waiting for {waiting}, not a roll")])
    unknown = tuple(i for i, d in enumerate(dice) if d.get("die") not in (*TALLY_DICE, UP_DIE))
    named = _tallyup_named(state, [(i, d) for i, d in enumerate(dice) if i not in unknown])
    # A die nobody could name may be one the roll needs, unless the roll's own dice are all
    # there and read: the chosen three, the Up Die, the bonus dice asked for. Then it is none of
    # them (a square of the tray's pattern, a die resting from an earlier roll) and the roll
    # stands. Not on the first main roll, which any three dice make.
    if unknown and (phase == "choose" or not named.ok):
        return Interpretation(problems=[Problem("unsure", "could not tell which die this is: tap to set it"
                                                + _why_unread(dice, unknown), unknown)])
    return named


def _tallyup_named(state: Mapping[str, Any], named: list[tuple[int, Mapping[str, Any]]]) -> Interpretation:
    """The events of a Tally Up reading's dice that are named (index in the reading, die)."""
    phase = state["phase"]
    if phase == "up":
        ups = [(i, d) for i, d in named if d["die"] == UP_DIE]
        if len(ups) != 1:
            return Interpretation(problems=[Problem("count", "roll the Up Die", tuple(i for i, _ in ups))])
        index, up_die = ups[0]
        problems = _common_problems([up_die])
        if problems:
            return Interpretation(problems=[Problem(p.code, p.message, (index,)) for p in problems])
        return Interpretation(events=[{"type": "up", "face": up_die["face"]}])
    tally = [(i, d) for i, d in named if d["die"] != UP_DIE]
    names = [d["die"] for _, d in tally]
    duplicates = tuple(i for i, d in tally if names.count(d["die"]) > 1)
    if duplicates:
        return Interpretation(problems=[Problem("duplicate", "two dice read as the same colour: tap to fix", duplicates)])
    if phase == "choose":
        return _first_main_roll(tally)
    if phase == "main_roll":
        return _main_roll(state, tally)
    return _bonus_roll(state, tally)


def _pairs(tally: Sequence[tuple[int, Mapping[str, Any]]]) -> list[dict[str, str]]:
    return [{"die": d["die"], "face": d["face"]} for _, d in tally]


def _first_main_roll(tally: list[tuple[int, Mapping[str, Any]]]) -> Interpretation:
    if len(tally) != 3:
        return Interpretation(problems=[Problem("count", f"the first main roll needs 3 Tally Dice; the tray shows {len(tally)}")])
    problems = _common_problems([d for _, d in tally])
    if problems:
        return Interpretation(problems=[Problem(p.code, p.message, tuple(tally[k][0] for k in p.dice)) for p in problems])
    return Interpretation(events=[
        {"type": "choose", "dice": [d["die"] for _, d in tally]},
        {"type": "roll", "dice": _pairs(tally)},
    ])


def _main_roll(state: Mapping[str, Any], tally: list[tuple[int, Mapping[str, Any]]]) -> Interpretation:
    chosen = set(state["chosen"])
    main = [(i, d) for i, d in tally if d["die"] in chosen]
    others = tuple(i for i, d in tally if d["die"] not in chosen)
    problems = []
    if others:
        problems.append(Problem("wrong_dice", f"only the chosen dice ({', '.join(state['chosen'])}) are rolled this round", others))
    missing = chosen - {d["die"] for _, d in main}
    if missing:
        problems.append(Problem("count", f"the main roll is missing the {', '.join(sorted(missing))} die"))
    problems += [Problem(p.code, p.message, tuple(main[k][0] for k in p.dice)) for p in _common_problems([d for _, d in main])]
    if problems:
        return Interpretation(problems=problems)
    return Interpretation(events=[{"type": "roll", "dice": _pairs(main)}])


def _bonus_roll(state: Mapping[str, Any], tally: list[tuple[int, Mapping[str, Any]]]) -> Interpretation:
    # The main dice may still lie in the tray: the bonus dice are the unchosen ones.
    unchosen = set(state["unchosen"])
    bonus = [(i, d) for i, d in tally if d["die"] in unchosen]
    wanted = state["bonus_dice"]
    if len(bonus) != wanted:
        return Interpretation(problems=[Problem(
            "count", f"the Up Die asks for {_plural(wanted, 'bonus die')} from {', '.join(state['unchosen'])}; the tray shows {len(bonus)}",
            tuple(i for i, _ in bonus),
        )])
    problems = _common_problems([d for _, d in bonus])
    if problems:
        return Interpretation(problems=[Problem(p.code, p.message, tuple(bonus[k][0] for k in p.dice)) for p in problems])
    return Interpretation(events=[{"type": "roll", "dice": _pairs(bonus)}])
