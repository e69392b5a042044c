"""Seats: a held seat stays its device's until it leaves or the host frees it; codes resist guessing."""

from __future__ import annotations

from scorekeeper.web.seats import TryLimiter
from tests.conftest import join, send, start_game


def _code(app, gid: str) -> str:
    return app.extensions["dicetray"].get(gid).record.meta["join_code"]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_held_seat_cannot_be_taken_by_another_device(client, app, host):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    gid, code = game["id"], _code(app, game["id"])
    bob = join(client, app, gid, "Bob")
    thief = client.post(f"/api/join/{code}", json={"player": "Bob"})
    assert thief.status_code == 409 and thief.get_json()["held"] is True
    assert "Bob's seat is held by another device" in thief.get_json()["error"]
    # Bob's own phone may join again (a reload of the join page) and keeps its token.
    again = client.post(f"/api/join/{code}", json={"player": "Bob"}, headers=_bearer(bob))
    assert again.status_code == 200 and again.get_json()["token"] == bob
    assert client.get("/api/whoami", headers=_bearer(bob)).get_json()["player"] == "Bob"
    seats = client.get(f"/api/games/{gid}/seats", headers=host).get_json()["seats"]
    assert seats == [{"seat": 0, "player": "Ann", "held": False}, {"seat": 1, "player": "Bob", "held": True}]
    assert client.get(f"/api/games/{gid}/seats", headers=_bearer(bob)).status_code == 403


def test_the_holder_gives_a_seat_up_and_its_token_stops_working(client, app):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    gid, code = game["id"], _code(app, game["id"])
    ann, bob = join(client, app, gid, "Ann"), join(client, app, gid, "Bob")
    assert client.delete(f"/api/games/{gid}/seats/1", headers=_bearer(ann)).status_code == 403
    assert client.delete(f"/api/games/{gid}/seats/1").status_code == 401
    left = client.delete(f"/api/games/{gid}/seats/1", headers=_bearer(bob))
    assert left.status_code == 200 and left.get_json() == {"seat": 1, "player": "Bob", "held": False, "freed": True}
    assert client.get("/api/whoami", headers=_bearer(bob)).status_code == 401
    assert send(client, gid, {"type": "tally_up", "player": "Bob"}, token=bob).status_code == 401
    new_bob = client.post(f"/api/join/{code}", json={"player": "Bob"})
    assert new_bob.status_code == 200 and new_bob.get_json()["token"] != bob


def test_the_host_frees_a_seat_for_a_new_phone(client, app, host):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    gid, code = game["id"], _code(app, game["id"])
    old = join(client, app, gid, "Ann")
    assert client.post(f"/api/join/{code}", json={"player": "Ann"}).status_code == 409
    assert client.delete(f"/api/games/{gid}/seats/0", headers=host).get_json()["freed"] is True
    assert client.delete(f"/api/games/{gid}/seats/9", headers=host).status_code == 404
    assert client.delete(f"/api/games/{gid}/seats/0", headers=host).get_json()["freed"] is False
    new = client.post(f"/api/join/{code}", json={"player": "Ann"}).get_json()["token"]
    assert client.get("/api/whoami", headers=_bearer(new)).get_json()["player"] == "Ann"
    assert client.get("/api/whoami", headers=_bearer(old)).status_code == 401


def test_wrong_join_codes_are_rate_limited_per_client(client, app):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    code = _code(app, game["id"])
    for _ in range(10):
        assert client.get("/api/join/BBBBBBBB").status_code == 404
    limited = client.get("/api/join/BBBBBBBB")
    assert limited.status_code == 429 and 1 <= int(limited.headers["Retry-After"]) <= 6
    assert "too many wrong join codes" in limited.get_json()["error"]
    # Even the right code waits: a guesser cannot tell a hit from the limit.
    assert client.post(f"/api/join/{code}", json={"player": "Ann"}).status_code == 429
    other = client.get(f"/api/join/{code}", environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other.status_code == 200  # another device is not punished for the guesser


def test_try_limiter_refills_one_try_per_period():
    now = [0.0]
    limiter = TryLimiter(burst=2, every=5.0, clock=lambda: now[0])
    limiter.failed("a")
    limiter.failed("a")
    assert limiter.wait("a") == 5.0 and limiter.wait("b") == 0.0
    now[0] = 2.5
    assert limiter.wait("a") == 2.5
    now[0] = 5.0
    assert limiter.wait("a") == 0.0
    small = TryLimiter(burst=1, every=1.0, clients=2, clock=lambda: now[0])
    for client in ("a", "b", "c"):
        small.failed(client)
    assert small.wait("a") == 0.0 and small.wait("c") == 1.0  # the oldest client was forgotten
