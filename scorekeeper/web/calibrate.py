"""The calibration wizard: its page and its JSON endpoints under /api/calibrate (host only).

Frames come from the live table's camera thread (the one owner of the camera); the wizard's
state is one `CalibrationSession` kept on the app, with the profile library of the data
directory beside it.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
from flask import Blueprint, Flask, Response, abort, current_app, jsonify, render_template
from flask.blueprints import BlueprintSetupState

from calibration.library import ProfileLibrary
from scanner.profile import ProfileError
from calibration.session import CalibrationError, CalibrationSession
from scorekeeper.web.access import require_host
from scorekeeper.web.bodies import (
    CalibrationConfirm,
    CalibrationExposure,
    CalibrationRoll,
    CalibrationSave,
    CalibrationStart,
    CalibrationTray,
    body,
)
from scorekeeper.web.context import live_table

log = logging.getLogger(__name__)

bp = Blueprint("calibrate", __name__)

EXTENSION = "dicetray.calibration"
#: How long to wait for the camera's next picture before saying it sends none.
FRAME_TIMEOUT = 5.0
NO_CAMERA = ("no camera: the wizard needs the camera above the tray; start dicetray serve with "
             "--source (or on the Pi, with the camera connected)")
_SHOT = re.compile(r"^[0-9a-f]{16}$")


class CalibrationDesk:
    """Per app: the profile library and the wizard session in progress (at most one)."""

    def __init__(self, data_dir: Path) -> None:
        self.library = ProfileLibrary(data_dir)
        self._lock = threading.Lock()
        self._session: CalibrationSession | None = None

    def start(self, name: str) -> CalibrationSession:
        base = None
        active = self.library.active_name()
        if active is not None:
            try:
                # Start from what the active profile knows (e.g. a taught Tally look).
                base = self.library.load(active)
            except ProfileError as error:
                log.warning("calibration starts from the defaults: %s", error)
        session = CalibrationSession(name, base)
        with self._lock:
            self._session = session
        return session

    def session(self) -> CalibrationSession:
        with self._lock:
            session = self._session
        if session is None:
            abort(409, "no calibration in progress: start one (POST /api/calibrate/start)")
        return session

    def current(self) -> CalibrationSession | None:
        with self._lock:
            return self._session


@bp.record_once
def _setup(state: BlueprintSetupState) -> None:
    app: Flask = state.app
    app.extensions[EXTENSION] = CalibrationDesk(Path(app.config["DATA_DIR"]))


def desk() -> CalibrationDesk:
    found: CalibrationDesk = current_app.extensions[EXTENSION]
    return found


def _frame() -> np.ndarray:
    """A picture taken after this request came in (the user may just have rolled)."""
    table = live_table()
    if table is None:
        abort(409, NO_CAMERA)
    newest = table.camera.wait_frame(0, timeout=0)
    seq = newest[0] if newest else 0
    got = None
    # The frame being read while the request arrived may show the tray as it was: take the
    # second one after it.
    for _ in range(2):
        got = table.camera.wait_frame(seq, timeout=FRAME_TIMEOUT)
        if got is None:
            state = table.camera_json()
            abort(503, f"the camera sends no pictures ({state['state']}{': ' + state['message'] if state['message'] else ''})")
        seq = got[0]
    assert got is not None
    return got[1].image


def _answer(work: Any) -> Response | tuple[Response, int]:
    try:
        return jsonify(work())
    except CalibrationError as error:
        return jsonify(error=str(error)), error.status
    except ProfileError as error:
        return jsonify(error=str(error)), 400


# -- the page ------------------------------------------------------------------------------


@bp.get("/calibrate")
def page() -> str:
    return render_template("calibrate.html", camera=live_table() is not None)


# -- state and profiles --------------------------------------------------------------------


@bp.get("/api/calibrate")
def state() -> Response:
    require_host()
    session = desk().current()
    table = live_table()
    return jsonify(
        session=session.state() if session else None,
        camera=table.camera_json() if table else None,
        profiles=[e.to_json() for e in desk().library.entries()],
        active=desk().library.active_name(),
    )


@bp.get("/api/calibrate/profiles")
def profiles() -> Response:
    require_host()
    return jsonify(profiles=[e.to_json() for e in desk().library.entries()], active=desk().library.active_name())


@bp.post("/api/calibrate/profiles/<name>/activate")
def activate(name: str) -> Response | tuple[Response, int]:
    require_host()

    def work() -> dict[str, Any]:
        path = desk().library.activate(name)
        table = live_table()
        if table is not None:
            table.use_profile(path)
        return {"active": name}

    return _answer(work)


# -- the steps -----------------------------------------------------------------------------


@bp.post("/api/calibrate/start")
def start() -> Response | tuple[Response, int]:
    require_host()
    name = body(CalibrationStart, required=False).name
    return _answer(lambda: {"session": desk().start(name).state()})


@bp.post("/api/calibrate/camera")
def camera_check() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    return _answer(lambda: session.camera_check(_frame()))


@bp.post("/api/calibrate/empty")
def empty() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    return _answer(lambda: session.capture_empty(_frame()))


@bp.post("/api/calibrate/tray")
def tray() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    corners = body(CalibrationTray).corners
    return _answer(lambda: session.set_tray(corners))


@bp.post("/api/calibrate/exposure")
def exposure() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    relock = body(CalibrationExposure, required=False).relock
    table = live_table()
    if table is None:
        abort(409, NO_CAMERA)
    return _answer(lambda: session.set_exposure(table.exposure(relock)))


@bp.post("/api/calibrate/roll")
def roll() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    dice = body(CalibrationRoll).dice
    return _answer(lambda: session.capture_roll(_frame(), dice))


@bp.post("/api/calibrate/confirm")
def confirm() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    sent = body(CalibrationConfirm)
    return _answer(lambda: session.confirm(sent.shot, sent.dice))


@bp.post("/api/calibrate/teach")
def teach() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    return _answer(session.learn_tally)


@bp.post("/api/calibrate/check")
def run_check() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    return _answer(session.run_check)


@bp.post("/api/calibrate/save")
def save() -> Response | tuple[Response, int]:
    require_host()
    session = desk().session()
    activate_it = body(CalibrationSave, required=False).activate

    def work() -> dict[str, Any]:
        path = session.save(desk().library, activate=activate_it)
        table = live_table()
        if table is not None and activate_it:
            table.use_profile(path)
        return {"saved": path.stem, "active": desk().library.active_name(), "session": session.state()}

    return _answer(work)


@bp.get("/api/calibrate/shots/<name>.jpg")
def shot(name: str) -> Response:
    # Photos are named by 64 random bits: an <img> cannot send the host token.
    session = desk().current()
    data = session.jpeg(name) if session is not None and _SHOT.match(name) else None
    if data is None:
        abort(404, "no such calibration photo")
    response = Response(data, mimetype="image/jpeg")
    response.headers["Cache-Control"] = "private, max-age=3600"
    return response


