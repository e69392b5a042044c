"""Property-based fuzzing of every route: whatever a client sends, the answer is 2xx-4xx, never a 5xx.

The suite runs a few hundred generated requests through Flask, and a tenth as many raw ones through
the served front (uvicorn, push.py); `DICETRAY_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz.py -s -o addopts=""`
runs as many as asked and prints how many it sent.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorekeeper.web import create_app

HOST = "fuzz-host-token-0123456789"
EXAMPLES = int(os.environ.get("DICETRAY_FUZZ_EXAMPLES", "300"))

ROUTES = [
    "/", "/play", "/join/{code}", "/games/{gid}", "/games/{gid}/history", "/games/{gid}/player",
    "/api/games", "/api/games/{gid}", "/api/games/{gid}/view", "/api/games/{gid}/events",
    "/api/games/{gid}/events/{n}", "/api/games/{gid}/undo", "/api/games/{gid}/stats",
    "/api/games/{gid}/choices", "/api/games/{gid}/invite", "/api/games/{gid}/stream",
    "/api/games/{gid}/seats/{n}", "/api/join/{code}", "/api/whoami", "/api/live", "/api/live/target",
    "/api/live/pending/{any}", "/rolls/{any}", "/preview.mjpg", "/api/calibrate", "/api/calibrate/profiles",
    "/api/calibrate/start", "/api/calibrate/tray", "/api/calibrate/roll", "/api/calibrate/confirm",
    "/api/calibrate/save", "/api/calibrate/exposure", "/api/calibrate/shots/{any}.jpg", "/static/{any}",
    "/{any}",
]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
LATIN = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=60)
ODD_NUMBERS = st.sampled_from(["0", "1", "-1", "²", "١٢", "9" * 5000, "1e3", "0x10", " 7", "NaN"])
SEGMENTS = st.one_of(st.text(max_size=30), ODD_NUMBERS, st.sampled_from(["..", "%00", "a/b", "games.sqlite3"]))

JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=50))
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)), max_leaves=20)
FIELDS = st.sampled_from(["game", "players", "options", "event", "version", "reading", "choice", "player",
                          "action", "dice", "name", "corners", "relock", "shot", "activate", "verison"])
LIKELY_BODIES = st.dictionaries(FIELDS, JSON_VALUES, max_size=4)
RAW_BODIES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"[" * 5000, b'{"a": NaN}', b'{"version": Infinity}', b'{"v": 1e999}', b"\xff\xfe",
                     b'{"event": {"type": "roll", "dice": []}, "version": 0}', b"{}" * 3000]),
)


@pytest.fixture
def fuzz_app(tmp_path: Path):
    app = create_app({"TESTING": False, "DATA_DIR": tmp_path / "data", "HOST_TOKEN": HOST,
                      "SECRET_KEY": "fuzz-secret", "HEARTBEAT_SECONDS": 0.01, "MAX_CONTENT_LENGTH": 8192})
    yield app
    app.extensions["dicetray"].close()


@st.composite
def requests(draw: Any, gid: str, code: str, player_token: str) -> dict[str, Any]:
    route = draw(st.sampled_from(ROUTES))
    fill = {
        "gid": draw(st.one_of(st.just(gid), SEGMENTS)),
        "code": draw(st.one_of(st.just(code), st.just(code.lower()), SEGMENTS)),
        "n": draw(st.one_of(st.sampled_from(["0", "1", "5"]), SEGMENTS)),
        "any": draw(SEGMENTS),
    }
    path = route.format(**{key: quote(value, safe="") for key, value in fill.items()})
    headers = {}
    auth = draw(st.one_of(st.none(), st.just(f"Bearer {HOST}"), st.just(f"Bearer {player_token}"),
                          LATIN.map(lambda text: "Bearer " + text), LATIN,
                          st.just(f"Bearer {player_token}").map(lambda t: t.replace(".0.", ".²."))))
    if auth is not None:
        headers["Authorization"] = auth
    if draw(st.booleans()):
        headers["Last-Event-ID"] = draw(st.one_of(ODD_NUMBERS, LATIN))
    headers["Content-Type"] = draw(st.sampled_from(["application/json", "text/plain", "", "multipart/form-data"]))
    query = draw(st.dictionaries(st.sampled_from(["game", "last_event_id", "host", "x"]),
                                 st.one_of(ODD_NUMBERS, st.text(max_size=20)), max_size=2))
    kind = draw(st.sampled_from(["none", "likely", "json", "raw"]))
    data: bytes = b""
    if kind == "likely":
        data = json.dumps(draw(LIKELY_BODIES)).encode()
    elif kind == "json":
        data = json.dumps(draw(JSON_VALUES)).encode()
    elif kind == "raw":
        data = draw(RAW_BODIES)
    return {"method": draw(st.sampled_from(METHODS)), "path": path, "headers": headers,
            "query_string": query, "data": data}


def test_no_request_gets_a_5xx_or_leaves_a_traceback(fuzz_app, caplog: pytest.LogCaptureFixture) -> None:
    client = fuzz_app.test_client()
    made = client.post("/api/games", json={"game": "tallyup", "players": ["Ann", "Bob"]},
                       headers={"Authorization": f"Bearer {HOST}"}).get_json()
    gid = made["id"]
    code = fuzz_app.extensions["dicetray"].get(gid).record.meta["join_code"]
    player_token = client.post(f"/api/join/{code}", json={"player": "Ann"}).get_json()["token"]
    sent: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(requests(gid, code, player_token))
    def one_request(request: dict[str, Any]) -> None:
        response = client.open(request["path"], method=request["method"], headers=request["headers"],
                               query_string=request["query_string"], data=request["data"])
        try:
            assert 200 <= response.status_code < 500, (request, response.status_code, response.get_data()[:300])
        finally:
            response.close()  # an open stream would otherwise stay subscribed
        sent.append(response.status_code)

    with caplog.at_level(logging.WARNING):
        one_request()
    tracebacks = [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR]
    assert not tracebacks, [record.getMessage() for record in tracebacks]
    assert len(sent) >= EXAMPLES
    print(f"fuzz: {len(sent)} requests, {sum(code >= 500 for code in sent)} answered 5xx")


def test_the_served_front_answers_raw_requests_below_500(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Through uvicorn and push.py (streams, body limits) with raw request lines and headers."""
    import socket

    from scorekeeper.web.server import WebServer

    app = create_app({"DATA_DIR": tmp_path / "data", "HOST_TOKEN": HOST, "HEARTBEAT_SECONDS": 0.05,
                      "MAX_CONTENT_LENGTH": 8192})
    server = WebServer(app, threads=4).start()
    client = app.test_client()
    gid = client.post("/api/games", json={"game": "tossup", "players": ["Ann", "Bob"]},
                      headers={"Authorization": f"Bearer {HOST}"}).get_json()["id"]
    statuses: list[int] = []
    header_text = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20)

    @settings(max_examples=max(30, EXAMPLES // 10), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(method=st.sampled_from(["GET", "POST", "HEAD", "PUT"]),
           target=st.one_of(st.just(gid), SEGMENTS).map(lambda g: f"/api/games/{quote(g, safe='')}/stream"),
           query=st.one_of(st.just(""), ODD_NUMBERS.map(lambda n: "?last_event_id=" + quote(n))),
           headers=st.dictionaries(st.sampled_from(["Last-Event-ID", "Content-Length", "Authorization", "X-A"]),
                                   st.one_of(ODD_NUMBERS, header_text), max_size=3))
    def one_request(method: str, target: str, query: str, headers: dict[str, str]) -> None:
        lines = [f"{method} {target}{query} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))  # raw bytes, as any client may
            head = b""
            while b"\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                head += chunk
        status = int(head.split(b" ", 2)[1])
        assert 200 <= status < 500, (lines, head[:200])
        statuses.append(status)

    try:
        with caplog.at_level(logging.WARNING):
            one_request()
    finally:
        server.stop()
        app.extensions["dicetray"].close()
    errors = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
    assert statuses and app.extensions["dicetray"].broker.subscriber_count() == 0
    print(f"fuzz through the server: {len(statuses)} requests, {sum(code >= 500 for code in statuses)} answered 5xx")
