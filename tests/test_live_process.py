"""`dicetray serve --source VIDEO` as a real process: a replayed throw reaches the page's stream,
and after kill -9 and a restart every game is as it was and the stream picks up again."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scorekeeper.table.synthetic import write_throws
from scorekeeper.store import GameStore

TOKEN = "process-test-token"
TEN = ["green", "red", "yellow", "yellow", "green", "yellow", "yellow", "red", "yellow", "yellow"]


def _serve(data: Path, *extra: str) -> tuple[subprocess.Popen, str, list[str]]:
    env = {**os.environ, "DICETRAY_HOST_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    env.pop("DICETRAY_SOURCE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "scorekeeper.cli", "serve", "--host", "127.0.0.1", "--port", "0",
         "--data", str(data), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    assert process.stdout is not None
    lines = []
    base = None
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith("Host (table) URL"):
            base = line.split(": ", 1)[1].split("/?host=")[0]
        if line.startswith(("Camera", "No camera", "Replaying")):
            break
    assert base, lines
    return process, base.replace("http://", ""), lines


def _events(address: str, game_id: str, last_id: int | None = None, timeout: float = 20.0):
    """SSE messages from the running server, as dicts, until the caller stops."""
    host, port = address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    headers = {"Accept": "text/event-stream"}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    conn.request("GET", f"/api/games/{game_id}/stream", headers=headers)
    response = conn.getresponse()
    assert response.status == 200
    fields: dict = {}
    try:
        while True:
            line = response.fp.readline().decode()
            if not line:
                return
            line = line.rstrip("\n")
            if not line:
                if "event" in fields:
                    fields["data"] = json.loads(fields["data"])
                    yield fields
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
    finally:
        conn.close()


def _get(address: str, path: str) -> dict:
    host, port = address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", path)
    body = json.loads(conn.getresponse().read())
    conn.close()
    return body


@pytest.mark.slow
def test_a_replayed_throw_reaches_the_page_and_survives_kill_9(tmp_path):
    clip = write_throws(tmp_path / "throw.avi", [TEN], fps=10, slide_frames=5, rest_s=1.5, empty_s=1.0)
    data = tmp_path / "data"
    with GameStore.in_dir(data) as store:
        game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    process, address, lines = _serve(data, "--source", str(clip.path))
    try:
        assert f"Camera: {clip.path}" in lines, lines
        camera_states = []
        rolled = None
        started = time.monotonic()
        for message in _events(address, game_id):
            if message["event"] == "live":
                camera_states.append(message["data"]["camera"]["state"])
            if message["event"] == "change":
                rolled = message["data"]
                break
            assert time.monotonic() - started < 30, "no roll reached the stream"
        assert rolled["last_roll"]["reading"]["source"] == "camera"
        assert sorted(rolled["last_roll"]["event"]["dice"]) == sorted(TEN)
        version = rolled["version"]
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=10)
    assert process.returncode == -signal.SIGKILL

    before = GameStore.in_dir(data)
    state_before = before.get(game_id).state()
    before.close()
    # Restarted without a camera: it says so, and the game is exactly as it was.
    process, address, lines = _serve(data)
    try:
        assert any("No camera found" in line and "manual entry" in line for line in lines), lines
        assert _get(address, f"/api/games/{game_id}") == {"id": game_id, "version": version, "state": state_before}
        stream = _events(address, game_id, last_id=version)
        # Up to date: nothing missed to resend; the next change arrives on the same stream.
        conn = http.client.HTTPConnection(*address.split(":"), timeout=10)
        conn.request("POST", f"/api/games/{game_id}/events",
                     json.dumps({"event": {"type": "stop"}, "version": version}),
                     {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        assert conn.getresponse().status == 200
        conn.close()
        message = next(stream)
        assert message["event"] == "change" and int(message["id"]) == version + 1
        stream.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    assert process.returncode == 0


FIXTURE_VIDEOS = Path(__file__).resolve().parents[1] / "fixtures" / "videos"


@pytest.mark.slow
def test_the_demo_scores_a_fixture_video_roll_on_the_table_game(tmp_path):
    """The README's first command: `serve --demo` replays the bundled fixture videos in real time
    and a roll read from them reaches the table game's stream with the labelled faces."""
    labelled = []
    for label in sorted(FIXTURE_VIDEOS.glob("tossup-*.json")):
        labelled += [sorted(d["face"] for d in roll["dice"]) for roll in json.loads(label.read_text())["rolls"]]
    assert labelled, "no Toss Up fixture videos"
    process, address, lines = _serve(tmp_path / "data", "--demo")
    try:
        demo = next(line for line in lines if line.startswith("Demo: a Toss Up game"))
        game_id = demo.split("(/games/")[1].rstrip(").").split(")")[0]
        assert any(line.startswith("Replaying fixture videos") for line in lines), lines
        started = time.monotonic()
        rolled = None
        for message in _events(address, game_id, timeout=60):
            if message["event"] == "change":
                rolled = message["data"]
                break
            assert time.monotonic() - started < 90, "no roll reached the stream"
        assert rolled["last_roll"]["reading"]["source"] == "camera"
        assert sorted(rolled["last_roll"]["event"]["dice"]) in labelled
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
