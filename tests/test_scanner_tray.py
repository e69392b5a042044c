"""Profile priors: dice outside the tray (set-aside greens) and implausible sizes are dropped."""

from __future__ import annotations

from scanner.frames import DieReading
from scanner.tray import keep_in_tray

TRAY = [[100, 100], [1100, 100], [1100, 650], [100, 650]]


def die(x, y, size=50.0):
    return DieReading(center=(x, y), corners=((x - 25, y - 25), (x + 25, y - 25), (x + 25, y + 25), (x - 25, y + 25)),
                      die="tossup", face="green", confidence=1.0, size=size)


def test_dice_outside_the_tray_are_not_in_the_roll():
    readings = [die(500, 300), die(50, 300), die(1200, 700)]
    kept = keep_in_tray(readings, TRAY, None, (1280, 720), (720, 1280, 3))
    assert [d.center for d in kept] == [(500, 300)]


def test_tray_is_scaled_to_the_frame_size():
    readings = [die(250, 150)]
    assert keep_in_tray(readings, TRAY, None, (1280, 720), (360, 640, 3)) == readings
    assert keep_in_tray(readings, TRAY, None, (640, 360), (720, 1280, 3)) == []


def test_implausible_sizes_are_dropped_and_no_profile_keeps_all():
    readings = [die(500, 300, 50), die(600, 300, 20), die(700, 300, 120)]
    assert [d.size for d in keep_in_tray(readings, None, 48, (1280, 720), (720, 1280, 3))] == [50]
    assert keep_in_tray(readings, None, None, None, (720, 1280, 3)) == readings



def test_a_profile_tray_drops_set_aside_dice_from_the_scanner(tmp_path):
    from calibration.profile import Profile, save_profile
    from scanner.reader import Scanner, load_scanner
    from tests.test_scanner_tossup_synthetic import BACKGROUNDS, LAYOUT, draw_tray

    image = draw_tray(BACKGROUNDS["dark_felt"], LAYOUT)
    everything = Scanner("tossup").read(image)
    assert len(everything) == len(LAYOUT)
    # The tray covers the left part of the frame only; dice right of x=800 were set aside.
    path = save_profile(Profile(name="t", tray=((0, 0), (800, 0), (800, 720), (0, 720)), frame_size=(1280, 720)),
                        tmp_path / "t.json")
    in_tray = load_scanner("tossup", path).read(image)
    assert sorted(d.center[0] < 800 for d in in_tray) == [True] * sum(x < 800 for x, *_ in LAYOUT)
    assert len(in_tray) < len(everything)
