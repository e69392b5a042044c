"""Who is asking: the host, a player of one game, or an onlooker (from the Authorization header)."""

from __future__ import annotations

from flask import abort, request

from scorekeeper.web.auth import Caller
from scorekeeper.web.context import scoreboard


def caller() -> Caller:
    board = scoreboard()
    return board.auth.identify(request.headers.get("Authorization"), board.held_seat)


def require_host() -> Caller:
    who = caller()
    if who.host:
        return who
    if who.anonymous:
        abort(401, "this needs the host token (Authorization: Bearer <token>)")
    abort(403, "only the host may do this; a player's device may only send that player's own decisions")


def require_player_of(game_id: str) -> tuple[Caller, str | None]:
    """The host (player None) or a player of this game (their name)."""
    who = caller()
    if who.host:
        return who, None
    if who.anonymous:
        abort(401, "join the game first (or use the host token)")
    if who.game_id != game_id:
        abort(403, "this player token belongs to another game")
    return who, who.player
