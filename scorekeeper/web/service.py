"""The scoreboard's one place for changes: store writes, secret choices and stream fan-out.

Every change goes through `Scoreboard` under one lock, so the stream sees the changes of a
game in the order they were logged, and a pending secret choice never outlives the game
version it was made for.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from scorekeeper.rules import RuleError
from scorekeeper.store import GameNotFound, GameRecord, GameStore, LoadedGame, VersionConflict, fold
from scorekeeper.web.auth import Auth, Caller, HeldSeat, new_join_code, normalise_join_code
from scorekeeper.web.broker import Broker, StreamMessage
from scorekeeper.web.seats import Seats, TryLimiter
from scorekeeper.web.views import ChoiceProgress, game_view

log = logging.getLogger(__name__)

CHOICES = ("in", "out")
#: Meta key of a game started as the rematch of another (that game's id): the finished game's
#: table and phones follow it.
REMATCH_OF = "rematch_of"


class GameNotOver(Exception):
    """A rematch was asked for a game still being played."""


@dataclass(frozen=True)
class ChoiceResult:
    """What a secret IN/OUT choice led to."""

    loaded: LoadedGame
    progress: ChoiceProgress | None
    revealed: bool
    out: list[str]


@dataclass
class _Pending:
    version: int
    choices: dict[str, str]


class SeatHeld(Exception):
    """Another device holds the seat a join asked for."""


class Scoreboard:
    def __init__(self, store: GameStore, broker: Broker, auth: Auth, seats: Seats | None = None,
                 join_tries: TryLimiter | None = None) -> None:
        self.store = store
        self.broker = broker
        self.auth = auth
        self.seats = seats if seats is not None else Seats()
        #: Wrong join codes per client: codes cannot be guessed at the speed of a script.
        self.join_tries = join_tries if join_tries is not None else TryLimiter()
        self._lock = threading.RLock()
        self._pending: dict[str, _Pending] = {}
        self._listeners: list[Callable[[LoadedGame], None]] = []
        self._closers: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[LoadedGame], None]) -> None:
        """Call `listener(loaded)` after every logged change or new game (under the board's lock)."""
        self._listeners.append(listener)

    def close_first(self, closer: Callable[[], None]) -> None:
        """Run `closer` at `close()` before the store closes (the live table writes to it)."""
        self._closers.append(closer)

    def close(self) -> None:
        for closer in self._closers:
            closer()
        self.broker.close()
        self.store.close()

    # -- reading ----------------------------------------------------------------

    def get(self, game_id: str) -> LoadedGame:
        return self.store.get(game_id)

    def list_games(self) -> list[GameRecord]:
        return self.store.list_games()

    def players_of(self, game_id: str) -> list[str] | None:
        try:
            return self.store.get(game_id).record.players
        except GameNotFound:
            return None

    def progress(self, loaded: LoadedGame) -> ChoiceProgress | None:
        """Who has made a secret choice for the reveal the game is waiting for, if it is."""
        state = loaded.state()
        if "reveal" not in state["expects"]:
            return None
        with self._lock:
            pending = self._pending.get(loaded.record.id)
            made = pending.choices if pending is not None and pending.version == loaded.version else {}
        return ChoiceProgress(
            loaded.version,
            chosen=[name for name in state["in"] if name in made],
            waiting=[name for name in state["in"] if name not in made],
        )

    def own_choice(self, loaded: LoadedGame, player: str) -> str | None:
        with self._lock:
            pending = self._pending.get(loaded.record.id)
            if pending is None or pending.version != loaded.version:
                return None
            return pending.choices.get(player)

    def view(self, loaded: LoadedGame) -> dict[str, Any]:
        rematch = self.rematch_id(loaded.record.id) if loaded.record.over else None
        return {**game_view(loaded, self.progress(loaded)), "rematch": rematch}

    def snapshot(self, game_id: str) -> StreamMessage:
        loaded = self.get(game_id)
        return StreamMessage("snapshot", json.dumps(self.view(loaded)), loaded.version)

    def join_code(self, record: GameRecord) -> str:
        return str(record.meta.get("join_code", ""))

    def find_by_code(self, code: str) -> GameRecord:
        wanted = normalise_join_code(code)
        for record in self.store.list_games():
            if not record.over and record.meta.get("join_code") == wanted:
                return record
        raise GameNotFound(f"no game in progress has the join code {wanted!r}")

    def held_seat(self, game_id: str, seat: int) -> HeldSeat | None:
        return self.seats.holder(game_id, seat)

    def join(self, record: GameRecord, player: str, who: Caller) -> str:
        """A token for `player`'s seat; raises SeatHeld while another device holds it."""
        seat = record.players.index(player)
        held = self.seats.holder(record.id, seat)
        if held is not None and who.game_id == record.id and who.seat == seat:
            return self.auth.player_token(record.id, seat, held)  # the holder joining again
        held = self.seats.claim(record.id, seat, player, self.auth.new_claim())
        if held is None:
            raise SeatHeld(f"{player}'s seat is held by another device: {player} can leave it there, "
                           "or the host can free it")
        return self.auth.player_token(record.id, seat, held)

    def history(self, game_id: str) -> list[dict[str, Any]]:
        """Every accepted event with who acted and the state just after it."""
        loaded = self.get(game_id)
        record = loaded.record
        # Re-fold this very list of events, so every row matches the version just read.
        game = fold(record.game, record.players, record.options, [])
        before = game.state()
        rows = []
        for logged in loaded.events:
            game.apply(logged.event)
            after = game.state()
            rows.append({
                "index": logged.index,
                "event": logged.event,
                "reading": logged.reading,
                "edited": logged.edited,
                "at": logged.at,
                "actor": before["active"],
                "turn": before.get("turn", before.get("round")),
                "result": after["last"],
                "scores": {p["name"]: p["score"] for p in after["players"]},
                "running_total": after.get("running_total", after.get("turn_points")),
            })
            before = after
        return rows

    # -- writing ----------------------------------------------------------------

    def create(self, game: str, players: list[str], options: Mapping[str, Any],
               meta: Mapping[str, Any] | None = None, rematch_of: str | None = None) -> LoadedGame:
        """A new game with its own join code; `meta` (such as the demo's mark) is kept beside
        it. A rematch of a finished game is told to that game's pages, which follow it."""
        extra = {**(meta or {}), **({REMATCH_OF: rematch_of} if rematch_of else {})}
        with self._lock:
            taken = {str(r.meta.get("join_code")) for r in self.store.list_games() if not r.over}
            loaded = self.store.create(game, players, options, meta={**extra, "join_code": new_join_code(taken)})
            self._notify(loaded)
            if rematch_of:
                # No id: the finished game's version is unchanged, and its streams must not
                # drop the news as a change they already sent.
                finished = self.get(rematch_of)
                self.broker.publish(rematch_of, StreamMessage("change", json.dumps(self.view(finished))))
        return loaded

    def rematch(self, game_id: str) -> LoadedGame:
        """The same players and options again, as the rematch of finished game `game_id` (the
        one started already, if any)."""
        with self._lock:
            finished = self.get(game_id)
            if not finished.record.over:
                raise GameNotOver(f"game {game_id} is not over yet")
            started = self.rematch_id(game_id)
            if started is not None:
                return self.get(started)
            record = finished.record
            return self.create(record.game, list(record.players), record.options,
                               meta={k: v for k, v in record.meta.items() if k not in ("join_code", REMATCH_OF)},
                               rematch_of=game_id)

    def rematch_id(self, game_id: str) -> str | None:
        """The game started as the rematch of `game_id`, if any."""
        return next((str(r.id) for r in self.store.list_games() if r.meta.get(REMATCH_OF) == game_id), None)

    def append(self, game_id: str, event: Mapping[str, Any], version: int | None,
               reading: Mapping[str, Any] | None = None) -> LoadedGame:
        with self._lock:
            loaded = self.store.append(game_id, event, reading=reading, expected_version=version)
            self._changed(loaded)
        log.info("game %s v%s: %s", game_id, loaded.version, event.get("type"))
        return loaded

    def append_all(self, game_id: str, events: Sequence[Mapping[str, Any]], version: int | None,
                   reading: Mapping[str, Any] | None = None) -> LoadedGame:
        """Several events as one (a camera reading may be `choose` plus `roll`): all or none."""
        with self._lock:
            loaded = self.store.append_all(game_id, events, reading=reading, expected_version=version)
            self._changed(loaded)
        log.info("game %s v%s: %s", game_id, loaded.version, "+".join(str(e.get("type")) for e in events))
        return loaded

    def undo(self, game_id: str, version: int | None) -> LoadedGame:
        with self._lock:
            loaded = self.store.undo(game_id, expected_version=version)
            self._changed(loaded)
        log.info("game %s v%s: undo", game_id, loaded.version)
        return loaded

    def edit(self, game_id: str, index: int, event: Mapping[str, Any], version: int | None,
             reading: Mapping[str, Any] | None = None) -> LoadedGame:
        with self._lock:
            loaded = self.store.edit(game_id, index, event, reading=reading, expected_version=version)
            self._changed(loaded)
        log.info("game %s v%s: edited event %s", game_id, loaded.version, index)
        return loaded

    def choose(self, game_id: str, player: str, choice: str, version: int | None) -> ChoiceResult:
        """Hold one player's secret IN/OUT; reveal everyone's once every IN player has chosen."""
        if choice not in CHOICES:
            raise RuleError(f"choice must be 'in' or 'out', got {choice!r}")
        with self._lock:
            loaded = self.store.get(game_id)
            if version is not None and version != loaded.version:
                raise VersionConflict(version, loaded.version)
            state = loaded.state()
            if "reveal" not in state["expects"]:
                raise RuleError("nobody chooses IN or OUT now: the game is not waiting for a reveal")
            if player not in state["in"]:
                raise RuleError(f"{player} is already OUT for this round")
            pending = self._pending.get(game_id)
            if pending is None or pending.version != loaded.version:
                pending = self._pending[game_id] = _Pending(loaded.version, {})
            pending.choices[player] = choice
            if all(name in pending.choices for name in state["in"]):
                out = [name for name in state["in"] if pending.choices[name] == "out"]
                loaded = self.store.append(
                    game_id, {"type": "reveal", "out": out}, expected_version=loaded.version
                )
                self._changed(loaded)
                log.info("game %s v%s: secret choices revealed, out=%s", game_id, loaded.version, out)
                return ChoiceResult(loaded, None, True, out)
            progress = self.progress(loaded)
            self.broker.publish(
                game_id, StreamMessage("choices", json.dumps(progress.as_json() if progress else None))
            )
        return ChoiceResult(loaded, progress, False, [])

    def _changed(self, loaded: LoadedGame) -> None:
        # Any logged change makes a pending secret choice meaningless (it was for another moment).
        self._pending.pop(loaded.record.id, None)
        message = StreamMessage("change", json.dumps(self.view(loaded)), loaded.version)
        self.broker.publish(loaded.record.id, message)
        self._notify(loaded)

    def _notify(self, loaded: LoadedGame) -> None:
        for listener in self._listeners:
            try:
                listener(loaded)
            except Exception:  # a listener's bug must never undo or hide a committed change
                log.exception("change listener failed for game %s", loaded.record.id)
