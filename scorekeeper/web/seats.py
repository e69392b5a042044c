"""Which device holds each seat, and how often a client may try a join code that is wrong."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable

from scorekeeper.web.auth import HeldSeat


class Seats:
    """Seat claims per game: one device per seat until it leaves or the host frees the seat."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, int], HeldSeat] = {}

    def claim(self, game_id: str, seat: int, player: str, claim: str) -> HeldSeat | None:
        """Take a free seat for a new device; None when another device holds it."""
        with self._lock:
            if (game_id, seat) in self._held:
                return None
            held = self._held[(game_id, seat)] = HeldSeat(player, claim)
            return held

    def holder(self, game_id: str, seat: int) -> HeldSeat | None:
        with self._lock:
            return self._held.get((game_id, seat))

    def release(self, game_id: str, seat: int) -> bool:
        """Free a seat (its token stops working); False when nobody held it."""
        with self._lock:
            return self._held.pop((game_id, seat), None) is not None


class TryLimiter:
    """Failed tries per client: a bucket of `burst` tries that refills one every `every` seconds.

    Only failures drain it, so a family typing the right code never meets it; someone guessing
    codes gets `burst` tries, then one every `every` seconds. At most `clients` are remembered.
    """

    def __init__(self, burst: int = 10, every: float = 6.0, clients: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._burst = burst
        self._every = every
        self._clients = clients
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tries left, when)

    def _left(self, client: str, now: float) -> float:
        left, then = self._buckets.get(client, (float(self._burst), now))
        return min(float(self._burst), left + (now - then) / self._every)

    def wait(self, client: str) -> float:
        """Seconds until `client` may try again (0: now)."""
        with self._lock:
            left = self._left(client, self._clock())
        return 0.0 if left >= 1 else (1 - left) * self._every

    def failed(self, client: str) -> None:
        with self._lock:
            now = self._clock()
            self._buckets[client] = (max(0.0, self._left(client, now) - 1), now)
            self._buckets.move_to_end(client)
            while len(self._buckets) > self._clients:
                self._buckets.popitem(last=False)
