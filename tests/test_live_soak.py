"""`dicetray bench soak` in miniature: every thrown roll applied once, every client current."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from scorekeeper.cli import main
from scorekeeper.table.soak import SoakResult, expected_throws, throw_of
from scorekeeper.table.synthetic import Clip


def test_throws_are_told_apart_by_where_they_settled(tmp_path):
    clip = Clip(tmp_path / "x.avi", 30.0, 100, (20, 60), ())
    assert throw_of(10, clip) is None
    assert throw_of(25, clip) == (0, 0)
    assert throw_of(99, clip) == (0, 1)
    assert throw_of(125, clip) == (1, 0)
    assert expected_throws(130, clip, 10) == {(0, 0), (0, 1), (1, 0)}
    assert expected_throws(125, clip, 10) == {(0, 0), (0, 1)}


def test_the_verdict_needs_every_roll_once_every_client_and_flat_memory(tmp_path):
    good = SoakResult(60, 1800, 3, 20, 20, 0, 0, 0, 0, 3, 100_000, 103_000)
    assert good.passed and "PASS" in good.lines()
    assert not SoakResult(60, 1800, 3, 20, 19, 1, 0, 0, 0, 3, 100_000, 100_000).passed
    assert not SoakResult(60, 1800, 3, 20, 21, 0, 1, 0, 0, 3, 100_000, 100_000).passed
    assert not SoakResult(60, 1800, 3, 20, 20, 0, 0, 0, 0, 2, 100_000, 100_000).passed
    assert not SoakResult(60, 1800, 3, 20, 20, 0, 0, 0, 0, 3, 100_000, 106_000).passed
    assert not SoakResult(60, 0, 3, 0, 0, 0, 0, 0, 0, 3, 100_000, 100_000).passed


@pytest.mark.slow
def test_a_short_soak_passes():
    result = CliRunner().invoke(main, ["bench", "soak", "--minutes", "0.15", "--clients", "3", "--fps", "10"])
    # Memory over nine seconds says little (the verdict still prints it); rolls and clients must be exact.
    assert "0 missed, 0 duplicated" in result.output, result.output
    assert "memory (RSS)" in result.output
    assert "stream clients with the final version: 3/3" in result.output


def test_the_memory_trend_is_a_least_squares_slope():
    from scorekeeper.table.soak import _slope

    assert _slope([(0, 100), (10, 120), (20, 140)]) == 2.0
    assert _slope([(0, 100), (10, 100)]) != _slope([(0, 100), (10, 100)])  # NaN: too few samples
