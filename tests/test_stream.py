"""The live stream read chunk by chunk through the test client, and the broker on its own."""

from __future__ import annotations

import json
import threading

import pytest

from scorekeeper.web.broker import Broker, StreamClosed, StreamMessage, Subscription
from tests.conftest import HOST_TOKEN, join, send, start_game

YELLOWS = ["yellow"] * 10


def _parse(chunk: bytes) -> dict:
    """One SSE message as a dict of its fields (comments under 'comment')."""
    fields: dict = {}
    for line in chunk.decode().splitlines():
        if line.startswith(":"):
            fields.setdefault("comment", []).append(line[1:].strip())
        elif line:
            name, _, value = line.partition(": ")
            fields[name] = value
    if "data" in fields:
        fields["data"] = json.loads(fields["data"])
    return fields


def _next_message(chunks) -> dict:
    """The next message that is not a heartbeat."""
    while True:
        message = _parse(next(chunks))
        if message.get("comment") != ["heartbeat"]:
            return message


def _board(app):
    return app.extensions["dicetray"]


def test_stream_sends_comment_snapshot_changes_and_heartbeats(client, app):
    game = start_game(client, "tossup", ["Ann", "Bob"], target=5)
    gid = game["id"]
    response = client.get(f"/api/games/{gid}/stream", buffered=False)
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    chunks = iter(response.response)
    first = _parse(next(chunks))
    assert first["comment"] and first["retry"] == "3000"
    snapshot = _parse(next(chunks))
    assert snapshot["event"] == "snapshot" and snapshot["id"] == "0"
    assert snapshot["data"]["state"] == game["state"] and snapshot["data"]["version"] == 0
    assert _board(app).broker.subscriber_count(gid) == 1
    # Idle: a heartbeat comment keeps the connection (and proxies) awake.
    assert _parse(next(chunks)) == {"comment": ["heartbeat"]}
    send(client, gid, {"type": "roll", "dice": ["green"] * 4 + YELLOWS[:6]})
    send(client, gid, {"type": "stop"})
    change = _next_message(chunks)
    assert change["event"] == "change" and change["id"] == "1"
    assert change["data"]["state"]["turn_points"] == 4
    assert change["data"]["last_roll"]["index"] == 0
    change = _next_message(chunks)
    assert change["id"] == "2" and change["data"]["state"]["players"][0]["score"] == 4
    response.close()
    assert _board(app).broker.subscriber_count(gid) == 0
    assert _board(app).broker.subscriber_count() == 0


def test_reconnect_with_last_event_id_resends_what_was_missed(client, app):
    gid = start_game(client, "tossup", ["Ann", "Bob"])["id"]
    for _ in range(3):
        send(client, gid, {"type": "roll", "dice": YELLOWS})
    response = client.get(f"/api/games/{gid}/stream", headers={"Last-Event-ID": "1"}, buffered=False)
    chunks = iter(response.response)
    next(chunks)
    ids = [_next_message(chunks)["id"], _next_message(chunks)["id"]]
    assert ids == ["2", "3"]
    send(client, gid, {"type": "stop"})
    assert _next_message(chunks)["id"] == "4"
    response.close()
    # Up to date: nothing is resent, the next change follows.
    response = client.get(f"/api/games/{gid}/stream?last_event_id=4", buffered=False)
    chunks = iter(response.response)
    next(chunks)
    send(client, gid, {"type": "roll", "dice": YELLOWS})
    assert _next_message(chunks)["id"] == "5"
    response.close()
    assert _board(app).broker.subscriber_count() == 0


def test_reconnect_falls_back_to_a_snapshot_when_changes_are_not_buffered(tmp_path, client, app):
    gid = start_game(client, "tossup", ["Ann", "Bob"])["id"]
    for _ in range(3):
        send(client, gid, {"type": "roll", "dice": YELLOWS})
    # A new app over the same data (a server restart) has no replay buffer.
    from scorekeeper.web import create_app

    restarted = create_app({"DATA_DIR": app.config["DATA_DIR"], "HOST_TOKEN": HOST_TOKEN,
                            "HEARTBEAT_SECONDS": 0.05})
    try:
        for last in ("1", "99", "junk"):
            response = restarted.test_client().get(f"/api/games/{gid}/stream", headers={"Last-Event-ID": last},
                                                   buffered=False)
            chunks = iter(response.response)
            next(chunks)
            message = _next_message(chunks)
            assert message["event"] == "snapshot" and message["id"] == "3"
            response.close()
    finally:
        restarted.extensions["dicetray"].close()


def test_secret_choice_progress_streams_without_the_choice(client, app):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    gid = game["id"]
    send(client, gid, {"type": "choose", "dice": ["red", "orange", "yellow"]})
    send(client, gid, {"type": "roll", "dice": [{"die": "red", "face": "50"}, {"die": "orange", "face": "60"},
                                                {"die": "yellow", "face": "20"}]})
    ann = join(client, app, gid, "Ann")
    response = client.get(f"/api/games/{gid}/stream", buffered=False)
    chunks = iter(response.response)
    next(chunks)
    assert _next_message(chunks)["data"]["secret"] == {"version": 2, "chosen": [], "waiting": ["Ann", "Bob"]}
    client.post(f"/api/games/{gid}/choices", json={"choice": "out"}, headers={"Authorization": f"Bearer {ann}"})
    progress = _next_message(chunks)
    assert progress["event"] == "choices" and "id" not in progress
    assert progress["data"] == {"version": 2, "chosen": ["Ann"], "waiting": ["Bob"]}
    response.close()
    # A reconnect that is up to date still learns who has chosen.
    response = client.get(f"/api/games/{gid}/stream", headers={"Last-Event-ID": "2"}, buffered=False)
    chunks = iter(response.response)
    next(chunks)
    assert _next_message(chunks)["data"] == {"version": 2, "chosen": ["Ann"], "waiting": ["Bob"]}
    response.close()
    assert _board(app).broker.subscriber_count() == 0


def test_shutdown_ends_open_streams(client, app):
    gid = start_game(client, "tossup", ["Ann", "Bob"])["id"]
    response = client.get(f"/api/games/{gid}/stream", buffered=False)
    chunks = iter(response.response)
    next(chunks)
    next(chunks)
    _board(app).broker.close()
    with pytest.raises(StopIteration):
        while True:
            next(chunks)
    assert _board(app).broker.subscriber_count() == 0
    # A stream opened after shutdown ends at once too.
    late = _board(app).broker.subscribe(gid)
    with pytest.raises(StreamClosed):
        late.get(1.0)


def test_a_slow_client_gets_merged_updates_not_an_unbounded_queue():
    sub = Subscription("g", maxsize=4)
    for version in range(1, 11):
        sub.put(StreamMessage("change", f'{{"v": {version}}}', version))
    sub.put(StreamMessage("choices", "{}"))
    got = []
    while (message := sub.get(0.01)) is not None:
        got.append(message)
    assert len(got) <= 5
    assert got[-2].id == 10 or got[-1].id == 10
    assert sub.merged > 0
    assert {m.event for m in got} == {"change", "choices"}


def test_broker_replay_and_ordering():
    broker = Broker(queue_size=8, replay_size=3)
    for version in (1, 2, 3, 4):
        broker.publish("g", StreamMessage("change", "{}", version))
    broker.publish("g", StreamMessage("change", "{}", 2))  # late and out of order: ignored
    assert [m.id for m in broker.missed("g", 2, 4) or []] == [3, 4]
    assert broker.missed("g", 4, 4) == []
    assert broker.missed("g", 0, 4) is None  # version 1 fell out of the buffer
    assert broker.missed("other", 0, 2) is None
    assert StreamMessage("x", "{}", None).encode() == b"event: x\ndata: {}\n\n"


def test_get_waits_for_a_put_from_another_thread():
    sub = Subscription("g", maxsize=4)
    timer = threading.Timer(0.05, sub.put, args=(StreamMessage("change", "{}", 1),))
    timer.start()
    assert sub.get(5.0).id == 1
    timer.join()
