"""The scoreboard web app: live table, player phones and history over the game log."""

from scorekeeper.web.app import create_app

__all__ = ["create_app"]
