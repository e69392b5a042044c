"""Strict input: hostile or sloppy bodies, tokens and stream ids get a 4xx naming the problem."""

from __future__ import annotations

import logging

import pytest

from tests.conftest import HOST_TOKEN, join, start_game

YELLOWS = ["yellow"] * 10


@pytest.fixture
def game(client):
    return start_game(client, "tossup", ["Ann", "Bob"])


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b'{"event": {"type": "roll", "dice": ["yellow"]}, "reading": {"confidence": NaN}}', "not valid JSON"),
        (b'{"event": {"type": "roll"}, "reading": {"confidence": Infinity}}', "not valid JSON"),
        (b'{"event": {"type": "roll"}, "reading": {"confidence": -Infinity}}', "not valid JSON"),
        (b'{"event": {"type": "roll"}, "reading": {"confidence": 1e999}}', "reading.confidence"),
        (b"[" * 3_000, "not valid JSON"),  # under the body limit, past the nesting limit
        (b'{"event": {"type": "stop"}, "verison": 0}', "unknown field 'verison'"),
        (b'{"event": {"type": "stop"}, "version": 99999999999999999999999}', "'version'"),
        (b'{"event": {"type": "stop"}, "version": -1}', "'version'"),
        (b'{"event": {"type": "stop"}, "version": 1.0}', "'version'"),
    ],
)
def test_non_finite_numbers_deep_nesting_and_unknown_fields_are_400(client, host, game, data, fragment, caplog):
    with caplog.at_level(logging.ERROR):
        response = client.post(f"/api/games/{game['id']}/events", data=data, headers=host,
                               content_type="application/json")
    assert response.status_code == 400
    assert fragment in response.get_json()["error"]
    assert client.get(f"/api/games/{game['id']}").get_json()["version"] == 0  # nothing half-applied
    assert not caplog.records


@pytest.mark.parametrize(
    "players, fragment",
    [
        (["A" * 41, "Bob"], "'players.0'"),
        (["Ann", "B" * 3_000], "'players.1'"),
        (["Ann\u202eboB", "Cy"], "U+202E"),
        (["Ann\x07", "Cy"], "U+0007"),
        (["Ann\u2066", "Cy"], "U+2066"),
        (["Ann\nBob", "Cy"], "U+000A"),
    ],
)
def test_names_are_at_most_40_plain_characters(client, host, players, fragment):
    response = client.post("/api/games", json={"game": "tossup", "players": players}, headers=host)
    assert response.status_code == 400
    assert fragment in response.get_json()["error"]


def test_names_with_accents_and_emoji_sequences_are_welcome(client):
    family = "\U0001F468\u200D\U0001F469\u200D\U0001F467"
    game = start_game(client, "tossup", ["Zoë", family, "A" * 40])
    assert [p["name"] for p in game["state"]["players"]] == ["Zoë", family, "A" * 40]


@pytest.mark.parametrize("options", [{"players": ["X", "Y"]}, {"game": "tallyup"}, {"target": "100"},
                                     {"target": 10**30}, {"high_stakes": 1}])
def test_options_that_are_not_options_are_400(client, host, options):
    response = client.post("/api/games", json={"game": "tallyup", "players": ["A", "B"], "options": options},
                           headers=host)
    assert response.status_code == 400
    assert "'options." in response.get_json()["error"]


@pytest.mark.parametrize("seat", ["9" * 5000, "²", "١", "0" * 4])
def test_player_tokens_with_odd_seat_numbers_are_401(client, app, game, seat, caplog):
    ann = join(client, app, game["id"], "Ann")
    parts = ann.split(".")
    parts[2] = seat
    with caplog.at_level(logging.ERROR):
        response = client.get("/api/whoami", headers={"Authorization": "Bearer " + ".".join(parts)})
    assert response.status_code == 401
    assert not caplog.records


@pytest.mark.parametrize("last_id", ["9" * 5000, "²", "١٢", "-1", "1e3"])
def test_odd_last_event_ids_start_from_a_snapshot(client, game, last_id, caplog):
    with caplog.at_level(logging.ERROR):
        for response in (client.get(f"/api/games/{game['id']}/stream", headers={"Last-Event-ID": last_id}),
                         client.get(f"/api/games/{game['id']}/stream", query_string={"last_event_id": last_id})):
            assert response.status_code == 200
            chunks = iter(response.response)
            next(chunks)
            assert b"event: snapshot" in next(chunks)
            response.close()
    assert not caplog.records


def test_the_host_token_check_survives_odd_headers(client, game):
    for value in ("Bearer " + "x" * 10_000, "Bearer \u00b2", "Bearer p1...", "Bearer " + HOST_TOKEN + "\u00e9"):
        response = client.post(f"/api/games/{game['id']}/undo", headers={"Authorization": value})
        assert response.status_code == 401
