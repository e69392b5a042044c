"""Where dicetray keeps machine-written data (game log, profiles, roll photos)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

DATA_DIR_ENV = "DICETRAY_DATA_DIR"


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$DICETRAY_DATA_DIR`, else `$XDG_DATA_HOME/dicetray`, else `~/.local/share/dicetray`."""
    env = os.environ if environ is None else environ
    if env.get(DATA_DIR_ENV):
        return Path(env[DATA_DIR_ENV]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "dicetray"
