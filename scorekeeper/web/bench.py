"""`dicetray bench web`: the API's speed with many live pages open, fan-out, reloads and memory.

Everything stays on loopback: a throwaway data directory, the server (`dicetray serve`'s uvicorn
front) in a process of its own pinned to one core, and raw-socket stream clients read by one
selector thread in this process.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import multiprocessing
import os
import re
import secrets
import selectors
import signal
import socket
import statistics
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from dataclasses import dataclass, field

from scorekeeper.web.app import create_app
from scorekeeper.web.server import WebServer

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
    half_open: int = 0
    api_ms: list[float] = field(default_factory=list)
    snapshots: int = 0
    reload_rounds: int = 0
    reload_api_ms: list[float] = field(default_factory=list)
    reload_snapshots_missed: int = 0
    games: int = 0
    rss_empty_mib: float = float("nan")
    rss_games_mib: float = float("nan")
    server_cpus: str = ""

    @property
    def api_p50_ms(self) -> float:
        return _percentile(self.api_ms, 50)

    @property
    def api_p95_ms(self) -> float:
        return _percentile(self.api_ms, 95)

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
        self._port = port
        self._path = path
        self._sockets: list[socket.socket] = []
        for index in range(count):
            self._sockets.append(self._connect(index))
        self._running = True
        self._thread = threading.Thread(target=self._run, name="bench-readers", daemon=True)
        self._thread.start()

    def _connect(self, index: int) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self._port))
        # HTTP/1.0 keeps the body unchunked: the bytes are the event stream itself.
        sock.sendall(f"GET {self._path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        sock.setblocking(False)
        self._selector.register(sock, selectors.EVENT_READ, index)
        return sock

    def reload(self, indexes: range) -> None:
        """Close these clients' pages and open them again at once (a tab reloading)."""
        with self._cond:
            for index in indexes:
                old = self._sockets[index]
                if old in self._selector.get_map():
                    self._selector.unregister(old)
                old.close()
                self.seen[index] = {}
                self._buffers[index] = b""
            for index in indexes:
                self._sockets[index] = self._connect(index)

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
                    try:
                        self._selector.unregister(key.fileobj)
                    except (KeyError, ValueError):
                        pass  # reload() closed it meanwhile
                    continue
                now = time.perf_counter()
                with self._cond:
                    buffer = self._buffers[index] + chunk
                    end = 0
                    for match in _MESSAGE_ID.finditer(buffer):
                        self.seen[index][int(match.group(1))] = now
                        end = match.end()
                    self._buffers[index] = buffer[end:]
                    self._cond.notify_all()

    def wait_all(self, version: int, deadline: float, indexes: range | None = None) -> float | None:
        """When the last client got `version` (perf_counter time), or None at the deadline."""
        with self._cond:
            while True:
                chosen = self.seen if indexes is None else [self.seen[i] for i in indexes]
                arrivals = [seen.get(version) for seen in chosen]
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




def run_web_bench(clients: int = 50, events: int = 100, timeout: float = 60.0, half_open: int = 0,
                  api_requests: int = 200, reload_tabs: int = 0, reload_rounds: int = 5, games: int = 0,
                  server_cpus: set[int] | None = None) -> BenchResult:
    """Serve from a child process; open `clients` live pages and `half_open` stalled requests; time
    the API, the fan-out of `events` events, `reload_rounds` reloads of `reload_tabs` tabs at once,
    and the server's memory before and after `games` games played and left."""
    token = secrets.token_urlsafe(12)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    latencies: list[float] = []
    posts: list[float] = []
    timed_out = False
    with tempfile.TemporaryDirectory(prefix="dicetray-bench-") as data:
        server = _ChildServer(Path(data), token, server_cpus)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
        readers = None
        stalled: list[socket.socket] = []
        try:
            rss_empty = server.rss_mib()
            game_id = _post(conn, "/api/games", {"game": "tossup", "players": ["A", "B"]}, headers)["id"]
            stream = f"/api/games/{game_id}/stream"
            deadline = time.perf_counter() + timeout
            for _ in range(half_open):
                sock = socket.create_connection(("127.0.0.1", server.port))
                sock.sendall(b"GET /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")  # never finished
                stalled.append(sock)
            readers = _Readers(server.port, stream, clients + reload_tabs)
            readers.wait_all(0, deadline)
            snapshots = sum(1 for seen in readers.seen if 0 in seen)
            api = [_timed_get(conn, f"/api/games/{game_id}/view") for _ in range(api_requests)]
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
            reload_api: list[float] = []
            missed = 0
            if reload_tabs:
                tabs = range(clients, clients + reload_tabs)
                version = events
                for _ in range(reload_rounds):
                    stop = threading.Event()
                    poller = threading.Thread(target=_poll_api, args=(server.port, f"/api/games/{game_id}/view",
                                                                      stop, reload_api, timeout))
                    poller.start()
                    readers.reload(tabs)
                    if readers.wait_all(version, time.perf_counter() + timeout, tabs) is None:
                        missed += sum(1 for i in tabs if version not in readers.seen[i])
                    stop.set()
                    poller.join()
            for number in range(games):
                _play_and_leave(conn, headers, number)
            rss_games = server.rss_mib() if games else float("nan")
        finally:
            conn.close()
            for sock in stalled:
                sock.close()
            if readers is not None:
                readers.close()
            server.stop()
    return BenchResult(clients, len(latencies), latencies, posts, timed_out, half_open=half_open, api_ms=api,
                       snapshots=snapshots, reload_rounds=reload_rounds if reload_tabs else 0,
                       reload_api_ms=reload_api, reload_snapshots_missed=missed, games=games,
                       rss_empty_mib=rss_empty, rss_games_mib=rss_games, server_cpus=server.cpus)


def _post(conn: http.client.HTTPConnection, path: str, body: object, headers: dict[str, str]) -> dict:
    conn.request("POST", path, json.dumps(body), headers)
    response = conn.getresponse()
    answer = json.loads(response.read())
    if response.status >= 300:
        raise RuntimeError(f"POST {path} answered {response.status}: {answer}")
    return dict(answer)


def _timed_get(conn: http.client.HTTPConnection, path: str) -> float:
    started = time.perf_counter()
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}")
    return (time.perf_counter() - started) * 1000


def _poll_api(port: int, path: str, stop: threading.Event, times: list[float], timeout: float) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        while not stop.is_set():
            times.append(_timed_get(conn, path))
    finally:
        conn.close()


#: A short Toss Up game to its end: both players bank 100 points over two turns each.
_GAME_EVENTS = [{"type": "roll", "dice": ["green"] * 10}, {"type": "stop"}] * 2


def _play_and_leave(conn: http.client.HTTPConnection, headers: dict[str, str], number: int) -> None:
    game = _post(conn, "/api/games", {"game": "tossup", "players": [f"Ann {number}", f"Bob {number}"],
                                      "options": {"target": 20}}, headers)
    for version, event in enumerate(_GAME_EVENTS):
        _post(conn, f"/api/games/{game['id']}/events", {"event": event, "version": version}, headers)
    conn.request("GET", f"/api/games/{game['id']}/view")
    conn.getresponse().read()


def _serve(pipe: Connection, data: str, token: str, cpus: set[int] | None) -> None:
    """The child process: `dicetray serve`'s server over a throwaway data folder."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    logging.basicConfig(level=logging.WARNING)
    app = create_app({"DATA_DIR": data, "HOST_TOKEN": token, "HEARTBEAT_SECONDS": 15.0})
    server = WebServer(app)
    pipe.send(server.port)
    pipe.close()
    server.run()
    app.extensions["dicetray"].close()


class _ChildServer:
    def __init__(self, data: Path, token: str, cpus: set[int] | None) -> None:
        available = sorted(os.sched_getaffinity(0))
        self._own_cpus = set(available)
        if cpus is None and len(available) > 1:
            cpus = {available[0]}  # the server on one core, the clients on the others
            os.sched_setaffinity(0, set(available[1:]))
        self.cpus = ",".join(map(str, sorted(cpus))) if cpus else "any"
        parent, child = multiprocessing.get_context("spawn").Pipe()
        self.process = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(child, str(data), token, cpus), daemon=True)
        self.process.start()
        if not parent.poll(60):
            self.process.kill()
            raise RuntimeError("the bench server did not start within 60 s")
        self.port: int = parent.recv()

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        if self.process.pid is not None:
            os.kill(self.process.pid, signal.SIGTERM)
        self.process.join(15)
        if self.process.is_alive():
            self.process.kill()
        os.sched_setaffinity(0, self._own_cpus)
