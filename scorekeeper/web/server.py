"""Running the app under waitress: in the foreground (`dicetray serve`) or in a thread (tests, bench)."""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from flask import Flask
from waitress import create_server

from scorekeeper.web.app import end_streams

log = logging.getLogger(__name__)

#: Every open stream holds a waitress thread, so the pool must outnumber the phones and tablets.
MIN_THREADS = 64


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


class BackgroundServer:
    """waitress serving `app` from a thread until `stop()`; binds a free port when port is 0."""

    def __init__(self, app: Flask, host: str = "127.0.0.1", port: int = 0, threads: int = MIN_THREADS,
                 **adjustments: Any) -> None:
        self.app = app
        self.server = create_server(app, host=host, port=port, threads=max(threads, 1),
                                    ident="dicetray", **adjustments)
        self.host = host
        self.port: int = self.server.effective_port  # type: ignore[union-attr]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dicetray-waitress", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> "BackgroundServer":
        self._thread.start()
        return self

    def _loop(self) -> None:
        server = self.server
        # One step at a time, so the loop can notice stop() and close everything from this thread.
        while not self._stop.is_set():
            server.asyncore.loop(timeout=0.05, map=server._map, use_poll=True, count=1)  # type: ignore[union-attr]
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=5)  # type: ignore[union-attr]
        server.asyncore.close_all(server._map)  # type: ignore[union-attr]

    def stop(self) -> None:
        # Open streams (and previews) would hold their threads for ever: end them first.
        end_streams(self.app)
        self._stop.set()
        self._thread.join(timeout=10)

    def __enter__(self) -> "BackgroundServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
