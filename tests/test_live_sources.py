"""The demo's sources (playlist, slideshow, fallbacks) and `serve`'s camera options."""

from __future__ import annotations

import cv2
import pytest
from click.testing import CliRunner

from scanner.sources import SourceUnavailable
from scorekeeper.cli import main
from scorekeeper.table.sources import PlaylistSource, SlideshowSource, demo_photos, demo_source, find_camera
from scorekeeper.table.synthetic import draw_tray


def _video(path, frames, value):
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 48))
    for _ in range(frames):
        writer.write(cv2.resize(draw_tray([]), (64, 48)) * 0 + value)
    writer.release()
    return path


def test_the_playlist_plays_every_video_in_turn_with_one_clock_and_loops(tmp_path):
    videos = [_video(tmp_path / "tossup-v0.avi", 3, 50), _video(tmp_path / "tossup-v1.avi", 2, 150)]
    source = PlaylistSource(videos, loop=True, realtime=False)
    source.open()
    frames = [source.read() for _ in range(8)]
    source.close()
    assert [f.index for f in frames] == list(range(8))
    assert all(b.t > a.t for a, b in zip(frames, frames[1:]))
    levels = [int(f.image.mean() > 100) for f in frames]
    assert levels == [0, 0, 0, 1, 1, 0, 0, 0]
    once = PlaylistSource(videos, loop=False, realtime=False)
    once.open()
    assert len(list(once)) == 5


def test_the_slideshow_holds_each_photo_long_enough_to_settle(tmp_path):
    for name, value in (("a.jpg", 60), ("b.jpg", 160)):
        cv2.imwrite(str(tmp_path / name), cv2.resize(draw_tray([]), (64, 48)) * 0 + value)
    show = SlideshowSource(sorted(tmp_path.glob("*.jpg")), hold_s=1.0, fps=4, loop=False, realtime=False)
    levels = [int(frame.image.mean() > 100) for frame in show]
    assert levels == [0] * 4 + [1] * 4


def test_the_demo_prefers_videos_then_photos_then_says_none_are_bundled(tmp_path):
    with pytest.raises(SourceUnavailable, match="none are bundled"):
        demo_source(tmp_path)
    photos = tmp_path / "tossup"
    photos.mkdir()
    for name in ("tossup-s00-empty.jpg", "tossup-s00-r00.jpg", "tossup-s00-r01.jpg"):
        cv2.imwrite(str(photos / name), cv2.resize(draw_tray([]), (64, 48)))
    assert [p.name for p in demo_photos(tmp_path)] == [
        "tossup-s00-empty.jpg", "tossup-s00-r00.jpg", "tossup-s00-empty.jpg", "tossup-s00-r01.jpg"]
    factory, note = demo_source(tmp_path)
    assert isinstance(factory(), SlideshowSource) and "slideshow" in note
    (tmp_path / "videos").mkdir()
    _video(tmp_path / "videos" / "tossup-v0.mp4", 2, 90)
    _video(tmp_path / "videos" / "tallyup-v0.mp4", 2, 90)
    factory, note = demo_source(tmp_path)
    assert isinstance(factory(), PlaylistSource) and "1 Toss Up, 1 Tally Up" in note


def test_the_demo_playlist_follows_the_dice_set_of_the_game_on_the_table(tmp_path):
    videos = [_video(tmp_path / "tossup-v0.avi", 2, 40), _video(tmp_path / "tallyup-v0.avi", 2, 120),
              _video(tmp_path / "tossup-v1.avi", 2, 80), _video(tmp_path / "tallyup-v1.avi", 2, 200)]
    wanted = ["tallyup"]
    source = PlaylistSource(videos, loop=True, realtime=False, wanted=lambda: wanted[0])
    source.open()
    levels = [round(source.read().image.mean() / 40) for _ in range(6)]
    assert levels == [3, 3, 5, 5, 3, 3]  # only Tally Up clips, in turn, looping
    wanted[0] = "tossup"
    assert [round(source.read().image.mean() / 40) for _ in range(4)] == [2, 2, 1, 1]  # the next Toss Up clips in turn
    wanted[0] = None  # no game on the table: every clip in turn
    assert [round(source.read().image.mean() / 40) for _ in range(4)] == [3, 3, 2, 2]
    source.close()


def test_find_camera_reports_why_there_is_none():
    class Module:
        class Picamera2:
            cameras: list = []

            @classmethod
            def global_camera_info(cls):
                return cls.cameras

    def missing():
        raise ImportError("no picamera2")

    assert find_camera(missing) == (None, "picamera2 is not installed")
    assert find_camera(lambda: Module)[0] is None
    Module.Picamera2.cameras = [{"Model": "imx708"}]
    assert find_camera(lambda: Module) == ("picamera2", "1 camera(s): imx708")


def test_serve_options_and_their_errors():
    result = CliRunner().invoke(main, ["serve", "--help"])
    for option in ("--source", "--demo", "--dice", "--profile", "DICETRAY_SOURCE"):
        assert option in result.output
    both = CliRunner().invoke(main, ["serve", "--demo", "--source", "usb:0"])
    assert both.exit_code == 2 and "either --demo or --source" in both.output
    bad = CliRunner().invoke(main, ["serve", "--dice", "yahtzee"])
    assert bad.exit_code == 2


def test_serve_refuses_a_source_path_that_does_not_exist(tmp_path):
    result = CliRunner().invoke(main, ["serve", "--data", str(tmp_path), "--source", str(tmp_path / "nope.mp4")])
    assert result.exit_code == 1 and "no such file or folder" in result.output
