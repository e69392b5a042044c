"""The ASGI front of `dicetray serve`: live streams on the event loop, everything else to Flask.

An open live page costs a socket and a small task here, never a thread, so hundreds of tablets
and phones cannot starve the API; a closed tab is noticed at once (uvicorn reports the
disconnect) instead of at the next heartbeat. Pages and the JSON API stay a plain Flask app,
run by a2wsgi on a thread pool of their own. Why this design: docs/server.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, MutableMapping
from urllib.parse import parse_qs

from a2wsgi import WSGIMiddleware
from flask import Flask

from scorekeeper.store import GameNotFound
from scorekeeper.table.preview import BOUNDARY, multipart
from scorekeeper.web.app import SECURITY_HEADERS
from scorekeeper.web.broker import StreamClosed
from scorekeeper.web.context import EXTENSION, LIVE_EXTENSION
from scorekeeper.web.stream import HEADERS, HEARTBEAT, follow, opening, parse_last_event_id

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_STREAM_PATH = re.compile(r"^/api/games/([^/]+)/stream$")
_PREVIEW_PATH = "/preview.mjpg"
#: Threads that read a game for a stream's first message (the store may wait on a disk write).
OPENING_THREADS = 4
#: Threads that wait for the camera preview's next JPEG: one per open preview, beyond that the
#: previews take turns. Only the host opens it, so a few are plenty.
PREVIEW_THREADS = 8


class PushApp:
    """ASGI app: live streams and the camera preview served here, the rest by Flask (`threads` workers)."""

    def __init__(self, app: Flask, threads: int = 16) -> None:
        self.app = app
        self.wsgi = WSGIMiddleware(app, workers=max(1, threads))  # type: ignore[arg-type]
        self.max_body = app.config.get("MAX_CONTENT_LENGTH")
        self._openings = ThreadPoolExecutor(OPENING_THREADS, thread_name_prefix="dicetray-open")
        self._previews = ThreadPoolExecutor(PREVIEW_THREADS, thread_name_prefix="dicetray-preview")

    def close(self) -> None:
        self._openings.shutdown(wait=False, cancel_futures=True)
        self._previews.shutdown(wait=False, cancel_futures=True)
        self.wsgi.executor.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no websockets, and lifespan is off
        match = _STREAM_PATH.match(scope["path"])
        if match and scope["method"] == "GET":
            await self.stream(match.group(1), scope, receive, send)
            return
        table = self.app.extensions.get(LIVE_EXTENSION)
        if scope["path"] == _PREVIEW_PATH and scope["method"] == "GET" and table is not None:
            # Under Flask the preview would never learn that its tab closed (a2wsgi drops what
            # it sends to a gone client), and would hold a worker and the encoder for ever.
            await self.preview(table, receive, send)
            return
        # uvicorn (h11) has already refused a Content-Length that is not a number.
        length = _header(scope, b"content-length")
        if self.max_body is not None and length is not None and length.isascii() and length.isdigit():
            if len(length) > 18 or int(length) > self.max_body:
                # Refused before a byte of the body is read, let alone stored.
                await _answer(send, 413, f"the body is larger than the limit of {self.max_body} bytes")
                return
        await self.wsgi(scope, receive, send)  # type: ignore[arg-type]

    async def stream(self, game_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        board = self.app.extensions[EXTENSION]
        config = self.app.config
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        raw_last = _header(scope, b"last-event-id") or (query.get("last_event_id") or [None])[0]
        last_id = parse_last_event_id(raw_last)
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        sub = board.broker.subscribe(game_id)
        sub.notify = lambda: loop.call_soon_threadsafe(wake.set)
        gone = asyncio.Event()
        watcher = asyncio.create_task(_watch_disconnect(receive, gone, wake))
        try:
            try:
                first, sent = await loop.run_in_executor(
                    self._openings, opening, board, game_id, last_id, int(config["RETRY_MS"]),
                    self.app.extensions.get(LIVE_EXTENSION))
            except GameNotFound as error:
                # Let go of the subscription before answering: a client that has its 404 holds
                # nothing on the server any more.
                board.broker.unsubscribe(sub)
                await _answer(send, 404, str(error))
                return
            headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
            headers += [(name.lower().encode(), value.encode()) for name, value in HEADERS.items()]
            headers += _security_headers()
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"".join(first), "more_body": True})
            heartbeat = float(config["HEARTBEAT_SECONDS"])
            while not gone.is_set():
                try:
                    async with asyncio.timeout(heartbeat):
                        await wake.wait()
                except TimeoutError:
                    await send({"type": "http.response.body", "body": HEARTBEAT, "more_body": True})
                    continue
                wake.clear()
                out = []
                while (message := sub.poll()) is not None:
                    chunk, sent = follow(message, sent)
                    if chunk is not None:
                        out.append(chunk)
                if out:
                    await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
        except StreamClosed:
            log.debug("stream for %s ended: server shutting down", game_id)
        finally:
            board.broker.unsubscribe(sub)
            watcher.cancel()
        if not gone.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})


    async def preview(self, table: Any, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        frames = table.preview.frames()
        gone = asyncio.Event()
        watcher = asyncio.create_task(_watch_disconnect(receive, gone, asyncio.Event()))
        headers = [(b"content-type", f"multipart/x-mixed-replace; boundary={BOUNDARY}".encode()),
                   (b"cache-control", b"no-cache, no-store"), (b"x-accel-buffering", b"no"), *_security_headers()]
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            while not gone.is_set():
                # Each JPEG comes within the encoder's keep-alive (5 s): a closed tab is let go by then.
                jpeg = await loop.run_in_executor(self._previews, next, frames, None)
                if jpeg is None:
                    break  # the preview closed (the server is stopping)
                await send({"type": "http.response.body", "body": multipart(jpeg), "more_body": True})
        finally:
            watcher.cancel()
            try:
                await loop.run_in_executor(self._previews, frames.close)
            except ValueError:
                pass  # cancelled mid-wait (shutdown): closing the preview ends the generator
        if not gone.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _watch_disconnect(receive: Receive, gone: asyncio.Event, wake: asyncio.Event) -> None:
    # A GET has no body: the next message the server has for us is the client going away.
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            wake.set()
            return


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _security_headers() -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]


async def _answer(send: Send, status: int, error: str) -> None:
    """A JSON error answered here, shaped like the Flask app's."""
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close"), *_security_headers()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
