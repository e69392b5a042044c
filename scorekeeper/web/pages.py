"""HTML pages: home, table (tablet), player (phone), join and history.

Pages are rendered once; after that their scripts follow the game's live stream.
"""

from __future__ import annotations

from flask import Blueprint, render_template

from scorekeeper.web.context import scoreboard
from scorekeeper.web.auth import normalise_join_code
from scorekeeper.web.views import summary

bp = Blueprint("pages", __name__)


@bp.get("/")
def home() -> str:
    board = scoreboard()
    games = [summary(record) for record in board.list_games()]
    for game in games:
        if not game["over"]:
            # Families pick the game to resume by its scores, so show them.
            game["scores"] = board.get(game["id"]).state()["players"]
    return render_template(
        "home.html",
        unfinished=[g for g in games if not g["over"]],
        finished=[g for g in games if g["over"]],
    )


@bp.get("/games/<game_id>")
def table(game_id: str) -> str:
    record = scoreboard().get(game_id).record
    return render_template("table.html", game=summary(record))


@bp.get("/games/<game_id>/history")
def history(game_id: str) -> str:
    record = scoreboard().get(game_id).record
    return render_template("history.html", game=summary(record))


@bp.get("/games/<game_id>/player")
def player(game_id: str) -> str:
    record = scoreboard().get(game_id).record
    return render_template("player.html", game=summary(record))


@bp.get("/play")
def play() -> str:
    return render_template("join.html", code="")


@bp.get("/join/<code>")
def join(code: str) -> str:
    return render_template("join.html", code=normalise_join_code(code))
