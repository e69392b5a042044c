"""Whole games played through the pages: one tablet (the table, host) and two phones (players).

Drives Debian's chromium through Playwright against a real dicetray server on 127.0.0.1.
Screenshots of every page at tablet and phone size go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from scorekeeper.web import create_app
from scorekeeper.web.server import WebServer

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]
TOKEN = "browser-host-token"
SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"
TABLET = {"viewport": {"width": 1024, "height": 768}, "has_touch": True, "reduced_motion": "reduce"}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2,
         "reduced_motion": "reduce"}
WAIT_MS = 15_000  # generous: CI shares two cores with other work


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    app = create_app({"DATA_DIR": tmp_path_factory.mktemp("browser-data"), "HOST_TOKEN": TOKEN,
                      "HEARTBEAT_SECONDS": 2.0})
    running = WebServer(app, threads=64).start()
    yield running
    running.stop()
    app.extensions["dicetray"].close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); "
                    "never `playwright install`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Device:
    """One browser context (a tablet or a phone) with its page, failing the test on page errors."""

    def __init__(self, browser: Any, server: WebServer, name: str, **context: Any) -> None:
        from playwright.sync_api import expect

        expect.set_options(timeout=WAIT_MS)
        self.expect = expect
        self.name = name
        self.server = server
        self.context = browser.new_context(**context)
        self.context.set_default_timeout(WAIT_MS)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def go(self, path: str) -> Any:
        self.page.goto(self.server.url + path)
        return self.page

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.wait_for_timeout(150)  # let the last render settle
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()
        assert not self.errors, f"{self.name}: JavaScript errors {self.errors}"


@pytest.fixture
def devices(browser: Any, server: WebServer) -> Iterator[tuple[Device, Device, Device]]:
    tablet = Device(browser, server, "tablet", **TABLET)
    ann = Device(browser, server, "Ann's phone", **PHONE)
    bob = Device(browser, server, "Bob's phone", **PHONE)
    yield tablet, ann, bob
    for device in (tablet, ann, bob):
        device.close()


def _api(server: WebServer, path: str) -> Any:
    with urllib.request.urlopen(server.url + path, timeout=10) as response:
        return json.load(response)


def _post(server: WebServer, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        server.url + path, method="POST", data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _start(tablet: Device, game: str, players: list[str], shots: str | None = None, **options: Any) -> str:
    page = tablet.go(f"/?host={TOKEN}")
    page.check(f"input[name=game][value={game}]")
    while page.locator("#players input").count() < len(players):
        page.click("#addplayer")
    for index, name in enumerate(players):
        page.fill(f"#players input[data-i='{index}']", name)
    for option, value in options.items():
        selector = {"target": f"#{game}-target", "one_turn_each": "#one-turn-each", "high_stakes": "#high-stakes"}[option]
        if isinstance(value, bool):
            page.set_checked(selector, value)
        else:
            page.fill(selector, str(value))
    if shots:
        tablet.shot(shots)
    page.click("#start")
    page.wait_for_url("**/games/*")
    tablet.expect(page.locator("#joincode")).to_have_text(re.compile(r"^[A-Z]{8}$"))
    return page.url.rstrip("/").rsplit("/", 1)[1]


def _join(phone: Device, code: str, name: str, typed: bool) -> None:
    if typed:
        page = phone.go("/play")
        page.fill("#code", code.lower())
        page.click("#codeform button[type=submit]")
    else:
        page = phone.go(f"/join/{code}")  # what the QR code opens
    page.click(f"[data-name='{name}']")
    page.wait_for_url("**/player")
    phone.expect(page.locator("#me")).to_contain_text(name)


def _score(device: Device, name: str) -> Any:
    return device.page.locator(f"#scores li:has(.name:text-is('{name}')) .score")


def _version(device: Device, version: int) -> None:
    device.page.wait_for_selector(f"body[data-version='{version}']")


def test_toss_up_game_through_the_pages(devices: tuple[Device, Device, Device], server: WebServer) -> None:
    tablet, ann, bob = devices
    game_id = _start(tablet, "tossup", ["Ann", "Bob"], shots="home-tablet", target=5)
    table = tablet.page
    code = table.locator("#joincode").inner_text()
    _join(ann, code, "Ann", typed=True)
    _join(bob, code, "Bob", typed=False)

    # Ann: three greens by the dice pad, the rest yellow; then a correction by tapping a die.
    for _ in range(3):
        table.click("[data-step=green][data-by='1']")
    table.click("#fillrest")
    table.click("#enterroll")
    tablet.expect(table.locator("#turnpoints")).to_contain_text("3")
    tablet.shot("table-tossup-tablet")
    table.click("#lastdice [data-fix='3']")
    table.click(".modal [data-face=green]")
    tablet.expect(table.locator("#turnpoints")).to_contain_text("4")
    tablet.expect(table.locator("#last")).to_contain_text("corrected")
    ann.expect(ann.page.locator("#status")).to_contain_text("4 turn points")
    table.click("#stop")
    tablet.expect(_score(tablet, "Ann")).to_have_text("4")
    bob.expect(_score(bob, "Ann")).to_have_text("4")

    # Bob: a red light, taken back with one tap on Undo.
    table.click("[data-step=red][data-by='1']")
    table.click("#fillrest")
    table.click("#enterroll")
    tablet.expect(table.locator("#outcome")).to_contain_text("RED LIGHT")
    bob.expect(bob.page.locator("#status")).to_contain_text("Red light")
    tablet.expect(table.locator("#who")).to_contain_text("Ann")
    table.click("#undo")
    tablet.expect(table.locator("#who")).to_contain_text("Bob")
    tablet.expect(table.locator("#stop")).to_be_disabled()

    # Bob goes over the target; Ann gets one last turn and wins.
    for _ in range(6):
        table.click("[data-step=green][data-by='1']")
    table.click("#fillrest")
    table.click("#enterroll")
    tablet.expect(table.locator("#turnpoints")).to_contain_text("6")
    table.click("#stop")
    tablet.expect(table.locator("#who")).to_contain_text("final round")
    for _ in range(10):
        table.click("[data-step=green][data-by='1']")
    table.click("#enterroll")
    tablet.expect(table.locator("#turnpoints")).to_contain_text("10")
    tablet.expect(table.locator("#inhand")).to_contain_text("10")
    table.click("#stop")
    tablet.expect(table.locator("#winner")).to_contain_text("Ann wins with 14")
    ann.expect(ann.page.locator("#winner")).to_contain_text("Ann wins")
    bob.expect(_score(bob, "Bob")).to_have_text("6")
    tablet.shot("table-over-tablet")
    ann.shot("player-tossup-phone")

    state = _api(server, f"/api/games/{game_id}")["state"]
    assert state["over"] and state["winners"] == ["Ann"]
    assert [p["score"] for p in state["players"]] == [14, 6]

    # A rematch: the table and both phones follow it, each phone in its player's seat.
    table.click("#rematch")
    table.wait_for_url(re.compile(r".*/games/(?!" + game_id + r")\w+$"))
    rematch = table.url.rstrip("/").rsplit("/", 1)[1]
    tablet.expect(table.locator("#joincode")).to_have_text(re.compile(r"^[A-Z]{8}$"))
    for phone, name in ((ann, "Ann"), (bob, "Bob")):
        phone.page.wait_for_url(f"**/games/{rematch}/player")
        phone.expect(phone.page.locator("#me")).to_contain_text(name)
    table.click("[data-step=green][data-by='1']")
    table.click("#fillrest")
    table.click("#enterroll")
    table.click("#stop")
    bob.expect(_score(bob, "Ann")).to_have_text("1")

    history = tablet.go(f"/games/{game_id}/history")
    history.wait_for_selector("#rows tr[data-index='5']")
    tablet.expect(history.locator("#rows")).to_contain_text("corrected")
    tablet.expect(history.locator("#stats [data-die=tossup]")).to_contain_text("rolls")
    tablet.shot("history-tossup-tablet")
    bob.go(f"/games/{game_id}/history").wait_for_selector("#rows tr[data-index='5']")
    bob.shot("history-tossup-phone")


def test_tally_up_game_through_the_pages(devices: tuple[Device, Device, Device], server: WebServer) -> None:
    tablet, ann, bob = devices
    game_id = _start(tablet, "tallyup", ["Ann", "Bob", "Cy"], one_turn_each=True)
    table = tablet.page
    code = table.locator("#joincode").inner_text()
    _join(ann, code, "Ann", typed=False)
    _join(bob, code, "Bob", typed=True)
    ann.shot("player-waiting-phone")

    def choose(*dice: str) -> None:
        for die in dice:
            table.click(f"#pad [data-choose={die}]")
        table.click("#confirmchoose")

    def roll(**faces: str) -> None:
        for die, face in faces.items():
            table.click(f"#pad .facebtn[data-die={die}][data-face='{face}']")
        table.click("#enterroll")

    # Round 1, Ann rolls: choose three dice, score 130.
    choose("red", "orange", "yellow")
    tablet.shot("table-tally-choose-done-tablet")
    roll(red="50", orange="60", yellow="20")
    tablet.expect(table.locator("#running")).to_contain_text("130")
    tablet.expect(table.locator("#reveal")).to_be_visible()

    # A secret IN/OUT round: two phones and one choice made at the table for Cy.
    ann.page.click("[data-choice=out]")
    ann.expect(ann.page.locator("#mychoice")).to_contain_text("OUT")
    tablet.expect(table.locator("#scores li[data-player=Ann] .badge.chosen")).to_be_visible()
    tablet.expect(table.locator("#scores li[data-player=Ann] .badge.in")).to_be_visible()  # still hidden
    assert _api(server, f"/api/games/{game_id}")["state"]["in"] == ["Ann", "Bob", "Cy"]
    tablet.shot("table-tally-reveal-tablet")
    bob.page.click("[data-choice=in]")
    bob.expect(bob.page.locator("#mychoice")).to_contain_text("IN")
    bob.shot("player-secret-phone")
    table.click("[data-secret=Cy]")
    table.click(".modal [data-c=in]")
    tablet.expect(table.locator("#outcome")).to_contain_text("Ann OUT")
    tablet.expect(_score(tablet, "Ann")).to_have_text("130")
    ann.expect(ann.page.locator("#decision")).to_contain_text("OUT this round")

    # Three stars: Bob's phone shouts first.
    roll(red="star", orange="star", yellow="star")
    bob.expect(bob.page.locator("#shout")).to_be_visible()
    ann.expect(ann.page.locator("#shout")).to_be_visible()
    ann.shot("player-shout-phone")
    tablet.shot("table-tally-shout-tablet")
    bob.page.click("#shout")
    tablet.expect(_score(tablet, "Bob")).to_have_text("200")
    tablet.expect(_score(tablet, "Cy")).to_have_text("100")
    ann.expect(ann.page.locator("#decision")).to_contain_text("Bob shouted first")

    # The table enters a reveal directly: Bob goes OUT with 130.
    table.click("[data-toggle=Bob]")
    table.click("#revealnow")
    tablet.expect(_score(tablet, "Bob")).to_have_text("330")

    # A circled number: reveal (Cy stays IN), the Up Die, a bonus roll and a correction of it.
    roll(red="(50)", orange="70", yellow="70")
    tablet.expect(table.locator("#running")).to_contain_text("320")
    tablet.expect(table.locator("#reveal")).to_contain_text("before the Up Die")
    table.click("#revealnow")
    table.click("#pad [data-up='+2']")
    tablet.expect(table.locator("#pad")).to_contain_text("Bonus roll: 2")
    roll(green="40", blue="20")
    tablet.expect(table.locator("#running")).to_contain_text("380")
    tablet.shot("table-tally-bonus-tablet")
    table.click("#lastdice [data-fix='1']")
    table.click(".modal [data-face='50']")
    tablet.expect(table.locator("#running")).to_contain_text("410")

    # Cy goes OUT: everyone is OUT, round over. Undo it, then do it again.
    table.click("[data-toggle=Cy]")
    table.click("#revealnow")
    tablet.expect(_score(tablet, "Cy")).to_have_text("510")
    tablet.expect(table.locator("#who")).to_contain_text("Bob")
    table.click("#undo")
    tablet.expect(_score(tablet, "Cy")).to_have_text("100")
    tablet.expect(table.locator("#running")).to_contain_text("410")
    table.click("[data-toggle=Cy]")
    table.click("#revealnow")
    tablet.expect(_score(tablet, "Cy")).to_have_text("510")

    # Round 2, Bob: bust.
    choose("blue", "purple", "green")
    roll(blue="star", purple="star", green="30")
    tablet.expect(table.locator("#outcome")).to_contain_text("BUST")
    bob.expect(bob.page.locator("#status")).to_contain_text("Bust")

    # Round 3, Cy: everyone goes OUT on the phones and at the table; Cy wins.
    choose("red", "orange", "yellow")
    roll(red="100", orange="60", yellow="70")
    tablet.expect(table.locator("#running")).to_contain_text("230")
    ann.page.click("[data-choice=out]")
    bob.page.click("[data-choice=out]")
    tablet.expect(table.locator("#scores li[data-player=Bob] .badge.chosen")).to_be_visible()
    table.click("[data-secret=Cy]")
    table.click(".modal [data-c=out]")
    tablet.expect(table.locator("#winner")).to_contain_text("Cy wins with 740")
    ann.expect(ann.page.locator("#winner")).to_contain_text("Cy wins")
    bob.expect(_score(bob, "Bob")).to_have_text("560")
    tablet.shot("table-tally-over-tablet")
    bob.shot("player-over-phone")

    state = _api(server, f"/api/games/{game_id}")["state"]
    assert state["over"] and state["winners"] == ["Cy"]
    assert [p["score"] for p in state["players"]] == [360, 560, 740]

    history = tablet.go(f"/games/{game_id}/history")
    history.wait_for_selector("#rows tr[data-index='0']")
    tablet.expect(history.locator("#rows")).to_contain_text("Bob shouted Tally Up!")
    tablet.expect(history.locator("#stats [data-die=up]")).to_contain_text("1 roll")
    tablet.shot("history-tally-tablet")
    ann.go(f"/games/{game_id}/history").wait_for_selector("#rows tr[data-index='0']")
    ann.shot("history-tally-phone")


def test_pages_at_both_sizes(browser: Any, server: WebServer) -> None:
    """Home, join and table pages as a phone sees them, and a live game watched without the host token."""
    phone = Device(browser, server, "phone", **PHONE)
    tablet = Device(browser, server, "watcher", **TABLET)
    try:
        phone.go("/").wait_for_selector("#newgame")
        phone.shot("home-phone")
        phone.go("/play").wait_for_selector("#code")
        phone.page.fill("#code", "ZZZZ")
        phone.page.click("#codeform button[type=submit]")
        phone.expect(phone.page.locator("#codeerror")).to_contain_text("No game")
        phone.shot("join-phone")
        game_id = _post(server, "/api/games", {"game": "tallyup", "players": ["Ann", "Bob"]})["id"]
        _post(server, f"/api/games/{game_id}/events", {"event": {"type": "choose", "dice": ["red", "blue", "green"]}})
        photo = ("data:image/svg+xml;utf8,<svg xmlns='http://www.w3.org/2000/svg' width='300' height='150'>"
                 "<rect width='300' height='150' fill='%23556'/></svg>")
        reading = {"image": photo, "dice": [
            {"die": "red", "face": "(50)", "confidence": 0.97, "corners": [[20, 40], [80, 40], [80, 100], [20, 100]]},
            {"die": "blue", "face": "10", "confidence": 0.61, "corners": [[120, 40], [180, 40], [180, 100], [120, 100]],
             "cocked": True},
            {"die": "green", "face": "40", "confidence": 0.9, "corners": [[210, 40], [270, 40], [270, 100], [210, 100]]},
        ]}
        _post(server, f"/api/games/{game_id}/events", {"reading": reading, "event": {"type": "roll", "dice": [
            {"die": "red", "face": "(50)"}, {"die": "blue", "face": "10"}, {"die": "green", "face": "40"}]}})
        phone.go(f"/games/{game_id}").wait_for_selector("#scores li")
        phone.shot("table-phone")
        tablet.go(f"/games/{game_id}").wait_for_selector("#outlines polygon")
        assert tablet.page.locator("#outlines polygon").count() == 3
        tablet.expect(tablet.page.locator("#outlines")).to_contain_text("(50)")
        tablet.expect(tablet.page.locator("#outlines polygon.cocked")).to_have_count(1)
        tablet.expect(tablet.page.locator("#watchnote")).to_be_visible()
        tablet.expect(tablet.page.locator("#undo")).to_be_hidden()
        tablet.shot("table-watcher-tablet")
        tablet.go("/").wait_for_selector("#newgame")
        tablet.shot("home-list-tablet")
    finally:
        phone.close()
        tablet.close()


def test_a_stale_version_is_told_as_someone_being_first(browser: Any, server: WebServer) -> None:
    """Two hosts at one table: the tablet acts on a version another device moved past."""
    tablet = Device(browser, server, "tablet", **TABLET)
    try:
        game_id = _start(tablet, "tossup", ["Ann", "Bob"])
        table = tablet.page
        _version(tablet, 0)
        # The other device's roll lands between the tablet's last update and its tap.
        def stale(route: Any) -> None:
            body = json.loads(route.request.post_data or "{}")
            _post(server, f"/api/games/{game_id}/events", {"event": {"type": "roll", "dice": ["green"] * 10},
                                                           "version": body["version"]})
            route.continue_()

        table.route("**/events", stale)
        table.click("[data-step=green][data-by='1']")
        table.click("#fillrest")
        table.click("#enterroll")
        tablet.expect(table.locator("#toast")).to_contain_text("Someone else got there first")
        _version(tablet, 1)  # the page reloaded the board that won
        tablet.expect(table.locator("#turnpoints")).to_contain_text("10")
    finally:
        tablet.close()
