"""The live table in one process: drawn throws through camera, settle, scanner, game and stream."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from scanner.frames import Frame
from scanner.sources import FrameSource, SourceFailed, SourceUnavailable
from scorekeeper.table.live import DEMO_GAME, DEMO_PHOTOS_KEPT, ConfigError, LiveConfig, _same_tray
from scorekeeper.table.synthetic import draw_tray, layout
from scorekeeper.store import GameStore
from scorekeeper.web import create_app
from scorekeeper.web.app import LIVE_EXTENSION
from scorekeeper.web.service import REMATCH_OF
from tests.conftest import HOST_TOKEN, send

HOST = {"Authorization": f"Bearer {HOST_TOKEN}"}
TEN = ("green", "red", "yellow", "yellow", "green", "yellow", "yellow", "red", "yellow", "yellow")


@functools.lru_cache(maxsize=None)
def _image(faces: tuple[str, ...], seed: int, step: int = 0) -> np.ndarray:
    dice = layout(faces, seed)
    if step:
        dice = [(x - 30 * step, y + 10 * step, face, angle + 0.2 * step) for x, y, face, angle in dice]
    image = draw_tray(dice, seed=seed + step)
    image.setflags(write=False)  # shared between tests: nobody may draw into it
    return image


def throw(faces: tuple[str, ...], seed: int = 1, rest: int = 40) -> list[np.ndarray]:
    """An empty tray, dice sliding in, then `rest` still frames (1.3 s: the watcher drops the
    frames that come while it reads one, and a slow machine reads a frame in tens of ms)."""
    return [_image((), 0)] * 3 + [_image(faces, seed, step) for step in (3, 2, 1)] + [_image(faces, seed)] * rest


class ReplaySource(FrameSource):
    """Serves a list of images at 30 fps timestamps; an Exception in the list is raised instead.

    `delay` paces delivery (faster than real time keeps tests short) while the picture changes;
    a picture shown again (the dice at rest) comes at the camera's own 30 fps, as on a real
    table: on a machine so busy that the watcher takes a tenth of a second a frame, the dice
    still rest long enough to settle (the watcher drops frames, it never queues them). After the
    last image it goes on showing it for `hold` seconds; a script that ends in an Exception
    holds nothing.
    """

    def __init__(self, script: list[Any], delay: float = 0.006, name: str = "replay", hold: float = 4.0) -> None:
        self.script = list(script)
        self.delay = delay
        self.name = name
        self.index = 0
        self.fps = 30.0
        self.failed_at: float | None = None
        self.hold = hold
        self._last: np.ndarray | None = None
        self._held_until: float | None = None

    def read(self) -> Frame | None:
        time.sleep(self.delay)
        if not self.script:
            return self._held()
        item = self.script.pop(0)
        if isinstance(item, Exception):
            self.failed_at = time.monotonic()
            self._last = None
            raise item
        if item is self._last:
            time.sleep(max(0.0, 1 / 30 - self.delay))
        self._last = item
        return self._frame(item)

    def _held(self) -> Frame | None:
        if self._last is None:
            return None
        if self._held_until is None:
            self._held_until = time.monotonic() + self.hold
        if time.monotonic() > self._held_until:
            self._last = None
            return None
        time.sleep(max(0.0, 1 / 30 - self.delay))  # still frames at the camera's own pace
        return self._frame(self._last)

    def _frame(self, image: np.ndarray) -> Frame:
        frame = Frame(image=image, index=self.index, t=self.index / 30.0)
        self.index += 1
        return frame


class EndlessSource(ReplaySource):
    """A replayed camera whose tray keeps lying there once the script is over: a live camera."""

    def read(self) -> Frame | None:
        if not self.script:
            self.script = [_image(TEN, 1)]
        return super().read()


def wait_until(predicate: Callable[[], Any], timeout: float = 8.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    return predicate()


def make_app(tmp_path: Path, source: Any, game: str = "tossup", players=("Ann", "Bob"), **config: Any):
    """A game in a fresh data directory (before the camera starts), then the app with the live table."""
    data = tmp_path / "data"
    game_id = None
    if game:
        # With a stand-in host (the demo's) the camera plays only the demo's own games.
        meta = {DEMO_GAME: True} if config.get("LIVE_STAND_IN") else {}
        with GameStore.in_dir(data) as store:
            game_id = store.create(game, list(players), meta=meta).record.id
    app = create_app({"TESTING": True, "DATA_DIR": data, "HOST_TOKEN": HOST_TOKEN, "SECRET_KEY": "s",
                      "HEARTBEAT_SECONDS": 0.05, "LIVE_SOURCE": source, "LIVE_BACKOFF": (0.05, 0.1), **config})
    return app, game_id


@pytest.fixture
def apps():
    made = []
    yield made
    for app in made:
        app.extensions["dicetray"].close()


def _messages(response):
    """Parsed SSE messages from a streamed test-client response (heartbeats dropped)."""
    for chunk in response.response:
        fields: dict[str, Any] = {}
        for line in chunk.decode().splitlines():
            if line and not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
        if "data" in fields:
            fields["data"] = json.loads(fields["data"])
            yield fields


def test_a_settled_throw_becomes_a_roll_with_its_photo_and_reaches_the_stream(tmp_path, apps):
    source = ReplaySource(throw(TEN))
    app, gid = make_app(tmp_path, lambda: source)
    apps.append(app)
    client = app.test_client()
    response = client.get(f"/api/games/{gid}/stream", buffered=False)
    seen_live = None
    rolled = None
    for message in _messages(response):
        if message["event"] == "live" and seen_live is None:
            seen_live = message["data"]
        if message["event"] == "change":
            rolled = message["data"]
            break
    response.close()
    assert seen_live["enabled"] and seen_live["scoring"] and seen_live["target"] == gid
    assert sorted(rolled["last_roll"]["event"]["dice"]) == sorted(TEN)
    reading = rolled["last_roll"]["reading"]
    assert reading["source"] == "camera" and reading["image"].startswith("/rolls/")
    assert len(reading["dice"]) == 10
    for die in reading["dice"]:
        assert die["confidence"] > 0.5 and len(die["corners"]) == 4
    photo = client.get(reading["image"])
    assert photo.status_code == 200 and photo.data[:2] == b"\xff\xd8"
    photo.close()
    assert (tmp_path / "data" / "rolls" / reading["photo"]).is_file()
    assert client.get("/rolls/../games.sqlite3").status_code == 404
    # Exactly one roll for one throw, however long the dice lie still afterwards.
    time.sleep(0.3)
    assert len(app.extensions["dicetray"].get(gid).events) == 1


def test_a_doubtful_reading_waits_for_the_host_and_a_tap_fixes_it(tmp_path, apps):
    faces = ("blue",) + TEN[1:]  # one inset of no known colour: unsure
    source = ReplaySource(throw(faces))
    app, gid = make_app(tmp_path, lambda: source)
    apps.append(app)
    client = app.test_client()
    live = app.extensions[LIVE_EXTENSION]
    pending = wait_until(lambda: client.get(f"/api/live?game={gid}").get_json()["pending"])
    assert pending, "the doubtful reading never showed"
    assert [p["code"] for p in pending["problems"]] == ["unsure"]
    assert app.extensions["dicetray"].get(gid).version == 0  # nothing applied
    assert pending["reading"]["image"].startswith("/rolls/")
    url = f"/api/live/pending/{pending['id']}"
    assert client.post(url, json={"action": "apply", "dice": []}).status_code == 401
    bad = client.post(url, json={"action": "apply", "dice": "green"}, headers=HOST)
    assert bad.status_code == 400 and "'dice'" in bad.get_json()["error"]
    assert client.post(url, json={"action": "maybe"}, headers=HOST).status_code == 400
    # The host's dice must still make a legal roll: nine dice are not ten.
    short = [{"index": i, "die": "tossup", "face": d["face"]} for i, d in enumerate(pending["reading"]["dice"])][1:]
    refused = client.post(url, json={"action": "apply", "dice": short}, headers=HOST)
    assert refused.status_code == 422 and refused.get_json()["problems"][0]["code"] == "count"
    fixed = [{"index": i, "die": "tossup", "face": d["face"] if d["face"] != "unsure" else "green"}
             for i, d in enumerate(pending["reading"]["dice"])]
    applied = client.post(url, json={"action": "apply", "dice": fixed}, headers=HOST)
    assert applied.status_code == 200, applied.get_json()
    assert applied.get_json()["applied"] is True
    loaded = app.extensions["dicetray"].get(gid)
    assert loaded.version == 1
    assert loaded.events[0].reading["corrected"] is True
    assert live.view(gid)["pending"] is None
    # Applied, its photo is the roll's in the game log.
    assert (tmp_path / "data" / "rolls" / loaded.events[0].reading["photo"]).is_file()
    assert client.post(url, json={"action": "dismiss"}, headers=HOST).status_code == 404


def test_a_wrong_count_is_pending_and_dismissing_applies_nothing(tmp_path, apps):
    source = ReplaySource(throw(TEN[:6]))  # 6 dice in the tray, 10 in hand
    app, gid = make_app(tmp_path, lambda: source)
    apps.append(app)
    client = app.test_client()
    pending = wait_until(lambda: client.get(f"/api/live?game={gid}").get_json()["pending"])
    assert pending and pending["problems"][0]["code"] == "count"
    assert "10 dice in hand but the tray shows 6" in pending["problems"][0]["message"]
    photo = tmp_path / "data" / "rolls" / pending["reading"]["photo"]
    assert photo.is_file()
    response = client.post(f"/api/live/pending/{pending['id']}", json={"action": "dismiss"}, headers=HOST)
    assert response.get_json() == {"applied": False}
    assert client.get(f"/api/live?game={gid}").get_json()["pending"] is None
    assert app.extensions["dicetray"].get(gid).version == 0
    assert not photo.exists()  # a dismissed reading's photo is linked from nowhere


def test_a_hand_entry_makes_a_pending_reading_stale(tmp_path, apps):
    source = ReplaySource(throw(TEN[:6]))
    app, gid = make_app(tmp_path, lambda: source)
    apps.append(app)
    client = app.test_client()
    pending = wait_until(lambda: client.get(f"/api/live?game={gid}").get_json()["pending"])
    assert pending
    assert send(client, gid, {"type": "roll", "dice": ["yellow"] * 10}).status_code == 200
    assert client.get(f"/api/live?game={gid}").get_json()["pending"] is None
    assert not (tmp_path / "data" / "rolls" / pending["reading"]["photo"]).exists()


def test_bumped_dice_are_a_notice_never_a_roll(tmp_path, apps):
    rest = _image(TEN, 1)
    bumped = rest.copy()
    bumped[100:140, 100:140] = 200  # a hand in the corner
    # Move two dice a die's width: most dice stay put, none are added.
    dice = layout(TEN, 1)
    moved = draw_tray([(x + 60, y, f, a) if i < 2 else (x, y, f, a) for i, (x, y, f, a) in enumerate(dice)], seed=1)
    source = ReplaySource(throw(TEN) + [bumped] * 2 + [moved] * 40)
    app, gid = make_app(tmp_path, lambda: source)
    apps.append(app)
    client = app.test_client()
    live = app.extensions[LIVE_EXTENSION]
    assert wait_until(lambda: live.stats.tray_changed >= 1), live.stats
    view = client.get(f"/api/live?game={gid}").get_json()
    assert view["notice"]["kind"] == "tray_changed" and "not scored" in view["notice"]["message"]
    assert len(app.extensions["dicetray"].get(gid).events) == 1


def test_camera_loss_reaches_the_page_within_two_seconds_and_the_camera_comes_back(tmp_path, apps):
    first = ReplaySource(throw(TEN)[:6] + [SourceFailed("unplugged")], name="cam")
    second = ReplaySource(throw(TEN), name="cam")
    script = iter([first, SourceUnavailable("still unplugged"), second])

    def factory():
        item = next(script)
        if isinstance(item, Exception):
            raise item
        return item

    app, gid = make_app(tmp_path, factory)
    apps.append(app)
    client = app.test_client()
    response = client.get(f"/api/games/{gid}/stream", buffered=False)
    states = []
    lost_seen_at = None
    for message in _messages(response):
        if message["event"] == "live":
            state = message["data"]["camera"]["state"]
            if not states or states[-1] != state:
                states.append(state)
            if state == "lost" and lost_seen_at is None:
                lost_seen_at = time.monotonic()
                # Manual entry keeps the game going while the camera is away.
                assert send(client, gid, {"type": "roll", "dice": ["yellow"] * 10}).status_code == 200
            if state == "live" and "lost" in states:
                break
    response.close()
    assert "lost" in states and states[-1] == "live", states
    assert lost_seen_at - first.failed_at < 2.0
    live = app.extensions[LIVE_EXTENSION]
    assert live.camera.status().reconnects >= 1
    # The reconnected camera goes on scoring: the hand roll and then the camera's roll.
    assert wait_until(lambda: len(app.extensions["dicetray"].get(gid).events) == 2)
    assert app.extensions["dicetray"].broker.subscriber_count() == 0


def test_a_silent_camera_is_reported_as_stalled(tmp_path, apps):
    class Hanging(ReplaySource):
        def read(self):
            if not self.script:
                time.sleep(0.05)  # a driver that stops delivering without an error
                return self.read() if not hasattr(self, "done") else None
            return super().read()

    source = Hanging(throw(TEN)[:4])
    app, gid = make_app(tmp_path, lambda: source, LIVE_STALL_SECONDS=0.3)
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    assert wait_until(lambda: live.camera_json()["state"] == "stalled", timeout=4)
    assert "no picture" in live.camera_json()["message"]
    source.done = True


def test_corrupt_and_black_frames_are_skipped_and_the_roll_still_counts(tmp_path, apps):
    images = throw(TEN)
    black = np.zeros_like(images[0])
    script = images[:3] + [black, np.zeros((5, 5), np.uint8)] + images[3:]
    source = ReplaySource(script)
    app, gid = make_app(tmp_path, lambda: source)
    apps.append(app)
    assert wait_until(lambda: len(app.extensions["dicetray"].get(gid).events) == 1)
    assert app.extensions[LIVE_EXTENSION].camera_json()["skipped"] == 2


class NotYet:
    """A scanner for a dice set the reader does not support yet (as Tally Up was at first)."""

    def read(self, image):
        raise ValueError("reading Tally Up dice is not available yet; use --dice tossup or any")


def test_a_dice_set_that_cannot_be_read_yet_says_so_while_manual_entry_works(tmp_path, apps, monkeypatch):
    monkeypatch.setattr("scorekeeper.table.live.load_scanner", lambda dice_set, profile: NotYet())
    source = ReplaySource(throw(TEN))
    app, gid = make_app(tmp_path, lambda: source, game="tallyup", players=("Ann", "Bob"))
    apps.append(app)
    client = app.test_client()
    view = wait_until(lambda: (v := client.get(f"/api/live?game={gid}").get_json()) and not v["readable"] and v)
    assert view and view["dice_set"] == "tallyup"
    assert "cannot be read yet" in view["reader_message"]
    assert send(client, gid, {"type": "choose", "dice": ["red", "orange", "yellow"]}).status_code == 200
    live = app.extensions[LIVE_EXTENSION]
    assert live._thread.is_alive() and live.stats.errors == 0


def test_after_a_restart_the_dice_still_lying_there_are_not_scored_again(tmp_path, apps):
    app, gid = make_app(tmp_path, lambda: ReplaySource(throw(TEN)))
    assert wait_until(lambda: len(app.extensions["dicetray"].get(gid).events) == 1)
    app.extensions["dicetray"].close()
    # The restarted process sees the same dice, still: the tray is read but not scored again.
    again = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", "HOST_TOKEN": HOST_TOKEN,
                        "LIVE_SOURCE": lambda: ReplaySource([_image(TEN, 1)] * 40)})
    apps.append(again)
    live = again.extensions[LIVE_EXTENSION]
    assert wait_until(lambda: live.stats.repeats == 1)
    assert len(again.extensions["dicetray"].get(gid).events) == 1


def test_the_host_picks_the_game_the_camera_scores(tmp_path, apps):
    gate = threading.Event()

    class Gated(ReplaySource):
        def read(self):
            gate.wait(10)
            return super().read()

    app, first = make_app(tmp_path, lambda: Gated(throw(TEN)))
    apps.append(app)
    client = app.test_client()
    second = client.post("/api/games", json={"game": "tossup", "players": ["Cy", "Di"]}, headers=HOST).get_json()["id"]
    assert client.get("/api/live").get_json()["target"] == second  # the newest unfinished game
    assert client.post("/api/live/target", json={"game": first}).status_code == 401
    assert client.post("/api/live/target", json={"game": "nope"}, headers=HOST).status_code == 404
    assert client.post("/api/live/target", json={"game": 5}, headers=HOST).status_code == 400
    finished = client.post("/api/games", json={"game": "tossup", "players": ["Ed", "Flo"], "options": {"target": 1}},
                           headers=HOST).get_json()["id"]
    send(client, finished, {"type": "roll", "dice": ["green"] * 2 + ["yellow"] * 8})
    send(client, finished, {"type": "stop"})
    send(client, finished, {"type": "roll", "dice": ["yellow"] * 10})
    send(client, finished, {"type": "stop"})
    assert app.extensions["dicetray"].get(finished).record.over
    refused = client.post("/api/live/target", json={"game": finished}, headers=HOST)
    assert refused.status_code == 409 and "is over" in refused.get_json()["error"]
    assert client.post("/api/live/target", json={"game": first}, headers=HOST).get_json() == {"target": first}
    gate.set()
    assert wait_until(lambda: len(app.extensions["dicetray"].get(first).events) == 1)
    assert app.extensions["dicetray"].get(second).version == 0


OTHER_TEN = ("green", "green", "green", "yellow", "yellow", "red", "yellow", "green", "yellow", "yellow")


def test_the_stand_in_stops_a_turn_when_all_ten_dice_are_thrown_again(tmp_path, apps):
    # Replayed clips know nothing of the game: each throws all ten dice first.
    source = ReplaySource(throw(TEN) + throw(OTHER_TEN, seed=2))
    app, gid = make_app(tmp_path, lambda: source, LIVE_STAND_IN=True)
    apps.append(app)
    board = app.extensions["dicetray"]
    assert wait_until(lambda: len(board.get(gid).events) == 3), [e.event for e in board.get(gid).events]
    assert [e.event["type"] for e in board.get(gid).events] == ["roll", "stop", "roll"]
    state = board.get(gid).state()
    assert [p["score"] for p in state["players"]] == [2, 0]
    assert state["active"] == "Bob" and state["turn_points"] == 4
    assert board.get(gid).events[2].reading["source"] == "camera"
    assert app.extensions[LIVE_EXTENSION].view(gid)["pending"] is None


def _key(image: np.ndarray) -> bytes:
    return image[::37, ::37].tobytes()


def test_the_stand_in_drops_a_throw_of_the_tally_round_it_ended(tmp_path, apps, monkeypatch):
    from scanner.frames import DieReading

    # A Tally clip: a main roll with a circle (the Up Die is due after a reveal), then an Up Die
    # asking for three bonus dice that the clip never throws.
    first = [("blue", "(10)"), ("purple", "star"), ("yellow", "20")]
    second = [("red", "star"), ("up", "+3")]
    still = {_key(_image(TEN, 1)): first, _key(_image(OTHER_TEN, 2)): second}

    class Scripted:
        """A Tally scanner for the drawn trays: the scripted dice on each throw's still frame."""

        def read(self, image):
            dice = still.get(_key(image), [])
            y = 300.0 if dice is first else 500.0  # each throw's dice lie elsewhere
            return [DieReading(center=(300.0 + 150 * i, y), corners=((275.0 + 150 * i, y - 25), (325.0 + 150 * i, y - 25),
                                                                    (325.0 + 150 * i, y + 25), (275.0 + 150 * i, y + 25)),
                               die=die, face=face, confidence=0.99, size=50.0)
                    for i, (die, face) in enumerate(dice)]

    monkeypatch.setattr("scorekeeper.table.live.load_scanner", lambda dice_set, profile: Scripted())
    source = ReplaySource(throw(TEN) + throw(OTHER_TEN, seed=2))
    app, gid = make_app(tmp_path, lambda: source, game="tallyup", LIVE_STAND_IN=True)
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    notice = wait_until(lambda: live.view(gid)["notice"])
    assert notice and notice["kind"] == "stand_in" and "(red star, up +3) was not scored" in notice["message"]
    loaded = app.extensions["dicetray"].get(gid)
    assert [e.event["type"] for e in loaded.events] == ["choose", "roll", "reveal"]
    assert loaded.events[2].event == {"type": "reveal", "out": ["Ann", "Bob"]}
    state = loaded.state()
    assert state["phase"] == "choose" and state["active"] == "Bob" and [p["score"] for p in state["players"]] == [30, 30]
    assert live.view(gid)["pending"] is None
    # Only the scored roll's photo is kept: the dropped throw's is linked from nowhere.
    assert sorted(p.name for p in (tmp_path / "data" / "rolls").iterdir()) == [loaded.events[1].reading["photo"]]


def test_without_the_stand_in_the_second_throw_of_ten_waits_for_the_host(tmp_path, apps):
    source = ReplaySource(throw(TEN) + throw(OTHER_TEN, seed=2))
    app, gid = make_app(tmp_path, lambda: source)  # a camera, not the demo: no stand-in
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    pending = wait_until(lambda: live.view(gid)["pending"])
    assert pending and pending["problems"][0]["code"] == "count"
    assert [e.event["type"] for e in app.extensions["dicetray"].get(gid).events] == ["roll"]


def test_when_the_stand_in_ends_the_game_the_throw_opens_a_rematch(tmp_path, apps):
    data = tmp_path / "data"
    with GameStore.in_dir(data) as store:
        gid = store.create("tossup", ["Ann", "Bob"], {"target": 1}, meta={DEMO_GAME: True}).record.id
    source = ReplaySource(throw(TEN) + throw(OTHER_TEN, seed=2) + throw(TEN, seed=3))
    app = create_app({"TESTING": True, "DATA_DIR": data, "HOST_TOKEN": HOST_TOKEN, "SECRET_KEY": "s",
                      "LIVE_SOURCE": lambda: source, "LIVE_BACKOFF": (0.05, 0.1), "LIVE_STAND_IN": True})
    apps.append(app)
    board = app.extensions["dicetray"]
    # Ann scores 2 (over 1), Bob has his last turn (4 greens), and the third throw ends it.
    assert wait_until(lambda: len(board.list_games()) == 2)
    finished = board.get(gid)
    assert finished.record.over and finished.record.winners == ["Bob"]
    assert [e.event["type"] for e in finished.events] == ["roll", "stop", "roll", "stop"]
    rematch = next(r for r in board.list_games() if r.id != gid)
    assert rematch.players == ["Ann", "Bob"] and rematch.options == {"target": 1} and not rematch.over
    assert rematch.meta[REMATCH_OF] == gid and rematch.meta[DEMO_GAME]  # the pages follow it
    assert wait_until(lambda: len(board.get(rematch.id).events) == 1)
    assert sorted(board.get(rematch.id).events[0].event["dice"]) == sorted(TEN)


def test_the_demo_camera_plays_its_own_game_and_leaves_one_started_by_hand_alone(tmp_path, apps):
    data = tmp_path / "data"
    with GameStore.in_dir(data) as store:
        demo = store.create("tossup", ["Ann", "Bob"], meta={DEMO_GAME: True}).record.id
        by_hand = store.create("tossup", ["Cy", "Dee"]).record.id  # newer: the camera's pick before
    source = ReplaySource(throw(TEN))
    app = create_app({"TESTING": True, "DATA_DIR": data, "HOST_TOKEN": HOST_TOKEN, "SECRET_KEY": "s",
                      "LIVE_SOURCE": lambda: source, "LIVE_BACKOFF": (0.05, 0.1), "LIVE_STAND_IN": True})
    apps.append(app)
    board = app.extensions["dicetray"]
    assert wait_until(lambda: len(board.get(demo).events) == 1)
    assert board.get(by_hand).version == 0
    reading = board.get(demo).events[0].reading
    assert reading["replayed"] is True
    # Replayed clips say nothing of the dice's fairness: the check leaves them out, and says so.
    stats = app.test_client().get(f"/api/games/{demo}/stats").get_json()
    assert stats["replayed_left_out"] == 1
    assert all(die["rolls"] == 0 for die in stats["dice"])


def test_the_demo_camera_scores_a_game_started_by_hand_once_it_is_put_on_the_table(tmp_path, apps):
    data = tmp_path / "data"
    with GameStore.in_dir(data) as store:
        by_hand = store.create("tossup", ["Cy", "Dee"]).record.id
    started = threading.Event()
    source = ReplaySource(throw(TEN))

    def camera():
        started.wait(10)
        return source

    app = create_app({"TESTING": True, "DATA_DIR": data, "HOST_TOKEN": HOST_TOKEN, "SECRET_KEY": "s",
                      "LIVE_SOURCE": camera, "LIVE_BACKOFF": (0.05, 0.1), "LIVE_STAND_IN": True})
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    assert live.target_game() is None  # a game started by hand is not the demo's
    response = app.test_client().post("/api/live/target", json={"game": by_hand}, headers=HOST)
    assert response.status_code == 200, response.get_json()
    started.set()
    assert wait_until(lambda: len(app.extensions["dicetray"].get(by_hand).events) == 1)


def test_the_demo_keeps_only_its_latest_roll_photos(tmp_path, apps):
    rolls = tmp_path / "data" / "rolls"
    rolls.mkdir(parents=True)
    for index in range(DEMO_PHOTOS_KEPT + 10):
        old = rolls / f"old-{index:03d}.jpg"
        old.write_bytes(b"jpeg")
        os.utime(old, ns=(index * 10**9, index * 10**9))
    source = ReplaySource(throw(TEN))
    app, gid = make_app(tmp_path, lambda: source, LIVE_STAND_IN=True)
    apps.append(app)
    board = app.extensions["dicetray"]
    assert wait_until(lambda: len(board.get(gid).events) == 1)
    kept = sorted(path.name for path in rolls.iterdir())
    assert len(kept) == DEMO_PHOTOS_KEPT
    assert board.get(gid).events[0].reading["photo"] in kept
    assert "old-000.jpg" not in kept and f"old-{DEMO_PHOTOS_KEPT + 9:03d}.jpg" in kept


def test_without_a_source_there_is_no_live_table_and_the_api_says_so(app, client):
    assert LIVE_EXTENSION not in app.extensions
    assert client.get("/api/live").get_json()["enabled"] is False
    response = client.post("/api/live/target", json={"game": None}, headers=HOST)
    assert response.status_code == 409 and "no camera" in response.get_json()["error"]


def test_live_settings_are_checked_with_readable_errors(tmp_path):
    with pytest.raises(ConfigError, match="LIVE_SORCE"):
        create_app({"DATA_DIR": tmp_path, "LIVE_SORCE": "usb:0"})
    with pytest.raises(ConfigError, match="LIVE_DICE must be one of"):
        LiveConfig.from_mapping({"LIVE_SOURCE": "usb:0", "LIVE_DICE": "yahtzee"})
    with pytest.raises(ConfigError, match="PREVIEW_QUALITY"):
        LiveConfig.from_mapping({"PREVIEW_QUALITY": 0})
    with pytest.raises(ConfigError, match="LIVE_BACKOFF"):
        LiveConfig.from_mapping({"LIVE_BACKOFF": []})
    with pytest.raises(ConfigError, match="LIVE_SOURCE"):
        create_app({"DATA_DIR": tmp_path, "LIVE_SOURCE": 7})
    with pytest.raises(ConfigError, match="LIVE_STAND_IN must be true, false or None"):
        LiveConfig.from_mapping({"LIVE_STAND_IN": 1})
    assert LiveConfig.from_mapping({}).source is None


def test_same_tray_needs_the_same_faces_in_the_same_places():
    die = {"face": "green", "center": [100, 100], "corners": [[76, 76], [124, 76], [124, 124], [76, 124]]}
    near = {**die, "center": [110, 105]}
    far = {**die, "center": [160, 100]}
    assert _same_tray([near], [die])
    assert not _same_tray([far], [die])
    assert not _same_tray([{**near, "face": "red"}], [die])
    assert not _same_tray([near, near], [die])
    assert not _same_tray([], [])


def test_a_controllable_camera_is_locked_after_it_opens():
    from scorekeeper.table.live import ExposureLocked

    calls = []

    class Camera(ReplaySource):
        controllable = True

        def open(self):
            calls.append("open")

        def lock_exposure(self):
            calls.append("lock")
            return {"locked": True}

    locked = ExposureLocked(Camera([_image((), 0)]))
    locked.open()
    assert calls == ["open", "lock"] and locked.locked == {"locked": True}
    assert locked.read().image.shape == (720, 1280, 3)


def test_a_scanner_that_fails_to_load_never_stops_the_watcher(tmp_path, apps, monkeypatch):
    def broken(dice_set, profile):
        raise FileNotFoundError("scanner/data/model.json")

    monkeypatch.setattr("scorekeeper.table.live.load_scanner", broken)
    app, gid = make_app(tmp_path, lambda: ReplaySource(throw(TEN)))
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    view = wait_until(lambda: (v := live.view(gid)) and not v["readable"] and v)
    assert view and "model.json" in view["reader_message"]
    assert live._thread.is_alive()
    assert send(app.test_client(), gid, {"type": "roll", "dice": ["yellow"] * 10}).status_code == 200


def test_switching_to_a_game_of_another_dice_set_reads_it(tmp_path, apps, monkeypatch):
    from scanner.reader import Scanner

    monkeypatch.setattr("scorekeeper.table.live.load_scanner",
                        lambda dice_set, profile: NotYet() if dice_set == "tallyup" else Scanner(dice_set))
    gate = threading.Event()

    class Gated(ReplaySource):
        def read(self):
            if self.index >= 20:
                gate.wait(10)  # the throw comes once the Toss Up game is on the table
            return super().read()

    app, tally = make_app(tmp_path, lambda: Gated([_image((), 0)] * 20 + throw(TEN)), game="tallyup")
    apps.append(app)
    client = app.test_client()
    live = app.extensions[LIVE_EXTENSION]
    assert wait_until(lambda: not live.view(tally)["readable"])
    toss = client.post("/api/games", json={"game": "tossup", "players": ["Cy", "Di"]}, headers=HOST).get_json()["id"]
    assert wait_until(lambda: live.view(toss)["readable"] and live.view(toss)["scoring"])
    gate.set()
    assert wait_until(lambda: len(app.extensions["dicetray"].get(toss).events) == 1)
    assert sorted(app.extensions["dicetray"].get(toss).events[0].event["dice"]) == sorted(TEN)
