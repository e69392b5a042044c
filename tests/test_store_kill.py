"""A writer process killed with SIGKILL mid-game leaves every committed event intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from scorekeeper.store import GameStore

WRITER = textwrap.dedent(
    """
    import random, sys
    from scorekeeper.store import GameStore
    store = GameStore.in_dir(sys.argv[1])
    game_id = sys.argv[2]
    rng = random.Random(int(sys.argv[3]))
    while True:
        state = store.get(game_id).state()
        if state["over"]:
            print("over", flush=True)
            break
        if "stop" in state["expects"] and rng.random() < 0.3:
            event = {"type": "stop"}
        else:
            event = {"type": "roll", "dice": [rng.choice(["green", "green", "green", "yellow", "yellow", "red"])
                                             for _ in range(state["dice_in_hand"])]}
        loaded = store.append(game_id, event, reading={"image": "x" * 2000})
        print(loaded.version, flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("seed, wait", [(1, 0.3), (2, 0.55), (3, 0.8)])
def test_killed_writer_loses_nothing_committed(tmp_path, seed, wait):
    with GameStore.in_dir(tmp_path) as store:
        game_id = store.create("tossup", ["Ann", "Bob", "Cy"], {"target": 100000}).record.id
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), game_id, str(seed)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    time.sleep(wait)
    os.kill(writer.pid, signal.SIGKILL)
    out, _ = writer.communicate()
    confirmed = [int(line) for line in out.split() if line.isdigit()]
    assert confirmed, "the writer committed nothing before it was killed"
    with GameStore.in_dir(tmp_path) as reopened:
        loaded = reopened.get(game_id)  # folds every stored event: raises if any is corrupt
        # Every confirmed write is there; at most the one in flight committed without being printed.
        assert confirmed[-1] <= loaded.version <= confirmed[-1] + 1
        assert len(loaded.events) == loaded.version
        # And the reopened game still takes events.
        expects = loaded.state()["expects"]
        event = {"type": "stop"} if "stop" in expects else {"type": "roll", "dice": ["yellow"] * loaded.state()["dice_in_hand"]}
        assert reopened.append(game_id, event).version == loaded.version + 1
