"""`dicetray doctor`: every check finds its problem and says how to fix it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import cv2
from click.testing import CliRunner

from calibration.library import ProfileLibrary
from scanner.profile import Profile, save_profile
from scorekeeper.cli import main
from scorekeeper.table.doctor import (
    DiskUsage,
    check_camera,
    check_data_dir,
    check_disk,
    check_pi_libraries,
    check_picamera2,
    check_profile,
    check_video_group,
    os_codename,
    run_checks,
)
from scorekeeper.table.synthetic import draw_tray


def _levels(results):
    return {r.name: r.level for r in results}


def test_a_healthy_setup_passes_every_check(tmp_path):
    video = tmp_path / "tray.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (1280, 720))
    writer.write(draw_tray([]))
    writer.release()
    profile = save_profile(Profile(name="kitchen"), tmp_path / "data" / "profiles" / "kitchen.json")
    results = run_checks(tmp_path / "data", source=str(video), profile=profile,
                         picamera_loader=lambda: json, devices=[], pi=False)
    assert all(r.level == "ok" for r in results), [r for r in results if r.level != "ok"]
    camera = next(r for r in results if r.name == "camera")
    assert "1280x720" in camera.detail
    assert "'kitchen'" in next(r for r in results if r.name == "calibration").detail


def test_the_cli_prints_the_fixes_and_fails_on_a_problem(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"version": 1, "name": "x", "tray": [[0, 0]]}))
    result = CliRunner().invoke(main, ["doctor", "--data", str(tmp_path / "data"), "--source", "/no/such/video.mp4",
                                       "--profile", str(broken)])
    assert result.exit_code == 1, result.output
    assert "[FAIL] camera" in result.output and "usb:N" in result.output
    assert "[FAIL] calibration" in result.output and "'tray'" in result.output
    assert "fix:" in result.output
    assert "[ok  ] data directory" in result.output
    assert "problem(s)" in result.output


def test_no_camera_is_a_warning_with_what_to_try():
    result = check_camera(None, finder=lambda: (None, "picamera2 is not installed"))
    assert result.level == "warn" and "picamera2 is not installed" in result.detail
    assert "--source usb:N" in result.fix


def test_a_camera_that_hangs_fails_after_the_timeout():
    release = threading.Event()

    class Hangs:
        def open(self):
            release.wait(5)  # a driver that never answers

        def read(self):
            return None

        def close(self):
            pass

    result = check_camera("usb:0", opener=lambda spec: Hangs(), timeout=0.2)
    release.set()
    assert result.level == "FAIL" and "no frame within" in result.detail


def test_picamera2_problems_name_the_fix():
    def numpy_clash():
        raise ImportError("numpy.core.multiarray failed to import")

    def missing():
        raise ImportError("No module named 'picamera2'")

    clash = check_picamera2(numpy_clash, pi=True)
    assert clash.level == "FAIL" and "numpy" in clash.fix
    assert check_picamera2(missing, pi=True).level == "FAIL"
    assert "python3-picamera2" in check_picamera2(missing, pi=True).fix
    assert check_picamera2(missing, pi=False).level == "warn"


def test_an_unwritable_data_directory_fails(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = check_data_dir(blocker / "data")
    assert result.level == "FAIL" and "not writable" in result.detail and "chown" in result.fix
    damaged = tmp_path / "data"
    damaged.mkdir()
    (damaged / "games.sqlite3").write_bytes(b"this is not a database at all" * 100)
    assert check_data_dir(damaged).level == "FAIL"


def test_profiles_and_disk(tmp_path):
    assert check_profile(None, tmp_path)[0].level == "warn"
    bad = tmp_path / "profiles" / "old.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    results = check_profile(None, tmp_path)
    assert [r.level for r in results] == ["warn", "FAIL"] and "damaged" in results[1].detail
    # The active profile is the one serve uses without --profile.
    library = ProfileLibrary(tmp_path)
    library.save(Profile(name="evening"), activate=True)
    results = check_profile(None, tmp_path)
    assert [r.level for r in results] == ["ok", "FAIL"] and "active profile 'evening'" in results[0].detail
    library.path_of("evening").write_text('{"version": 1, "name": "evening", "die_size": -3}')
    results = check_profile(None, tmp_path)
    assert results[0].level == "FAIL" and "die_size" in results[0].detail and "calibrate use" in results[0].fix
    gib = 1024**3
    assert check_disk(tmp_path / "new" / "dir", lambda p: DiskUsage(10 * gib, 0, 5 * gib)).level == "ok"
    assert check_disk(tmp_path, lambda p: DiskUsage(10 * gib, 0, gib // 2)).level == "warn"
    assert check_disk(tmp_path, lambda p: DiskUsage(10 * gib, 0, 1000)).level == "FAIL"


def test_device_nodes_the_user_cannot_open(tmp_path, monkeypatch):
    node = tmp_path / "video0"
    node.write_text("")
    monkeypatch.setattr("os.access", lambda path, mode: Path(path) != node)
    result = check_video_group([node])
    assert result.level == "FAIL" and "usermod -aG" in result.fix
    monkeypatch.undo()
    assert check_video_group([]).level == "ok"
    assert _levels([result]) == {"video group": "FAIL"}


def test_the_service_unit_has_what_a_pi_needs():
    import configparser

    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # systemd keys are case sensitive
    unit.read(Path(__file__).resolve().parent.parent / "deploy" / "dicetray.service")
    assert unit["Service"]["Restart"] == "on-failure"
    assert "video" in unit["Service"]["SupplementaryGroups"]
    assert "network-online.target" in unit["Unit"]["After"] and "network-online.target" in unit["Unit"]["Wants"]
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert unit["Service"]["ExecStart"].split()[0].endswith("/.venv/bin/dicetray")
    assert "serve" in unit["Service"]["ExecStart"]


def test_each_pi_os_release_gets_its_one_numpy_and_opencv(tmp_path):
    release = tmp_path / "os-release"
    release.write_text('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\n')
    assert os_codename(release) == "bookworm"
    assert os_codename(tmp_path / "missing") == ""
    assert check_pi_libraries("bookworm", "1.24.2", "4.10.0", pi=True).level == "ok"
    wrong = check_pi_libraries("bookworm", "2.4.6", "5.0.0", pi=True)
    assert wrong.level == "FAIL" and "numpy 1.24" in wrong.detail
    assert "deploy/pi-bookworm.txt" in wrong.fix and "--system-site-packages" in wrong.fix
    assert check_pi_libraries("trixie", "2.2.4", "5.0.0", pi=True).level == "ok"
    assert check_pi_libraries("trixie", "1.26.4", "4.10.0", pi=True).level == "FAIL"
    assert check_pi_libraries("bullseye", "1.19.5", "4.5.1", pi=True).level == "warn"
    assert check_pi_libraries("bookworm", "2.4.6", "5.0.0", pi=False).level == "ok"  # not a Pi: anything goes


def test_the_bookworm_constraints_pin_what_the_doctor_asks_for():
    pins = (Path(__file__).resolve().parent.parent / "deploy" / "pi-bookworm.txt").read_text()
    assert "numpy<2" in pins.splitlines()
    opencv = next(line for line in pins.splitlines() if line.startswith("opencv-python-headless=="))
    assert check_pi_libraries("bookworm", "1.24.2", opencv.split("==")[1], pi=True).level == "ok"
