"""Running the app under uvicorn: in the foreground (`dicetray serve`) or in a thread (tests, bench).

uvicorn serves push.PushApp: live streams on its event loop, pages and the API through Flask on
a thread pool (docs/server.md).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from types import FrameType
from typing import Callable

import uvicorn
from flask import Flask

from scorekeeper.web.app import end_streams
from scorekeeper.web.push import PushApp

log = logging.getLogger(__name__)

#: Threads for pages and the API; live streams need none, so a few serve a whole family.
DEFAULT_THREADS = 16
#: Connections waiting to be accepted: a burst of reloading tabs must not be turned away.
BACKLOG = 2048


def lan_address() -> str:
    """This machine's address on the local network (where phones can reach it), else loopback."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # Connecting a UDP socket sends nothing; it only picks the outgoing interface.
        probe.connect(("10.254.254.254", 1))
        return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def listen(host: str, port: int) -> socket.socket:
    """A listening socket; raises OSError (e.g. the port is taken) before anything else starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it every keep-alive answer waits 40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class _Uvicorn(uvicorn.Server):
    """uvicorn that ends the open streams on the first stop signal and ignores later ones."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_stop = on_stop

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            # A second Ctrl-C (or a signal sent both to `timeout` and to us): the orderly stop
            # is under way; interrupting it would leave the camera's threads to a crashed exit.
            log.info("already stopping (signal %s)", sig)
            return
        self.stop()

    def stop(self) -> None:
        # Streams wait for the next change for ever: end them, so the shutdown need not wait.
        self._on_stop()
        self.should_exit = True


class WebServer:
    """The app on a listening socket; `run()` in the foreground or `start()` in a thread."""

    def __init__(self, app: Flask, host: str = "127.0.0.1", port: int = 0,
                 threads: int = DEFAULT_THREADS) -> None:
        self.app = app
        self.host = host
        self.socket = listen(host, port)
        self.port: int = self.socket.getsockname()[1]
        self.push = PushApp(app, threads=threads)
        config = uvicorn.Config(
            self.push, lifespan="off", http="h11", ws="none", log_config=None, access_log=False,
            # Idle keep-alive connections are closed after 5 s; a stop waits at most 3 s for answers.
            timeout_keep_alive=5, timeout_graceful_shutdown=3, backlog=BACKLOG,
            server_header=False,
        )
        self.server = _Uvicorn(config, on_stop=lambda: end_streams(app))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def run(self) -> None:
        """Serve until a stop signal (SIGINT/SIGTERM) or `stop()`."""
        try:
            asyncio.run(self.server.serve(sockets=[self.socket]))
        finally:
            self.push.close()
            self.socket.close()

    def start(self) -> "WebServer":
        self._thread = threading.Thread(target=self.run, name="dicetray-uvicorn", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> "WebServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
