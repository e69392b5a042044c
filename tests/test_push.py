"""The served app (uvicorn + push.py): live pages hold no thread, closed tabs let go at once."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path
from typing import Iterator

import pytest

from scorekeeper.web import create_app
from scorekeeper.web.server import WebServer

TOKEN = "push-test-host-token"
HOST = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[WebServer]:
    app = create_app({"DATA_DIR": tmp_path / "data", "HOST_TOKEN": TOKEN, "HEARTBEAT_SECONDS": 0.5,
                      "MAX_CONTENT_LENGTH": 4096})
    server = WebServer(app, threads=4).start()
    yield server
    server.stop()
    app.extensions["dicetray"].close()


def _request(server: WebServer, method: str, path: str, body: object = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers or {})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def _open_stream(server: WebServer, game_id: str, last_id: str | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    extra = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
    sock.sendall(f"GET /api/games/{game_id}/stream HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
    return sock


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    deadline = time.monotonic() + 5
    while marker not in data:
        assert time.monotonic() < deadline, data
        data += sock.recv(65536)
    return data


def _wait(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _new_game(server: WebServer) -> str:
    status, game = _request(server, "POST", "/api/games", {"game": "tossup", "players": ["Ann", "Bob"]}, HOST)
    assert status == 201
    return str(game["id"])


def test_many_open_live_pages_leave_the_api_answering(served):
    gid = _new_game(served)
    broker = served.app.extensions["dicetray"].broker
    streams = [_open_stream(served, gid) for _ in range(80)]  # 20 times the 4 worker threads
    try:
        assert _wait(lambda: broker.subscriber_count(gid) == 80)
        first = _read_until(streams[0], b"event: snapshot")
        assert b"HTTP/1.1 200" in first and b"text/event-stream" in first
        assert b"x-frame-options: DENY" in first.lower().replace(b"deny", b"DENY")
        started = time.monotonic()
        status, _ = _request(served, "POST", f"/api/games/{gid}/events",
                             {"event": {"type": "roll", "dice": ["yellow"] * 10}, "version": 0}, HOST)
        assert status == 200 and time.monotonic() - started < 2.0
        for sock in streams:
            # The change, or a snapshot already holding it when the stream opened after it.
            data = _read_until(sock, b"id: 1\nevent: ")
            assert data.count(b"id: 1\nevent: ") == 1
    finally:
        for sock in streams:
            sock.close()
    # Closed tabs are let go at once, not at the next heartbeat.
    assert _wait(lambda: broker.subscriber_count(gid) == 0, 5.0)


def test_a_reconnect_gets_what_it_missed_and_odd_ids_a_snapshot(served):
    gid = _new_game(served)
    for version in range(2):
        _request(served, "POST", f"/api/games/{gid}/events",
                 {"event": {"type": "roll", "dice": ["yellow"] * 10}, "version": version}, HOST)
    again = _open_stream(served, gid, last_id="1")
    odd = _open_stream(served, gid, last_id="9" * 5000)
    try:
        data = _read_until(again, b"id: 2\n")
        assert b"event: snapshot" not in data and b"id: 1\n" not in data
        assert b"event: snapshot" in _read_until(odd, b"event: snapshot")
        assert b": heartbeat" in _read_until(again, b": heartbeat")
    finally:
        again.close()
        odd.close()


def test_stream_of_an_unknown_game_is_a_json_404(served):
    from tests.test_live import wait_until

    broker = served.app.extensions["dicetray"].broker
    # an earlier test's closed stream is let go within seconds (a closed tab's promise)
    assert wait_until(lambda: broker.subscriber_count() == 0, timeout=5.0)
    status, body = _request(served, "GET", "/api/games/nope/stream")
    assert status == 404 and "nope" in body["error"]
    assert broker.subscriber_count() == 0


def test_a_body_over_the_limit_is_refused_before_it_is_sent(served):
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=5)
    try:
        # Only the headers go out: the answer must not wait for (or read) the 200 MB.
        sock.sendall(b"POST /api/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200000000\r\n\r\n")
        answer = _read_until(sock, b"}")
        assert answer.startswith(b"HTTP/1.1 413") and b"larger than the limit" in answer
    finally:
        sock.close()
    # A chunked body with no length is never read past the limit: refused, nothing stored.
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
    conn.request("POST", "/api/games", body=iter([b"[" + b" " * 3000] * 4), headers=HOST, encode_chunked=True)
    assert conn.getresponse().status in (400, 413)
    conn.close()
    assert _request(served, "GET", "/api/games") == (200, {"games": []})


def test_half_sent_requests_block_nobody(served):
    stalled = []
    try:
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            sock.sendall(b"GET /api/games HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            stalled.append(sock)
        started = time.monotonic()
        status, body = _request(served, "GET", "/api/games")
        assert status == 200 and body == {"games": []} and time.monotonic() - started < 2.0
    finally:
        for sock in stalled:
            sock.close()


def test_stopping_the_server_ends_open_streams(tmp_path: Path):
    app = create_app({"DATA_DIR": tmp_path / "data", "HOST_TOKEN": TOKEN, "HEARTBEAT_SECONDS": 30.0})
    server = WebServer(app, threads=2).start()
    gid = _new_game(server)
    sock = _open_stream(server, gid)
    try:
        _read_until(sock, b"event: snapshot")
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 5.0
        assert app.extensions["dicetray"].broker.subscriber_count() == 0
    finally:
        sock.close()
        app.extensions["dicetray"].close()


def test_a_closed_preview_tab_lets_go_of_the_camera_preview(tmp_path: Path):
    from scorekeeper.web.app import LIVE_EXTENSION
    from tests.test_live import TEN, EndlessSource, make_app, throw

    app, _ = make_app(tmp_path, lambda: EndlessSource(throw(TEN), delay=0.01))
    server = WebServer(app, threads=2).start()
    preview = app.extensions[LIVE_EXTENSION].preview
    try:
        viewers = []
        for _ in range(3):  # more previews than Flask workers: none of them may hold one
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(b"GET /preview.mjpg HTTP/1.1\r\nHost: x\r\n\r\n")
            viewers.append(sock)
        for sock in viewers:
            head = _read_until(sock, b"Content-Type: image/jpeg")
            assert b"multipart/x-mixed-replace; boundary=frame" in head
        assert _wait(lambda: preview.viewers == 3)
        assert _request(server, "GET", "/api/live")[0] == 200
        for sock in viewers:
            sock.close()
        assert _wait(lambda: preview.viewers == 0, 6.0)  # within the encoder's 5 s keep-alive
    finally:
        server.stop()
        app.extensions["dicetray"].close()
