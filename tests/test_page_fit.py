"""Every page fits every screen: phones from 320 px wide to a 1024 px tablet, with a camera game running.

Each page is loaded at each width in Debian's chromium: nothing may scroll sideways, and every
control must lie inside the screen's width and show on top where it is (not cut off by its
box, not covered by a notice or another control). Screenshots go to test-artifacts/fit/.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from scorekeeper.store import GameStore
from scorekeeper.web import create_app
from scorekeeper.web.server import WebServer
from tests.test_browser import TOKEN, WAIT_MS, browser  # noqa: F401  (the browser fixture)
from tests.test_live import TEN, _image, throw
from tests.test_live_browser import DOUBTFUL, Camera

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "fit"
#: Width x height: small, common and large phones, then a tablet held upright and on its side.
SCREENS = [(320, 568), (375, 667), (390, 844), (430, 932), (768, 1024), (1024, 768)]

#: Run in the page: what sticks out sideways or is hidden, as readable lines (empty: all fits).
OVERFLOWS = """() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : "") +
    ' "' + (el.innerText || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 30) + '"';
  if (document.documentElement.scrollWidth > width + 1) {
    problems.push("the page is " + document.documentElement.scrollWidth + " px wide");
  }
  const controls = document.querySelectorAll(
    "button, a, input, select, textarea, [data-fix], [data-pfix], #joincode, #scores .score, #who");
  const shown = [...controls].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden" && !el.closest(".hidden");
  });
  const inside = shown.filter((el) => {
    const box = el.getBoundingClientRect();
    if (box.left >= -1 && box.right <= width + 1) return true;
    problems.push(name(el) + " spans " + Math.round(box.left) + "-" + Math.round(box.right) + " px");
    return false;
  });
  for (const el of inside) {
    el.scrollIntoView({block: "center", inline: "nearest"});
    const box = el.getBoundingClientRect();
    const x = box.left + Math.min(box.width / 2, 12), y = box.top + box.height / 2;
    const top = document.elementFromPoint(x, y);
    if (top === null || (top !== el && !el.contains(top) && !top.contains(el))) {
      problems.push(name(el) + " is covered by " + (top ? name(top) : "nothing (cut off)"));
    }
  }
  window.scrollTo(0, 0);
  return problems;
}"""


@pytest.fixture(scope="module")
def camera_table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebServer, dict[str, str]]]:
    """A server whose camera has sent a doubtful Toss Up roll (waiting for the host), a Tally game
    played by hand, and a finished game."""
    data = tmp_path_factory.mktemp("fit-data")
    with GameStore.in_dir(data) as store:
        done = store.create("tossup", ["Ann", "Bob"], {"target": 1}, meta={"join_code": "DONE"}).record.id
        store.append(done, {"type": "roll", "dice": ["green"] * 3 + ["yellow"] * 7})
        store.append(done, {"type": "stop"})
        store.append(done, {"type": "roll", "dice": ["red"] + ["yellow"] * 9})
        tally = store.create("tallyup", ["Annabelle", "Bartholomew", "Cy", "Dee"], meta={"join_code": "TALY"}).record.id
        camera_game = store.create("tossup", ["Ann", "Bob", "Maximilian"], meta={"join_code": "CAMS"}).record.id
    cameras = iter([Camera(throw(DOUBTFUL), threading.Event())])

    def factory() -> Any:
        return next(cameras, None) or Camera([_image(TEN, 1)], threading.Event())

    app = create_app({"DATA_DIR": data, "HOST_TOKEN": TOKEN, "HEARTBEAT_SECONDS": 2.0, "LIVE_SOURCE": factory})
    server = WebServer(app, threads=64).start()
    yield server, {"camera": camera_game, "tally": tally, "done": done}
    server.stop()
    app.extensions["dicetray"].close()


def _fits(page: Any, shot: str) -> list[str]:
    page.wait_for_timeout(100)  # let the last render settle
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
    problems = page.evaluate(OVERFLOWS)
    return [f"{shot}: {problem}" for problem in problems]


@pytest.mark.parametrize("width, height", SCREENS)
def test_every_page_fits_the_screen(browser, camera_table, width, height):  # noqa: F811
    from playwright.sync_api import expect

    server, games = camera_table
    screen = {"viewport": {"width": width, "height": height}, "has_touch": True, "reduced_motion": "reduce",
              "is_mobile": width < 768}
    host, guest = browser.new_context(**screen), browser.new_context(**screen)
    problems: list[str] = []
    errors: list[str] = []
    try:
        for context in (host, guest):
            context.set_default_timeout(WAIT_MS)
        tablet, phone = host.new_page(), guest.new_page()
        for page in (tablet, phone):
            page.on("pageerror", lambda error: errors.append(str(error)))
        tablet.goto(f"{server.url}/?host={TOKEN}")
        problems += _fits(tablet, f"home-{width}")
        tablet.goto(f"{server.url}/games/{games['camera']}")
        expect(tablet.locator("#pendingoutlines polygon")).to_have_count(10, timeout=WAIT_MS)
        expect(tablet.locator("#joincode")).to_have_text(re.compile(r"^[A-Z]{4}$"))
        code = tablet.locator("#joincode").inner_text()
        problems += _fits(tablet, f"table-host-camera-{width}")
        tablet.goto(f"{server.url}/games/{games['tally']}")
        expect(tablet.locator("#pad")).to_be_visible(timeout=WAIT_MS)
        problems += _fits(tablet, f"table-host-tally-{width}")
        tablet.goto(f"{server.url}/games/{games['done']}/history")
        tablet.wait_for_selector("#rows tr[data-index]")
        problems += _fits(tablet, f"history-{width}")
        tablet.goto(f"{server.url}/calibrate")
        tablet.wait_for_load_state("networkidle")
        problems += _fits(tablet, f"calibrate-{width}")

        phone.goto(f"{server.url}/games/{games['camera']}")
        expect(phone.locator("#pending")).to_be_visible(timeout=WAIT_MS)
        problems += _fits(phone, f"table-watcher-{width}")
        phone.goto(f"{server.url}/play")
        problems += _fits(phone, f"join-{width}")
        phone.goto(f"{server.url}/join/{code}")
        phone.click("[data-name='Maximilian']")
        phone.wait_for_url("**/player")
        expect(phone.locator("#me")).to_contain_text("Maximilian")
        problems += _fits(phone, f"player-{width}")
        # A seat stays its device's: the host frees it for the next screen's phone.
        freed = phone.request.delete(f"{server.url}/api/games/{games['camera']}/seats/2",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        assert freed.ok, freed.text()
    finally:
        host.close()
        guest.close()
    assert not errors, errors
    assert not problems, "\n".join(problems)


@pytest.fixture
def camera_roll(tmp_path) -> Iterator[tuple[WebServer, str]]:
    """A server whose camera has scored a sure Toss Up roll of ten dice on the game on the table."""
    data = tmp_path / "data"
    with GameStore.in_dir(data) as store:
        game_id = store.create("tossup", ["Ann", "Bob"], meta={"join_code": "ROLL"}).record.id
    cameras = iter([Camera(throw(TEN), threading.Event())])
    app = create_app({"DATA_DIR": data, "HOST_TOKEN": TOKEN, "HEARTBEAT_SECONDS": 2.0,
                      "LIVE_SOURCE": lambda: next(cameras, None) or Camera([_image(TEN, 1)], threading.Event())})
    server = WebServer(app, threads=64).start()
    yield server, game_id
    server.stop()
    app.extensions["dicetray"].close()


def test_hand_entry_stays_above_the_fold_and_the_photo_opens_full_screen(browser, camera_roll):  # noqa: F811
    """On a 1024x768 tablet, after a camera roll with its photo and ten dice, hand entry needs no
    scrolling; the photo opens full screen with every die outlined, and a tap corrects a die."""
    from playwright.sync_api import expect

    server, game_id = camera_roll
    context = browser.new_context(viewport={"width": 1024, "height": 768}, has_touch=True, reduced_motion="reduce")
    context.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{server.url}/?host={TOKEN}")
        page.goto(f"{server.url}/games/{game_id}")
        expect(page.locator("#outlines polygon")).to_have_count(10, timeout=WAIT_MS)
        expect(page.locator("#lastdice .die")).to_have_count(10)
        page.wait_for_timeout(100)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "table-after-camera-roll-1024x768.png"))
        for control in ("#enterroll", "#fillrest", "#stop", "#rollphoto"):
            box = page.locator(control).bounding_box()
            assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 768, (control, box)

        page.click("#rollphoto")
        photo = page.locator("#photoview")
        expect(photo).to_be_visible()
        expect(photo.locator("polygon[data-target]")).to_have_count(10)
        big = page.locator("#bigphoto").bounding_box()
        assert big is not None and big["width"] >= 0.85 * 1024 or big["height"] >= 0.8 * 768, big
        page.screenshot(path=str(SHOTS / "roll-photo-full-screen-1024x768.png"))
        red = photo.locator("polygon[aria-label='tossup red']").first
        red.click()
        expect(photo).to_have_count(0)
        page.locator(".modal [data-face=green]").click()
        expect(page.locator("#last")).to_contain_text("corrected")
        expect(page.locator("#turnpoints")).to_contain_text("3")  # two greens, and the red made green
        page.goto(f"{server.url}/games/{game_id}/history")
        note = page.locator(".reading").first
        expect(note).to_contain_text(re.compile(r"camera: (sure of every die|least sure die \d\d? %)"))
    finally:
        context.close()
    assert not errors, errors
