"""The app factory: `create_app(config)` wires the store, broker and auth into Flask."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from flask import Flask, Response, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from scorekeeper import __version__
from scorekeeper.table.live import LIVE_DEFAULTS, ConfigError, live_table_from_config
from scorekeeper.paths import default_data_dir
from scorekeeper.rules import RuleError
from scorekeeper.store import GameNotFound, GameStore, VersionConflict
from scorekeeper.web.auth import Auth
from scorekeeper.web.broker import Broker
from scorekeeper.web.service import Scoreboard

log = logging.getLogger(__name__)

EXTENSION = "dicetray"
LIVE_EXTENSION = "dicetray.live"

#: Every setting the app reads, with its default.
DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "DATA_DIR": None,  # None: scorekeeper.paths.default_data_dir()
    "HOST_TOKEN": None,  # None: a random token (printed by `dicetray serve`)
    "SECRET_KEY": None,  # None: random, so player tokens end with the process
    "PUBLIC_URL": None,  # base URL for join links and QR codes; None: the URL the page was loaded from
    "HEARTBEAT_SECONDS": 15.0,
    "RETRY_MS": 3000,
    "STREAM_QUEUE_SIZE": 32,
    "REPLAY_SIZE": 64,
    "MAX_CONTENT_LENGTH": 64 * 1024,
    # The live table (camera -> scanner -> game); documented in scorekeeper/live.py.
    **LIVE_DEFAULTS,
})
#: Prefixes of dicetray's own settings: a key with one of them that is not in DEFAULTS is a typo.
_OWN_PREFIXES = ("LIVE_", "PREVIEW_", "STREAM_", "HEARTBEAT_", "RETRY_", "REPLAY_")


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The scoreboard app; with LIVE_SOURCE set it also starts the live table (camera thread).

    Raises ConfigError (a ValueError) naming the setting for an unknown or bad live setting.
    """
    app = Flask(__name__)
    app.config.from_mapping(dict(DEFAULTS))
    if config:
        unknown = sorted(k for k in config if k.startswith(_OWN_PREFIXES) and k not in DEFAULTS)
        if unknown:
            raise ConfigError(f"unknown setting(s) {unknown}; known: {sorted(k for k in DEFAULTS if k.startswith(_OWN_PREFIXES))}")
        app.config.from_mapping(config)
    if not app.config["HOST_TOKEN"]:
        app.config["HOST_TOKEN"] = secrets.token_urlsafe(12)
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = secrets.token_hex(32)
    data_dir = Path(app.config["DATA_DIR"] or default_data_dir())
    app.config["DATA_DIR"] = data_dir
    secret = app.config["SECRET_KEY"]
    board = Scoreboard(
        store=GameStore.in_dir(data_dir),
        broker=Broker(app.config["STREAM_QUEUE_SIZE"], app.config["REPLAY_SIZE"]),
        auth=Auth(app.config["HOST_TOKEN"], secret.encode() if isinstance(secret, str) else secret),
    )
    app.extensions[EXTENSION] = board
    try:
        table = live_table_from_config(board, app.config, data_dir)
    except ConfigError:
        board.close()
        raise
    if table is not None:
        app.extensions[LIVE_EXTENSION] = table
        # The camera thread writes through the board: stop it before the store closes.
        board.close_first(table.close)

    from scorekeeper.web import api, calibrate, live, pages, stream

    app.register_blueprint(pages.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(stream.bp)
    app.register_blueprint(live.bp)
    app.register_blueprint(calibrate.bp)
    app.register_error_handler(GameNotFound, _game_not_found)
    app.register_error_handler(VersionConflict, _conflict)
    app.register_error_handler(RuleError, _illegal)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)
    app.jinja_env.globals["version"] = __version__
    if table is not None:
        table.start()
        log.info("live table started: camera %s", table.camera.status().source)
    log.info("scoreboard ready, data in %s", data_dir)
    return app


def end_streams(app: Flask) -> None:
    """End every open event stream and preview, so the server's threads can finish (shutdown)."""
    app.extensions[EXTENSION].broker.close()
    table = app.extensions.get(LIVE_EXTENSION)
    if table is not None:
        table.preview.close()


def scoreboard() -> Scoreboard:
    """The current app's Scoreboard."""
    board: Scoreboard = current_app.extensions[EXTENSION]
    return board


def _wants_json() -> bool:
    return request.path.startswith("/api/")


def _game_not_found(error: GameNotFound) -> tuple[Any, int]:
    if _wants_json():
        return jsonify(error=str(error)), 404
    return render_template("error.html", code=404, name="No such game", message=str(error)), 404


def _conflict(error: VersionConflict) -> tuple[Any, int]:
    # Another device acted first; the caller learns the version to reload.
    return jsonify(error=str(error), version=error.actual), 409


def _illegal(error: RuleError) -> tuple[Any, int]:
    return jsonify(error=str(error)), 422


def _http_error(error: HTTPException) -> Response | tuple[Any, int]:
    code = error.code or 500
    if _wants_json():
        response = jsonify(error=error.description or error.name)
        response.status_code = code
        if code == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="dicetray"'
        return response
    return render_template("error.html", code=code, name=error.name, message=error.description), code


def _unexpected_error(error: Exception) -> tuple[Any, int]:
    # Log the trace for the operator; the page or client only learns that it failed.
    log.exception("unexpected error on %s %s", request.method, request.path)
    if _wants_json():
        return jsonify(error="internal error: the server log has the details"), 500
    return render_template("error.html", code=500, name="Internal error",
                           message="Something went wrong; the server log has the details."), 500
