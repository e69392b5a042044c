"""The game bench: a Tally Up! game's rolls put to the game beside their labels (scorekeeper/game_bench.py)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from scanner.frames import DieReading
from scanner.labels import LabelledDie
from scorekeeper.table.game_bench import GameTally, bench_game_rolls, situation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def die(name: str, face: str, x: float = 100.0, cocked: bool = False) -> LabelledDie:
    return LabelledDie(die=name, face=face, center=(x, 100.0), corners=(), cocked=cocked)


def read(name: str, face: str, x: float = 100.0, cocked: bool = False) -> DieReading:
    return DieReading(center=(x, 100.0), corners=(), die=name, face=face, confidence=0.9, cocked=cocked, size=40)


MAIN = [die("red", "50", 100), die("green", "30", 200), die("blue", "10", 300)]


def test_each_roll_a_game_makes_meets_the_game_where_it_belongs():
    main = situation(MAIN)
    assert main["phase"] == "main_roll" and main["chosen"] == ["red", "green", "blue"]
    for dice in ([die("up", "+2")], [*MAIN, die("up", "x2", 400)]):
        assert situation(dice)["phase"] == "up"
    assert situation([*MAIN, die("up", "x2", 400)])["chosen"] == ["red", "green", "blue"]
    bonus = situation([die("orange", "60"), die("purple", "20", 200)])
    assert bonus["phase"] == "bonus_roll" and bonus["bonus_dice"] == 2
    assert not {"orange", "purple"} & set(bonus["chosen"])
    assert situation([]) is None
    for dice in ([*MAIN, die("yellow", "20", 400)], [die("red", "50"), die("up", "+1", 200)]):
        with pytest.raises(ValueError, match="no roll of a game"):
            situation(dice)


def test_a_roll_is_scored_right_asked_about_or_scored_wrong():
    tally = GameTally()
    tally.add("right", MAIN, [read("blue", "10", 300), read("red", "50", 100), read("green", "30", 200)])
    tally.add("unsure", MAIN, [read("red", "50", 100), read("green", "unsure", 200), read("blue", "10", 300)])
    tally.add("wrong", MAIN, [read("red", "100", 100), read("green", "30", 200), read("blue", "10", 300)])
    leaning = [MAIN[0], MAIN[1], die("blue", "10", 300, cocked=True)]
    tally.add("sent back", leaning, [read("red", "50", 100), read("green", "30", 200), read("blue", "10", 300, cocked=True)])
    tally.add("leaning, top read", leaning, [read("red", "50", 100), read("green", "30", 200), read("blue", "10", 300)])
    tally.add("leaning, side read", leaning, [read("red", "50", 100), read("green", "30", 200), read("blue", "star", 330)])
    tally.add("empty", [], [])
    tally.add("phantom", [], [read("unsure", "unsure")])
    assert (tally.rolls, tally.scored_right, tally.asked, tally.asked_rightly) == (6, 1, 2, 1)
    assert (tally.scored_leaning, tally.scored_wrong, tally.empty_trays, tally.empty_taken_for_dice) == (1, 2, 2, 1)
    assert tally.failures == [
        "unsure: asked (could not read 1 die: tap to set the face), the labels score red 50, green 30, blue 10",
        "wrong: scored red 100, green 30, blue 10, the labels red 50, green 30, blue 10",
        "leaning, top read: a leaning die's roll scored as red 50, green 30, blue 10 (the labels: roll again)",
        "leaning, side read: scored red 50, green 30, blue star, the labels ask: 1 die cocked: re-roll it",
        "phantom: empty tray read as 1 die/dice",
    ]
    lines = tally.lines()
    assert lines[0].split() == ["scored", "right", "1", "16.67", "%"]
    assert "1 of them with a leaning die" in lines[1] and lines[-1].split()[-3:] == ["1", "of", "2"]


def test_the_up_die_s_roll_is_scored_by_the_up_die_alone():
    tally = GameTally()
    tally.add("up", [*MAIN, die("up", "+100", 400)], [*(read(d.die, d.face, d.center[0]) for d in MAIN), read("up", "+100", 400)])
    tally.add("up, misread", [die("up", "+100")], [read("up", "-100")])
    assert (tally.scored_right, tally.scored_wrong) == (1, 1)
    assert tally.failures == ["up, misread: scored Up Die -100, the labels Up Die +100"]


def test_no_rolls_print_no_shares():
    lines = GameTally().lines()
    assert len(lines) == 4 and all("n/a" in line for line in lines)


def test_the_bench_puts_a_play_set_s_rolls_to_the_game_uncalibrated_and_per_table(tmp_path):
    out = io.StringIO()
    assert bench_game_rolls(tmp_path / "tallyplay" / "tallyup", None, out) is None and out.getvalue() == ""
    folder = tmp_path / "tallyplay" / "tallyup"
    folder.mkdir(parents=True)
    # A stand-in: dev rolls of three Tally Dice on one table, and its empty tray.
    for stem in ("tallyup-s00-empty", "tallyup-s00-r00", "tallyup-s00-r02", "tallyup-s00-r06"):
        for suffix in (".jpg", ".json"):
            shutil.copy(FIXTURES / "tallyup" / (stem + suffix), folder)
    tallies = bench_game_rolls(folder, None, out)
    assert len(tallies) == 2
    for tally in tallies.values():
        assert tally.rolls == 2  # r00 calibrates the table; r02 and r06 are scored
        assert tally.scored_right + tally.asked + tally.scored_leaning + tally.scored_wrong == 2
    uncalibrated, calibrated = tallies.values()
    assert uncalibrated.empty_trays == 1 and calibrated.empty_trays == 0
    assert uncalibrated.scored_right == calibrated.scored_right == 2  # both read right as the scanner bench finds
    assert out.getvalue().count("after each table's first") == 2
    # With a profile given, its scanner reads every table's rolls: nothing to calibrate.
    from scanner.profile import Profile, save_profile

    save_profile(Profile(name="table"), tmp_path / "profile.json")
    (given,) = bench_game_rolls(folder, tmp_path / "profile.json", io.StringIO()).values()
    assert given.rolls == 2 and given.empty_trays == 1


def test_the_bench_names_a_photo_it_cannot_read(tmp_path):
    folder = tmp_path / "tallyup"
    folder.mkdir()
    shutil.copy(FIXTURES / "tallyup" / "tallyup-s00-r00.json", folder)
    (folder / "tallyup-s00-r00.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(ValueError, match="cannot read .*tallyup-s00-r00.jpg"):
        bench_game_rolls(folder, None, io.StringIO())


def test_the_bench_lists_the_rolls_not_scored_right_then_a_count(tmp_path, monkeypatch):
    import scorekeeper.table.game_bench as game_bench

    folder = tmp_path / "tallyup"
    folder.mkdir()
    for stem in ("tallyup-s00-r00", "tallyup-s00-r02", "tallyup-s00-r06"):
        for suffix in (".jpg", ".json"):
            shutil.copy(FIXTURES / "tallyup" / (stem + suffix), folder)

    class SeesNothing:
        def read(self, image):
            return []

    monkeypatch.setattr(game_bench, "load_scanner", lambda dice_set, profile: SeesNothing())
    monkeypatch.setattr(game_bench, "MAX_FAILURES_SHOWN", 1)
    out = io.StringIO()
    (tally,) = bench_game_rolls(folder, tmp_path / "any-profile.json", out).values()
    assert (tally.rolls, tally.asked) == (2, 2)
    assert "    - tallyup-s00-r02.jpg: asked (the main roll is missing" in out.getvalue()
    assert out.getvalue().endswith("    ... and 1 more\n")
