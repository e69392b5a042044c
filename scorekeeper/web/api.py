"""The JSON API under /api (documented in docs/api.md)."""

from __future__ import annotations

import logging
import math
from typing import Any

import segno
from flask import Blueprint, Response, abort, current_app, jsonify, request, url_for

from scorekeeper.store import GameNotFound, GameRecord, LoadedGame
from scorekeeper.web.access import caller, require_host, require_player_of
from scorekeeper.web.bodies import Choice, Join, NewEvent, NewGame, VersionOnly, body
from scorekeeper.web.context import scoreboard
from scorekeeper.web.service import GameNotOver, SeatHeld
from scorekeeper.web.stats import fairness_sample, game_stats
from scorekeeper.web.views import summary

log = logging.getLogger(__name__)

bp = Blueprint("api", __name__, url_prefix="/api")


def _game_json(loaded: LoadedGame) -> dict[str, Any]:
    return {"id": loaded.record.id, "version": loaded.version, "state": loaded.state()}


# -- games -------------------------------------------------------------------------


@bp.get("/games")
def list_games() -> Response:
    return jsonify(games=[summary(record) for record in scoreboard().list_games()])


@bp.post("/games")
def create_game() -> tuple[Response, int]:
    require_host()
    new = body(NewGame)
    loaded = scoreboard().create(new.game, list(new.players), new.options.given())
    response = jsonify(_game_json(loaded))
    response.headers["Location"] = url_for("api.get_game", game_id=loaded.record.id)
    return response, 201


@bp.get("/games/<game_id>")
def get_game(game_id: str) -> Response:
    return jsonify(_game_json(scoreboard().get(game_id)))


@bp.get("/games/<game_id>/view")
def get_view(game_id: str) -> Response:
    board = scoreboard()
    return jsonify(board.view(board.get(game_id)))


@bp.post("/games/<game_id>/events")
def post_event(game_id: str) -> Response:
    board = scoreboard()
    board.get(game_id)  # 404 before 401 keeps the errors about the game first
    who, player = require_player_of(game_id)
    sent = body(NewEvent)
    if not who.host:
        # A player's own decision here is only the Tally Up! shout in their own name.
        if sent.event.get("type") != "tally_up" or sent.event.get("player") != player:
            abort(403, f"a player's device may only shout Tally Up! for {player}; "
                       "other events come from the table (host)")
        if "reading" in sent.model_fields_set:
            abort(403, "only the table may send scanner readings")
    loaded = board.append(game_id, sent.event, sent.version, sent.reading)
    return jsonify(version=loaded.version, state=loaded.state())


@bp.post("/games/<game_id>/undo")
def undo(game_id: str) -> Response:
    board = scoreboard()
    board.get(game_id)
    require_host()
    loaded = board.undo(game_id, body(VersionOnly, required=False).version)
    return jsonify(version=loaded.version, state=loaded.state())


@bp.put("/games/<game_id>/events/<int:index>")
def edit_event(game_id: str, index: int) -> Response:
    board = scoreboard()
    board.get(game_id)
    require_host()
    sent = body(NewEvent)
    loaded = board.edit(game_id, index, sent.event, sent.version, sent.reading)
    return jsonify(version=loaded.version, state=loaded.state())


@bp.get("/games/<game_id>/events")
def list_events(game_id: str) -> Response:
    board = scoreboard()
    loaded = board.get(game_id)
    return jsonify(id=game_id, version=loaded.version, game=loaded.record.game,
                   players=loaded.record.players, events=board.history(game_id))


@bp.get("/games/<game_id>/stats")
def stats(game_id: str) -> Response:
    loaded = scoreboard().get(game_id)
    events, replayed = fairness_sample(loaded.events)
    dice = game_stats(loaded.record.game, events)
    return jsonify(id=game_id, version=loaded.version, dice=[die.as_json() for die in dice], replayed_left_out=replayed)


# -- secret IN/OUT ------------------------------------------------------------------


@bp.post("/games/<game_id>/choices")
def post_choice(game_id: str) -> Response:
    board = scoreboard()
    board.get(game_id)
    who, player = require_player_of(game_id)
    sent = body(Choice)
    if who.host:
        if sent.player is None:
            abort(400, "the host must name the 'player' whose choice this is")
        player = sent.player
    elif sent.player is not None and sent.player != player:
        abort(403, f"this device may only choose for {player}")
    assert player is not None
    result = board.choose(game_id, player, sent.choice, sent.version)
    return jsonify(
        version=result.loaded.version,
        state=result.loaded.state(),
        revealed=result.revealed,
        out=result.out,
        secret=result.progress.as_json() if result.progress else None,
        mine=None if result.revealed else sent.choice,
    )


@bp.get("/games/<game_id>/choices")
def get_choices(game_id: str) -> Response:
    board = scoreboard()
    loaded = board.get(game_id)
    who, player = require_player_of(game_id)
    progress = board.progress(loaded)
    return jsonify(
        version=loaded.version,
        secret=progress.as_json() if progress else None,
        mine=board.own_choice(loaded, player) if player else None,
    )


# -- joining -----------------------------------------------------------------------


def _join_url(code: str) -> str:
    base = current_app.config["PUBLIC_URL"] or request.host_url
    return base.rstrip("/") + url_for("pages.join", code=code)


@bp.get("/games/<game_id>/invite")
def invite(game_id: str) -> Response:
    board = scoreboard()
    record = board.get(game_id).record
    require_host()
    code = board.join_code(record)
    url = _join_url(code)
    svg = segno.make(url, error="m").svg_inline(scale=6, border=2, dark="#000", light="#fff")
    return jsonify(code=code, url=url, svg=svg)


def _record_by_code(code: str) -> GameRecord:
    """The game in progress with this join code; 404 for a wrong one, 429 after too many."""
    board = scoreboard()
    client = request.remote_addr or "?"
    wait = board.join_tries.wait(client)
    if wait > 0:
        response = jsonify(error=f"too many wrong join codes from this device: try again in {math.ceil(wait)} s")
        response.status_code = 429
        response.headers["Retry-After"] = str(math.ceil(wait))
        abort(response)
    try:
        return board.find_by_code(code)
    except GameNotFound:
        board.join_tries.failed(client)
        raise


@bp.get("/join/<code>")
def join_info(code: str) -> Response:
    record = _record_by_code(code)
    return jsonify(id=record.id, game=record.game, players=record.players)


@bp.post("/join/<code>")
def join(code: str) -> Response | tuple[Response, int]:
    board = scoreboard()
    record = _record_by_code(code)
    player = body(Join).player
    if player not in record.players:
        abort(400, f"'player' must be one of {record.players}")
    try:
        token = board.join(record, player, caller())
    except SeatHeld as error:
        return jsonify(error=str(error), held=True), 409
    log.info("a device joined game %s as %s", record.id, player)
    return jsonify(id=record.id, game=record.game, player=player, token=token)


@bp.get("/games/<game_id>/seats")
def seats(game_id: str) -> Response:
    board = scoreboard()
    record = board.get(game_id).record
    require_host()
    return jsonify(seats=[{"seat": seat, "player": name, "held": board.held_seat(game_id, seat) is not None}
                          for seat, name in enumerate(record.players)])


@bp.delete("/games/<game_id>/seats/<int:seat>")
def leave_seat(game_id: str, seat: int) -> Response:
    """The holder gives its seat up, or the host frees it (for a new phone, say)."""
    board = scoreboard()
    record = board.get(game_id).record
    who = caller()
    if not who.host and not (who.game_id == game_id and who.seat == seat):
        if who.anonymous:
            abort(401, "only the device holding this seat, or the host, may free it")
        abort(403, "a device may only leave its own seat")
    if seat >= len(record.players):
        abort(404, f"game {game_id} has seats 0 to {len(record.players) - 1}")
    freed = board.seats.release(game_id, seat)
    log.info("seat %s (%s) of game %s freed by %s", seat, record.players[seat], game_id,
             "the host" if who.host else "its holder")
    return jsonify(seat=seat, player=record.players[seat], held=False, freed=freed)


@bp.post("/games/<game_id>/rematch")
def rematch(game_id: str) -> tuple[Response, int]:
    """The same players and options again; the finished game's pages follow it."""
    require_host()
    try:
        loaded = scoreboard().rematch(game_id)
    except GameNotOver as error:
        abort(409, str(error))
    return jsonify(_game_json(loaded)), 201


@bp.post("/games/<game_id>/rematch/seat")
def rematch_seat(game_id: str) -> Response | tuple[Response, int]:
    """A player of a finished game takes the same seat in its rematch, without joining again."""
    board = scoreboard()
    board.get(game_id)
    _, player = require_player_of(game_id)
    if player is None:
        abort(400, "only a player's device has a seat to carry over")
    rematch_id = board.rematch_id(game_id)
    if rematch_id is None:
        abort(404, "this game has no rematch yet")
    record = board.get(rematch_id).record
    if player not in record.players:
        abort(409, f"{player} does not play in the rematch")
    try:  # the device that held the seat takes it in the rematch, unless another took it first
        token = board.join(record, player, caller())
    except SeatHeld as error:
        return jsonify(error=str(error), held=True), 409
    return jsonify(id=record.id, game=record.game, player=player, token=token, code=board.join_code(record))


@bp.get("/whoami")
def whoami() -> Response:
    who = caller()
    if who.host:
        return jsonify(role="host")
    if who.seat is not None and who.game_id is not None:
        return jsonify(role="player", game=who.game_id, player=who.player)
    if who.bad_token:
        abort(401, "this token is not valid (the server may have restarted: join again)")
    return jsonify(role="watcher")
