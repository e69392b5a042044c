"""Calibration profiles: what dicetray has learned about one table (tray, light, dice).

A profile is one versioned JSON file in the data directory's `profiles/` folder. Reading
one never raises a stack trace at the user: every problem is a `ProfileError` whose message
names the field and the fix.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from scanner.tally_model import TallyModel, model_from_json
from scanner.tossup import TossUpParams

log = logging.getLogger(__name__)

PROFILE_VERSION = 1
RECALIBRATE = "run `dicetray calibrate` again (or the calibration wizard on the web page)"


class ProfileError(ValueError):
    """A profile that cannot be used, with the field at fault and how to fix it."""


@dataclass(frozen=True)
class Profile:
    name: str
    version: int = PROFILE_VERSION
    created: str = ""
    #: The tray's four corners in image pixels, clockwise from top-left; None = whole frame.
    tray: tuple[tuple[float, float], ...] | None = None
    #: Typical top-face side of a die in pixels at the profile's frame size.
    die_size: float | None = None
    frame_size: tuple[int, int] | None = None  # (width, height)
    empty_tray: str | None = None  # file name of the empty-tray photo, beside the profile
    #: Per channel (B, G, R, 0-255): the level the darkest parts of the empty tray sit at, from
    #: stray or coloured room light; subtracted before reading, it gives the dice back their
    #: contrast. None = nothing to subtract. (Measured by the calibration wizard, step 2.)
    black_level: tuple[float, float, float] | None = None
    #: Per channel (B, G, R, 1-4): how much to brighten a dim table's pictures after
    #: the black level (calibration.steps.light_gains, step 4). None = the light is enough.
    light_gains: tuple[float, float, float] | None = None
    camera: dict[str, Any] = field(default_factory=dict)
    tossup: TossUpParams = field(default_factory=TossUpParams)
    #: The learned look of the user's Tally Up set (`dicetray calibrate teach`); None = built-in.
    tallyup: TallyModel | None = None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tray"] = [list(p) for p in self.tray] if self.tray else None
        data["frame_size"] = list(self.frame_size) if self.frame_size else None
        data["black_level"] = list(self.black_level) if self.black_level else None
        data["light_gains"] = list(self.light_gains) if self.light_gains else None
        data["tallyup"] = self.tallyup.to_json() if self.tallyup is not None else None
        data["tossup"] = {"params": {k: list(v) if isinstance(v, tuple) else v for k, v in data["tossup"].items()}}
        return data


def _number(value: Any, where: str, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where} must be a number, got {value!r}; {RECALIBRATE}")
    if low is not None and value <= low:
        raise ProfileError(f"{where} must be greater than {low}, got {value!r}; {RECALIBRATE}")
    return float(value)


def _per_channel(data: Mapping[str, Any], key: str, what: str, low: float, high: float,
                 source: str) -> tuple[float, float, float] | None:
    """A field of three numbers (blue, green, red) from `low` to `high`, or null."""
    value = data.get(key)
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 3 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and low <= v <= high for v in value)):
        raise ProfileError(f"{source}: field '{key}' must be [blue, green, red] {what} from {low} to {high}, or null; "
                           f"{RECALIBRATE}")
    return (float(value[0]), float(value[1]), float(value[2]))


def profile_from_json(data: Any, source: str = "profile") -> Profile:
    if not isinstance(data, Mapping):
        raise ProfileError(f"{source}: a profile is a JSON object; {RECALIBRATE}")
    version = data.get("version")
    if version != PROFILE_VERSION:
        raise ProfileError(
            f"{source}: field 'version' is {version!r} but this dicetray reads version {PROFILE_VERSION}; {RECALIBRATE}"
        )
    known = {f.name for f in dataclasses.fields(Profile)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ProfileError(f"{source}: unknown field(s) {unknown}; remove them or {RECALIBRATE}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{source}: field 'name' must be a non-empty string")
    tray = data.get("tray")
    if tray is not None:
        if not (isinstance(tray, list) and len(tray) == 4 and all(isinstance(p, list) and len(p) == 2 for p in tray)):
            raise ProfileError(f"{source}: field 'tray' must be four [x, y] corners or null; {RECALIBRATE}")
        tray = tuple((_number(x, f"{source}: tray x"), _number(y, f"{source}: tray y")) for x, y in tray)
    die_size = data.get("die_size")
    if die_size is not None:
        die_size = _number(die_size, f"{source}: field 'die_size'", low=0)
    frame_size = data.get("frame_size")
    if frame_size is not None:
        if not (isinstance(frame_size, list) and len(frame_size) == 2 and all(isinstance(v, int) and v > 0 for v in frame_size)):
            raise ProfileError(f"{source}: field 'frame_size' must be [width, height] in pixels")
        frame_size = (frame_size[0], frame_size[1])
    tossup_data = data.get("tossup", {})
    params = tossup_data.get("params", {}) if isinstance(tossup_data, Mapping) else None
    if not isinstance(params, Mapping):
        raise ProfileError(f"{source}: field 'tossup.params' must be an object")
    defaults = TossUpParams()
    checked: dict[str, Any] = {}
    for key, value in params.items():
        if not hasattr(defaults, key):
            raise ProfileError(f"{source}: unknown field 'tossup.params.{key}'; remove it or {RECALIBRATE}")
        default = getattr(defaults, key)
        if isinstance(default, tuple):
            if not (isinstance(value, list) and len(value) == len(default)):
                raise ProfileError(f"{source}: field 'tossup.params.{key}' must be a list of {len(default)} numbers")
            checked[key] = tuple(_number(v, f"{source}: tossup.params.{key}") for v in value)
        else:
            checked[key] = _number(value, f"{source}: field 'tossup.params.{key}'")
    if not isinstance(data.get("camera", {}), Mapping):
        raise ProfileError(f"{source}: field 'camera' must be an object")
    tallyup = data.get("tallyup")
    model = None
    if tallyup:  # null or {} (older profiles): the built-in look
        try:
            model = model_from_json(tallyup, "tallyup")
        except ValueError as error:
            raise ProfileError(f"{source}: field {error}; run `dicetray calibrate teach` again") from error
    elif tallyup is not None and not isinstance(tallyup, Mapping):
        raise ProfileError(f"{source}: field 'tallyup' must be an object or null")
    black = _per_channel(data, "black_level", "levels", 0, 128, source)
    gains = _per_channel(data, "light_gains", "gains", 1, 4, source)
    empty = data.get("empty_tray")
    if empty is not None and not isinstance(empty, str):
        raise ProfileError(f"{source}: field 'empty_tray' must be a file name or null")
    return Profile(
        name=name, version=version, created=str(data.get("created", "")), tray=tray, die_size=die_size,
        frame_size=frame_size, empty_tray=empty, black_level=black, light_gains=gains,
        camera=dict(data.get("camera", {})), tossup=dataclasses.replace(defaults, **checked), tallyup=model,
    )


def load_profile(path: Path | str) -> Profile:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise ProfileError(f"cannot read profile {path}: {error.strerror or error}") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfileError(f"{path} is damaged (not valid JSON at line {error.lineno}); {RECALIBRATE}") from error
    return profile_from_json(data, str(path))


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write a file so that a crash mid-write never leaves a damaged one behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def save_profile(profile: Profile, path: Path | str) -> Path:
    """Write atomically: a crash mid-write never leaves a damaged profile behind."""
    return write_atomically(path, json.dumps(profile.to_json(), indent=1).encode())
