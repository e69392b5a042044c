"""The durable game log: every game is the fold of its accepted events.

One SQLite file (WAL mode, synchronous=FULL) in the data directory. The log is
append-only: an undo or an edit is itself a log entry, so the record of what happened at
the table is never rewritten, and a game's version (its number of log entries) only grows.
A write either commits whole or not at all, so killing the process at any moment leaves
every game as it was after its last committed entry.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from scorekeeper.rules import Game, RuleError, new_game

log = logging.getLogger(__name__)

DB_NAME = "games.sqlite3"
SCHEMA_VERSION = 1
EDITABLE_EVENTS = frozenset({"roll", "up"})
#: Folded games kept in memory: more than a family plays at once, far fewer than a year of evenings.
CACHED_GAMES = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    game TEXT NOT NULL,
    players TEXT NOT NULL,
    options TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    over INTEGER NOT NULL DEFAULT 0,
    winners TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS log (
    game_id TEXT NOT NULL REFERENCES games(id),
    seq INTEGER NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('event', 'undo', 'edit')),
    target INTEGER,
    event TEXT,
    reading TEXT,
    at TEXT NOT NULL,
    PRIMARY KEY (game_id, seq)
);
"""


class GameNotFound(LookupError):
    """No game with that id."""


class VersionConflict(Exception):
    """The caller acted on an older version of the game (another device got there first)."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"the game is at version {actual}, not {expected}: reload and try again")
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True)
class GameRecord:
    """A game's identity and summary, as listed on the home page."""

    id: str
    game: str
    players: list[str]
    options: dict[str, Any]
    created: str
    updated: str
    version: int
    over: bool
    winners: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LoggedEvent:
    """One accepted event as it stands now (after undos and edits), with its scanner reading."""

    index: int
    event: dict[str, Any]
    #: The reading as stored (JSON text): a long evening's readings stay small in memory.
    reading_json: str | None
    at: str
    edited: bool = False

    @property
    def reading(self) -> dict[str, Any] | None:
        return json.loads(self.reading_json) if self.reading_json else None


@dataclass(frozen=True)
class LoadedGame:
    record: GameRecord
    game: Game
    events: list[LoggedEvent]

    @property
    def version(self) -> int:
        return self.record.version

    def state(self) -> dict[str, Any]:
        return self.game.state()


def _now(clock: Callable[[], float]) -> str:
    return datetime.fromtimestamp(clock(), tz=timezone.utc).isoformat(timespec="milliseconds")


def fold(game: str, players: Sequence[str], options: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Game:
    """Replay events onto a new game. Raises RuleError naming the first illegal event."""
    result = new_game(game, list(players), **dict(options))
    for index, event in enumerate(events):
        try:
            result.apply(event)
        except RuleError as error:
            kind = event.get("type") if isinstance(event, Mapping) else None
            raise RuleError(f"event #{index} ({kind}) is not legal: {error}") from error
    return result


class GameStore:
    """All games in one SQLite file. Safe to share between the threads of one process.

    Several processes may open the same file; writes serialise on SQLite's lock.
    """

    def __init__(self, path: Path | str, clock: Callable[[], float] = time.time,
                 cached_games: int = CACHED_GAMES) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created 0600 before SQLite opens it; SQLite gives its -wal and -shm files the same mode.
        # A log that an older dicetray left readable by others is made private too.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        for path in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            if path.exists() and path.stat().st_mode & 0o077:
                path.chmod(0o600)
        self._clock = clock
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        with self._transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)
            found = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if found == 0:
                self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif found != SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} holds game log schema {found}; this dicetray reads schema {SCHEMA_VERSION}"
                )
        # Folded games by id, valid while the stored version matches; the least recently used
        # are dropped (a later read folds them again), so memory does not grow with every game.
        self._cache: OrderedDict[str, LoadedGame] = OrderedDict()
        self._cached_games = max(1, cached_games)

    @classmethod
    def in_dir(cls, data_dir: Path | str, clock: Callable[[], float] = time.time) -> "GameStore":
        return cls(Path(data_dir) / DB_NAME, clock=clock)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "GameStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions -----------------------------------------------------------

    def _transaction(self) -> "_Transaction":
        return _Transaction(self._conn, self._lock)

    # -- reading ----------------------------------------------------------------

    def list_games(self) -> list[GameRecord]:
        """Every game, most recently updated first."""
        with self._lock:
            # Within one millisecond the game created last comes first: the camera scores the
            # newest game, never one picked by its random id.
            rows = self._conn.execute("SELECT * FROM games ORDER BY updated DESC, rowid DESC").fetchall()
        return [self._record(row) for row in rows]

    def get(self, game_id: str) -> LoadedGame:
        with self._lock:
            return self._load(game_id)

    def log_entries(self, game_id: str) -> list[dict[str, Any]]:
        """The raw append-only log (events, undos and edits) of one game."""
        with self._lock:
            self._require_game(game_id)
            rows = self._conn.execute(
                "SELECT seq, action, target, event, reading, at FROM log WHERE game_id=? ORDER BY seq",
                (game_id,),
            ).fetchall()
        return [
            {
                "seq": seq, "action": action, "target": target,
                "event": json.loads(event) if event else None,
                "reading": json.loads(reading) if reading else None,
                "at": at,
            }
            for seq, action, target, event, reading, at in rows
        ]

    # -- writing ----------------------------------------------------------------

    def create(
        self,
        game: str,
        players: Sequence[str],
        options: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> LoadedGame:
        """Start a game; raises RuleError for an unknown game, bad players or options."""
        options = dict(options or {})
        engine = new_game(game, list(players), **options)
        now = _now(self._clock)
        with self._transaction():
            game_id = self._new_id()
            self._conn.execute(
                "INSERT INTO games (id, game, players, options, created, updated, meta) VALUES (?,?,?,?,?,?,?)",
                (game_id, game, json.dumps(engine.players), json.dumps(engine.options()), now, now,
                 json.dumps(dict(meta or {}))),
            )
        log.info("created %s game %s for %s", game, game_id, engine.players)
        return self.get(game_id)

    def append(
        self,
        game_id: str,
        event: Mapping[str, Any],
        reading: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> LoadedGame:
        """Apply and log one event. Raises RuleError (nothing logged) if it is illegal now."""
        with self._transaction():
            loaded = self._load(game_id)
            self._check_version(loaded, expected_version)
            # The cached game is shared with readers: apply to a private copy.
            game = copy.deepcopy(loaded.game)
            game.apply(event)
            written = self._write(loaded, "event", None, dict(event), reading, game)
        return self._commit_cached(written)

    def append_all(
        self,
        game_id: str,
        events: Sequence[Mapping[str, Any]],
        reading: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> LoadedGame:
        """Apply and log several events as one: all of them, or (on any RuleError) none.

        The reading is attached to every event that is a roll or an Up Die result.
        """
        with self._transaction():
            loaded = self._load(game_id)
            self._check_version(loaded, expected_version)
            game = copy.deepcopy(loaded.game)
            for event in events:
                game.apply(event)
                attached = reading if event.get("type") in EDITABLE_EVENTS else None
                loaded = self._write(loaded, "event", None, dict(event), attached, game)
        return self._commit_cached(loaded)

    def undo(self, game_id: str, expected_version: int | None = None) -> LoadedGame:
        """Take back the last accepted event."""
        with self._transaction():
            loaded = self._load(game_id)
            self._check_version(loaded, expected_version)
            if not loaded.events:
                raise RuleError("nothing to undo: no event has been accepted in this game yet")
            remaining = [e.event for e in loaded.events[:-1]]
            game = fold(loaded.record.game, loaded.record.players, loaded.record.options, remaining)
            written = self._write(loaded, "undo", len(loaded.events) - 1, None, None, game)
        return self._commit_cached(written)

    def edit(
        self,
        game_id: str,
        index: int,
        event: Mapping[str, Any],
        reading: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> LoadedGame:
        """Replace past event `index` (a roll or an Up Die reading) and re-fold the game.

        Refuses, changing nothing, when any later event stops being legal.
        """
        with self._transaction():
            loaded = self._load(game_id)
            self._check_version(loaded, expected_version)
            if not (isinstance(index, int) and 0 <= index < len(loaded.events)):
                raise RuleError(f"there is no event #{index}; events are numbered 0 to {len(loaded.events) - 1}")
            old = loaded.events[index].event
            if old.get("type") not in EDITABLE_EVENTS:
                raise RuleError(f"event #{index} is a {old.get('type')!r}; only rolls and Up Die readings can be edited")
            if not isinstance(event, Mapping) or event.get("type") != old["type"]:
                raise RuleError(f"event #{index} is a {old['type']!r} and can only be replaced by another {old['type']!r}")
            events = [e.event for e in loaded.events]
            events[index] = dict(event)
            try:
                game = fold(loaded.record.game, loaded.record.players, loaded.record.options, events)
            except RuleError as error:
                raise RuleError(f"cannot edit event #{index}: after the change, {error}") from error
            written = self._write(loaded, "edit", index, dict(event), reading, game)
        return self._commit_cached(written)

    # -- internals --------------------------------------------------------------

    def _new_id(self) -> str:
        while True:
            candidate = secrets.token_hex(4)
            if not self._conn.execute("SELECT 1 FROM games WHERE id=?", (candidate,)).fetchone():
                return candidate

    def _require_game(self, game_id: str) -> sqlite3.Row | tuple:
        row = self._conn.execute("SELECT * FROM games WHERE id=?", (game_id,)).fetchone()
        if row is None:
            raise GameNotFound(f"no game with id {game_id!r}")
        return row

    def _record(self, row: Sequence[Any]) -> GameRecord:
        game_id, game, players, options, created, updated, version, over, winners, meta = row
        return GameRecord(
            id=game_id, game=game, players=json.loads(players), options=json.loads(options),
            created=created, updated=updated, version=version, over=bool(over),
            winners=json.loads(winners), meta=json.loads(meta),
        )

    def _load(self, game_id: str) -> LoadedGame:
        record = self._record(self._require_game(game_id))
        cached = self._cache.get(game_id)
        if cached is not None and cached.record == record:
            self._cache.move_to_end(game_id)
            return cached
        rows = self._conn.execute(
            "SELECT action, target, event, reading, at FROM log WHERE game_id=? ORDER BY seq", (game_id,)
        ).fetchall()
        events: list[LoggedEvent] = []
        for action, target, event, reading, at in rows:
            events = _replay(events, action, target, json.loads(event) if event else None, reading, at)
        game = fold(record.game, record.players, record.options, [e.event for e in events])
        loaded = LoadedGame(record, game, events)
        self._remember(loaded)
        return loaded

    def _check_version(self, loaded: LoadedGame, expected: int | None) -> None:
        if expected is not None and expected != loaded.version:
            raise VersionConflict(expected, loaded.version)

    def _write(
        self,
        loaded: LoadedGame,
        action: str,
        target: int | None,
        event: dict[str, Any] | None,
        reading: Mapping[str, Any] | None,
        game: Game,
    ) -> LoadedGame:
        """Log one entry and return the game as it will be once the transaction commits."""
        if reading is not None and not isinstance(reading, Mapping):
            raise RuleError(f"a scanner reading must be an object, got {type(reading).__name__}")
        now = _now(self._clock)
        version = loaded.version + 1
        reading_json = json.dumps(dict(reading)) if reading is not None else None
        self._conn.execute(
            "INSERT INTO log (game_id, seq, action, target, event, reading, at) VALUES (?,?,?,?,?,?,?)",
            (loaded.record.id, version, action, target,
             json.dumps(event) if event is not None else None, reading_json, now),
        )
        state = game.state()
        self._conn.execute(
            "UPDATE games SET version=?, updated=?, over=?, winners=? WHERE id=?",
            (version, now, int(state["over"]), json.dumps(state["winners"]), loaded.record.id),
        )
        record = replace(loaded.record, version=version, updated=now, over=bool(state["over"]),
                         winners=list(state["winners"]))
        return LoadedGame(record, game, _replay(loaded.events, action, target, event, reading_json, now))

    def _commit_cached(self, loaded: LoadedGame) -> LoadedGame:
        """Remember a committed write's result, so the next read needs no re-fold."""
        with self._lock:
            self._remember(loaded)
        return loaded

    def _remember(self, loaded: LoadedGame) -> None:
        self._cache[loaded.record.id] = loaded
        self._cache.move_to_end(loaded.record.id)
        while len(self._cache) > self._cached_games:
            self._cache.popitem(last=False)


def _replay(
    events: list[LoggedEvent], action: str, target: int | None, event: dict[str, Any] | None,
    reading_json: str | None, at: str,
) -> list[LoggedEvent]:
    """The current events after one more log entry (a new list; the old one may be shared)."""
    if action == "event":
        assert event is not None
        return [*events, LoggedEvent(len(events), event, reading_json, at)]
    if action == "undo":
        return events[:-1]
    assert event is not None and target is not None
    changed = list(events)
    # A correction keeps the photo and confidences of the reading it corrects.
    changed[target] = LoggedEvent(target, event, reading_json or events[target].reading_json, at, edited=True)
    return changed


class _Transaction:
    """`BEGIN IMMEDIATE` ... `COMMIT`, or `ROLLBACK` on any error; holds the store's lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        try:
            self._conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._lock.release()


def iter_states(store: GameStore, game_id: str) -> Iterator[dict[str, Any]]:
    """The state after each accepted event, from the start (for history views)."""
    loaded = store.get(game_id)
    game = fold(loaded.record.game, loaded.record.players, loaded.record.options, [])
    yield game.state()
    for logged in loaded.events:
        game.apply(logged.event)
        yield game.state()
