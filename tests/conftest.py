"""Shared fixtures: an app over a fresh data directory, its test client and the host token."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from scorekeeper.web import create_app

HOST_TOKEN = "test-host-token-0123"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    app = create_app(
        {
            "TESTING": True,
            "DATA_DIR": tmp_path / "data",
            "HOST_TOKEN": HOST_TOKEN,
            "SECRET_KEY": "test-secret",
            # Short enough that a test sees a heartbeat without waiting 15 s.
            "HEARTBEAT_SECONDS": 0.05,
            "MAX_CONTENT_LENGTH": 4096,
        }
    )
    yield app
    app.extensions["dicetray"].close()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def host() -> dict[str, str]:
    """Headers that carry the host token."""
    return {"Authorization": f"Bearer {HOST_TOKEN}"}


def start_game(client: FlaskClient, game: str, players: list[str], **options: Any) -> dict[str, Any]:
    response = client.post(
        "/api/games",
        json={"game": game, "players": players, "options": options},
        headers={"Authorization": f"Bearer {HOST_TOKEN}"},
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def send(client: FlaskClient, game_id: str, event: dict[str, Any], version: int | None = None,
         token: str = HOST_TOKEN) -> Any:
    body: dict[str, Any] = {"event": event}
    if version is not None:
        body["version"] = version
    return client.post(f"/api/games/{game_id}/events", json=body, headers={"Authorization": f"Bearer {token}"})


def join(client: FlaskClient, app: Flask, game_id: str, player: str) -> str:
    """Join a game as `player` through the join code, returning the player token."""
    record = app.extensions["dicetray"].get(game_id).record
    code = record.meta["join_code"]
    response = client.post(f"/api/join/{code.lower()}", json={"player": player})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["token"]
