"""`dicetray bench soak`: an evening at the table, sped up into minutes, on loopback only.

A drawn clip of throws (every one a legal Toss Up roll that never ends the game) is replayed in
real time and in a loop through the whole live table: camera thread, settle watcher, scanner,
game log and stream fan-out to N clients. Counted: throws that settled in the replay, rolls
applied (missed and duplicated ones), whether every client got the final version, and the
process's memory (RSS) after warm-up and at the end. It stops by itself at the deadline.
"""

from __future__ import annotations

import logging
import os
import resource
import secrets
import tempfile
import time
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from scanner.sources import open_source
from scorekeeper.table.synthetic import Clip, write_throws
from scorekeeper.store import GameStore

log = logging.getLogger(__name__)

#: Ten yellows: a "caution" roll, legal again and again, so the game never ends mid-soak.
THROWS = (("yellow",) * 10,) * 3
MAX_GROWTH = 0.05


@dataclass
class SoakResult:
    seconds: float
    frames: int
    clients: int
    expected: int
    applied: int
    missed: int
    duplicates: int
    pending: int
    tray_changed: int
    clients_current: int
    rss_start_kib: int
    rss_end_kib: int
    skipped_frames: int = 0
    notes: list[str] = field(default_factory=list)
    #: Least-squares trend of RSS between warm-up and the end, MiB per hour (NaN: too few samples).
    rss_slope_mib_h: float = float("nan")

    @property
    def growth(self) -> float:
        return (self.rss_end_kib - self.rss_start_kib) / self.rss_start_kib if self.rss_start_kib else float("nan")

    @property
    def passed(self) -> bool:
        return (self.expected > 0 and self.missed == 0 and self.duplicates == 0 and self.clients_current == self.clients
                and self.growth < MAX_GROWTH)

    def lines(self) -> list[str]:
        return [
            f"{self.seconds:.0f} s of replay, {self.frames} frames ({self.frames / max(self.seconds, 1e-9):.1f} fps), "
            f"{self.skipped_frames} unusable, {self.clients} stream clients on 127.0.0.1",
            f"rolls: {self.expected} thrown, {self.applied} applied, {self.missed} missed, "
            f"{self.duplicates} duplicated, {self.pending} held for the host, {self.tray_changed} tray-changed notices",
            f"stream clients with the final version: {self.clients_current}/{self.clients}",
            f"memory (RSS): {self.rss_start_kib / 1024:.1f} MiB after warm-up -> {self.rss_end_kib / 1024:.1f} MiB "
            f"at the end ({self.growth * 100:+.1f} %, limit +{MAX_GROWTH * 100:.0f} %); "
            f"trend {self.rss_slope_mib_h:+.1f} MiB/h"
            + (f" ({self.rss_slope_mib_h * 1024 / max(self.applied / max(self.seconds / 3600, 1e-9), 1e-9):.0f} KiB "
               "per applied roll: the game log keeps every roll's reading)" if self.applied else ""),
            *self.notes,
            "PASS" if self.passed else "FAIL",
        ]


def rss_kib() -> int:
    """This process's resident memory now (Linux /proc), else its peak (other systems)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def throw_of(frame: int, clip: Clip) -> tuple[int, int] | None:
    """Which (loop, throw) a settled frame of the looping replay belongs to."""
    loop, position = divmod(frame, clip.frames)
    index = bisect_right(clip.settled_frames, position) - 1
    return None if index < 0 else (loop, index)


def expected_throws(frames: int, clip: Clip, rest_frames: int) -> set[tuple[int, int]]:
    """The throws whose dice lay still for their whole rest before the replay stopped."""
    wanted = set()
    for loop in range(frames // clip.frames + 1):
        for index, settled in enumerate(clip.settled_frames):
            if loop * clip.frames + settled + rest_frames <= frames:
                wanted.add((loop, index))
    return wanted


def run_soak(minutes: float = 10.0, clients: int = 20, fps: float = 30.0,
             progress: Callable[[str], None] = lambda line: None) -> SoakResult:
    from scorekeeper.web.app import EXTENSION, LIVE_EXTENSION, create_app
    from scorekeeper.web.bench import _Readers
    from scorekeeper.web.server import WebServer

    duration = minutes * 60.0
    rest_s = 1.2
    with tempfile.TemporaryDirectory(prefix="dicetray-soak-") as work:
        folder = Path(work)
        progress(f"drawing the clip ({len(THROWS)} throws at {fps:g} fps)...")
        clip = write_throws(folder / "throws.avi", THROWS, fps=fps, rest_s=rest_s, empty_s=0.6)
        data = folder / "data"
        with GameStore.in_dir(data) as store:
            game_id = store.create("tossup", ["Ann", "Bob"]).record.id
        token = secrets.token_urlsafe(12)
        app = create_app({
            "DATA_DIR": data, "HOST_TOKEN": token, "HEARTBEAT_SECONDS": 15.0,
            "LIVE_SOURCE": lambda: open_source(str(clip.path), fps=fps, loop=True, realtime=True),
        })
        board = app.extensions[EXTENSION]
        live = app.extensions[LIVE_EXTENSION]
        server = WebServer(app, threads=clients + 16).start()
        readers = None
        try:
            readers = _Readers(server.port, f"/api/games/{game_id}/stream", clients)
            started = time.monotonic()
            # Warm-up: two passes of the clip, a tenth of the run or 45 s, whichever is longest
            # (past the live table's first malloc_trim at 30 s and the caches the first rolls fill).
            warm = min(max(2 * clip.frames / fps, duration / 10, 45.0), duration / 3)
            rss_start = 0
            samples: list[tuple[float, int]] = []
            next_sample = started
            next_report = started + 30
            while (now := time.monotonic()) - started < duration:
                if not rss_start and now - started >= warm:
                    rss_start = rss_kib()
                if rss_start and now >= next_sample:
                    samples.append((now - started, rss_kib()))
                    next_sample = now + 5
                if now >= next_report:
                    next_report += 30
                    progress(f"  {now - started:5.0f} s: {live.stats.rolls} rolls applied, RSS {rss_kib() / 1024:.1f} MiB")
                time.sleep(min(0.5, max(0.0, duration - (now - started))))
            rss_start = rss_start or rss_kib()
            seconds = time.monotonic() - started
            live.camera.stop()  # freeze the frame count before counting what was thrown
            time.sleep(0.5)  # the watcher finishes the reading it may be in
            frames = live.camera.status().frames
            final = board.get(game_id).version
            readers.wait_all(final, time.perf_counter() + 10)
            current = sum(1 for seen in readers.seen if final in seen)
            rss_end = rss_kib()
            applied_throws = [throw_of(frame, clip) for frame in live.stats.applied_frames]
            counts = Counter(applied_throws)
            wanted = expected_throws(frames, clip, round(rest_s * fps * 0.5))
            missed = len(wanted - set(counts))
            duplicates = sum(n - 1 for n in counts.values() if n > 1)
            return SoakResult(
                seconds=seconds, frames=frames, clients=clients, expected=len(wanted), applied=len(applied_throws),
                missed=missed, duplicates=duplicates, pending=live.stats.pending, tray_changed=live.stats.tray_changed,
                clients_current=current, rss_start_kib=rss_start, rss_end_kib=rss_end,
                skipped_frames=live.camera.status().skipped, rss_slope_mib_h=_slope(samples) * 3600 / 1024,
                notes=[f"pid {os.getpid()}; data and clip in a throwaway folder, removed now"],
            )
        finally:
            if readers is not None:
                readers.close()
            server.stop()
            board.close()


def _slope(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KiB) samples, KiB per second; NaN for fewer than three."""
    if len(samples) < 3:
        return float("nan")
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    return sum((t - mean_t) * (v - mean_v) for t, v in samples) / spread if spread else float("nan")
