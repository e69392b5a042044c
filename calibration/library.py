"""The profiles kept in the data directory: several tables or lights, one of them active.

Layout: `DATA_DIR/profiles/NAME.json` (one profile each, see scanner/profile.py), an optional
`NAME-empty.jpg` beside it (the empty tray it was made with), and `DATA_DIR/profiles/ACTIVE`, a
one-line pointer naming the active profile. Every file is replaced atomically, so a power cut
mid-write leaves the old profile (or the old pointer) in place, never half a file.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from scanner.profile import Profile, ProfileError, load_profile, save_profile, write_atomically

log = logging.getLogger(__name__)

PROFILES_DIR = "profiles"
ACTIVE_FILE = "ACTIVE"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")


def check_name(name: object) -> str:
    """A profile name that is also a safe file name; ProfileError says what a name may be."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProfileError(f"profile name {name!r} is not allowed: use 1-40 letters, digits, '-' or '_' "
                           "(starting with a letter or digit), e.g. kitchen-evening")
    return name


@dataclass(frozen=True)
class ProfileEntry:
    """One profile file as the list shows it: readable or not, and why."""

    name: str
    path: Path
    active: bool
    error: str | None = None
    created: str = ""
    taught_tally: bool = False

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "active": self.active, "ok": self.error is None, "error": self.error,
                "created": self.created, "taught_tally": self.taught_tally}


class ProfileLibrary:
    """The profiles of one data directory."""

    def __init__(self, data_dir: Path | str) -> None:
        self.folder = Path(data_dir) / PROFILES_DIR

    def path_of(self, name: str) -> Path:
        return self.folder / f"{check_name(name)}.json"

    def names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.stem for p in self.folder.glob("*.json") if _NAME.match(p.stem))

    def active_name(self) -> str | None:
        """The active profile's name, or None (none chosen, or the pointer names a missing file)."""
        try:
            name = (self.folder / ACTIVE_FILE).read_text().strip()
        except OSError:
            return None
        if not _NAME.match(name) or not self.path_of(name).is_file():
            if name:
                log.warning("the active profile %r is missing from %s; using the built-in defaults", name, self.folder)
            return None
        return name

    def active_path(self) -> Path | None:
        name = self.active_name()
        return self.path_of(name) if name else None

    def entries(self) -> list[ProfileEntry]:
        active = self.active_name()
        found = []
        for name in self.names():
            path = self.path_of(name)
            try:
                profile = load_profile(path)
            except ProfileError as error:
                found.append(ProfileEntry(name, path, name == active, str(error)))
                continue
            found.append(ProfileEntry(name, path, name == active, None, profile.created, profile.tallyup is not None))
        return found

    def load(self, name: str) -> Profile:
        path = self.path_of(name)
        if not path.is_file():
            known = ", ".join(self.names()) or "none yet"
            raise ProfileError(f"no profile named {name!r} in {self.folder} (profiles: {known}); "
                               "make one with the calibration wizard")
        return load_profile(path)

    def activate(self, name: str) -> Path:
        """Make `name` the active profile; it must exist and be valid (ProfileError otherwise)."""
        self.load(name)
        write_atomically(self.folder / ACTIVE_FILE, f"{name}\n".encode())
        log.info("active calibration profile: %s", name)
        return self.path_of(name)

    def save(self, profile: Profile, empty_jpeg: bytes | None = None, activate: bool = False) -> Path:
        """Write a profile (and its empty-tray photo) under its name; optionally make it active."""
        path = self.path_of(profile.name)
        if empty_jpeg is not None:
            write_atomically(self.folder / f"{profile.name}-empty.jpg", empty_jpeg)
        save_profile(profile, path)
        if activate:
            self.activate(profile.name)
        return path


__all__ = ["ACTIVE_FILE", "PROFILES_DIR", "ProfileEntry", "ProfileLibrary", "check_name"]
