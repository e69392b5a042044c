"""The live table in chromium: a doubtful camera reading fixed with one tap, and a lost camera shown."""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

import pytest

from scanner.sources import SourceFailed, SourceUnavailable
from scorekeeper.store import GameStore
from scorekeeper.web import create_app
from scorekeeper.web.server import WebServer
from tests.test_browser import TABLET, TOKEN, Device, browser  # noqa: F401  (the browser fixture)
from tests.test_live import TEN, ReplaySource, _image, throw

pytestmark = pytest.mark.browser

DOUBTFUL = ("blue",) + TEN[1:]


class Camera(ReplaySource):
    """Plays `script`, then keeps showing the last picture until `lose` is set, then fails."""

    def __init__(self, script: list[Any], lose: threading.Event) -> None:
        super().__init__(script, delay=0.01, name="test camera")
        self.lose = lose
        self.last = script[-1]

    def read(self):
        if self.lose.is_set():
            raise SourceFailed("unplugged")
        if not self.script:
            self.script = [self.last]
            time.sleep(0.02)
        return super().read()


@pytest.fixture
def table(tmp_path) -> Iterator[tuple[WebServer, str, threading.Event, threading.Event]]:
    data = tmp_path / "data"
    with GameStore.in_dir(data) as store:
        game_id = store.create("tossup", ["Ann", "Bob"]).record.id
    lose, back = threading.Event(), threading.Event()
    cameras = iter([Camera(throw(DOUBTFUL), lose)])

    def factory():
        camera = next(cameras, None)
        if camera is not None:
            return camera
        if not back.is_set():
            raise SourceUnavailable("still unplugged")
        return Camera([_image(DOUBTFUL, 1)], threading.Event())

    app = create_app({"DATA_DIR": data, "HOST_TOKEN": TOKEN, "HEARTBEAT_SECONDS": 2.0,
                      "LIVE_SOURCE": factory, "LIVE_BACKOFF": (0.2,)})
    server = WebServer(app, threads=64).start()
    yield server, game_id, lose, back
    server.stop()
    app.extensions["dicetray"].close()


def test_a_doubtful_reading_is_fixed_with_a_tap_and_a_lost_camera_is_shown(browser, table):  # noqa: F811
    server, game_id, lose, back = table
    tablet = Device(browser, server, "tablet", **TABLET)
    try:
        page = tablet.go(f"/?host={TOKEN}")
        page = tablet.go(f"/games/{game_id}")
        expect = tablet.expect
        expect(page.locator("#camera")).to_contain_text("camera live")
        expect(page.locator("#pending")).to_be_visible()
        expect(page.locator("#problems")).to_contain_text("could not read 1 die")
        expect(page.locator("#pendingoutlines polygon")).to_have_count(10)
        tablet.shot("live-pending-tablet")
        page.locator("#pendingdice .flagged").click()
        page.locator(".pickface[data-face=green]").click()
        expect(page.locator("#applypending")).to_contain_text("Apply these 10 dice")
        page.locator("#applypending").click()
        expect(page.locator("#pending")).to_be_hidden()
        expect(page.locator("body")).to_have_attribute("data-version", "1")
        expect(page.locator("#lastdice .die")).to_have_count(10)
        expect(page.locator("#outlines polygon")).to_have_count(10)

        lost_at = time.monotonic()
        lose.set()
        expect(page.locator("#camera")).to_contain_text("camera lost", timeout=2000)
        assert time.monotonic() - lost_at < 2.0
        expect(page.locator("#pad")).to_be_visible()  # manual entry stays
        page.locator("#camera").click()
        expect(page.locator("#cameranote")).to_contain_text("Enter rolls by hand")
        tablet.shot("live-camera-lost-tablet")
        back.set()
        expect(page.locator("#camera")).to_contain_text("camera live")
        expect(page.locator("#preview")).to_have_attribute("src", "/preview.mjpg")
        page.locator("#camera").click()  # closing the preview ends its stream
        # The history keeps the roll's photo and how sure the camera was.
        history = tablet.go(f"/games/{game_id}/history")
        expect(history.locator(".reading img.thumb")).to_have_count(1)
        expect(history.locator(".reading")).to_contain_text("least sure die")
        expect(history.locator(".reading")).to_contain_text("fixed by the host")
    finally:
        tablet.close()
