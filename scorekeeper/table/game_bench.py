"""How a Tally Up! game takes the camera's readings of the rolls a game puts in the tray.

Physical setup assumed: the Tally play set (`fixtures/tallyplay`, git-ignored; see
fixtures/README.md): rendered stills of the rolls of a game, the three chosen dice of a main roll,
the Up Die alone or beside the main dice still lying in the tray, or one or two bonus dice.

The scanner's figures count dice; a player counts rolls. Each photo is put to the game in the
situation its dice belong to (a main roll of the dice it shows, the Up Die's roll, a bonus roll of
as many dice as it shows), and the scanner's reading is interpreted as the live table does
(`scorekeeper.readings.interpret`) beside its labels. A roll is scored right (the events the
labels give), asked about (the table asks the player to tap a die or roll again: no events), or
scored wrong (other events). A roll with a leaning die, which the labels send back to be rolled
again, that the reading scores with the faces on top of every die is counted apart: the score is
the one on top, though the table would have asked for the die to be rolled again. A roll is read
from one still: the live table merges a few frames of a settled tray (scanner.settle), which this
does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TextIO

from scanner.evaluate import failure_lines, read_photo
from scanner.frames import DieReading
from scanner.labels import LabelledDie, LabelledPhoto, photo_labels
from scanner.reader import load_scanner
from scorekeeper.readings import interpret
from scorekeeper.rules import new_game
from scorekeeper.rules.dice import TALLY_DICE, TALLY_FACES, UP_DIE, is_circled

#: The seats the bench's game is played by (any two names do).
PLAYERS = ("Ann", "Ben")
#: The bench lists this many rolls not scored right, then a count.
MAX_FAILURES_SHOWN = 30


def _circled_face(die: str) -> str:
    return next(face for face in TALLY_FACES[die] if is_circled(face))


def situation(dice: Sequence[LabelledDie]) -> dict[str, Any] | None:
    """The game's state just before the roll whose dice are `dice` (the photo's labels): the Up
    Die's roll where the Up Die is among them (alone, or beside the three main dice still lying
    in the tray), a main roll of three Tally Dice, a bonus roll of one or two; None for an empty
    tray. ValueError for dice no roll of a game shows."""
    tally = [d.die for d in dice if d.die in TALLY_DICE]
    up = any(d.die == UP_DIE for d in dice)
    if not tally and not up:
        return None
    if len(tally) not in ((0, 3) if up else (1, 2, 3)):
        raise ValueError(f"{len(tally)} Tally Dice{' and the Up Die' if up else ''} are no roll of a game")
    game = new_game("tallyup", list(PLAYERS))
    if not up and len(tally) == 3:
        game.apply({"type": "choose", "dice": tally})
        return game.state()
    # The Up Die follows a main roll with a circle; a bonus roll follows the Up Die's +1/+2/+3
    # and takes the unchosen dice, so the main roll's dice are others than the bonus dice.
    chosen = tally if up and tally else [die for die in TALLY_DICE if die not in tally][:3]
    game.apply({"type": "choose", "dice": chosen})
    game.apply({"type": "roll", "dice": [{"die": die, "face": _circled_face(die)} for die in chosen]})
    game.apply({"type": "reveal", "out": []})
    if not up:
        game.apply({"type": "up", "face": f"+{len(tally)}"})
    return game.state()


def _label_json(die: LabelledDie) -> dict[str, Any]:
    return {"die": die.die, "face": die.face, "confidence": 1.0, "center": list(die.center), "cocked": bool(die.cocked)}


@dataclass
class GameTally:
    """Rolls put to the game, by what the game made of the reading."""

    rolls: int = 0
    scored_right: int = 0
    #: Rolls with a leaning die that the labels send back to be rolled again, scored with the
    #: faces on top of every die (the reader took the leaning die for flat and read its top).
    scored_leaning: int = 0
    scored_wrong: int = 0
    asked: int = 0
    #: Of `asked`: rolls the labels ask about too (a leaning die, to be rolled again); the
    #: others the labels score, a tap or a throw the player was not spared.
    asked_rightly: int = 0
    empty_trays: int = 0
    empty_taken_for_dice: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, name: str, labels: Sequence[LabelledDie], readings: Sequence[DieReading]) -> None:
        """Put one photo's roll (its `labels`) and the scanner's `readings` of it to the game."""
        state = situation(labels)
        if state is None:
            self.empty_trays += 1
            if readings:
                self.empty_taken_for_dice += 1
                self.failures.append(f"{name}: empty tray read as {len(readings)} die/dice")
            return
        self.rolls += 1
        truth = interpret(state, [_label_json(d) for d in labels])
        lying = interpret(state, [_label_json(replace(d, cocked=False)) for d in labels])
        got = interpret(state, [r.to_json() for r in readings])
        if not got.ok:
            self.asked += 1
            if truth.ok:
                self.failures.append(f"{name}: asked ({_problems(got)}), the labels score {_events(truth.events)}")
            else:
                self.asked_rightly += 1
        elif truth.ok and _same(got.events, truth.events):
            self.scored_right += 1
        elif not truth.ok and lying.ok and _same(got.events, lying.events):
            self.scored_leaning += 1
            self.failures.append(f"{name}: a leaning die's roll scored as {_events(got.events)} (the labels: roll again)")
        else:
            self.scored_wrong += 1
            labelled = _events(truth.events) if truth.ok else f"ask: {_problems(truth)}"
            self.failures.append(f"{name}: scored {_events(got.events)}, the labels {labelled}")

    def lines(self) -> list[str]:
        """The counts as the bench prints them."""
        def row(title: str, count: int, note: str = "") -> str:
            share = f"{100.0 * count / self.rolls:6.2f} %" if self.rolls else "   n/a  "
            return f"    {title:26s}{count:5d}  {share}{note}"

        return [
            row("scored right", self.scored_right),
            row("asked about", self.asked, f"  ({self.asked_rightly} of them with a leaning die, which the labels send back)"),
            row("leaning die scored", self.scored_leaning, "  (as the faces on top; the labels send it back)"),
            row("scored wrong", self.scored_wrong),
            *([f"    empty trays read as dice  {self.empty_taken_for_dice} of {self.empty_trays}"] if self.empty_trays else []),
        ]


def _same(events: Sequence[Mapping[str, Any]], others: Sequence[Mapping[str, Any]]) -> bool:
    """Whether two lists of events are the same, whatever the order of a roll's dice (the
    scanner lists them as it finds them)."""
    def normal(event: Mapping[str, Any]) -> Mapping[str, Any]:
        dice = event.get("dice")
        if not isinstance(dice, list):
            return event
        return {**event, "dice": sorted(dice, key=lambda d: str(d["die"]) if isinstance(d, Mapping) else str(d))}

    return [normal(e) for e in events] == [normal(e) for e in others]


def _events(events: Iterable[Mapping[str, Any]]) -> str:
    def one(event: Mapping[str, Any]) -> str:  # a game's roll or the Up Die's: see situation
        if event["type"] == "up":
            return f"Up Die {event['face']}"
        return ", ".join(f"{d['die']} {d['face']}" for d in event["dice"])

    return "; ".join(one(e) for e in events)


def _problems(result) -> str:
    return "; ".join(p.message for p in result.problems)


def bench_game_rolls(folder: Path, profile: Path | None, out: TextIO) -> dict[str, GameTally] | None:
    """The rolls of `folder` (a play set's tallyup/, its tables' empty trays and rolls) put to
    the game and printed: with `profile`, read with it; without, read uncalibrated and with each
    table calibrated as the wizard does it on the table (lab.bench_calibration.tally_table_scanner:
    its empty tray and first roll), both over the rolls after each table's first. None where the
    folder is not there (the play set is not in the repository). Raises ValueError naming a
    photo that cannot be read."""
    from lab.bench_calibration import tally_table_scanner

    if not folder.is_dir():
        return None
    rolls: dict[str, list[LabelledPhoto]] = {}
    empties: dict[str, LabelledPhoto] = {}
    for photo in photo_labels(folder):
        setup = str(photo.scene.get("setup"))
        if photo.dice:
            rolls.setdefault(setup, []).append(photo)
        else:
            empties[setup] = photo
    plain = load_scanner("tallyup", profile)
    tallies = {"uncalibrated" if profile is None else "with the profile": GameTally()}
    if profile is None:
        tallies["calibrated per table (its empty tray and first roll, as the wizard does)"] = GameTally()
    as_read, *calibrating = tallies.values()
    for setup, table in sorted(rolls.items()):
        empty = read_photo(empties[setup]) if setup in empties else None
        if empty is not None:
            as_read.add(empties[setup].image.name, (), plain.read(empty))
        first, rest = table[0], table[1:]
        readers = [(as_read, plain), *((tally, tally_table_scanner(empty, read_photo(first))) for tally in calibrating)]
        for photo in rest:
            image = read_photo(photo)
            for tally, reader in readers:
                tally.add(photo.image.name, photo.dice, reader.read(image))
    for title, tally in tallies.items():
        print(f"  {title}: {tally.rolls} rolls after each table's first, as a game takes them (one still each):", file=out)
        for line in tally.lines():
            print(line, file=out)
        for line in failure_lines(tally.failures, MAX_FAILURES_SHOWN):
            print("    " + line, file=out)
    return tallies
