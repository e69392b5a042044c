"""GET /api/games/<id>/stream: server-sent events for one game."""

from __future__ import annotations

import json
import logging
from typing import Iterator

from flask import Blueprint, Response, current_app, request

from scorekeeper.table.live import LiveTable
from scorekeeper.web.app import LIVE_EXTENSION, scoreboard
from scorekeeper.web.broker import StreamClosed, StreamMessage
from scorekeeper.web.service import Scoreboard

log = logging.getLogger(__name__)

bp = Blueprint("stream", __name__, url_prefix="/api")


def _last_event_id() -> int | None:
    raw = request.headers.get("Last-Event-ID") or request.args.get("last_event_id")
    if raw is None or not raw.strip().isdigit():
        return None
    return int(raw.strip())


@bp.get("/games/<game_id>/stream")
def stream(game_id: str) -> Response:
    board = scoreboard()
    board.get(game_id)  # an unknown game 404s before any stream starts
    heartbeat = float(current_app.config["HEARTBEAT_SECONDS"])
    retry = int(current_app.config["RETRY_MS"])
    live: LiveTable | None = current_app.extensions.get(LIVE_EXTENSION)
    body = _events(board, game_id, _last_event_id(), heartbeat, retry, live)
    response = Response(body, mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response


def _events(board: Scoreboard, game_id: str, last_id: int | None,
            heartbeat: float, retry: int, live: LiveTable | None = None) -> Iterator[bytes]:
    # Subscribe before reading the game, so no change can fall between the two.
    sub = board.broker.subscribe(game_id)
    try:
        # A comment at once lets every proxy and browser see the headers now.
        yield f": dicetray stream for {game_id}\nretry: {retry}\n\n".encode()
        loaded = board.get(game_id)
        missed = None if last_id is None else board.broker.missed(game_id, last_id, loaded.version)
        if missed is None:
            first = board.snapshot(game_id)
            sent = first.id or 0
            yield first.encode()
        else:
            sent = last_id or 0
            for message in missed:
                sent = message.id or sent
                yield message.encode()
            progress = board.progress(board.get(game_id))
            if progress is not None:
                yield StreamMessage("choices", json.dumps(progress.as_json())).encode()
        if live is not None:
            # Camera state and any pending reading: full state each time, so merging loses nothing.
            yield StreamMessage("live", json.dumps(live.view(game_id))).encode()
        while True:
            message = sub.get(heartbeat)
            if message is None:
                yield b": heartbeat\n\n"
                continue
            if message.id is not None:
                if message.id <= sent:
                    continue  # already covered by the snapshot or the replay
                sent = message.id
            yield message.encode()
    except StreamClosed:
        log.debug("stream for %s ended: server shutting down", game_id)
    finally:
        board.broker.unsubscribe(sub)
