"""The live table's routes: the MJPEG preview, roll photos, camera state and pending readings."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterator

from flask import Blueprint, Response, abort, current_app, jsonify, request, send_from_directory

from scorekeeper.table.live import PHOTO_DIR, LiveError, LiveTable
from scorekeeper.table.preview import BOUNDARY, multipart, placeholder
from scorekeeper.web.api import _body, _require_host
from scorekeeper.web.app import LIVE_EXTENSION

log = logging.getLogger(__name__)

bp = Blueprint("live", __name__)

_PHOTO_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}\.jpg$")
NO_CAMERA = "no camera: dicetray serve was started without --source or --demo; enter rolls by hand"


def live_table() -> LiveTable | None:
    """The current app's live table, or None when no camera is configured."""
    table: LiveTable | None = current_app.extensions.get(LIVE_EXTENSION)
    return table


def _require_live() -> LiveTable:
    table = live_table()
    if table is None:
        abort(409, NO_CAMERA)
    return table


@bp.get("/preview.mjpg")
def preview() -> Response:
    table = live_table()
    if table is None:
        # One placeholder part, then the response ends: the image shows why there is no picture.
        width = int(current_app.config.get("PREVIEW_WIDTH", 640))
        body: Iterator[bytes] = iter([multipart(placeholder(NO_CAMERA, width))])
    else:
        body = (multipart(jpeg) for jpeg in table.preview.frames())
    response = Response(body, mimetype=f"multipart/x-mixed-replace; boundary={BOUNDARY}")
    response.headers["Cache-Control"] = "no-cache, no-store"
    response.headers["X-Accel-Buffering"] = "no"
    return response


@bp.get(f"/{PHOTO_DIR}/<name>")
def roll_photo(name: str) -> Response:
    if not _PHOTO_NAME.match(name):
        abort(404, "roll photos are named like <game>-<n>-<id>.jpg")
    folder = Path(current_app.config["DATA_DIR"]) / PHOTO_DIR
    response = send_from_directory(folder, name, mimetype="image/jpeg", max_age=86400)
    return response


@bp.get("/api/live")
def state() -> Response:
    table = live_table()
    if table is None:
        return jsonify(enabled=False, message=NO_CAMERA)
    game = request.args.get("game")
    return jsonify(table.view(game))


@bp.post("/api/live/target")
def select_target() -> Response | tuple[Response, int]:
    _require_host()
    table = _require_live()
    body = _body()
    game = body.get("game")
    if game is not None and not isinstance(game, str):
        abort(400, "'game' must be a game id, or null for the most recently played unfinished game")
    try:
        target = table.select(game)
    except LiveError as error:
        return jsonify(error=str(error)), error.status
    return jsonify(target=target)


@bp.post("/api/live/pending/<pending_id>")
def resolve_pending(pending_id: str) -> Response | tuple[Response, int]:
    _require_host()
    table = _require_live()
    body = _body()
    unknown = set(body) - {"action", "dice"}
    if unknown:
        abort(400, f"unknown field(s) {sorted(unknown)}; expected action and dice")
    try:
        loaded = table.resolve(pending_id, body.get("action"), body.get("dice"))
    except LiveError as error:
        payload: dict[str, Any] = {"error": str(error)}
        if error.problems:
            payload["problems"] = [{"code": p.code, "message": p.message, "dice": list(p.dice)} for p in error.problems]
        return jsonify(payload), error.status
    if loaded is None:
        return jsonify(applied=False)
    return jsonify(applied=True, version=loaded.version, state=loaded.state())
