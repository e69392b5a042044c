"""GET /api/games/<id>/stream: server-sent events for one game.

What a stream sends is decided here once (`opening`, `follow`) for both ways of serving it: the
event loop in push.py (what `dicetray serve` uses: no thread per open page) and this blueprint's
generator (Flask alone, e.g. its test client), which holds a thread while the page is open.
"""

from __future__ import annotations

import json
import logging
from typing import Iterator

from flask import Blueprint, Response, current_app, request

from scorekeeper.table.live import LiveTable
from scorekeeper.web.auth import is_small_number
from scorekeeper.web.broker import StreamClosed, StreamMessage
from scorekeeper.web.context import live_table, scoreboard
from scorekeeper.web.service import Scoreboard

log = logging.getLogger(__name__)

bp = Blueprint("stream", __name__, url_prefix="/api")

HEARTBEAT = b": heartbeat\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def parse_last_event_id(raw: str | None) -> int | None:
    """The id a reconnecting browser last saw, or None (start from a snapshot)."""
    if raw is None or not is_small_number(raw.strip(), 18):
        return None  # not an id this server sent
    return int(raw.strip())


@bp.get("/games/<game_id>/stream")
def stream(game_id: str) -> Response:
    board = scoreboard()
    board.get(game_id)  # an unknown game 404s before any stream starts
    heartbeat = float(current_app.config["HEARTBEAT_SECONDS"])
    retry = int(current_app.config["RETRY_MS"])
    last_id = parse_last_event_id(request.headers.get("Last-Event-ID") or request.args.get("last_event_id"))
    body = _events(board, game_id, last_id, heartbeat, retry, live_table())
    response = Response(body, mimetype="text/event-stream")
    response.headers.update(HEADERS)
    return response


def opening(board: Scoreboard, game_id: str, last_id: int | None, retry: int,
            live: LiveTable | None) -> tuple[list[bytes], int]:
    """What a new stream sends first, and the id of the last change it covers.

    Call it after subscribing, so no change can fall between the two. Raises GameNotFound.
    """
    # A comment first lets every proxy and browser see the stream start at once.
    chunks = [f": dicetray stream for {game_id}\nretry: {retry}\n\n".encode()]
    loaded = board.get(game_id)
    missed = None if last_id is None else board.broker.missed(game_id, last_id, loaded.version)
    if missed is None:
        first = board.snapshot(game_id)
        sent = first.id or 0
        chunks.append(first.encode())
    else:
        sent = last_id or 0
        for message in missed:
            sent = message.id or sent
            chunks.append(message.encoded)
        progress = board.progress(board.get(game_id))
        if progress is not None:
            chunks.append(StreamMessage("choices", json.dumps(progress.as_json())).encode())
    if live is not None:
        # Camera state and any pending reading: full state each time, so merging loses nothing.
        chunks.append(StreamMessage("live", json.dumps(live.view(game_id))).encode())
    return chunks, sent


def follow(message: StreamMessage, sent: int) -> tuple[bytes | None, int]:
    """The bytes to send for `message` (None: the opening already covered it) and the new last id."""
    if message.id is not None:
        if message.id <= sent:
            return None, sent
        sent = message.id
    return message.encoded, sent


def _events(board: Scoreboard, game_id: str, last_id: int | None,
            heartbeat: float, retry: int, live: LiveTable | None = None) -> Iterator[bytes]:
    sub = board.broker.subscribe(game_id)
    try:
        first, sent = opening(board, game_id, last_id, retry, live)
        yield from first
        while True:
            message = sub.get(heartbeat)
            if message is None:
                yield HEARTBEAT
                continue
            chunk, sent = follow(message, sent)
            if chunk is not None:
                yield chunk
    except StreamClosed:
        log.debug("stream for %s ended: server shutting down", game_id)
    finally:
        board.broker.unsubscribe(sub)
