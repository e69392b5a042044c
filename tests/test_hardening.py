"""Hardening: host token strength and source, private data files, page headers, bounded memory."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from scorekeeper.cli import main
from scorekeeper.store import GameStore
from scorekeeper.web import create_app
from scorekeeper.web.broker import Broker, StreamMessage
from tests.conftest import start_game

PLACEHOLDER = "change-me-to-a-long-random-string"  # what deploy/dicetray.service used to ship


@pytest.fixture(autouse=True)
def _keep_this_processes_umask(monkeypatch):
    monkeypatch.setattr("scorekeeper.cli.os.umask", lambda mask: 0o022)


def test_the_unit_files_placeholder_token_is_refused_at_start(tmp_path: Path, monkeypatch):
    unit = (Path(__file__).parents[1] / "deploy" / "dicetray.service").read_text()
    assert "Environment=DICETRAY_HOST_TOKEN_FILE=" in unit and "Environment=DICETRAY_HOST_TOKEN=" not in unit
    monkeypatch.setenv("DICETRAY_HOST_TOKEN", PLACEHOLDER)
    result = CliRunner().invoke(main, ["serve", "--data", str(tmp_path), "--port", "0"])
    assert result.exit_code != 0
    assert "placeholder" in result.output and "HOST_TOKEN" in result.output
    monkeypatch.setenv("DICETRAY_HOST_TOKEN", "short")
    result = CliRunner().invoke(main, ["serve", "--data", str(tmp_path), "--port", "0"])
    assert result.exit_code != 0 and "at least 16 characters" in result.output


def test_the_token_comes_from_a_file_or_the_environment_never_the_command_line(tmp_path: Path, monkeypatch):
    token_file = tmp_path / "token"
    token_file.write_text("x" * 20)
    monkeypatch.setenv("DICETRAY_HOST_TOKEN", "y" * 20)
    both = CliRunner().invoke(main, ["serve", "--data", str(tmp_path), "--host-token-file", str(token_file)])
    assert both.exit_code != 0 and "not both" in both.output
    old = CliRunner().invoke(main, ["serve", "--data", str(tmp_path), "--host-token", "y" * 20])
    assert old.exit_code != 0 and "No such option" in old.output
    with pytest.raises(ValueError, match="at least 16"):
        create_app({"DATA_DIR": tmp_path, "HOST_TOKEN": "x" * 15})


def test_data_files_are_private(tmp_path: Path):
    app = create_app({"DATA_DIR": tmp_path / "data", "HOST_TOKEN": "h" * 16})
    try:
        data = tmp_path / "data"
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        for path in data.glob("games.sqlite3*"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        app.extensions["dicetray"].close()


def test_a_game_log_left_readable_by_others_is_made_private(tmp_path: Path):
    GameStore(tmp_path / "games.sqlite3").close()
    (tmp_path / "games.sqlite3").chmod(0o644)
    with GameStore(tmp_path / "games.sqlite3") as store:
        store.create("tossup", ["Ann", "Bob"])
    for path in tmp_path.glob("games.sqlite3*"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_pages_and_api_answers_carry_the_security_headers(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    for url in ("/", f"/games/{game['id']}", f"/games/{game['id']}/player", "/play", "/api/games", "/nowhere"):
        response = client.get(url)
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, url
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert "<script>" not in response.get_data(as_text=True)  # no inline script the CSP would block


def test_the_store_keeps_only_recent_games_folded(tmp_path: Path):
    with GameStore(tmp_path / "games.sqlite3", cached_games=3) as store:
        ids = [store.create("tossup", ["Ann", "Bob"]).record.id for _ in range(6)]
        for game_id in ids:
            store.append(game_id, {"type": "roll", "dice": ["yellow"] * 10})
        assert len(store._cache) == 3 and list(store._cache) == ids[-3:]
        first = store.get(ids[0])  # folded again from the log, unchanged
        assert first.version == 1 and first.state()["turn_points"] == 0
        assert list(store._cache)[-1] == ids[0] and len(store._cache) == 3


def test_the_broker_keeps_replays_for_recent_games_only():
    broker = Broker(queue_size=4, replay_size=8, replay_games=2)
    for game_id in ("a", "b", "c"):
        broker.publish(game_id, StreamMessage("change", "{}", 1))
    assert broker.missed("a", 0, 1) is None  # forgotten: a reconnect gets a snapshot
    assert [m.id for m in broker.missed("c", 0, 1) or []] == [1]
