"""The calibration wizard in chromium, all six steps, against replayed fixture photos.

The tablet's user is played by the labels: after each roll the test taps every die the page
read wrongly, taps the photo where a die was missed and drops what is no die, exactly as a user
would. The profile the wizard saves is then used by the scanner on the table's other photos,
on the whole Toss Up test split and, with the Tally look it taught, on the Tally test split.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

import cv2
import pytest

from calibration.library import ProfileLibrary
from calibration.replay import StillSource
from scanner.evaluate import Scorecard, score_photos
from scanner.labels import LabelledPhoto, load_photo_label, photo_labels
from scanner.reader import Scanner, load_scanner
from scorekeeper.web import create_app
from scorekeeper.web.app import LIVE_EXTENSION
from scorekeeper.web.server import WebServer
from tests.test_browser import TABLET, TOKEN, Device, browser  # noqa: F401  (the browser fixture)
from tests.test_scanner_fixtures import PRECISION_FLOOR, RECALL_FLOOR

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TABLE = "tossup-s01"  # a test-split table: the wizard calibrates on its empty tray and first roll
#: The floors of tests/test_scanner_fixtures.py (faces and confident mistakes are literals there).
FLOORS = {"detection_recall": RECALL_FLOOR, "detection_precision": PRECISION_FLOOR, "face_accuracy": 0.99}
MAX_WRONG_CONFIDENT = 0.002
#: What the Tally look the wizard teaches reads on the Tally test split (308 dice, 70 photos):
#: identity 1.000, faces .983 (the built-in look's figures), recall .984, precision .987. The
#: identity floor is the scanner issue's target; the others lie a die or two below.
TALLY_FLOORS = {"identity_accuracy": 0.998, "face_accuracy": 0.976, "detection_recall": 0.978,
                "detection_precision": 0.98}
CHECK_MS = 45_000


@pytest.fixture
def wizard(tmp_path: Path) -> Iterator[tuple[WebServer, StillSource, Any]]:
    camera = StillSource(FIXTURES / "tossup" / f"{TABLE}-empty.jpg", fps=30)
    app = create_app({"DATA_DIR": tmp_path / "data", "HOST_TOKEN": TOKEN, "HEARTBEAT_SECONDS": 2.0,
                      "LIVE_SOURCE": lambda: camera})
    server = WebServer(app, threads=64).start()
    yield server, camera, app
    server.stop()
    app.extensions["dicetray"].close()


def test_a_check_that_fails_says_why_where_its_verdict_would_be(browser, tmp_path: Path):  # noqa: F811
    app = create_app({"DATA_DIR": tmp_path / "data", "HOST_TOKEN": TOKEN})  # no camera
    server = WebServer(app, threads=8).start()
    tablet = Device(browser, server, "tablet", **TABLET)
    try:
        page = tablet.go(f"/calibrate?host={TOKEN}")
        tablet.expect(page.locator("#cal")).to_have_attribute("data-camera", "no")
        page.fill("#profilename", "kitchen")
        page.click("#startcal")
        page.click("#checkcamera")
        # The server's own reason for its 409 (a stale game version is the only other one).
        tablet.expect(page.locator("#hints")).to_contain_text("The picture could not be checked: no camera")
        tablet.expect(page.locator("#toast")).to_contain_text("no camera")
        # Any other step's failure is told in a toast, and is no page error (close() checks).
        page.click("section[data-step=camera] button.next")
        page.evaluate("document.getElementById('toast').textContent = ''")
        page.click("#captureempty")
        tablet.expect(page.locator("#toast")).to_contain_text("no camera")
        tablet.expect(page.locator("#captureempty")).to_be_enabled()
    finally:
        tablet.close()
        server.stop()
        app.extensions["dicetray"].close()


def _correct(page: Any, editor: str, label: LabelledPhoto, expect: Any) -> None:
    """Make the page's dice agree with the label, tapping as a user would."""
    box = page.locator(f"#{editor}")
    expect(box.locator(".rolldice")).to_be_visible()
    shown = box.locator(".rolldice [data-i]")
    readings = [(int(t.get_attribute("data-i")), float(t.get_attribute("data-x")), float(t.get_attribute("data-y")),
                 t.get_attribute("data-die"), t.get_attribute("data-face")) for t in shown.all()]
    pairs = sorted((math.dist(d.center, (x, y)), li, i) for li, d in enumerate(label.dice)
                   for i, x, y, _, _ in readings if math.dist(d.center, (x, y)) < 0.5 * d.size)
    used_labels: set[int] = set()
    used_readings: set[int] = set()
    for _, li, i in pairs:
        if li in used_labels or i in used_readings:
            continue
        used_labels.add(li)
        used_readings.add(i)
        die = label.dice[li]
        _, _, _, read_die, read_face = readings[i]
        if (read_die, read_face) != (die.die, die.face):
            box.locator(f".rolldice [data-i='{i}']").click()
            page.locator(f".modal .pickface[data-die='{die.die}'][data-face='{die.face}']").click()
    svg = box.locator("svg.rolloverlay")
    image = box.locator("img.photo")
    expect(image).to_have_js_property("complete", True)
    natural = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    for li, die in enumerate(label.dice):
        if li in used_labels or die.cocked:
            continue
        bounds = svg.bounding_box()
        svg.click(position={"x": die.center[0] * bounds["width"] / natural[0],
                            "y": die.center[1] * bounds["height"] / natural[1]})
        page.locator(f".modal .pickface[data-die='{die.die}'][data-face='{die.face}']").click()
    for i in sorted(set(r[0] for r in readings) - used_readings, reverse=True):
        box.locator(f".rolldice [data-i='{i}']").click()
        page.locator(".modal [data-remove]").click()
    expected = len(used_labels) + sum(1 for li, d in enumerate(label.dice) if li not in used_labels and not d.cocked)
    expect(box.locator(".rolldice [data-i]")).to_have_count(expected)


def _card(scanner: Scanner, photos: list[LabelledPhoto]) -> Scorecard:
    return score_photos(scanner.read, photos)


def _at_floors(card: Scorecard) -> None:
    summary = card.summary()
    for key, floor in FLOORS.items():
        assert summary[key] >= floor, (key, summary, card.failures)
    assert summary["wrong_confident_rate"] <= MAX_WRONG_CONFIDENT, card.failures


@pytest.mark.slow  # about a minute on 2 cores: CI runs it in its own pass (.ci/run)
def test_the_wizard_walks_all_six_steps_and_the_scanner_reads_with_its_profile(browser, wizard):  # noqa: F811
    server, camera, app = wizard
    tablet = Device(browser, server, "tablet", **TABLET)
    expect = tablet.expect
    try:
        page = tablet.go(f"/?host={TOKEN}")
        page.click("text=Calibrate camera")
        page.wait_for_url("**/calibrate")
        expect(page.locator("#profiles")).to_contain_text("None yet")
        page.fill("#profilename", "kitchen")
        page.click("#startcal")

        # 1. camera check: the live preview, then a verdict on the picture
        expect(page.locator("section[data-step=camera]")).to_be_visible()
        expect(page.locator("#livepreview")).to_have_attribute("src", "/preview.mjpg")
        # The check waits for two fresh frames and measures one: allow it more than a page
        # update, and say what the server answered if it failed.
        with page.expect_response("**/api/calibrate/camera", timeout=CHECK_MS) as checked:
            page.click("#checkcamera")
        assert checked.value.ok, (checked.value.status, checked.value.text())
        expect(page.locator("#hints")).to_contain_text("The picture looks good")
        tablet.shot("calibrate-1-camera-tablet")
        page.click("section[data-step=camera] button.next")

        # 2. empty tray: found, one corner dragged a little further out, saved
        page.click("#captureempty")
        expect(page.locator("#traynote")).to_contain_text("Tray found")
        handle = page.locator("#trayoverlay circle[data-corner='0']")
        box = handle.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2 - 6, box["y"] + box["height"] / 2 - 6, steps=4)
        page.mouse.up()
        page.click("#savetray")
        expect(page.locator("#traynote")).to_have_text("Tray outline saved.")
        tablet.shot("calibrate-2-tray-tablet")
        page.click("section[data-step=empty] button.next")

        # 3. exposure: a replayed source cannot be controlled, and the page says so
        page.click("#lockexposure")
        expect(page.locator("#exposurenote")).to_contain_text("cannot be controlled; exposure is left as it is")
        page.click("section[data-step=exposure] button.next")

        # 4. Toss Up dice: one roll, read, corrected where needed, confirmed
        roll = load_photo_label(FIXTURES / "tossup" / f"{TABLE}-r00.json")
        camera.show(roll.image)
        page.click("#rolltossup")
        _correct(page, "tossupeditor", roll, expect)
        tablet.shot("calibrate-4-tossup-tablet")
        page.click("#tossupeditor button.confirm")
        expect(page.locator("#tossuplearned")).to_contain_text("Learned from")
        page.click("section[data-step=tossup] button.next")

        # 5. Tally Dice: roll after roll until every face was seen often enough
        # A roll whose green die lies in the deep shadow of the tray's wall (tallyup-s17-r04): the
        # editor asks for light on that side; rolling again replaces the roll, nothing confirmed.
        camera.show(FIXTURES / "tallyup" / "tallyup-s17-r04.jpg")
        page.click("#rolltally")
        expect(page.locator("#tallyeditor .shadenote")).to_contain_text("1 die lay in the shadow of the tray's wall")
        teach = list(photo_labels(FIXTURES / "tallyup-teach"))
        rolls = 0
        for photo in teach:
            camera.show(photo.image)
            page.click("#rolltally")
            if rolls == 0:
                # teach-s00-r00: the lamp's reflection washes the blue die's face out white.
                expect(page.locator("#tallyeditor .glarenote")).to_contain_text("The lamp's reflection washed 1 die")
            _correct(page, "tallyeditor", photo, expect)
            page.click("#tallyeditor button.confirm")
            rolls += 1
            expect(page.locator("#tallyeditor")).to_be_hidden()
            if page.locator("#teach").is_visible():
                break
            if rolls == 2:
                tablet.shot("calibrate-5-tally-progress-tablet")
        expect(page.locator("#tallypercent")).to_have_text("100 %")
        expect(page.locator("#coverage .cov.seen")).to_have_count(30)
        page.click("#teach")
        expect(page.locator("#teachnote")).to_contain_text("Your Tally Dice are learned", timeout=60_000)
        page.click("section[data-step=tallyup] button.next")

        # 6. check: a confusion matrix over everything confirmed and a verdict; save
        page.click("#runcheck")
        expect(page.locator("#verdict")).not_to_be_empty()
        expect(page.locator("#confusion table.confusion[data-set=tossup]")).to_contain_text("yellow")
        expect(page.locator("#confusion table.confusion[data-set=tallyup]")).to_contain_text("star")
        tablet.shot("calibrate-6-check-tablet")
        page.click("#saveprofile")
        expect(page.locator("#savednote")).to_contain_text("Saved as kitchen")
        expect(page.locator("#profiles")).to_contain_text("active")
    finally:
        tablet.close()

    library = ProfileLibrary(app.config["DATA_DIR"])
    path = library.active_path()
    assert path == library.path_of("kitchen")
    assert app.extensions[LIVE_EXTENSION].config.profile == path
    profile = library.load("kitchen")
    assert profile.tray is not None and profile.die_size and profile.tallyup is not None
    assert 3 <= rolls <= len(teach)

    # The scanner with that profile reads the table's other photos at the scanner's floors...
    same_table = [p for p in photo_labels(FIXTURES / "tossup", split="test")
                  if p.scene["setup"] == TABLE and p.dice and p.image.name != roll.image.name]
    assert len(same_table) >= 6
    _at_floors(_card(load_scanner("tossup", path), same_table))
    assert load_scanner("tossup", path).read(cv2.imread(str(FIXTURES / "tossup" / f"{TABLE}-empty.jpg"))) == []
    # ...and its reader settings read the whole test split (other tables: the tray outline and the
    # die size belong to this table and camera height only) at the floors for precision and faces,
    # finding at least as many dice as the defaults. (The recall floor of 0.93 is over both splits
    # in tests/test_scanner_fixtures.py; the defaults alone are at about that on the test split.)
    test_split = [p for p in photo_labels(FIXTURES / "tossup", split="test") if p.dice]
    settings = _card(Scanner("tossup", tossup=profile.tossup), test_split)
    defaults = _card(Scanner("tossup"), test_split)
    summary = settings.summary()
    assert summary["detection_recall"] >= defaults.summary()["detection_recall"] - 0.005, settings.failures
    assert summary["detection_precision"] >= FLOORS["detection_precision"], settings.failures
    assert summary["face_accuracy"] >= FLOORS["face_accuracy"], settings.confusion_table()
    assert summary["wrong_confident_rate"] <= MAX_WRONG_CONFIDENT, settings.failures

    # ...and its Tally look, taught from the rolls above (the teach set's tables), reads the Tally
    # test split (other tables, floors and lamps) at the scanner issue's targets for identity and
    # confident mistakes, and the rest a die or two below what it reads: a change to teaching or
    # to reading that loses dice on tables the look was not taught on shows here.
    tally_test = [p for p in photo_labels(FIXTURES / "tallyup", split="test") if p.dice]
    taught = _card(Scanner("tallyup", tally=profile.tallyup), tally_test)
    summary = taught.summary()
    for key, floor in TALLY_FLOORS.items():
        assert summary[key] >= floor, (key, summary, taught.failures)
    assert summary["wrong_confident_rate"] <= MAX_WRONG_CONFIDENT, taught.failures
