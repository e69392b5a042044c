"""Calibration profiles: round trip, and readable errors for damaged or outdated files."""

from __future__ import annotations

import json

import pytest

from scanner.profile import Profile, ProfileError, load_profile, save_profile
from scanner.reader import load_scanner
from scanner.tossup import TossUpParams


def test_round_trip_and_the_scanner_uses_it(tmp_path):
    profile = Profile(
        name="kitchen", tray=((10, 10), (1200, 12), (1190, 700), (12, 690)), die_size=48.5,
        frame_size=(1280, 720), tossup=TossUpParams(white_value=0.5), light_gains=(2.5, 1.75, 1.25),
    )
    path = save_profile(profile, tmp_path / "profiles" / "kitchen.json")
    assert load_profile(path) == profile
    assert load_scanner("tossup", path).tossup.white_value == 0.5
    assert load_scanner("tossup", path).light_gains == (2.5, 1.75, 1.25)
    assert not list(path.parent.glob(".*.tmp"))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"version": 0}, "'version' is 0"),
        ({"colour": 1}, "unknown field"),
        ({"name": ""}, "'name'"),
        ({"tray": [[1, 2]]}, "'tray' must be four"),
        ({"die_size": -3}, "'die_size' must be greater than 0"),
        ({"frame_size": [1280]}, "'frame_size'"),
        ({"tossup": {"params": {"bogus": 1}}}, "tossup.params.bogus"),
        ({"tossup": {"params": {"green_band": [1]}}}, "green_band"),
        ({"camera": []}, "'camera' must be an object"),
        ({"empty_tray": 5}, "'empty_tray'"),
        ({"light_gains": [2.0, 0.5, 1.0]}, "'light_gains' must be .* from 1 to 4"),
        ({"light_gains": [2.0, 1.0]}, "'light_gains'"),
    ],
)
def test_bad_fields_are_named(tmp_path, change, message):
    data = Profile(name="p").to_json() | change
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match=message):
        load_profile(path)


def test_damaged_and_missing_files(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"version": 1, "name": ')
    with pytest.raises(ProfileError, match="damaged"):
        load_profile(path)
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "none.json")
    with pytest.raises(ValueError, match="damaged"):
        load_scanner("tossup", path)
