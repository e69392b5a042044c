"""`dicetray serve` as a real process, `dicetray bench web` in miniature, and the CLI's help."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from scorekeeper.cli import main
from scorekeeper.store import GameStore


def test_help_lists_serve_and_bench():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "serve" in result.output and "bench" in result.output
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert "--host-token-file" in result.output and "DICETRAY_HOST_TOKEN" in result.output


def test_serve_prints_the_host_url_and_serves_the_api(tmp_path: Path):
    env = {**os.environ, "DICETRAY_HOST_TOKEN": "from-env-token-0123", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "scorekeeper.cli", "serve", "--host", "127.0.0.1", "--port", "0",
         "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:
        lines = []
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("Host (table) URL"):
                break
        host_line = lines[-1]
        assert host_line.rstrip().endswith("?host=from-env-token-0123"), lines
        base = host_line.split(": ", 1)[1].split("/?host=")[0]
        assert base.startswith("http://127.0.0.1:")
        request = urllib.request.Request(
            f"{base}/api/games", method="POST",
            data=json.dumps({"game": "tossup", "players": ["Ann", "Bob"]}).encode(),
            headers={"Authorization": "Bearer from-env-token-0123", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
        with urllib.request.urlopen(f"{base}/api/games", timeout=10) as response:
            assert len(json.load(response)["games"]) == 1
        with urllib.request.urlopen(f"{base}/", timeout=10) as response:
            assert b"<html" in response.read()
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=20)
    assert process.returncode == 0, out
    assert "stopping" in out
    assert (tmp_path / "data" / "games.sqlite3").exists()


def test_bench_web_reports_median_and_p95():
    result = CliRunner().invoke(main, ["bench", "web", "--streams", "3", "--half-open", "2", "--events", "4",
                                       "--api-requests", "5", "--reload-tabs", "2", "--games", "2", "--timeout", "30"])
    assert result.exit_code == 0, result.output
    assert "3 stream clients, 2 half-open connections, 4 events" in result.output
    assert "snapshots received: 5 of 5" in result.output
    assert "API GET with the pages open: p50" in result.output and "(5 requests)" in result.output
    assert "2 tabs reloading at once" in result.output and "pages without their snapshot: 0" in result.output
    assert "after 2 games played and left" in result.output


def test_bench_percentiles():
    from scorekeeper.web.bench import BenchResult, _percentile

    assert _percentile(list(map(float, range(1, 101))), 95) == 95.0
    assert _percentile([], 95) != _percentile([], 95)  # NaN
    empty = BenchResult(1, 0, [], [], True)
    assert empty.median_ms != empty.median_ms and empty.post_median_ms != empty.post_median_ms


def test_a_port_in_use_is_told_plainly_and_starts_no_demo_game(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # A process of its own: a half-made server leaves its files to the collector.
        result = subprocess.run(
            [sys.executable, "-m", "scorekeeper.cli", "serve", "--demo", "--host", "127.0.0.1", "--port", str(port),
             "--data", str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "already running" in result.stderr
    assert "Traceback" not in result.stderr
    # Told before anything starts: no "ready", no camera, no demo game.
    assert "scoreboard ready" not in result.stderr and "scoreboard" not in result.stdout
    assert GameStore(tmp_path / "data" / "games.sqlite3").list_games() == []


def test_a_second_stop_signal_lets_the_first_finish(tmp_path: Path):
    """Ctrl-C twice, or a signal sent both to `timeout` and to serve: one orderly stop, exit 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "scorekeeper.cli", "serve", "--demo", "--host", "127.0.0.1", "--port", "0",
         "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("Demo:") or line.startswith("Calibration profile"):
                break
        time.sleep(1.0)  # the camera replaying, the watcher reading
        process.send_signal(signal.SIGTERM)
        time.sleep(0.01)  # while the first stop is under way (it takes a few hundredths of a second)
        process.send_signal(signal.SIGINT)
    finally:
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0, out
    assert "stopping" in out and "Aborted" not in out and "Traceback" not in out
