"""The MJPEG preview: read chunk by chunk through the test client; one encode for every viewer."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np

from scanner.frames import DieReading
from scorekeeper.table.preview import PreviewEncoder, PreviewSnapshot, annotate, placeholder
from scorekeeper.web.app import LIVE_EXTENSION
from tests.test_live import TEN, EndlessSource, _image, make_app, throw, wait_until


def _jpeg(part: bytes) -> np.ndarray:
    head, _, body = part.partition(b"\r\n\r\n")
    assert head.startswith(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: ")
    length = int(head.rsplit(b": ", 1)[1])
    assert body[length:] == b"\r\n"
    image = cv2.imdecode(np.frombuffer(body[:length], np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def test_preview_streams_small_jpegs_and_unsubscribes_on_close(tmp_path, apps):
    app, _ = make_app(tmp_path, lambda: EndlessSource(throw(TEN), delay=0.01))
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    assert wait_until(lambda: live.stats.rolls == 1)
    client = app.test_client()
    response = client.get("/preview.mjpg", buffered=False)
    assert response.status_code == 200
    assert response.mimetype == "multipart/x-mixed-replace"
    assert response.headers["Cache-Control"].startswith("no-cache")
    chunks = iter(response.response)
    images = [_jpeg(next(chunks)) for _ in range(2)]
    assert all(image.shape[1] <= 640 for image in images)
    assert live.preview.viewers == 1
    response.close()
    assert live.preview.viewers == 0
    # With nobody watching the encoder thread ends, so an idle table costs no encodes.
    assert wait_until(lambda: live.preview._thread is None, timeout=3)


def test_any_number_of_viewers_cost_one_encode_per_frame():
    snaps = {"seq": 0}
    image = _image(TEN, 1)

    encoder = PreviewEncoder(lambda: PreviewSnapshot(snaps["seq"], image, (), "live", 0), fps=50)
    viewers = [encoder.frames() for _ in range(5)]
    received = [0] * 5
    stop = threading.Event()

    def watch(n):
        for _ in viewers[n]:
            received[n] += 1
            if stop.is_set():
                break

    threads = [threading.Thread(target=watch, args=(n,)) for n in range(5)]
    for thread in threads:
        thread.start()
    for seq in range(1, 6):
        snaps["seq"] = seq
        time.sleep(0.08)
    stop.set()
    snaps["seq"] = 99
    for thread in threads:
        thread.join(3)
    assert encoder.viewers == 5
    for viewer in viewers:
        viewer.close()  # what the server does when a browser goes away
    assert encoder.viewers == 0
    encoder.close()
    assert 5 <= encoder.encodes <= 8  # one per new frame, not one per viewer
    assert all(count >= 4 for count in received), received
    assert encoder.viewers == 0


def test_the_overlay_never_draws_into_the_scanners_frame():
    frame = np.array(_image(TEN, 1))
    before = frame.copy()
    die = DieReading(center=(200.0, 150.0), corners=((176, 126), (224, 126), (224, 174), (176, 174)),
                     die="tossup", face="green", confidence=0.95)
    small = annotate(frame, [die], "live", 640)
    assert np.array_equal(frame, before)
    assert small.shape[1] == 640 and not np.shares_memory(small, frame)
    same_size = annotate(frame[:, :600], [die], "live", 640)
    assert not np.shares_memory(same_size, frame)


def test_without_a_camera_the_preview_is_a_placeholder(client):
    response = client.get("/preview.mjpg", buffered=False)
    parts = list(response.response)
    response.close()
    assert len(parts) == 1
    image = _jpeg(parts[0])
    assert image.shape[1] == 640 and image.mean() < 90  # the grey card
    assert placeholder("camera lost", 320)[:2] == b"\xff\xd8"


def test_a_lost_camera_shows_the_placeholder_with_the_reason(tmp_path, apps):
    app, _ = make_app(tmp_path, lambda: (_ for _ in ()).throw(ConnectionError("gone")))
    apps.append(app)
    live = app.extensions[LIVE_EXTENSION]
    assert wait_until(lambda: live.camera_json()["state"] == "lost")
    snapshot = live.preview_snapshot()
    assert snapshot.image is None and "lost" in snapshot.label and "gone" in snapshot.label


from tests.test_live import apps  # noqa: E402,F401  (the fixture that closes the apps)
