"""The JSON API through Flask's test client: games, events, undo, edits, auth, joining, choices."""

from __future__ import annotations

import pytest

from tests.conftest import HOST_TOKEN, join, send, start_game

YELLOWS = ["yellow"] * 10
NO_STAR = [{"die": "red", "face": "50"}, {"die": "orange", "face": "60"}, {"die": "yellow", "face": "20"}]
ALL_STARS = [{"die": d, "face": "star"} for d in ("red", "orange", "yellow")]
CHOOSE = {"type": "choose", "dice": ["red", "orange", "yellow"]}


# -- games --------------------------------------------------------------------------


def test_create_game_returns_201_with_id_version_and_state(client, host):
    response = client.post("/api/games", json={"game": "tossup", "players": ["Ann", "Bob"],
                                               "options": {"target": 5}}, headers=host)
    assert response.status_code == 201
    body = response.get_json()
    assert set(body) == {"id", "version", "state"}
    assert body["version"] == 0
    assert body["state"]["players"] == [{"name": "Ann", "score": 0}, {"name": "Bob", "score": 0}]
    assert body["state"]["options"] == {"target": 5}
    assert response.headers["Location"].endswith(f"/api/games/{body['id']}")


def test_list_and_get_games(client):
    first = start_game(client, "tossup", ["Ann", "Bob"])
    second = start_game(client, "tallyup", ["Ann", "Bob", "Cy"], one_turn_each=True)
    games = client.get("/api/games").get_json()["games"]
    assert {g["id"] for g in games} == {first["id"], second["id"]}
    assert all(set(g) >= {"id", "game", "players", "over", "winners", "version"} for g in games)
    body = client.get(f"/api/games/{second['id']}").get_json()
    assert body == {"id": second["id"], "version": 0, "state": second["state"]}


@pytest.mark.parametrize(
    "payload, status, fragment",
    [
        ({"game": "chess", "players": ["A", "B"]}, 422, "unknown game"),
        ({"game": "tossup", "players": ["A"]}, 422, "2 to 6 players"),
        ({"game": "tossup", "players": ["A", "B"], "options": {"colour": 1}}, 400, "unknown field 'options.colour'"),
        ({"game": "tossup", "players": ["A", "B"], "options": {"high_stakes": True}}, 422, "unknown Toss Up option"),
        ({"game": "tallyup", "players": ["A", "B"], "options": {"target": -3}}, 422, "positive"),
        ({"players": ["A", "B"]}, 400, "'game'"),
        ({"game": "tossup", "players": "A,B"}, 400, "'players'"),
        ({"game": "tossup", "players": ["A", "B"], "options": []}, 400, "'options'"),
        ({"game": "tossup", "players": ["A", "B"], "extra": 1}, 400, "unknown field"),
    ],
)
def test_create_game_rejects_bad_requests_with_a_reason(client, host, payload, status, fragment):
    response = client.post("/api/games", json=payload, headers=host)
    assert response.status_code == status
    assert fragment in response.get_json()["error"]


def test_unknown_game_is_404_json(client, host):
    for method, url in [("get", "/api/games/nope"), ("post", "/api/games/nope/events"),
                        ("post", "/api/games/nope/undo"), ("put", "/api/games/nope/events/0"),
                        ("get", "/api/games/nope/stream"), ("get", "/api/games/nope/stats"),
                        ("get", "/api/games/nope/events"), ("post", "/api/games/nope/choices")]:
        response = getattr(client, method)(url, json={"event": {"type": "roll"}}, headers=host)
        assert response.status_code == 404, url
        assert "nope" in response.get_json()["error"]


def test_unknown_api_route_and_wrong_method_answer_json(client):
    assert client.get("/api/nothing-here").get_json()["error"]
    response = client.delete("/api/games")
    assert response.status_code == 405
    assert response.get_json()["error"]


# -- events ----------------------------------------------------------------------------


def test_event_advances_version_and_state(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    response = send(client, game["id"], {"type": "roll", "dice": ["green"] * 3 + ["yellow"] * 7}, version=0)
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"version", "state"}
    assert body["version"] == 1
    assert body["state"]["turn_points"] == 3


def test_stale_version_is_409_and_only_one_press_wins(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    send(client, game["id"], {"type": "roll", "dice": YELLOWS}, version=0)
    first = send(client, game["id"], {"type": "stop"}, version=1)
    second = send(client, game["id"], {"type": "stop"}, version=1)
    assert first.status_code == 200
    assert second.status_code == 409
    assert second.get_json()["version"] == 2
    assert "version" in second.get_json()["error"]


def test_simultaneous_presses_one_wins_one_conflicts(app):
    import threading

    client = app.test_client()
    game = start_game(client, "tossup", ["Ann", "Bob"])
    send(client, game["id"], {"type": "roll", "dice": YELLOWS})
    barrier = threading.Barrier(4)
    statuses: list[int] = []

    def press() -> None:
        own = app.test_client()
        barrier.wait()
        statuses.append(send(own, game["id"], {"type": "stop"}, version=1).status_code)

    threads = [threading.Thread(target=press) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 409, 409, 409]
    assert client.get(f"/api/games/{game['id']}").get_json()["version"] == 2


def test_illegal_event_is_422_with_the_engines_reason(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    response = send(client, game["id"], {"type": "stop"}, version=0)
    assert response.status_code == 422
    assert "not legal now" in response.get_json()["error"]
    response = send(client, game["id"], {"type": "roll", "dice": ["green"]})
    assert response.status_code == 422
    assert "10 dice in hand" in response.get_json()["error"]
    assert client.get(f"/api/games/{game['id']}").get_json()["version"] == 0


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"", "needs a JSON object"),
        (b'{"event": "roll"}', "'event'"),
        (b'{"event": {"type": "stop"}, "version": "3"}', "'version'"),
        (b'{"event": {"type": "stop"}, "version": true}', "'version'"),
        (b'{"event": {"type": "stop"}, "reading": 5}', "'reading'"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)
def test_malformed_requests_are_400_with_a_reason(client, host, data, fragment):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    response = client.post(f"/api/games/{game['id']}/events", data=data, headers=host,
                           content_type="application/json")
    assert response.status_code == 400
    assert fragment in response.get_json()["error"]


def test_oversize_body_is_413(client, host):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    huge = b'{"event": {"type": "roll", "dice": [' + b'"green",' * 2000 + b'"green"]}}'
    response = client.post(f"/api/games/{game['id']}/events", data=huge, headers=host,
                           content_type="application/json")
    assert response.status_code == 413
    assert response.get_json()["error"]


def test_reading_is_stored_with_the_roll(client, app):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    response = client.post(f"/api/games/{game['id']}/events", headers={"Authorization": f"Bearer {HOST_TOKEN}"},
                           json={"event": {"type": "roll", "dice": YELLOWS}, "reading": {"confidence": 0.9}})
    assert response.status_code == 200
    view = client.get(f"/api/games/{game['id']}/view").get_json()
    assert view["last_roll"]["reading"] == {"confidence": 0.9}
    assert view["last_roll"]["index"] == 0


# -- undo and edit -----------------------------------------------------------------------


def test_undo_takes_back_the_last_event(client, host):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    send(client, game["id"], {"type": "roll", "dice": ["green"] * 10})
    response = client.post(f"/api/games/{game['id']}/undo", json={"version": 1}, headers=host)
    assert response.status_code == 200
    assert response.get_json()["version"] == 2
    assert response.get_json()["state"]["turn_points"] == 0
    # With no body at all, undo is not version-checked; with nothing left, it is illegal.
    response = client.post(f"/api/games/{game['id']}/undo", headers=host)
    assert response.status_code == 422
    assert "nothing to undo" in response.get_json()["error"]
    response = client.post(f"/api/games/{game['id']}/undo", json={"version": 0}, headers=host)
    assert response.status_code == 409


def test_edit_corrects_a_past_roll_and_refolds(client, host):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    send(client, game["id"], {"type": "roll", "dice": ["green"] * 2 + ["yellow"] * 8})
    send(client, game["id"], {"type": "stop"})
    fixed = {"type": "roll", "dice": ["green"] * 4 + ["yellow"] * 6}
    response = client.put(f"/api/games/{game['id']}/events/0", json={"event": fixed, "version": 2}, headers=host)
    assert response.status_code == 200
    assert response.get_json()["version"] == 3
    assert response.get_json()["state"]["players"][0]["score"] == 4
    history = client.get(f"/api/games/{game['id']}/events").get_json()
    assert history["events"][0]["edited"] is True
    assert history["events"][0]["event"] == fixed
    assert history["events"][1]["scores"] == {"Ann": 4, "Bob": 0}


def test_edit_refusals(client, host):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    send(client, game["id"], {"type": "roll", "dice": ["green"] * 2 + ["yellow"] * 8})
    send(client, game["id"], {"type": "stop"})
    url = f"/api/games/{game['id']}/events"
    assert client.put(f"{url}/5", json={"event": {"type": "roll", "dice": []}}, headers=host).status_code == 422
    response = client.put(f"{url}/1", json={"event": {"type": "stop"}}, headers=host)
    assert response.status_code == 422
    assert "only rolls" in response.get_json()["error"]
    # A red light instead would make the later stop illegal: refused, nothing changes.
    response = client.put(f"{url}/0", json={"event": {"type": "roll", "dice": ["red"] * 10}}, headers=host)
    assert response.status_code == 422
    assert client.put(f"{url}/0", json={"event": {"type": "roll", "dice": YELLOWS}, "version": 1},
                      headers=host).status_code == 409
    assert client.put(f"{url}/-1", json={"event": {}}, headers=host).status_code == 404


# -- authorisation ----------------------------------------------------------------------


def test_host_actions_need_the_host_token(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    gid = game["id"]
    checks = [
        ("post", "/api/games", {"game": "tossup", "players": ["A", "B"]}),
        ("post", f"/api/games/{gid}/events", {"event": {"type": "roll", "dice": YELLOWS}}),
        ("post", f"/api/games/{gid}/undo", {}),
        ("put", f"/api/games/{gid}/events/0", {"event": {"type": "roll", "dice": YELLOWS}}),
        ("get", f"/api/games/{gid}/invite", None),
    ]
    for method, url, body in checks:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}):
            response = getattr(client, method)(url, json=body, headers=headers)
            assert response.status_code == 401, (url, headers)
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
            assert "token" in response.get_json()["error"] or "join" in response.get_json()["error"]
    assert client.get(f"/api/games/{gid}").status_code == 200  # anyone may watch


def test_player_token_only_sends_own_decisions(client, app):
    game = start_game(client, "tallyup", ["Ann", "Bob"], one_turn_each=True)
    gid = game["id"]
    ann = join(client, app, gid, "Ann")
    auth = {"Authorization": f"Bearer {ann}"}
    assert client.get("/api/whoami", headers=auth).get_json() == {"role": "player", "game": gid, "player": "Ann"}
    assert send(client, gid, CHOOSE, token=ann).status_code == 403
    assert client.post("/api/games", json={"game": "tossup", "players": ["A", "B"]}, headers=auth).status_code == 403
    assert client.post(f"/api/games/{gid}/undo", headers=auth).status_code == 403
    assert client.get(f"/api/games/{gid}/invite", headers=auth).status_code == 403
    send(client, gid, CHOOSE)
    send(client, gid, {"type": "roll", "dice": ALL_STARS})
    # Shouting for someone else, or attaching a reading, is not this device's business.
    assert send(client, gid, {"type": "tally_up", "player": "Bob"}, token=ann).status_code == 403
    response = client.post(f"/api/games/{gid}/events", headers=auth,
                           json={"event": {"type": "tally_up", "player": "Ann"}, "reading": {}})
    assert response.status_code == 403
    assert send(client, gid, {"type": "tally_up", "player": "Ann"}, version=2, token=ann).status_code == 200


def test_player_token_is_bound_to_its_game_and_signature(client, app):
    first = start_game(client, "tallyup", ["Ann", "Bob"])
    second = start_game(client, "tallyup", ["Ann", "Bob"])
    ann = join(client, app, first["id"], "Ann")
    response = send(client, second["id"], {"type": "tally_up", "player": "Ann"}, token=ann)
    assert response.status_code == 403
    assert "another game" in response.get_json()["error"]
    forged = ann[:-4] + ("AAAA" if not ann.endswith("AAAA") else "BBBB")
    for token in (forged, ann.replace(".0.", ".7."), f"p1.zzzz.0.{ann.split('.')[-1]}", "p1.x.y.z"):
        assert send(client, first["id"], {"type": "tally_up", "player": "Ann"}, token=token).status_code == 401
        assert client.get("/api/whoami", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert client.get("/api/whoami").get_json() == {"role": "watcher"}
    assert client.get("/api/whoami", headers={"Authorization": f"Bearer {HOST_TOKEN}"}).get_json() == {"role": "host"}


def test_join_by_code(client, app, host):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    invite = client.get(f"/api/games/{game['id']}/invite", headers=host).get_json()
    code = invite["code"]
    assert len(code) == 8
    assert invite["url"].endswith(f"/join/{code}")
    assert invite["svg"].startswith("<svg")
    info = client.get(f"/api/join/ {code.lower()} ").get_json()
    assert info == {"id": game["id"], "game": "tallyup", "players": ["Ann", "Bob"]}
    assert client.get("/api/join/QQQQQ").status_code == 404
    response = client.post(f"/api/join/{code}", json={"player": "Zed"})
    assert response.status_code == 400
    assert "Ann" in response.get_json()["error"]
    token = client.post(f"/api/join/{code}", json={"player": "Bob"}).get_json()["token"]
    assert client.get("/api/whoami", headers={"Authorization": f"Bearer {token}"}).get_json()["player"] == "Bob"


def test_invite_uses_public_url_when_configured(app, client, host):
    app.config["PUBLIC_URL"] = "http://192.168.1.20:8000/"
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    invite = client.get(f"/api/games/{game['id']}/invite", headers=host).get_json()
    assert invite["url"] == f"http://192.168.1.20:8000/join/{invite['code']}"


def test_join_codes_differ_between_games_in_progress(client, app):
    codes = {app.extensions["dicetray"].get(start_game(client, "tossup", ["A", "B"])["id"]).record.meta["join_code"]
             for _ in range(5)}
    assert len(codes) == 5


# -- secret IN/OUT and the Tally Up! shout ----------------------------------------------------


def _to_reveal(client, players):
    game = start_game(client, "tallyup", players, one_turn_each=True)
    send(client, game["id"], CHOOSE)
    send(client, game["id"], {"type": "roll", "dice": NO_STAR})
    return game["id"]


def test_secret_choices_stay_hidden_until_everyone_chose(client, app, host):
    gid = _to_reveal(client, ["Ann", "Bob", "Cy"])
    ann, bob = join(client, app, gid, "Ann"), join(client, app, gid, "Bob")
    response = client.post(f"/api/games/{gid}/choices", json={"choice": "out", "version": 2},
                           headers={"Authorization": f"Bearer {ann}"})
    assert response.status_code == 200
    body = response.get_json()
    assert body["revealed"] is False
    assert body["mine"] == "out"
    assert body["secret"] == {"version": 2, "chosen": ["Ann"], "waiting": ["Bob", "Cy"]}
    # Nothing anyone can read tells what Ann chose.
    public = client.get(f"/api/games/{gid}").get_json()
    assert public["version"] == 2 and public["state"]["in"] == ["Ann", "Bob", "Cy"]
    view = client.get(f"/api/games/{gid}/view").get_json()
    assert view["secret"] == {"version": 2, "chosen": ["Ann"], "waiting": ["Bob", "Cy"]}
    assert "out" not in str(view["secret"])
    assert client.get(f"/api/games/{gid}/choices", headers={"Authorization": f"Bearer {ann}"}).get_json()["mine"] == "out"
    assert client.get(f"/api/games/{gid}/choices", headers={"Authorization": f"Bearer {bob}"}).get_json()["mine"] is None
    assert client.get(f"/api/games/{gid}/choices", headers=host).get_json()["mine"] is None
    # Ann may change her mind before the reveal; Bob may not choose for Cy.
    client.post(f"/api/games/{gid}/choices", json={"choice": "in"}, headers={"Authorization": f"Bearer {ann}"})
    client.post(f"/api/games/{gid}/choices", json={"choice": "out"}, headers={"Authorization": f"Bearer {ann}"})
    response = client.post(f"/api/games/{gid}/choices", json={"choice": "in", "player": "Cy"},
                           headers={"Authorization": f"Bearer {bob}"})
    assert response.status_code == 403
    client.post(f"/api/games/{gid}/choices", json={"choice": "in"}, headers={"Authorization": f"Bearer {bob}"})
    # Cy has no phone: the table enters Cy's choice, which completes the reveal.
    response = client.post(f"/api/games/{gid}/choices", json={"choice": "out", "player": "Cy"}, headers=host)
    body = response.get_json()
    assert body["revealed"] is True
    assert body["out"] == ["Ann", "Cy"]
    assert body["version"] == 3
    state = body["state"]
    assert state["in"] == ["Bob"] and state["last"] == {"kind": "reveal", "out": ["Ann", "Cy"], "banked": 130}
    assert [p["score"] for p in state["players"]] == [130, 0, 130]


def test_choice_refusals(client, app, host):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    gid = game["id"]
    ann = join(client, app, gid, "Ann")
    auth = {"Authorization": f"Bearer {ann}"}
    response = client.post(f"/api/games/{gid}/choices", json={"choice": "out"}, headers=auth)
    assert response.status_code == 422
    assert "not waiting for a reveal" in response.get_json()["error"]
    assert client.post(f"/api/games/{gid}/choices", json={"choice": "maybe"}, headers=auth).status_code == 400
    assert client.post(f"/api/games/{gid}/choices", json={"choice": "in"}, headers=host).status_code == 400
    assert client.post(f"/api/games/{gid}/choices", json={"choice": "in"}).status_code == 401
    send(client, gid, CHOOSE)
    send(client, gid, {"type": "roll", "dice": NO_STAR})
    assert client.post(f"/api/games/{gid}/choices", json={"choice": "in", "version": 1}, headers=auth).status_code == 409
    send(client, gid, {"type": "reveal", "out": ["Ann"]})
    send(client, gid, {"type": "roll", "dice": NO_STAR})
    response = client.post(f"/api/games/{gid}/choices", json={"choice": "in"}, headers=auth)
    assert response.status_code == 422
    assert "already OUT" in response.get_json()["error"]
    # The service refuses a choice that is neither IN nor OUT even when called directly.
    with pytest.raises(Exception, match="'in' or 'out'"):
        app.extensions["dicetray"].choose(gid, "Bob", "sideways", None)


def test_pending_choices_are_dropped_when_the_game_changes(client, app, host):
    gid = _to_reveal(client, ["Ann", "Bob"])
    ann = join(client, app, gid, "Ann")
    client.post(f"/api/games/{gid}/choices", json={"choice": "out"}, headers={"Authorization": f"Bearer {ann}"})
    client.post(f"/api/games/{gid}/undo", headers=host)
    send(client, gid, {"type": "roll", "dice": NO_STAR})
    view = client.get(f"/api/games/{gid}/view").get_json()
    assert view["secret"]["chosen"] == []


def test_first_tally_up_shout_wins(client, app):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    gid = game["id"]
    send(client, gid, CHOOSE)
    send(client, gid, {"type": "roll", "dice": ALL_STARS})
    ann, bob = join(client, app, gid, "Ann"), join(client, app, gid, "Bob")
    assert send(client, gid, {"type": "tally_up", "player": "Bob"}, version=2, token=bob).status_code == 200
    late = send(client, gid, {"type": "tally_up", "player": "Ann"}, version=2, token=ann)
    assert late.status_code == 409
    later = send(client, gid, {"type": "tally_up", "player": "Ann"}, token=ann)
    assert later.status_code == 422
    state = client.get(f"/api/games/{gid}").get_json()["state"]
    assert [p["score"] for p in state["players"]] == [100, 200]


# -- odds, history, stats ------------------------------------------------------------------------


def test_view_carries_engine_odds(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    view = client.get(f"/api/games/{game['id']}/view").get_json()
    red = next(line for line in view["odds"] if line["key"] == "red_light")
    assert 0 < red["percent"] < 1  # ten dice: a red light needs no green at all
    gid = _to_reveal(client, ["Ann", "Bob"])
    view = client.get(f"/api/games/{gid}/view").get_json()
    assert {line["key"] for line in view["odds"]} == {"bust", "expected_points"}


def test_history_and_stats(client):
    game = start_game(client, "tossup", ["Ann", "Bob"])
    gid = game["id"]
    for _ in range(12):
        send(client, gid, {"type": "roll", "dice": ["green"] * 5 + ["yellow"] * 3 + ["red"] * 2})
        send(client, gid, {"type": "roll", "dice": ["green"] * 5})
    history = client.get(f"/api/games/{gid}/events").get_json()
    assert len(history["events"]) == 24
    assert history["events"][0]["actor"] == "Ann" and history["events"][0]["result"]["points"] == 5
    dice = client.get(f"/api/games/{gid}/stats").get_json()["dice"]
    assert [d["die"] for d in dice] == ["tossup"]
    counts = {f["face"]: f["observed"] for f in dice[0]["faces"]}
    assert counts == {"green": 120, "yellow": 36, "red": 24}
    assert dice[0]["verdict"] == "looks unfair"


# -- pages and errors ----------------------------------------------------------------------


def test_pages_render(client):
    game = start_game(client, "tallyup", ["Ann", "Bob"])
    send(client, game["id"], {"type": "choose", "dice": ["red", "orange", "yellow"]})
    assert b"Ann <b>0</b>" in client.get("/").data
    for url in ["/", f"/games/{game['id']}", f"/games/{game['id']}/history", f"/games/{game['id']}/player",
                "/play", "/join/bcdf"]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"<html" in response.data
    response = client.get("/games/nope")
    assert response.status_code == 404
    assert b"nope" in response.data
    assert client.get("/no/such/page").status_code == 404


def test_unexpected_errors_hide_the_trace(client, app, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(app.extensions["dicetray"], "list_games", boom)
    response = client.get("/api/games")
    assert response.status_code == 500
    assert "secret internals" not in response.get_data(as_text=True)
    assert "Traceback" not in response.get_data(as_text=True)
    page = client.get("/")
    assert page.status_code == 500
    assert b"secret internals" not in page.data
    assert "secret internals" in caplog.text


def test_a_rematch_keeps_the_players_and_their_seats(client, host):
    game = start_game(client, "tossup", ["Ann", "Bob"], target=1)
    code = client.get(f"/api/games/{game['id']}/invite", headers=host).get_json()["code"]
    bob = client.post(f"/api/join/{code}", json={"player": "Bob"}).get_json()["token"]
    assert client.post(f"/api/games/{game['id']}/rematch", headers=host).status_code == 409  # still being played
    assert client.post(f"/api/games/{game['id']}/rematch/seat",
                       headers={"Authorization": f"Bearer {bob}"}).status_code == 404  # no rematch yet
    for event in ({"type": "roll", "dice": ["green"] * 3 + ["yellow"] * 7}, {"type": "stop"},
                  {"type": "roll", "dice": ["red"] + ["yellow"] * 9}):
        assert send(client, game["id"], event).status_code == 200
    assert client.get(f"/api/games/{game['id']}/view").get_json()["rematch"] is None
    assert client.post(f"/api/games/{game['id']}/rematch").status_code == 401  # the host's to start

    started = client.post(f"/api/games/{game['id']}/rematch", headers=host)
    assert started.status_code == 201
    rematch = started.get_json()
    assert rematch["id"] != game["id"] and [p["name"] for p in rematch["state"]["players"]] == ["Ann", "Bob"]
    assert rematch["state"]["options"]["target"] == 1 and not rematch["state"]["over"]
    assert client.post(f"/api/games/{game['id']}/rematch", headers=host).get_json()["id"] == rematch["id"]  # one only
    assert client.get(f"/api/games/{game['id']}/view").get_json()["rematch"] == rematch["id"]

    seat = client.post(f"/api/games/{game['id']}/rematch/seat", headers={"Authorization": f"Bearer {bob}"})
    assert seat.status_code == 200
    moved = seat.get_json()
    assert moved["id"] == rematch["id"] and moved["player"] == "Bob" and len(moved["code"]) == 8
    who = client.get("/api/whoami", headers={"Authorization": f"Bearer {moved['token']}"}).get_json()
    assert who == {"role": "player", "game": rematch["id"], "player": "Bob"}
    assert client.post(f"/api/games/{game['id']}/rematch/seat").status_code == 401  # a watcher has no seat
    assert client.post(f"/api/games/{game['id']}/rematch/seat", headers=host).status_code == 400
