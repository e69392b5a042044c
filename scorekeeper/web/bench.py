"""`dicetray bench web`: how long an accepted event takes to reach every open stream.

Everything stays on loopback: a throwaway data directory, a waitress server in a thread and
raw-socket stream clients read by one selector thread (cheap enough not to disturb the server).
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import re
import secrets
import selectors
import socket
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass

from scorekeeper.web.app import EXTENSION, create_app
from scorekeeper.web.server import BackgroundServer

log = logging.getLogger(__name__)

_MESSAGE_ID = re.compile(rb"id: (\d+)\nevent: [a-z]+\ndata: [^\n]*\n\n")
#: A caution roll changes nothing but the roll count, so it is always legal again.
_CAUTION_JSON = json.dumps({"type": "roll", "dice": ["yellow"] * 10})


@dataclass(frozen=True)
class BenchResult:
    clients: int
    events: int
    latencies_ms: list[float]
    post_ms: list[float]
    timed_out: bool

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")

    @property
    def p95_ms(self) -> float:
        return _percentile(self.latencies_ms, 95)

    @property
    def post_median_ms(self) -> float:
        return statistics.median(self.post_ms) if self.post_ms else float("nan")


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(pct / 100 * len(ordered)) - 1))  # nearest rank
    return ordered[rank]


class _Readers:
    """Stream clients: every socket's highest seen message id and when it arrived."""

    def __init__(self, port: int, path: str, count: int) -> None:
        self._selector = selectors.DefaultSelector()
        self._cond = threading.Condition()
        self.seen: list[dict[int, float]] = [dict() for _ in range(count)]
        self._buffers = [b"" for _ in range(count)]
        self._sockets = []
        for index in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            # HTTP/1.0 keeps the body unchunked: the bytes are the event stream itself.
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ, index)
            self._sockets.append(sock)
        self._running = True
        self._thread = threading.Thread(target=self._run, name="bench-readers", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._running:
            for key, _ in self._selector.select(timeout=0.1):
                index = key.data
                try:
                    chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    self._selector.unregister(key.fileobj)
                    continue
                now = time.perf_counter()
                buffer = self._buffers[index] + chunk
                end = 0
                for match in _MESSAGE_ID.finditer(buffer):
                    self.seen[index][int(match.group(1))] = now
                    end = match.end()
                self._buffers[index] = buffer[end:]
                with self._cond:
                    self._cond.notify_all()

    def wait_all(self, version: int, deadline: float) -> float | None:
        """When the last client got `version` (perf_counter time), or None at the deadline."""
        with self._cond:
            while True:
                arrivals = [seen.get(version) for seen in self.seen]
                if all(a is not None for a in arrivals):
                    return max(a for a in arrivals if a is not None)
                left = deadline - time.perf_counter()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 0.1))

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=5)
        for sock in self._sockets:
            self._selector.unregister(sock) if sock in self._selector.get_map() else None
            sock.close()
        self._selector.close()


def run_web_bench(clients: int = 50, events: int = 100, timeout: float = 60.0) -> BenchResult:
    """Open `clients` streams on one game, post `events` events one after another, time the fan-out."""
    token = secrets.token_urlsafe(12)
    latencies: list[float] = []
    posts: list[float] = []
    timed_out = False
    with tempfile.TemporaryDirectory(prefix="dicetray-bench-") as data:
        app = create_app({"DATA_DIR": data, "HOST_TOKEN": token, "HEARTBEAT_SECONDS": 15.0})
        server = BackgroundServer(app, threads=clients + 16).start()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
        readers = None
        try:
            conn.request("POST", "/api/games", json.dumps({"game": "tossup", "players": ["A", "B"]}), headers)
            game_id = json.loads(conn.getresponse().read())["id"]
            deadline = time.perf_counter() + timeout
            readers = _Readers(server.port, f"/api/games/{game_id}/stream", clients)
            if readers.wait_all(0, deadline) is None:
                raise RuntimeError(f"not all {clients} streams opened within {timeout} s")
            for version in range(1, events + 1):
                body = f'{{"event": {_CAUTION_JSON}, "version": {version - 1}}}'
                sent = time.perf_counter()
                conn.request("POST", f"/api/games/{game_id}/events", body, headers)
                response = conn.getresponse()
                response.read()
                posts.append((time.perf_counter() - sent) * 1000)
                if response.status != 200:
                    raise RuntimeError(f"event {version} was refused with HTTP {response.status}")
                arrived = readers.wait_all(version, deadline)
                if arrived is None:
                    timed_out = True
                    break
                latencies.append((arrived - sent) * 1000)
        finally:
            conn.close()
            if readers is not None:
                readers.close()
            server.stop()
            app.extensions[EXTENSION].close()
    return BenchResult(clients, len(latencies), latencies, posts, timed_out)
