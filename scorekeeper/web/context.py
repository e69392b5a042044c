"""Where a request finds the app's parts: the scoreboard and the live table (no import of app.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import current_app

from scorekeeper.web.service import Scoreboard

if TYPE_CHECKING:
    from scorekeeper.table.live import LiveTable

#: The keys under which create_app stores its parts in app.extensions.
EXTENSION = "dicetray"
LIVE_EXTENSION = "dicetray.live"


def scoreboard() -> Scoreboard:
    """The current app's Scoreboard."""
    board: Scoreboard = current_app.extensions[EXTENSION]
    return board


def live_table() -> "LiveTable | None":
    """The current app's live table, or None when no camera is configured."""
    table: LiveTable | None = current_app.extensions.get(LIVE_EXTENSION)
    return table
