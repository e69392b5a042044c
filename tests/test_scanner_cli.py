"""`dicetray scan`, `dicetray watch` and `dicetray bench scanner`: output format and bad input."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import cv2
import pytest
from click.testing import CliRunner

from lab.bench_scanner import bench_scanner
from scorekeeper.cli import main
from tests.test_scanner_tossup_synthetic import BACKGROUNDS, LAYOUT, draw_tray


def test_scan_prints_one_json_line_per_image_and_reports_bad_files(tmp_path):
    good = tmp_path / "roll.jpg"
    cv2.imwrite(str(good), draw_tray(BACKGROUNDS["green_felt"], LAYOUT))
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8 not really a jpeg")
    result = CliRunner().invoke(
        main, ["scan", str(broken), str(good), str(tmp_path / "missing.jpg"), "--dice", "tossup", "--json"]
    )
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 1
    record = lines[0]
    assert record["image"] == str(good)
    assert isinstance(record["ms"], float)
    assert sorted(d["face"] for d in record["dice"]) == sorted(face for *_, face, _ in LAYOUT)
    for die in record["dice"]:
        assert set(die) == {"die", "face", "confidence", "center", "corners", "cocked", "glare", "shade"}
        assert die["die"] == "tossup" and len(die["corners"]) == 4
    assert "broken.jpg: not a readable image" in result.stderr
    assert "missing.jpg: no such file" in result.stderr


def test_scan_any_only_finds_dice(tmp_path):
    path = tmp_path / "roll.png"
    cv2.imwrite(str(path), draw_tray(BACKGROUNDS["wood"], LAYOUT))
    result = CliRunner().invoke(main, ["scan", str(path), "--dice", "any", "--json"])
    assert result.exit_code == 0
    dice = json.loads(result.stdout)["dice"]
    assert len(dice) == len(LAYOUT)
    assert all(d["die"] is None and d["face"] is None for d in dice)


def test_scan_reads_every_photo_in_a_folder_and_reports_an_empty_one(tmp_path):
    photos = tmp_path / "rolls"
    photos.mkdir()
    for name in ("b.png", "a.jpg"):
        cv2.imwrite(str(photos / name), draw_tray(BACKGROUNDS["green_felt"], LAYOUT))
    (photos / "notes.txt").write_text("not a photo")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["scan", str(photos), str(empty), "--dice", "tossup", "--json"])
    assert result.exit_code == 1
    read = [json.loads(line)["image"] for line in result.stdout.splitlines()]
    assert read == [str(photos / "a.jpg"), str(photos / "b.png")]
    assert f"{empty}: no photos in this folder" in result.stderr


def test_scan_without_a_dice_set_says_faces_need_one(tmp_path):
    path = tmp_path / "roll.png"
    cv2.imwrite(str(path), draw_tray(BACKGROUNDS["wood"], LAYOUT))
    result = CliRunner().invoke(main, ["scan", str(path)])
    assert result.exit_code == 0
    assert f"{len(LAYOUT)} dice" in result.stdout
    assert "--dice tossup or --dice tallyup" in result.stderr
    named = CliRunner().invoke(main, ["scan", str(path), "--dice", "tossup"])
    assert "--dice" not in named.stderr


def test_opencv_is_quietened_with_or_without_its_logging_module(monkeypatch):
    """OpenCV 4.10 (numpy 1, Raspberry Pi OS Bookworm) has cv2.setLogLevel but no cv2.utils.logging."""
    from scanner import cli

    calls = []
    monkeypatch.setattr(cli, "cv2", SimpleNamespace(utils=SimpleNamespace(), setLogLevel=calls.append))
    cli.quiet_opencv()
    assert calls == [cli.OPENCV_LOG_LEVEL_ERROR]
    levels = []
    logging_module = SimpleNamespace(LOG_LEVEL_ERROR=7, setLogLevel=levels.append)
    monkeypatch.setattr(cli, "cv2", SimpleNamespace(utils=SimpleNamespace(logging=logging_module)))
    cli.quiet_opencv()
    assert levels == [7]


def test_watch_prints_one_reading_per_settled_roll(tmp_path):
    path = tmp_path / "throw.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (1280, 720))
    empty = draw_tray(BACKGROUNDS["dark_felt"], [])
    for _ in range(10):
        writer.write(empty)
    for step in range(12):  # dice sliding in
        moving = [(x - 20 * (12 - step), y, face, angle + 0.1 * step) for x, y, face, angle in LAYOUT]
        writer.write(draw_tray(BACKGROUNDS["dark_felt"], moving, seed=step))
    rest = draw_tray(BACKGROUNDS["dark_felt"], LAYOUT)
    for _ in range(30):
        writer.write(rest)
    writer.release()
    result = CliRunner().invoke(main, ["watch", str(path), "--dice", "tossup", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 1
    assert 22 <= lines[0]["frame"] <= 22 + 15
    assert len(lines[0]["dice"]) == len(LAYOUT)


def test_watch_with_a_missing_source_names_the_alternatives():
    result = CliRunner().invoke(main, ["watch", "/no/such/video.mp4"])
    assert result.exit_code != 0
    assert "usb:N" in result.output


def test_bench_scores_each_tray_surface_on_its_own(tmp_path):
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    (tmp_path / "tossup").mkdir()
    for name in ("tossup-s00-r00", "tossup-s02-r00"):  # dark felt, wood
        for suffix in (".jpg", ".json"):
            shutil.copy(fixtures / "tossup" / (name + suffix), tmp_path / "tossup")
    out = io.StringIO()
    summary = bench_scanner(None, ["tossup"], tmp_path, None, out)["tossup"]
    assert sorted(summary["recall_by_surface"]) == ["dark_felt", "wood"]
    assert all(0.0 <= r <= 1.0 for r in summary["recall_by_surface"].values())
    assert "on dark_felt" in out.getvalue() and "on wood" in out.getvalue()
    # Each floor's faces too; Toss Up dice are all alike: there is no identity to score, and
    # the bench says so.
    assert sorted(summary["faces_by_surface"]) == ["dark_felt", "wood"]
    assert all(0.0 <= f <= 1.0 for f in summary["faces_by_surface"].values())
    assert all(math.isnan(i) for i in summary["identity_by_surface"].values())
    floors = [line for line in out.getvalue().splitlines() if line.strip().startswith("on ")]
    assert len(floors) == 2 and all("faces" in line and "identity" not in line for line in floors)
    assert "identity_accuracy           n/a" in out.getvalue() and "nan" not in out.getvalue()


@pytest.mark.parametrize("name, title", [("tallycheck", "tables of their own, tuned on since (rolls r00-r04)"),
                                         ("tallyhold", "tables nothing was tuned on"),
                                         ("tallyplay", "a game's rolls of one to four dice, on tables nothing was tuned on")])
def test_bench_scores_the_tally_check_hold_and_play_sets_where_they_are_rendered(tmp_path, name, title):
    from lab.bench_scanner import bench_check_set

    out = io.StringIO()
    assert bench_check_set(tmp_path, None, out, name=name) is None
    assert "not rendered here" in out.getvalue()
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    folder = tmp_path / name / "tallyup"
    folder.mkdir(parents=True)
    for suffix in (".jpg", ".json"):  # a stand-in: the check set itself is not in the repository
        shutil.copy(fixtures / "tallyup" / ("tallyup-s00-r00" + suffix), folder)
    out = io.StringIO()
    summary = bench_check_set(tmp_path, None, out, name=name)
    labelled = len(json.loads((folder / "tallyup-s00-r00.json").read_text())["dice"])
    assert summary["labelled_dice"] == labelled and summary["photos"] == 1
    assert f"[tallyup, {name}/ {title}]" in out.getvalue()


def test_bench_reads_the_photos_as_other_cameras_would_take_them_when_asked(tmp_path):
    from scanner.evaluate import PERTURBATIONS

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    (tmp_path / "tossup").mkdir()
    for suffix in (".jpg", ".json"):
        shutil.copy(fixtures / "tossup" / ("tossup-s00-r00" + suffix), tmp_path / "tossup")
    out = io.StringIO()
    plain = bench_scanner(None, ["tossup"], tmp_path, None, out)["tossup"]
    assert "perturbed" not in plain and "other cameras" not in out.getvalue()
    out = io.StringIO()
    summary = bench_scanner(None, ["tossup"], tmp_path, None, out, perturbed=True)["tossup"]
    changes = [name for name, _ in PERTURBATIONS]
    assert list(summary["perturbed"]) == [*changes, "all changes"]
    whole = summary["perturbed"]["all changes"]
    assert whole["labelled_dice"] == len(changes) * plain["labelled_dice"]
    assert all(0.0 <= s["detection_recall"] <= 1.0 for s in summary["perturbed"].values())
    for name in [*changes, "all changes"]:
        assert f"    {name}" in out.getvalue()


def test_bench_scores_the_faces_glare_left_readable_on_their_own(tmp_path):
    """tallyup-s13-r07: the blue die's (10) is blown out to white by the lamp (glare_fraction
    1.0: no print to read) and left unsure; the faces figure without such dice says how well
    the prints that can be seen are read. The Up Die's top face there is blown out too (0.88),
    but its black print stays readable on the white: it still counts."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    (tmp_path / "tallyup").mkdir()
    for suffix in (".jpg", ".json"):
        shutil.copy(fixtures / "tallyup" / ("tallyup-s13-r07" + suffix), tmp_path / "tallyup")
    label = json.loads((tmp_path / "tallyup" / "tallyup-s13-r07.json").read_text())
    blown = [d["die"] for d, g in zip(label["dice"], label["scene"]["glare_fraction"]) if g >= 0.75]
    assert sorted(blown) == ["blue", "up"]
    flat = sum(not d["cocked"] for d in label["dice"])
    out = io.StringIO()
    summary = bench_scanner(None, ["tallyup"], tmp_path, None, out)["tallyup"]
    assert summary["face_accuracy_unblown"] > summary["face_accuracy"]
    assert (f"among the {flat - 1} of {flat} flat dice whose print glare left to read: not a light print on a top"
            " face at least 75% blown out") in out.getvalue()


def test_the_tally_bench_goes_on_to_the_differently_looking_set_unless_a_profile_is_given(tmp_path):
    empty = tmp_path / "fixtures"
    empty.mkdir()
    tally = CliRunner().invoke(main, ["bench", "scanner", "--dice", "tallyup", "--fixtures", str(empty)])
    assert tally.exit_code == 0, tally.output
    assert "[tallyup] no labelled photos" in tally.output and "[tallyup, taught] no differently looking set" in tally.output
    toss = CliRunner().invoke(main, ["bench", "scanner", "--dice", "tossup", "--fixtures", str(empty)])
    assert toss.exit_code == 0 and "taught" not in toss.output
    profile = tmp_path / "profile.json"
    from scanner.profile import Profile, save_profile

    save_profile(Profile(name="table"), profile)
    given = CliRunner().invoke(main, ["bench", "scanner", "--dice", "tallyup", "--fixtures", str(empty),
                                      "--profile", str(profile)])
    assert given.exit_code == 0 and "taught" not in given.output


def test_bench_times_the_photos_of_the_whole_set_on_their_own(tmp_path):
    """The speed targets are for frames of all seven Tally dice (all ten Toss Up dice): the bench
    gives their median beside that of every photo."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    (tmp_path / "tallyup").mkdir()
    for name in ("tallyup-s04-r00", "tallyup-s00-r00"):  # seven dice, three dice
        for suffix in (".jpg", ".json"):
            shutil.copy(fixtures / "tallyup" / (name + suffix), tmp_path / "tallyup")
    out = io.StringIO()
    summary = bench_scanner(None, ["tallyup"], tmp_path, None, out)["tallyup"]
    assert summary["ms_median_full_set"] > 0
    assert "    all 7 dice" in out.getvalue() and "(1 photos)" in out.getvalue()
    # The fastest of a few reads of the same photo is never slower than its first read.
    assert 0 < summary["ms_median_full_set_fastest"] <= summary["ms_median_full_set"]
    assert "    fastest of 3 reads" in out.getvalue()
    (tmp_path / "tallyup" / "tallyup-s04-r00.json").unlink()
    out = io.StringIO()
    summary = bench_scanner(None, ["tallyup"], tmp_path, None, out)["tallyup"]
    assert math.isnan(summary["ms_median_full_set"]) and "all 7 dice" not in out.getvalue()
    assert math.isnan(summary["ms_median_full_set_fastest"]) and "fastest of" not in out.getvalue()
