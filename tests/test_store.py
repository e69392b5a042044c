"""The durable game log: create, append, undo, edit, versions, readings, reopening."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from scorekeeper import RuleError
from scorekeeper.paths import default_data_dir
from scorekeeper.store import DB_NAME, GameNotFound, GameStore, VersionConflict, iter_states
from tests.helpers_rules import STOP, choose, greens, reveal, roll, tally_roll


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


@pytest.fixture
def store(tmp_path):
    with GameStore.in_dir(tmp_path, clock=Clock()) as opened:
        yield opened


def test_create_records_players_options_and_timestamps(store):
    loaded = store.create("tallyup", ["Ann", "Bob"], {"target": 500, "high_stakes": True})
    record = loaded.record
    assert record.game == "tallyup"
    assert record.players == ["Ann", "Bob"]
    assert record.options == {"target": 500, "one_turn_each": False, "high_stakes": True}
    assert record.created.startswith("2023-11-14T22:13:2")
    assert loaded.version == 0
    assert loaded.state()["expects"] == ["choose"]
    assert [r.id for r in store.list_games()] == [record.id]


def test_games_updated_in_the_same_millisecond_list_the_newest_first(tmp_path):
    with GameStore.in_dir(tmp_path, clock=lambda: 1_700_000_000.0) as frozen:
        made = [frozen.create("tossup", ["Ann", "Bob"]).record.id for _ in range(6)]
        assert [r.id for r in frozen.list_games()] == made[::-1]


def test_create_refuses_bad_games_and_writes_nothing(store):
    with pytest.raises(RuleError):
        store.create("tossup", ["Ann"])
    with pytest.raises(RuleError):
        store.create("chess", ["Ann", "Bob"])
    assert store.list_games() == []


def test_append_logs_events_and_readings(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    reading = {"image": "rolls/1.jpg", "confidence": [0.99] * 10}
    loaded = store.append(game_id, greens(4, total=10), reading=reading)
    assert loaded.version == 1
    assert loaded.state()["turn_points"] == 4
    assert loaded.events[0].reading == reading
    assert loaded.events[0].event == greens(4, total=10)


def test_an_illegal_event_is_not_logged(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    store.append(game_id, greens(4, total=10))
    with pytest.raises(RuleError, match="6 dice in hand"):
        store.append(game_id, greens(4, total=10))
    loaded = store.get(game_id)
    assert loaded.version == 1
    assert len(store.log_entries(game_id)) == 1


def test_stale_versions_conflict(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    store.append(game_id, greens(4, total=10), expected_version=0)
    with pytest.raises(VersionConflict) as conflict:
        store.append(game_id, STOP, expected_version=0)
    assert conflict.value.actual == 1
    store.append(game_id, STOP, expected_version=1)
    with pytest.raises(VersionConflict):
        store.undo(game_id, expected_version=1)
    with pytest.raises(VersionConflict):
        store.edit(game_id, 0, greens(5, total=10), expected_version=1)


def test_only_one_of_two_concurrent_writers_wins(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    results = []

    def press():
        try:
            store.append(game_id, greens(1, total=10), expected_version=0)
            results.append("ok")
        except VersionConflict:
            results.append("conflict")

    threads = [threading.Thread(target=press) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["conflict", "ok"]
    assert store.get(game_id).version == 1


def test_undo_removes_the_last_event_but_the_log_only_grows(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    store.append(game_id, greens(4, total=10))
    store.append(game_id, STOP)
    loaded = store.undo(game_id)
    assert loaded.version == 3
    assert loaded.state()["active"] == "Ann"
    assert loaded.state()["turn_points"] == 4
    assert [e["action"] for e in store.log_entries(game_id)] == ["event", "event", "undo"]
    loaded = store.append(game_id, STOP)
    assert loaded.state()["players"][0]["score"] == 4
    store.undo(game_id)
    store.undo(game_id)
    with pytest.raises(RuleError, match="nothing to undo"):
        store.undo(game_id)


def test_edit_replaces_a_past_roll_and_refolds(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    store.append(game_id, greens(4, total=10), reading={"image": "a.jpg"})
    store.append(game_id, greens(2, total=6), reading={"image": "b.jpg"})
    store.append(game_id, STOP)
    loaded = store.edit(game_id, 1, greens(3, total=6))
    assert loaded.state()["players"][0]["score"] == 7
    assert loaded.events[1].edited is True
    assert loaded.events[0].edited is False
    assert loaded.events[1].reading == {"image": "b.jpg"}  # the photo stays with the corrected roll


def test_edit_refuses_when_later_events_stop_being_legal(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    store.append(game_id, greens(4, total=10))
    store.append(game_id, greens(2, total=6))
    with pytest.raises(RuleError, match="cannot edit event #0.*event #1 \\(roll\\).*5 dice in hand"):
        store.edit(game_id, 0, greens(5, total=10))
    assert store.get(game_id).state()["turn_points"] == 6
    assert store.get(game_id).version == 2


def test_edit_refuses_non_rolls_wrong_types_and_bad_indexes(store):
    game_id = store.create("tallyup", ["Ann", "Bob"]).record.id
    store.append(game_id, choose("red", "blue", "purple"))
    store.append(game_id, tally_roll(red="50", blue="10", purple="20"))
    store.append(game_id, reveal())
    with pytest.raises(RuleError, match="only rolls"):
        store.edit(game_id, 0, choose("red", "blue", "green"))
    with pytest.raises(RuleError, match="replaced by another 'roll'"):
        store.edit(game_id, 1, {"type": "up", "face": "x2"})
    with pytest.raises(RuleError, match="no event #7"):
        store.edit(game_id, 7, roll("green"))
    loaded = store.edit(game_id, 1, tally_roll(red="100", blue="10", purple="20"))
    assert loaded.state()["running_total"] == 130


def test_unknown_games(store):
    with pytest.raises(GameNotFound):
        store.get("nope")
    with pytest.raises(GameNotFound):
        store.append("nope", STOP)
    with pytest.raises(GameNotFound):
        store.log_entries("nope")


def test_reopening_gives_the_same_games(tmp_path):
    with GameStore.in_dir(tmp_path) as first:
        game_id = first.create("tossup", ["Ann", "Bob"]).record.id
        first.append(game_id, greens(3, total=10))
        first.append(game_id, STOP)
        state = first.get(game_id).state()
    with GameStore.in_dir(tmp_path) as second:
        assert second.get(game_id).state() == state
        assert second.get(game_id).version == 2


def test_two_store_objects_on_one_file_see_each_others_writes(tmp_path):
    with GameStore.in_dir(tmp_path) as one, GameStore.in_dir(tmp_path) as two:
        game_id = one.create("tossup", ["Ann", "Bob"]).record.id
        assert two.get(game_id).version == 0
        one.append(game_id, greens(3, total=10))
        assert two.get(game_id).state()["turn_points"] == 3
        with pytest.raises(VersionConflict):
            two.append(game_id, STOP, expected_version=0)


def test_finished_games_are_marked(store):
    game_id = store.create("tossup", ["Ann", "Bob"], {"target": 1}).record.id
    for event in (greens(2, total=10), STOP, greens(1, total=10), STOP):
        store.append(game_id, event)
    record = store.get(game_id).record
    assert record.over is True
    assert record.winners == ["Ann"]


def test_wal_mode_and_a_newer_schema_is_refused(tmp_path):
    GameStore.in_dir(tmp_path).close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(RuntimeError, match="schema 99"):
        GameStore.in_dir(tmp_path)


def test_iter_states_replays_history(store):
    game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    store.append(game_id, greens(3, total=10))
    store.append(game_id, STOP)
    states = list(iter_states(store, game_id))
    assert [s["players"][0]["score"] for s in states] == [0, 0, 3]


def test_default_data_dir(tmp_path):
    assert default_data_dir({"DICETRAY_DATA_DIR": str(tmp_path)}) == tmp_path
    assert default_data_dir({"XDG_DATA_HOME": "/x"}).as_posix() == "/x/dicetray"
    assert default_data_dir({}).name == "dicetray"
