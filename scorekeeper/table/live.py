"""The live table: camera -> settle -> scanner -> game events, with the page told at each step.

Frames flow one way (Frigate-style): the `CameraReader` thread owns the camera; one watcher
thread here takes the newest frame (frames it was too slow for are dropped, the camera never
waits), runs the settle watcher and the scanner, and turns each settled reading into events of
the game shown on the table through `readings.interpret`. A reading that is fine is applied
at once with its photo and per-die confidences attached; a reading with any problem becomes
the *pending reading*, shown on the table page with a one-tap fix, and nothing is applied
until the host resolves it (or a new throw replaces it). A tray disturbed without a throw is
only a notice. Camera state changes go to every open stream at once.

Everything here lives on one `LiveTable` per app; nothing is module-level state.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import cv2
import numpy as np

from scanner.camera import CameraReader, CameraStatus
from scanner.frames import DieReading, Frame, Roll, TrayChanged
from scanner.reader import Scanner, load_scanner
from scanner.settle import SettleWatcher
from scanner.sources import FrameSource, SourceUnavailable, open_source
from scorekeeper.table.preview import PreviewEncoder, PreviewSnapshot
from scorekeeper.table.sources import demo_source
from scorekeeper.readings import Problem, interpret
from scorekeeper.table.stand_in import stand_in_for
from scorekeeper.rules import RuleError
from scorekeeper.store import GameNotFound, LoadedGame, VersionConflict

log = logging.getLogger(__name__)

DICE_SETS = ("tossup", "tallyup")
PHOTO_DIR = "rolls"
#: LIVE_SOURCE value that replays the bundled fixture videos of the table game's dice set.
DEMO_SOURCE = "demo"
#: Meta key of the games a stand-in host plays (the demo's): its camera scores only those, or a
#: game the host put on the table on purpose (`select`), never a game started for hand entry.
DEMO_GAME = "demo"
#: The demo keeps the photos of its latest rolls only: it replays the same clips for ever.
DEMO_PHOTOS_KEPT = 50
UNREADABLE = "this dice set cannot be read yet"

#: The live table's settings (keys of the app config) with their defaults; see `LiveConfig`.
LIVE_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "LIVE_SOURCE": None,  # None: no camera (manual entry only); 'picamera2', 'usb:N', a URL, a video, a folder or 'demo'
    "LIVE_DICE": None,  # None: read the dice of the game on the table; 'tossup' or 'tallyup' to force one set
    "LIVE_PROFILE": None,  # calibration profile (JSON) for the scanner; None: built-in defaults
    "LIVE_LOOP": False,  # replay a video or folder source for ever (the demo)
    "LIVE_STAND_IN": None,  # a stand-in host makes the moves replayed clips need (scorekeeper.stand_in); None: with 'demo' only
    "LIVE_REALTIME": True,  # replay files at their own frame rate, as a camera would deliver them
    "LIVE_BACKOFF": (0.5, 1.0, 2.0, 4.0, 8.0),  # seconds between reconnect attempts
    "LIVE_STALL_SECONDS": 1.5,  # a live camera silent this long is reported as stalled
    "LIVE_PHOTO_WIDTH": 1280,  # roll photos are saved at most this wide (JPEG)
    "PREVIEW_FPS": 10.0,  # the MJPEG preview's frame rate cap
    "PREVIEW_WIDTH": 640,  # the preview's width cap in pixels
    "PREVIEW_QUALITY": 70,  # the preview's JPEG quality
})


class ConfigError(ValueError):
    """A setting that cannot be used, with its name and what it should be."""


@dataclass(frozen=True)
class LiveConfig:
    source: str | Callable[[], FrameSource] | None = None
    dice: str | None = None
    profile: Path | None = None
    loop: bool = False
    stand_in: bool | None = None
    realtime: bool = True
    backoff: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
    stall_seconds: float = 1.5
    photo_width: int = 1280
    preview_fps: float = 10.0
    preview_width: int = 640
    preview_quality: int = 70

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> "LiveConfig":
        """Check every live setting; raises ConfigError naming the key and what it should be."""
        get = lambda key: config.get(key, LIVE_DEFAULTS[key])  # noqa: E731
        source = get("LIVE_SOURCE")
        if source is not None and not (isinstance(source, str) and source.strip()) and not callable(source):
            raise ConfigError(f"LIVE_SOURCE must be a camera spec (picamera2, usb:N, a URL, a video or folder) "
                              f"or a source factory, got {source!r}")
        dice = get("LIVE_DICE")
        if dice is not None and dice not in DICE_SETS:
            raise ConfigError(f"LIVE_DICE must be one of {list(DICE_SETS)} or None (follow the game), got {dice!r}")
        profile = get("LIVE_PROFILE")
        if profile is not None and not isinstance(profile, (str, os.PathLike)):
            raise ConfigError(f"LIVE_PROFILE must be the path of a calibration profile, got {profile!r}")
        for key in ("LIVE_LOOP", "LIVE_REALTIME"):
            if not isinstance(get(key), bool):
                raise ConfigError(f"{key} must be true or false, got {get(key)!r}")
        stand_in = get("LIVE_STAND_IN")
        if stand_in is not None and not isinstance(stand_in, bool):
            raise ConfigError(f"LIVE_STAND_IN must be true, false or None (with the demo source only), got {stand_in!r}")
        backoff = get("LIVE_BACKOFF")
        if (not isinstance(backoff, (list, tuple)) or not backoff
                or not all(_positive(v) for v in backoff)):
            raise ConfigError(f"LIVE_BACKOFF must be a list of positive seconds, got {backoff!r}")
        numbers = {key: get(key) for key in ("LIVE_STALL_SECONDS", "PREVIEW_FPS")}
        for key, value in numbers.items():
            if not _positive(value):
                raise ConfigError(f"{key} must be a positive number, got {value!r}")
        for key, low, high in (("LIVE_PHOTO_WIDTH", 160, 8192), ("PREVIEW_WIDTH", 80, 4096), ("PREVIEW_QUALITY", 10, 100)):
            value = get(key)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"{key} must be a whole number from {low} to {high}, got {value!r}")
        return cls(
            source=source, dice=dice, profile=Path(profile) if profile is not None else None,
            loop=get("LIVE_LOOP"), stand_in=stand_in, realtime=get("LIVE_REALTIME"), backoff=tuple(float(v) for v in backoff),
            stall_seconds=float(numbers["LIVE_STALL_SECONDS"]), photo_width=get("LIVE_PHOTO_WIDTH"),
            preview_fps=min(float(numbers["PREVIEW_FPS"]), 30.0), preview_width=get("PREVIEW_WIDTH"),
            preview_quality=get("PREVIEW_QUALITY"),
        )


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and math.isfinite(value)


def _now() -> str:
    return datetime.now(tz=timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class PendingReading:
    """A settled reading that needs the host before it can become events."""

    id: str
    game_id: str
    version: int  # the game's version the reading was interpreted against
    reading: dict[str, Any]
    problems: tuple[Problem, ...]
    created: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "game": self.game_id, "version": self.version, "reading": self.reading,
            "problems": [{"code": p.code, "message": p.message, "dice": list(p.dice)} for p in self.problems],
            "created": self.created,
        }


@dataclass
class LiveStats:
    """Counters for the page, the soak benchmark and tests."""

    frames: int = 0
    rolls: int = 0  # settled readings that became rolls (applied)
    pending: int = 0  # settled readings that needed the host
    tray_changed: int = 0
    repeats: int = 0  # a tray read again after a restart, already scored
    errors: int = 0
    applied_frames: list[int] = field(default_factory=list)  # frame index of every applied reading

    def to_json(self) -> dict[str, Any]:
        return {"frames": self.frames, "rolls": self.rolls, "pending": self.pending,
                "tray_changed": self.tray_changed, "repeats": self.repeats, "errors": self.errors}


class ExposureLocked(FrameSource):
    """A controllable camera whose auto exposure and white balance settle once, then stay locked.

    Colours that drift between rolls (the lamp's warmth re-balanced away) would change how dice
    read, so the camera is locked at every (re)open.
    """

    def __init__(self, inner: FrameSource) -> None:
        self.inner = inner
        self.name = inner.name
        self.fps = inner.fps
        self.controllable = True
        self.locked: dict[str, Any] = {}

    def open(self) -> None:
        self.inner.open()
        self.fps = self.inner.fps
        try:
            self.lock_exposure()
        except Exception as error:  # an unlocked camera still reads dice; say so and carry on
            log.warning("could not lock exposure on %s: %s", self.name, error)

    def lock_exposure(self) -> dict[str, Any]:
        """Let the camera settle and lock it (again); what it locked is kept in `locked`."""
        self.locked = self.inner.lock_exposure()
        return dict(self.locked)

    def read(self) -> Frame | None:
        return self.inner.read()

    def close(self) -> None:
        self.inner.close()


class LiveError(Exception):
    """A request about the live table that cannot be done; `status` is the HTTP code to answer."""

    def __init__(self, message: str, status: int = 400, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.problems = tuple(problems)


class LiveTable:
    """The camera, the watcher thread and the pending reading for one scoreboard.

    `board` is the app's `Scoreboard`: every write goes through it, so the stream sees camera
    rolls exactly like manual ones.
    """

    def __init__(self, board: Any, config: LiveConfig, data_dir: Path,
                 scanner_loader: Callable[[str, Path | None], Scanner] | None = None) -> None:
        self.board = board
        self.config = config
        self.photos = Path(data_dir) / PHOTO_DIR
        self._load_scanner = scanner_loader or load_scanner
        source = config.source
        self._stand_in = config.stand_in if config.stand_in is not None else source == DEMO_SOURCE
        if callable(source):
            factory = source
        elif source == DEMO_SOURCE:
            try:
                factory, _ = demo_source(wanted=self.wanted_dice_set)
            except SourceUnavailable as error:
                raise ConfigError(f"LIVE_SOURCE {DEMO_SOURCE!r}: {error}") from error
        elif isinstance(source, str):
            spec = source

            def factory() -> FrameSource:
                opened = open_source(spec, loop=config.loop, realtime=config.realtime)
                return ExposureLocked(opened) if opened.controllable else opened
        else:
            raise ConfigError("the live table needs LIVE_SOURCE")
        self._source: FrameSource | None = None
        self._profile_generation = 0

        def tracked() -> FrameSource:
            opened = factory()
            self._source = opened  # calibration asks it about exposure (see `exposure`)
            return opened

        self.camera = CameraReader(tracked, backoff=config.backoff)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._selected: str | None = None
        self._target: tuple[float, str | None] | None = None  # (when worked out, game id)
        self._pending: PendingReading | None = None
        self._notice: dict[str, Any] | None = None
        self._scanners: dict[str, Scanner] = {}
        self._unreadable: dict[str, str] = {}
        self._stalled = False
        self._frame: Frame | None = None
        self._seq = 0
        self._dice: tuple[DieReading, ...] = ()
        self._changed = 0
        # The first reading after a start may be the dice of the last roll still lying there.
        self._fresh_start = True
        self.stats = LiveStats()
        self._trim = _malloc_trim()
        self._trimmed = time.monotonic()
        self.preview = PreviewEncoder(self.preview_snapshot, fps=config.preview_fps, width=config.preview_width,
                                      quality=config.preview_quality)
        board.on_change(self._game_changed)
        self.camera.on_status(self._camera_changed)

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> "LiveTable":
        self.camera.start()
        self._thread = threading.Thread(target=self._run, name="live-watcher", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self.preview.close()
        self.camera.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- calibration ---------------------------------------------------------------

    def exposure(self, relock: bool = False) -> dict[str, Any]:
        """What the camera's exposure and white-balance lock did (the calibration wizard's step 3).

        A controllable camera was locked when it opened (ExposureLocked); `relock` lets it settle
        and locks it again. Other sources cannot be controlled and say so.
        """
        source = self._source
        if source is None or not source.controllable:
            return {"locked": False, "note": f"{source.name if source else 'the camera'} cannot be controlled; "
                                             "exposure is left as it is"}
        if isinstance(source, ExposureLocked) and source.locked and not relock:
            return dict(source.locked)
        return source.lock_exposure()

    def use_profile(self, profile: Path | None) -> None:
        """Read with another calibration profile from the next frame on (a new one was saved)."""
        with self._lock:
            self.config = dataclasses.replace(self.config, profile=profile)
            self._scanners.clear()
            self._unreadable.clear()
            self._profile_generation += 1
        log.info("live table: now reading with profile %s", profile)

    # -- what the pages see ------------------------------------------------------

    def camera_json(self) -> dict[str, Any]:
        status = self.camera.status()
        state = "stalled" if self._stalled and status.state == "live" else status.state
        message = status.message
        if state == "stalled":
            message = f"no picture for over {self.config.stall_seconds:g} s"
        return {"state": state, "source": status.source, "message": message, "frames": status.frames,
                "skipped": status.skipped, "reconnects": status.reconnects}

    def view(self, game_id: str | None = None) -> dict[str, Any]:
        """The live state for one game's page (pending readings and notices of other games left out)."""
        target = self.target_game()
        dice_set = self._dice_set(target)
        with self._lock:
            pending = self._pending
            notice = self._notice
            unreadable = self._unreadable.get(dice_set) if dice_set else None
        return {
            "enabled": True,
            "camera": self.camera_json(),
            "target": target,
            "scoring": game_id is not None and target == game_id,
            "dice_set": dice_set,
            "readable": unreadable is None,
            "reader_message": unreadable,
            "pending": pending.to_json() if pending and (game_id is None or pending.game_id == game_id) else None,
            "notice": notice if notice and (game_id is None or notice.get("game") in (None, game_id)) else None,
            "stats": self.stats.to_json(),
            "preview": "/preview.mjpg",
        }

    def preview_snapshot(self) -> PreviewSnapshot:
        camera = self.camera_json()
        with self._lock:
            frame, seq, dice, changed = self._frame, self._seq, self._dice, self._changed
            pending = self._pending
        if camera["state"] != "live":
            label = f"camera {camera['state']}" + (f": {camera['message']}" if camera["message"] else "")
            return PreviewSnapshot(seq, None, (), label, changed)
        label = "waiting for the host: " + pending.problems[0].message if pending and pending.problems else "live"
        return PreviewSnapshot(seq, frame.image if frame is not None else None, dice, label, changed)

    # -- the game on the table ---------------------------------------------------

    def select(self, game_id: str | None) -> str | None:
        """The host picks the game the camera scores (None: the most recently updated unfinished one)."""
        if game_id is not None:
            loaded = self.board.get(game_id)  # GameNotFound: 404
            if loaded.state()["over"]:
                raise LiveError(f"game {game_id} is over: the camera cannot score it", 409)
        with self._lock:
            self._selected = game_id
            self._target = None
        self._publish()
        return self.target_game()

    def target_game(self) -> str | None:
        with self._lock:
            cached = self._target
            selected = self._selected
        # Worked out again at most once a second, or at once after any change (see _game_changed).
        if cached is not None and time.monotonic() - cached[0] < 1.0:
            return cached[1]
        target = None
        if selected is not None:
            try:
                if not self.board.get(selected).record.over:
                    target = selected
            except GameNotFound:
                pass
        if target is None:
            target = next((r.id for r in self.board.list_games() if not r.over and self._may_score(r)), None)
        with self._lock:
            self._target = (time.monotonic(), target)
        return target

    def _may_score(self, record: Any) -> bool:
        """Whether the camera scores `record` without being told to: any game, but with a
        stand-in host (replayed clips) only the demo's own games."""
        return not self._stand_in or bool(record.meta.get(DEMO_GAME))

    def wanted_dice_set(self) -> str | None:
        """The dice set the camera should be seeing now: the forced one, else the table game's."""
        return self._dice_set(self.target_game())

    def _dice_set(self, game_id: str | None) -> str | None:
        if self.config.dice is not None:
            return self.config.dice
        if game_id is None:
            return None
        try:
            return str(self.board.get(game_id).record.game)
        except GameNotFound:
            return None

    # -- resolving a pending reading ---------------------------------------------

    def resolve(self, pending_id: str, action: str, dice: Any = None) -> LoadedGame | None:
        """Apply the pending reading with the host's corrected dice, or dismiss it.

        Raises LiveError (404 no such pending reading, 409 the game moved on, 400 bad dice,
        422 the corrected dice still do not make a legal roll, with the problems).
        """
        with self._lock:
            pending = self._pending
        if pending is None or pending.id != pending_id:
            raise LiveError("that reading is no longer waiting (a newer throw or an entry replaced it)", 404)
        if action == "dismiss":
            self._clear_pending(pending_id, "dismissed by the host")
            return None
        if action != "apply":
            raise LiveError(f"'action' must be \"apply\" or \"dismiss\", got {action!r}")
        corrected = _corrected_dice(pending.reading["dice"], dice)
        loaded = self.board.get(pending.game_id)
        if loaded.version != pending.version:
            self._clear_pending(pending_id, "the game moved on")
            raise LiveError("the game changed since this reading: it was dropped", 409)
        result = interpret(loaded.state(), corrected)
        if not result.ok:
            raise LiveError("the corrected dice are still not a roll: "
                            + "; ".join(p.message for p in result.problems), 422, result.problems)
        reading = {**pending.reading, "corrected": True, "dice_applied": corrected}
        try:
            applied = self.board.append_all(pending.game_id, result.events, pending.version, reading)
        except VersionConflict as error:
            self._clear_pending(pending_id, "the game moved on")
            raise LiveError(str(error), 409) from error
        self._clear_pending(pending_id, None)
        return applied

    def _clear_pending(self, pending_id: str, why: str | None) -> None:
        with self._lock:
            if self._pending is None or self._pending.id != pending_id:
                return
            game, dropped = self._pending.game_id, self._pending
            self._pending = None
            self._changed += 1
            if why:
                self._notice = {"kind": "pending_dropped", "game": game, "message": f"camera reading {why}", "at": _now()}
        if why:  # without a reason it was applied: its photo is the roll's in the game's log
            self._forget_photo(dropped.reading)
        self._publish()

    # -- listeners (other threads) -----------------------------------------------

    def _game_changed(self, loaded: LoadedGame) -> None:
        stale = False
        with self._lock:
            self._target = None  # a new or finished game may change which one is on the table
            pending = self._pending
            if pending is not None and pending.game_id == loaded.record.id and loaded.version != pending.version:
                # Entered by hand or undone meanwhile: the reading belongs to a moment that is gone.
                self._pending = None
                self._changed += 1
                stale = True
        if stale:
            assert pending is not None
            # The host's tap applies the reading itself (its events carry the photo) before the
            # pending slot is cleared; any other change left the photo linked from nowhere.
            photo = pending.reading.get("photo")
            # A unique name: no JSON parsed.
            if photo and not any(str(photo) in (e.reading_json or "") for e in loaded.events):
                self._forget_photo(pending.reading)
            self._publish()

    def _camera_changed(self, status: CameraStatus) -> None:
        with self._lock:
            self._changed += 1
        self._publish()

    def _publish(self) -> None:
        # Imported here: the web layer imports this module, not the other way round.
        from scorekeeper.web.broker import StreamMessage

        broker = self.board.broker
        for game_id in broker.topics():
            try:
                broker.publish(game_id, StreamMessage("live", json.dumps(self.view(game_id))))
            except Exception:  # a page that cannot be told must never stop the camera thread
                log.exception("could not publish the live state to game %s", game_id)

    # -- the watcher thread ------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch()
            except Exception:
                # The watcher must outlive any bug in a reading: log it, start over with a fresh
                # settle watcher (the camera thread never noticed).
                self.stats.errors += 1
                log.exception("the live watcher failed; restarting it")
                self._stop.wait(0.5)

    def _watch(self) -> None:
        seq = 0
        watcher: SettleWatcher | None = None
        watcher_set: str | None = None
        previous_t: float | None = None
        interval: float | None = None
        last_frame = time.monotonic()
        last_target: str | None = None
        dice_set: str | None = None
        generation = self._profile_generation
        while not self._stop.is_set():
            got = self.camera.wait_frame(seq, timeout=0.25)
            now = time.monotonic()
            if got is None:
                if self.camera.status().state in ("ended", "stopped"):
                    self._stop.wait(0.25)  # wait_frame returns at once then; do not spin
                elif self.camera.status().state == "live" and now - last_frame > self.config.stall_seconds:
                    self._set_stalled(True)
                continue
            seq, frame = got
            last_frame = now
            self._set_stalled(False)
            with self._lock:
                self._frame, self._seq = frame, seq
            self.stats.frames += 1
            target = self.target_game()
            if target != last_target or dice_set is None:
                # A game's dice set never changes: look it up only when the table's game does.
                last_target, dice_set = target, self._dice_set(target) or "tossup"
            with self._lock:
                unreadable = dice_set in self._unreadable
            if unreadable:
                continue
            # The rate frames really reach this thread (after any the camera dropped for us):
            # the settle window is counted in these frames.
            if previous_t is not None and frame.t > previous_t:
                step = frame.t - previous_t
                interval = step if interval is None else 0.9 * interval + 0.1 * step
            previous_t = frame.t
            if watcher is None or watcher_set != dice_set or generation != self._profile_generation:
                if interval is None:
                    continue
                rate = 1.0 / max(interval, 1e-3)
                scanner = self._scanner(dice_set)
                if scanner is None:
                    continue
                watcher = SettleWatcher(scanner.read, fps=min(max(rate, 2.0), 60.0))
                watcher_set, generation = dice_set, self._profile_generation
            try:
                events = watcher.feed(frame)
            except ValueError as error:
                # The scanner cannot read this dice set (yet): say so once, keep the preview and
                # manual entry going, and try again only when the dice set changes.
                self._mark_unreadable(dice_set, str(error))
                watcher = None
                continue
            except Exception:
                self.stats.errors += 1
                log.exception("reading frame %s failed; skipped", frame.index)
                continue
            for event in events:
                try:
                    if isinstance(event, Roll):
                        self._on_roll(event, frame, target, dice_set)
                    elif isinstance(event, TrayChanged):
                        self._on_tray_changed(event, frame, target, dice_set)
                except Exception:
                    self.stats.errors += 1
                    log.exception("handling a reading of frame %s failed", frame.index)

    def _scanner(self, dice_set: str) -> Scanner | None:
        if dice_set not in self._scanners:
            try:
                self._scanners[dice_set] = self._load_scanner(dice_set, self.config.profile)
            except Exception as error:  # a bad profile (ValueError) or a reader that cannot start
                if not isinstance(error, ValueError):
                    log.exception("the %s scanner could not be loaded", dice_set)
                self._mark_unreadable(dice_set, str(error) or type(error).__name__)
                return None
        return self._scanners[dice_set]

    def _mark_unreadable(self, dice_set: str, reason: str) -> None:
        log.warning("%s (%s): %s", UNREADABLE, dice_set, reason)
        with self._lock:
            self._unreadable[dice_set] = f"{UNREADABLE} ({reason}); enter rolls by hand"
            self._changed += 1
        self._publish()

    def _set_stalled(self, stalled: bool) -> None:
        with self._lock:
            if self._stalled == stalled:
                return
            self._stalled = stalled
            self._changed += 1
        log.warning("camera stalled: no frame for %.1f s", self.config.stall_seconds) if stalled else log.info("camera frames again")
        self._publish()

    def _on_tray_changed(self, event: TrayChanged, frame: Frame, target: str | None, dice_set: str) -> None:
        self.stats.tray_changed += 1
        with self._lock:
            self._dice = event.dice
            pending = self._pending
        if pending is not None and pending.game_id == target and event.dice:
            # A die nudged flat or a stray die taken out, without a new throw: the same roll,
            # read again. It replaces the pending reading (and applies when it is now fine).
            self._on_roll(Roll(frame=event.frame, t=event.t, dice=event.dice), frame, target, dice_set)
            return
        with self._lock:
            self._notice = {"kind": "tray_changed", "game": target, "at": _now(),
                            "message": f"the dice moved without a new throw ({event.moved} moved): not scored"}
            self._changed += 1
        self._publish()

    def _on_roll(self, roll: Roll, frame: Frame, target: str | None, dice_set: str) -> None:
        with self._lock:
            self._dice = roll.dice
            self._changed += 1
            fresh, self._fresh_start = self._fresh_start, False
        if target is None and self._stand_in:
            target = self._rematch()
        if target is None:
            with self._lock:
                self._notice = {"kind": "no_game", "game": None, "at": _now(),
                                "message": "the camera read a roll but no game is in progress: start one"}
            self._publish()
            return
        loaded = self.board.get(target)
        scale = min(1.0, self.config.photo_width / frame.image.shape[1])
        dice = [_scaled(d.to_json(), scale) for d in roll.dice]
        if fresh and _same_tray(dice, _last_reading_dice(loaded)):
            # After a restart the dice of the last scored roll still lie in the tray.
            self.stats.repeats += 1
            log.info("the tray still shows the last scored roll of game %s: not scored again", target)
            return
        photo_name = self._save_photo(frame.image, target, loaded.version, scale)
        reading = {
            "source": "camera", "image": f"/{PHOTO_DIR}/{photo_name}", "photo": photo_name,
            "frame": roll.frame, "t": round(roll.t, 3), "dice_set": dice_set, "dice": dice, "at": _now(),
        }
        if self._stand_in:
            # Replayed clips: the same few throws again and again, no sample of the dice's
            # fairness (the history's fairness check leaves them out).
            reading["replayed"] = True
        for _attempt in range(2):  # once more after a hand entry got in first
            result = interpret(loaded.state(), dice)
            events, problems = result.events, result.problems
            helped = stand_in_for(loaded.game, dice) if self._stand_in and not result.ok else None
            if helped is not None and helped.roll:
                events, problems = helped.events, []
            elif helped is not None:
                loaded = self._stand_in_moves(loaded, helped.moves)
                rematch = self._rematch() if loaded.state()["over"] else None
                if rematch is not None:
                    # The stand-in's stop ended the game: this throw opens the next one.
                    target, loaded = rematch, self.board.get(rematch)
                    continue
                # The stand-in ended the round to make room: the throw was the old round's (an
                # Up Die, bonus dice) and is no roll of the new one. Nobody at the demo's table
                # would tap it: it is dropped, and the page says so.
                self._forget_photo(reading)
                self._stand_in_dropped(target, dice)
                return
            if problems or not events:
                self._set_pending(loaded, reading, problems)
                return
            try:
                self.board.append_all(target, events, loaded.version, reading)
            except VersionConflict:
                loaded = self.board.get(target)  # a hand entry got in first: read the game again
                continue
            except RuleError as error:
                self._set_pending(loaded, reading, [Problem("not_now", str(error))])
                return
            self.stats.rolls += 1
            self.stats.applied_frames.append(roll.frame)
            self._give_back_memory()
            with self._lock:
                replaced = self._pending
                self._pending = None
                self._notice = None
            if replaced is not None:
                self._forget_photo(replaced.reading)
                self._publish()
            return
        self._set_pending(loaded, reading, [Problem("not_now", "the game kept changing while this roll was read")])

    def _stand_in_moves(self, loaded: LoadedGame, moves: Sequence[Mapping[str, Any]]) -> LoadedGame:
        """The game after the stand-in's moves alone (its throw still fits no roll). A hand
        entry that got in first keeps its game."""
        try:
            return self.board.append_all(loaded.record.id, moves, loaded.version)
        except (VersionConflict, RuleError) as error:
            log.info("game %s: the stand-in's moves were not made: %s", loaded.record.id, error)
            return self.board.get(loaded.record.id)

    def _stand_in_dropped(self, game: str, dice: Sequence[Mapping[str, Any]]) -> None:
        thrown = ", ".join(f"{d.get('die')} {d.get('face')}" for d in dice)
        log.info("game %s: the stand-in ended the round; the throw (%s) was not scored", game, thrown)
        with self._lock:
            self._pending = None
            self._notice = {"kind": "stand_in", "game": game, "at": _now(),
                            "message": f"the demo's stand-in host sent everybody OUT for a new round; "
                                       f"the throw ({thrown}) was not scored"}
            self._changed += 1
        self._publish()

    def _rematch(self) -> str | None:
        """The demo plays for ever: once its game is over, the same players start another."""
        finished = next((record for record in self.board.list_games() if record.over and record.meta.get(DEMO_GAME)
                         and self.board.rematch_id(record.id) is None), None)
        if finished is None:
            return None
        loaded = self.board.rematch(finished.id)
        log.info("stand-in: game %s is over; %s start game %s", finished.id, " and ".join(finished.players),
                 loaded.record.id)
        return str(loaded.record.id)

    def _give_back_memory(self) -> None:
        """Return freed heap to the system now and then (glibc keeps it after big frame churn).

        Frames are megabytes each and are allocated on several threads; glibc holds the freed
        space in per-thread arenas, which over an evening looks like a leak on a 1 GB Pi.
        """
        now = time.monotonic()
        if self._trim is not None and now - self._trimmed > 30.0:
            self._trimmed = now
            self._trim(0)

    def _set_pending(self, loaded: LoadedGame, reading: dict[str, Any], problems: Sequence[Problem]) -> None:
        pending = PendingReading(secrets.token_hex(4), loaded.record.id, loaded.version, reading,
                                 tuple(problems), _now())
        self.stats.pending += 1
        with self._lock:
            replaced, self._pending = self._pending, pending
            self._notice = None
            self._changed += 1
        if replaced is not None and replaced.reading.get("photo") != reading.get("photo"):
            self._forget_photo(replaced.reading)
        log.info("game %s: camera reading needs the host: %s", loaded.record.id, "; ".join(p.message for p in problems))
        self._publish()

    def _forget_photo(self, reading: Mapping[str, Any]) -> None:
        """Delete the photo of a reading that never became part of a game's log (replaced by a
        newer throw, dismissed, dropped): nothing links to it, and on a Pi's SD card such photos
        would pile up evening after evening."""
        name = reading.get("photo")
        if not name:
            return
        try:
            (self.photos / str(name)).unlink(missing_ok=True)
        except OSError as error:
            log.warning("could not delete the unused roll photo %s: %s", name, error)

    def _save_photo(self, image: np.ndarray, game_id: str, version: int, scale: float) -> str:
        """The roll's photo as a JPEG in DATA_DIR/rolls (written atomically); returns its name."""
        height, width = image.shape[:2]
        if scale < 1.0:
            image = cv2.resize(image, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA)
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])
        if not ok:
            raise OSError("could not encode the roll photo")
        self.photos.mkdir(parents=True, exist_ok=True)
        name = f"{game_id}-{version + 1:04d}-{secrets.token_hex(3)}.jpg"
        temporary = self.photos / f".{name}.tmp"
        temporary.write_bytes(data.tobytes())
        os.replace(temporary, self.photos / name)
        if self._stand_in:
            self._prune_photos(DEMO_PHOTOS_KEPT)
        return name

    def _prune_photos(self, keep: int) -> None:
        """Delete all but the `keep` newest roll photos (the demo's: 1 MB a minute otherwise)."""
        photos = sorted(self.photos.glob("*.jpg"), key=lambda path: (path.stat().st_mtime_ns, path.name))
        for old in photos[:-keep]:
            try:
                old.unlink(missing_ok=True)
            except OSError as error:
                log.warning("could not delete the old demo photo %s: %s", old.name, error)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None elsewhere (macOS, musl): then memory is left to the allocator."""
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except (OSError, AttributeError):
        return None
    return trim


def _scaled(die: dict[str, Any], scale: float) -> dict[str, Any]:
    if scale == 1.0:
        return die
    return {**die, "center": [round(v * scale, 1) for v in die["center"]],
            "corners": [[round(x * scale, 1), round(y * scale, 1)] for x, y in die["corners"]]}


def _last_reading_dice(loaded: LoadedGame) -> list[dict[str, Any]]:
    for logged in reversed(loaded.events):
        if logged.event.get("type") in ("roll", "up"):
            reading = logged.reading or {}
            dice = reading.get("dice")
            return list(dice) if isinstance(dice, list) else []
    return []


def _same_tray(new: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]]) -> bool:
    """The same faces lying in the same places (each die within half a die of where it was)."""
    if not new or len(new) != len(old):
        return False
    free = [d for d in old if isinstance(d, Mapping) and "center" in d]
    for die in new:
        size = _side(die)
        match = next((d for d in free if d.get("face") == die.get("face")
                      and math.dist(d["center"], die["center"]) <= size / 2), None)
        if match is None:
            return False
        free.remove(match)
    return True


def _side(die: Mapping[str, Any]) -> float:
    corners = die.get("corners") or []
    if len(corners) == 4:
        return max(1.0, sum(math.dist(corners[i], corners[(i + 1) % 4]) for i in range(4)) / 4)
    return 20.0


def _corrected_dice(read: Sequence[Mapping[str, Any]], given: Any) -> list[dict[str, Any]]:
    """The host's dice for a pending reading: a list of faces or {"die", "face"} objects.

    Dice the host set are flat and sure; a die left out of the list was not part of the roll.
    """
    if not isinstance(given, list) or not 0 < len(given) <= 30:
        raise LiveError("'dice' must be a list of the dice in the roll (faces, or {\"die\", \"face\"} objects)")
    dice = []
    for index, item in enumerate(given):
        if isinstance(item, str):
            item = {"die": "tossup", "face": item}
        if not (isinstance(item, Mapping) and isinstance(item.get("face"), str) and isinstance(item.get("die"), str)):
            raise LiveError(f"dice[{index}] must be a face or {{\"die\", \"face\"}}, got {item!r}")
        source = item.get("index")
        base = dict(read[source]) if isinstance(source, int) and 0 <= source < len(read) else {}
        dice.append({**base, "die": item["die"], "face": item["face"], "cocked": False,
                     "confidence": 1.0, "by_host": True})
    return dice


def live_table_from_config(board: Any, config: Mapping[str, Any], data_dir: Path) -> LiveTable | None:
    """The app's live table when a source is configured, else None (manual entry only)."""
    checked = LiveConfig.from_mapping(config)
    if checked.source is None:
        return None
    return LiveTable(board, checked, data_dir)


__all__ = [
    "ConfigError", "LIVE_DEFAULTS", "LiveConfig", "LiveError", "LiveStats", "LiveTable", "PendingReading",
    "PreviewSnapshot", "live_table_from_config",
]
