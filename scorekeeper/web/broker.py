"""Fan-out of game changes to server-sent-event streams.

One `Broker` per app. Every message carries a full view of the game, so a client that
falls behind loses nothing by having its backlog merged into the newest message.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamMessage:
    """One server-sent event: `event` names it, `data` is JSON text, `id` is the game version."""

    event: str
    data: str
    id: int | None = None

    @cached_property
    def encoded(self) -> bytes:
        """The event as sent, encoded once however many streams it goes to."""
        return self.encode()

    def encode(self) -> bytes:
        lines = []
        if self.id is not None:
            lines.append(f"id: {self.id}")
        lines.append(f"event: {self.event}")
        # JSON from json.dumps never holds a raw newline, so one data line is enough.
        lines.append(f"data: {self.data}")
        return ("\n".join(lines) + "\n\n").encode("utf-8")


class StreamClosed(Exception):
    """The broker shut down; the stream should end."""


class Subscription:
    """One open stream's bounded mailbox.

    A thread waits on it with `get`; an event loop sets `notify` (called after every put and at
    close, from the publishing thread) and drains it with `poll`, holding no thread while idle.
    """

    def __init__(self, game_id: str, maxsize: int) -> None:
        self.game_id = game_id
        self._maxsize = max(2, maxsize)
        self._queue: deque[StreamMessage] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.merged = 0
        self.notify: Callable[[], None] | None = None

    def put(self, message: StreamMessage) -> None:
        with self._cond:
            if len(self._queue) >= self._maxsize:
                # Behind: every message is a full view, so the newest of each kind says it all.
                newest: dict[str, StreamMessage] = {}
                for queued in self._queue:
                    newest[queued.event] = queued
                self.merged += len(self._queue) - len(newest)
                self._queue = deque(sorted(newest.values(), key=lambda m: m.id or 0))
            self._queue.append(message)
            self._cond.notify()
        if self.notify is not None:
            self.notify()

    def get(self, timeout: float) -> StreamMessage | None:
        """The next message, or None after `timeout` seconds without one."""
        with self._cond:
            if not self._queue and not self._closed:
                self._cond.wait(timeout)
            if self._closed:
                raise StreamClosed()
            return self._queue.popleft() if self._queue else None

    def poll(self) -> StreamMessage | None:
        """The next message without waiting (None when there is none); StreamClosed once closed."""
        with self._cond:
            if self._closed:
                raise StreamClosed()
            return self._queue.popleft() if self._queue else None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self.notify is not None:
            self.notify()


class Broker:
    """Subscriptions per game plus a short replay buffer of recent changes per game."""

    def __init__(self, queue_size: int = 32, replay_size: int = 64, replay_games: int = 32) -> None:
        self._queue_size = queue_size
        self._replay_size = replay_size
        self._replay_games = max(1, replay_games)
        self._lock = threading.Lock()
        self._subs: dict[str, set[Subscription]] = {}
        # Recent changes of the most recently changed games only: a reconnect to an older game
        # gets a snapshot instead, and a long evening's games do not stay in memory.
        self._recent: OrderedDict[str, deque[StreamMessage]] = OrderedDict()
        self._closed = False

    def subscribe(self, game_id: str) -> Subscription:
        sub = Subscription(game_id, self._queue_size)
        with self._lock:
            if self._closed:
                sub.close()
            self._subs.setdefault(game_id, set()).add(sub)
        log.debug("stream opened for game %s", game_id)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.game_id)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[sub.game_id]
        log.debug("stream closed for game %s", sub.game_id)

    def subscriber_count(self, game_id: str | None = None) -> int:
        with self._lock:
            if game_id is not None:
                return len(self._subs.get(game_id, ()))
            return sum(len(subs) for subs in self._subs.values())

    def topics(self) -> list[str]:
        """The games that have at least one open stream."""
        with self._lock:
            return list(self._subs)

    def publish(self, game_id: str, message: StreamMessage) -> None:
        with self._lock:
            if message.id is not None:
                recent = self._recent.setdefault(game_id, deque(maxlen=self._replay_size))
                if recent and recent[-1].id is not None and message.id <= recent[-1].id:
                    # Never let the replay buffer go backwards; the newer message covers it.
                    return
                recent.append(message)
                self._recent.move_to_end(game_id)
                while len(self._recent) > self._replay_games:
                    self._recent.popitem(last=False)
            targets = list(self._subs.get(game_id, ()))
        for sub in targets:
            sub.put(message)

    def missed(self, game_id: str, last_id: int, current: int) -> list[StreamMessage] | None:
        """The changes after `last_id` up to `current`, or None when they are not all buffered."""
        with self._lock:
            recent = list(self._recent.get(game_id, ()))
        wanted = [m for m in recent if m.id is not None and last_id < m.id <= current]
        if last_id == current:
            return []
        if last_id > current:
            return None  # ids from another server's data: start over
        if [m.id for m in wanted] != list(range(last_id + 1, current + 1)):
            return None
        return wanted

    def close(self) -> None:
        """End every open stream (used when the server shuts down)."""
        with self._lock:
            self._closed = True
            subs = [sub for group in self._subs.values() for sub in group]
        for sub in subs:
            sub.close()
