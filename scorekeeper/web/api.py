"""The JSON API under /api (documented in docs/api.md)."""

from __future__ import annotations

import json
import logging
from typing import Any

import segno
from flask import Blueprint, Response, abort, current_app, jsonify, request, url_for

from scorekeeper.store import LoadedGame
from scorekeeper.web.app import scoreboard
from scorekeeper.web.auth import Caller
from scorekeeper.web.service import GameNotOver
from scorekeeper.web.stats import fairness_sample, game_stats
from scorekeeper.web.views import summary

log = logging.getLogger(__name__)

bp = Blueprint("api", __name__, url_prefix="/api")


# -- request helpers ---------------------------------------------------------------


def _body(required: bool = True) -> dict[str, Any]:
    """The request's JSON object; 400 with a reason when it is not one."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if required:
            abort(400, "the request needs a JSON object as its body")
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        abort(400, f"the body is not valid JSON: {error}")
    if not isinstance(data, dict):
        abort(400, f"the body must be a JSON object, not {type(data).__name__}")
    return data


def _version(body: dict[str, Any]) -> int | None:
    version = body.get("version")
    if version is None:
        return None
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        abort(400, f"'version' must be a whole number (the version the device last saw), got {version!r}")
    return version


def _event(body: dict[str, Any]) -> dict[str, Any]:
    event = body.get("event")
    if not isinstance(event, dict):
        abort(400, "the body needs 'event': a JSON object such as {\"type\": \"roll\", ...}")
    return event


def _reading(body: dict[str, Any]) -> dict[str, Any] | None:
    reading = body.get("reading")
    if reading is not None and not isinstance(reading, dict):
        abort(400, "'reading', when given, must be a JSON object")
    return reading


def _caller() -> Caller:
    board = scoreboard()
    return board.auth.identify(request.headers.get("Authorization"), board.players_of)


def _require_host() -> Caller:
    caller = _caller()
    if caller.host:
        return caller
    if caller.anonymous:
        abort(401, "this needs the host token (Authorization: Bearer <token>)")
    abort(403, "only the host may do this; a player's device may only send that player's own decisions")


def _require_player_of(game_id: str) -> tuple[Caller, str | None]:
    """The host (player None) or a player of this game (their name)."""
    caller = _caller()
    if caller.host:
        return caller, None
    if caller.anonymous:
        abort(401, "join the game first (or use the host token)")
    if caller.game_id != game_id:
        abort(403, "this player token belongs to another game")
    players = scoreboard().players_of(game_id) or []
    assert caller.seat is not None
    return caller, players[caller.seat]


def _game_json(loaded: LoadedGame) -> dict[str, Any]:
    return {"id": loaded.record.id, "version": loaded.version, "state": loaded.state()}


# -- games -------------------------------------------------------------------------


@bp.get("/games")
def list_games() -> Response:
    return jsonify(games=[summary(record) for record in scoreboard().list_games()])


@bp.post("/games")
def create_game() -> tuple[Response, int]:
    _require_host()
    body = _body()
    game, players, options = body.get("game"), body.get("players"), body.get("options", {})
    if not isinstance(game, str):
        abort(400, "'game' must be \"tossup\" or \"tallyup\"")
    if not isinstance(players, list):
        abort(400, "'players' must be a list of names")
    if not isinstance(options, dict):
        abort(400, "'options', when given, must be a JSON object")
    unknown = set(body) - {"game", "players", "options"}
    if unknown:
        abort(400, f"unknown field(s) {sorted(unknown)}; expected game, players, options")
    loaded = scoreboard().create(game, players, options)
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
    caller, player = _require_player_of(game_id)
    body = _body()
    event = _event(body)
    version = _version(body)
    if not caller.host:
        # A player's own decision here is only the Tally Up! shout in their own name.
        if event.get("type") != "tally_up" or event.get("player") != player:
            abort(403, f"a player's device may only shout Tally Up! for {player}; "
                       "other events come from the table (host)")
        if "reading" in body:
            abort(403, "only the table may send scanner readings")
    loaded = board.append(game_id, event, version, _reading(body))
    return jsonify(version=loaded.version, state=loaded.state())


@bp.post("/games/<game_id>/undo")
def undo(game_id: str) -> Response:
    board = scoreboard()
    board.get(game_id)
    _require_host()
    loaded = board.undo(game_id, _version(_body(required=False)))
    return jsonify(version=loaded.version, state=loaded.state())


@bp.put("/games/<game_id>/events/<int:index>")
def edit_event(game_id: str, index: int) -> Response:
    board = scoreboard()
    board.get(game_id)
    _require_host()
    body = _body()
    loaded = board.edit(game_id, index, _event(body), _version(body), _reading(body))
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
    caller, player = _require_player_of(game_id)
    body = _body()
    choice = body.get("choice")
    if choice not in ("in", "out"):
        abort(400, "'choice' must be \"in\" or \"out\"")
    named = body.get("player")
    if caller.host:
        if not isinstance(named, str):
            abort(400, "the host must name the 'player' whose choice this is")
        player = named
    elif named is not None and named != player:
        abort(403, f"this device may only choose for {player}")
    assert player is not None
    result = board.choose(game_id, player, choice, _version(body))
    return jsonify(
        version=result.loaded.version,
        state=result.loaded.state(),
        revealed=result.revealed,
        out=result.out,
        secret=result.progress.as_json() if result.progress else None,
        mine=None if result.revealed else choice,
    )


@bp.get("/games/<game_id>/choices")
def get_choices(game_id: str) -> Response:
    board = scoreboard()
    loaded = board.get(game_id)
    caller, player = _require_player_of(game_id)
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
    _require_host()
    code = board.join_code(record)
    url = _join_url(code)
    svg = segno.make(url, error="m").svg_inline(scale=6, border=2, dark="#000", light="#fff")
    return jsonify(code=code, url=url, svg=svg)


@bp.get("/join/<code>")
def join_info(code: str) -> Response:
    record = scoreboard().find_by_code(code)
    return jsonify(id=record.id, game=record.game, players=record.players)


@bp.post("/join/<code>")
def join(code: str) -> Response:
    board = scoreboard()
    record = board.find_by_code(code)
    player = _body().get("player")
    if player not in record.players:
        abort(400, f"'player' must be one of {record.players}")
    token = board.auth.player_token(record.id, record.players.index(player), player)
    log.info("a device joined game %s as %s", record.id, player)
    return jsonify(id=record.id, game=record.game, player=player, token=token)


@bp.post("/games/<game_id>/rematch")
def rematch(game_id: str) -> tuple[Response, int]:
    """The same players and options again; the finished game's pages follow it."""
    _require_host()
    try:
        loaded = scoreboard().rematch(game_id)
    except GameNotOver as error:
        abort(409, str(error))
    return jsonify(_game_json(loaded)), 201


@bp.post("/games/<game_id>/rematch/seat")
def rematch_seat(game_id: str) -> Response:
    """A player of a finished game takes the same seat in its rematch, without joining again."""
    board = scoreboard()
    board.get(game_id)
    _, player = _require_player_of(game_id)
    if player is None:
        abort(400, "only a player's device has a seat to carry over")
    rematch_id = board.rematch_id(game_id)
    if rematch_id is None:
        abort(404, "this game has no rematch yet")
    record = board.get(rematch_id).record
    if player not in record.players:
        abort(409, f"{player} does not play in the rematch")
    token = board.auth.player_token(record.id, record.players.index(player), player)
    return jsonify(id=record.id, game=record.game, player=player, token=token, code=board.join_code(record))


@bp.get("/whoami")
def whoami() -> Response:
    caller = _caller()
    if caller.host:
        return jsonify(role="host")
    if caller.seat is not None and caller.game_id is not None:
        players = scoreboard().players_of(caller.game_id) or []
        return jsonify(role="player", game=caller.game_id, player=players[caller.seat])
    if caller.bad_token:
        abort(401, "this token is not valid (the server may have restarted: join again)")
    return jsonify(role="watcher")
