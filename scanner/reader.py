"""The scanner: one object that turns a frame into die readings for a chosen dice set."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scanner.frames import DieReading
from scanner.tossup import TossUpParams, read_tossup

log = logging.getLogger(__name__)

DICE_SETS = ("tossup", "tallyup", "any")


@dataclass
class Scanner:
    """Reads one dice set. `read` is safe to call from one thread at a time."""

    dice_set: str
    tossup: TossUpParams = field(default_factory=TossUpParams)
    profile: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.dice_set not in DICE_SETS:
            raise ValueError(f"unknown dice set {self.dice_set!r}; expected one of {list(DICE_SETS)}")

    def read(self, image: np.ndarray) -> Sequence[DieReading]:
        if self.dice_set == "tossup":
            return read_tossup(image, self.tossup)
        if self.dice_set == "any":
            return read_tossup(image, self.tossup, with_faces=False)
        raise ValueError("reading Tally Up dice is not available yet; use --dice tossup or any")


def load_scanner(dice_set: str, profile_path: Path | None = None) -> Scanner:
    """A scanner for `dice_set`, tuned by a calibration profile when one is given."""
    profile: dict[str, Any] = {}
    tossup = TossUpParams()
    if profile_path is not None:
        try:
            profile = json.loads(Path(profile_path).read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"cannot read profile {profile_path}: {error}") from error
        overrides = profile.get("tossup", {}).get("params", {})
        known = {f.name for f in dataclasses.fields(TossUpParams)}
        unknown = set(overrides) - known
        if unknown:
            raise ValueError(f"profile {profile_path}: unknown tossup.params {sorted(unknown)}")
        tossup = dataclasses.replace(tossup, **overrides)
    return Scanner(dice_set=dice_set, tossup=tossup, profile=profile)
