"""The calibration wizard's endpoints with the Flask test client, and the profile library.

The camera is `calibration.replay.StillSource` (the library's own stand-in) showing fixture
photos, plugged in as the live table's source: frames reach the wizard only through the live
table's camera thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from lab.bench_calibration import LOOKS
from calibration.library import ProfileLibrary
from scanner.profile import Profile, load_profile
from calibration.replay import StillSource
from scanner.labels import load_photo_label
from scanner.reader import load_scanner
from scorekeeper.cli import main
from scorekeeper.web import create_app
from scorekeeper.web.app import LIVE_EXTENSION
from tests.conftest import HOST_TOKEN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOST = {"Authorization": f"Bearer {HOST_TOKEN}"}
TABLE = "tossup-s01"  # a test-split table; the wizard sees its empty tray and first roll


class ControllableStill(StillSource):
    """A still source that says it can lock exposure, as the Pi camera does."""

    controllable = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.locks = 0

    def lock_exposure(self) -> dict[str, Any]:
        self.locks += 1
        return {"locked": True, "ExposureTime": 12000, "AnalogueGain": 2.0, "ColourGains": (1.8, 1.5)}


@pytest.fixture
def camera() -> StillSource:
    return StillSource(FIXTURES / "tossup" / f"{TABLE}-empty.jpg", fps=50)


@pytest.fixture
def wizard(tmp_path: Path, camera: StillSource) -> Iterator[Any]:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", "HOST_TOKEN": HOST_TOKEN,
                      "SECRET_KEY": "s", "LIVE_SOURCE": lambda: camera, "LIVE_BACKOFF": (0.05,)})
    yield app
    app.extensions["dicetray"].close()


def _post(client: Any, path: str, body: Any = None, headers: dict[str, str] = HOST) -> Any:
    return client.post(f"/api/calibrate{path}", json=body if body is not None else {}, headers=headers)


def _confirmed(label_path: Path) -> list[dict[str, Any]]:
    label = load_photo_label(label_path)
    return [{"die": d.die, "face": d.face, "center": list(d.center), "corners": [list(p) for p in d.corners]}
            for d in label.dice if not d.cocked]


def test_the_wizard_end_to_end_saves_an_active_profile_the_live_table_uses(wizard, camera):
    client = wizard.test_client()
    assert _post(client, "/start", {"name": "kitchen"}).status_code == 200
    framing = _post(client, "/camera").get_json()["framing"]
    assert framing["ok"], framing["hints"]
    empty = _post(client, "/empty").get_json()
    assert empty["found"] and len(empty["tray"]) == 4
    assert client.get(empty["shot"]["url"]).mimetype == "image/jpeg"
    exposure = _post(client, "/exposure").get_json()["exposure"]
    assert exposure == {"locked": False, "note": "replayed photos cannot be controlled; exposure is left as it is"}

    roll_path = FIXTURES / "tossup" / f"{TABLE}-r00.json"
    camera.show(roll_path.with_suffix(".jpg"))
    shot = _post(client, "/roll", {"dice": "tossup"}).get_json()["shot"]
    assert len(shot["dice"]) >= 8 and all(d["die"] == "tossup" for d in shot["dice"])
    learned = _post(client, "/confirm", {"shot": shot["id"], "dice": _confirmed(roll_path)}).get_json()["learned"]
    assert learned["found"] == learned["confirmed"] == len(_confirmed(roll_path))

    teach = sorted((FIXTURES / "tallyup-teach").glob("*.json"))[:2]
    for path in teach:
        camera.show(path.with_suffix(".jpg"))
        shot = _post(client, "/roll", {"dice": "tallyup"}).get_json()["shot"]
        coverage = _post(client, "/confirm", {"shot": shot["id"], "dice": _confirmed(path)}).get_json()["coverage"]
    assert 0 < coverage["progress"] < 1 and not coverage["complete"]
    assert sum(coverage["dice"]["up"].values()) == 2  # the Up Die is in both photos

    result = _post(client, "/check").get_json()["check"]
    assert result["summary"]["tossup"]["labelled_dice"] == len(_confirmed(roll_path))
    assert set(result["confusion"]) == {"tossup", "tallyup"}
    assert "Tally faces not seen often enough" in " ".join(result["problems"])
    saved = _post(client, "/save", {"activate": True}).get_json()
    assert saved["saved"] == "kitchen" and saved["active"] == "kitchen"

    library = ProfileLibrary(wizard.config["DATA_DIR"])
    profile = library.load("kitchen")
    assert profile.tray is not None and profile.die_size == pytest.approx(learned["die_size"], abs=0.1)
    assert profile.frame_size == (1280, 720) and profile.empty_tray == "kitchen-empty.jpg"
    assert profile.black_level is not None and empty["black_level"] == list(profile.black_level)
    assert (library.folder / "kitchen-empty.jpg").is_file()
    assert profile.camera["check"]["verdict"].startswith("not ready")
    assert library.active_path() == library.path_of("kitchen")
    assert wizard.extensions[LIVE_EXTENSION].config.profile == library.path_of("kitchen")
    listed = client.get("/api/calibrate/profiles", headers=HOST).get_json()
    assert listed["active"] == "kitchen" and listed["profiles"][0]["ok"]


def test_a_dim_table_is_brightened_by_its_saved_profile(wizard, camera):
    """Half of a warm lamp's light: the first confirmed roll measures the light gains, the
    saved profile keeps them and the scanner it gives brightens its pictures by them."""
    look = LOOKS[1]
    client = wizard.test_client()
    _post(client, "/start", {"name": "evening"})
    camera.show(look.apply(cv2.imread(str(FIXTURES / "tossup" / f"{TABLE}-empty.jpg"))))
    assert _post(client, "/empty").get_json()["found"]
    roll_path = FIXTURES / "tossup" / f"{TABLE}-r00.json"
    camera.show(look.apply(cv2.imread(str(roll_path.with_suffix(".jpg")))))
    shot = _post(client, "/roll", {"dice": "tossup"}).get_json()["shot"]
    learned = _post(client, "/confirm", {"shot": shot["id"], "dice": _confirmed(roll_path)}).get_json()["learned"]
    gains = learned["light_gains"]
    assert gains is not None and gains[0] > gains[1] > gains[2] >= 1.0
    assert _post(client, "/check").status_code == 200
    assert _post(client, "/save", {"activate": True}).get_json()["saved"] == "evening"
    path = ProfileLibrary(wizard.config["DATA_DIR"]).path_of("evening")
    assert load_scanner("tossup", path).light_gains == pytest.approx(tuple(gains), abs=1e-3)


def test_a_light_trays_room_light_is_measured_again_on_the_confirmed_roll(wizard, camera):
    """A light tray (tossup-s14, dev) under a bluish room light: its empty photo has no black
    to show the room light's colour; the creases under the confirmed roll's dice do, and the
    saved profile keeps what they show."""
    look = LOOKS[2]
    client = wizard.test_client()
    _post(client, "/start", {"name": "window"})
    camera.show(look.apply(cv2.imread(str(FIXTURES / "tossup" / "tossup-s14-empty.jpg"))))
    before = np.float32(_post(client, "/empty").get_json()["black_level"])
    roll_path = FIXTURES / "tossup" / "tossup-s14-r00.json"
    camera.show(look.apply(cv2.imread(str(roll_path.with_suffix(".jpg")))))
    shot = _post(client, "/roll", {"dice": "tossup"}).get_json()["shot"]
    assert _post(client, "/confirm", {"shot": shot["id"], "dice": _confirmed(roll_path)}).status_code == 200
    assert _post(client, "/save", {"activate": False}).get_json()["saved"] == "window"
    after = np.float32(ProfileLibrary(wizard.config["DATA_DIR"]).load("window").black_level)
    cast = np.float32(look.cast)
    assert np.abs(before - cast).max() >= 10 and np.abs(after - cast).max() <= 3, (before, after)


def test_a_roll_confirmed_before_the_empty_tray_leaves_the_black_level_to_the_empty_tray(wizard, camera):
    client = wizard.test_client()
    _post(client, "/start", {"name": "early"})
    roll_path = FIXTURES / "tossup" / f"{TABLE}-r00.json"
    camera.show(roll_path.with_suffix(".jpg"))
    shot = _post(client, "/roll", {"dice": "tossup"}).get_json()["shot"]
    assert _post(client, "/confirm", {"shot": shot["id"], "dice": _confirmed(roll_path)}).status_code == 200
    assert _post(client, "/save", {"activate": False}).get_json()["saved"] == "early"
    assert ProfileLibrary(wizard.config["DATA_DIR"]).load("early").black_level is None


def test_a_controllable_camera_is_locked_on_request(tmp_path: Path):
    camera = ControllableStill(FIXTURES / "tossup" / f"{TABLE}-empty.jpg", fps=50)
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", "HOST_TOKEN": HOST_TOKEN,
                      "LIVE_SOURCE": lambda: camera})
    try:
        client = app.test_client()
        _post(client, "/start", {"name": "t"})
        _post(client, "/camera")  # the camera is open once a frame came
        exposure = _post(client, "/exposure", {"relock": True}).get_json()["exposure"]
        assert exposure["locked"] and exposure["ExposureTime"] == 12000 and camera.locks == 1
    finally:
        app.extensions["dicetray"].close()


def test_every_calibration_endpoint_needs_the_host(wizard):
    client = wizard.test_client()
    for path in ("/start", "/camera", "/empty", "/tray", "/exposure", "/roll", "/confirm", "/teach", "/check", "/save"):
        response = _post(client, path, headers={})
        assert response.status_code == 401, path
        assert "host token" in response.get_json()["error"]
    assert client.get("/api/calibrate").status_code == 401
    assert client.get("/calibrate").status_code == 200  # the page itself; its script asks for the token


def test_malformed_requests_get_a_reason(wizard, camera):
    client = wizard.test_client()
    assert _post(client, "/camera").status_code == 409  # nothing started
    assert "no calibration in progress" in _post(client, "/camera").get_json()["error"]
    bad_name = _post(client, "/start", {"name": "../etc"})
    assert bad_name.status_code == 400 and "not allowed" in bad_name.get_json()["error"]
    assert _post(client, "/start", {"name": "t", "extra": 1}).status_code == 400
    assert _post(client, "/start", {"name": "t"}).status_code == 200
    assert _post(client, "/tray", {"corners": [[0, 0]] * 4}).status_code == 409  # no empty tray yet
    assert "the body is not valid JSON" in client.post("/api/calibrate/roll", data="{", headers=HOST).get_json()["error"]
    assert _post(client, "/roll", {"dice": "poker"}).status_code == 400
    _post(client, "/empty")
    response = _post(client, "/tray", {"corners": [[0, 0], [1, 1], [2, 2]]})
    assert response.status_code == 400 and "four corners" in response.get_json()["error"]
    assert _post(client, "/tray", {"corners": [[100, 100], [1100, 100], [1100, 650], [100, 650]]}).status_code == 200
    assert _post(client, "/confirm", {"shot": "nope", "dice": []}).status_code == 404
    shot = _post(client, "/roll", {"dice": "tossup"}).get_json()["shot"]
    for dice, words in [([], "list of 1 to 30"), ([{"die": "tossup", "face": "blue", "center": [5, 5]}], "no face 'blue'"),
                        ([{"die": "red", "face": "star", "center": [5, 5]}], "Toss Up step"),
                        ([{"die": "tossup", "face": "red", "center": [5000, 5]}], "outside the photo"),
                        ([{"die": "tossup", "face": "red", "center": [5, 5], "colour": 1}], "unknown field")]:
        response = _post(client, "/confirm", {"shot": shot["id"], "dice": dice})
        assert response.status_code == 400, dice
        assert words in response.get_json()["error"], response.get_json()
    assert _post(client, "/check").status_code == 409  # nothing confirmed
    assert _post(client, "/save").status_code == 409
    assert client.get("/api/calibrate/shots/0123456789abcdef.jpg").status_code == 404
    assert _post(client, "/profiles/ghost/activate").status_code == 400


def test_without_a_camera_the_wizard_says_so(client):
    _post(client, "/start", {"name": "t"})
    response = _post(client, "/camera")
    assert response.status_code == 409 and "no camera" in response.get_json()["error"]
    assert "No camera" in client.get("/calibrate").get_data(as_text=True)
    assert 'href="/calibrate"' in client.get("/").get_data(as_text=True)


# -- the library and its commands ------------------------------------------------------------


def test_the_library_keeps_several_profiles_and_one_active(tmp_path: Path):
    library = ProfileLibrary(tmp_path)
    assert library.entries() == [] and library.active_path() is None
    library.save(Profile(name="day", die_size=48.0), activate=True)
    library.save(Profile(name="night", die_size=47.0))
    assert library.active_name() == "day"
    library.activate("night")
    assert library.active_name() == "night"
    assert [e.name for e in library.entries()] == ["day", "night"]
    library.path_of("day").write_text('{"version": 1, "name": "day", "die_size": "big"}')
    day = next(e for e in library.entries() if e.name == "day")
    assert day.error is not None and "die_size" in day.error and "Traceback" not in day.error
    library.path_of("night").write_text('{"version": 1, "name": "night", "black_level": [1, 2]}')
    night = next(e for e in library.entries() if e.name == "night")
    assert "field 'black_level' must be [blue, green, red]" in str(night.error)
    (library.folder / "ACTIVE").write_text("gone\n")
    assert library.active_path() is None  # a dangling pointer means the defaults, not a crash


def test_calibrate_list_use_and_check_by_name(tmp_path: Path):
    runner = CliRunner()
    data = str(tmp_path)
    empty = runner.invoke(main, ["calibrate", "list", "--data", data])
    assert empty.exit_code == 0 and "no profiles" in empty.output
    library = ProfileLibrary(tmp_path)
    library.save(Profile(name="day"))
    library.save(Profile(name="night", light_gains=(2.8, 1.96, 1.45)))
    used = runner.invoke(main, ["calibrate", "use", "night", "--data", data])
    assert used.exit_code == 0 and "active profile: night" in used.output
    listed = runner.invoke(main, ["calibrate", "list", "--data", data])
    assert "* night" in listed.output and "  day" in listed.output
    missing = runner.invoke(main, ["calibrate", "use", "evening", "--data", data])
    assert missing.exit_code == 1 and "no profile named 'evening'" in missing.output
    raw = json.loads(library.path_of("day").read_text())
    raw["version"] = 0
    library.path_of("day").write_text(json.dumps(raw))
    checked = runner.invoke(main, ["calibrate", "check", "day", "--data", data])
    assert checked.exit_code == 1 and "field 'version' is 0" in checked.output and "Traceback" not in checked.output
    night = runner.invoke(main, ["calibrate", "check", "night", "--data", data])
    assert night.exit_code == 0 and "dim light: pictures brightened x2.8/2.0/1.4 (blue/green/red)" in night.output


def test_serve_reads_with_the_active_profile(tmp_path: Path):
    data = tmp_path / "data"
    path = ProfileLibrary(data).save(Profile(name="evening"), activate=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("DICETRAY_PROFILE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "scorekeeper.cli", "serve", "--host", "127.0.0.1", "--port", "0", "--data", str(data),
         "--source", str(FIXTURES / "tallyup-teach")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("Calibration profile"):
                break
        assert line.strip() == f"Calibration profile: {path}"
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stdout is not None:
            process.stdout.close()
    assert load_profile(path).name == "evening"
