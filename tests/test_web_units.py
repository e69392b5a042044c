"""Small pieces of the web package on their own: statistics, odds lines, auth, the serve command."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from scorekeeper.rules import new_game
from scorekeeper.web.auth import JOIN_ALPHABET, Auth, Caller, HeldSeat, new_join_code, normalise_join_code
from scorekeeper.web.stats import chi_square_survival, die_stats, face_probabilities, game_stats
from scorekeeper.web.views import odds


@pytest.mark.parametrize("x, dof, p", [(3.841459, 1, 0.05), (5.991465, 2, 0.05), (11.0705, 5, 0.05),
                                       (0.5, 3, 0.918891), (20.0, 2, 4.539993e-05), (1.0, 1, 0.3173105)])
def test_chi_square_survival_matches_tables(x, dof, p):
    assert math.isclose(chi_square_survival(x, dof), p, rel_tol=1e-4)
    assert chi_square_survival(0.0, dof) == 1.0


def test_die_stats_verdicts():
    assert die_stats("red", []).verdict == "no rolls yet"
    few = die_stats("tossup", ["green"] * 5)
    assert few.verdict == "too few rolls" and "30" in few.summary
    fair = die_stats("tossup", ["green"] * 30 + ["yellow"] * 20 + ["red"] * 10)
    assert fair.verdict == "looks fair" and fair.p_value == pytest.approx(1.0)
    assert die_stats("tossup", ["green"] * 20 + ["yellow"] * 28 + ["red"] * 12).verdict == "suspicious"
    loaded = die_stats("up", ["x2"] * 60)
    assert loaded.verdict == "looks unfair" and loaded.as_json()["faces"][5]["observed"] == 60
    assert face_probabilities("purple") == {"star": Fraction(1, 6), "(20)": Fraction(1, 3), "20": Fraction(1, 2)}
    assert [d.die for d in game_stats("tallyup", [{"type": "up", "face": "+1"}, {"type": "stop"}])] == [
        "red", "orange", "yellow", "green", "blue", "purple", "up"]


def _tally(events, **options):
    game = new_game("tallyup", ["Ann", "Bob"], **options)
    for event in events:
        game.apply(event)
    return game.state()


CHOOSE = {"type": "choose", "dice": ["red", "blue", "green"]}
CIRCLED = {"type": "roll", "dice": [{"die": "red", "face": "(50)"}, {"die": "blue", "face": "10"},
                                    {"die": "green", "face": "40"}]}


def test_odds_lines_follow_the_phase():
    assert odds(_tally([])) == []  # nothing chosen yet
    assert {line["key"] for line in odds(_tally([CHOOSE]))} == {"bust", "expected_points"}
    assert {line["key"] for line in odds(_tally([CHOOSE], high_stakes=True))} == {"bust", "loss", "expected_points"}
    before_up = odds(_tally([CHOOSE, CIRCLED]))
    assert [line["key"] for line in before_up] == ["loss"] and "Up Die" in before_up[0]["label"]
    high_up = odds(_tally([CHOOSE, CIRCLED], high_stakes=True))
    assert [line["key"] for line in high_up] == ["loss"]
    bonus = _tally([CHOOSE, CIRCLED, {"type": "reveal", "out": []}, {"type": "up", "face": "+1"}])
    assert odds(bonus) == []
    over = _tally([CHOOSE, CIRCLED, {"type": "reveal", "out": ["Ann"]}, {"type": "up", "face": "x2"},
                   {"type": "reveal", "out": ["Bob"]}], one_turn_each=True)
    assert over["phase"] == "choose"


def test_auth_rejects_malformed_tokens_and_weak_host_tokens():
    host = "host-token-0123456789"
    auth = Auth(host, b"secret")
    held = {("g1", 1): HeldSeat("Bob", "claim-1")}
    seat_of = lambda game, seat: held.get((game, seat))  # noqa: E731
    assert auth.identify(None, seat_of) == Caller()
    assert auth.identify("Bearer ", seat_of).bad_token
    assert auth.identify(f"Bearer {host}", seat_of).host
    token = auth.player_token("g1", 1, held[("g1", 1)])
    assert auth.identify(f"Bearer {token}", seat_of) == Caller(game_id="g1", seat=1, player="Bob")
    assert auth.identify(f"bearer {token}", seat_of).seat == 1
    # Another device now holds the seat (the host freed it and someone joined): the old token is dead.
    held[("g1", 1)] = HeldSeat("Bob", "claim-2")
    assert auth.identify(f"Bearer {token}", seat_of).bad_token
    held[("g1", 1)] = HeldSeat("Rob", "claim-1")
    assert auth.identify(f"Bearer {token}", seat_of).bad_token  # the signature covers the name
    assert auth.identify("Bearer p2.g1.x.c.sig", seat_of).bad_token
    for weak in ("", "tok", "x" * 15, "change-me-to-a-long-random-string"):
        with pytest.raises(ValueError):
            Auth(weak, b"secret")
    assert normalise_join_code(" kx pt-bc ") == "KXPTBC"
    assert len(new_join_code(set())) == 8
    assert set(new_join_code(set())) <= set(JOIN_ALPHABET)


class _FakeServer:
    port = 4321

    def __init__(self, app, host: str, port: int, threads: int) -> None:
        self.app, self.host, self.asked_port, self.threads = app, host, port, threads
        self.ran = False
        self.server = SimpleNamespace(handle_exit=lambda sig, frame: None)

    def run(self) -> None:
        self.ran = True


def test_serve_command_wiring(monkeypatch, tmp_path: Path):
    made: list[_FakeServer] = []

    def fake_server(app, **kwargs):
        made.append(_FakeServer(app, **kwargs))
        return made[-1]

    handlers: dict = {}
    token_file = tmp_path / "host-token"
    token_file.write_text("tok-0123456789abcdef\n")
    monkeypatch.delenv("DICETRAY_HOST_TOKEN", raising=False)
    monkeypatch.setattr("scorekeeper.web.server.WebServer", fake_server)
    monkeypatch.setattr("scorekeeper.cli.signal.signal", lambda sig, handler: handlers.setdefault(sig, handler))
    monkeypatch.setattr("scorekeeper.cli.os.umask", lambda mask: 0o022)  # not this test process's
    result = CliRunner().invoke(
        __import__("scorekeeper.cli", fromlist=["main"]).main,
        ["serve", "--data", str(tmp_path), "--host-token-file", str(token_file), "--threads", "80"],
    )
    assert result.exit_code == 0, result.output
    server = made[0]
    assert server.threads == 80 and server.host == "0.0.0.0" and server.asked_port == 8000 and server.ran
    assert ":4321/?host=tok-0123456789abcdef" in result.output and "stopping" in result.output
    assert server.app.config["PUBLIC_URL"].endswith(":4321")
    # Stop signals go to the server's handler: the first ends streams, later ones are logged.
    assert set(handlers.values()) == {server.server.handle_exit}
    result = CliRunner().invoke(__import__("scorekeeper.cli", fromlist=["main"]).main, ["serve", "--threads", "2"])
    assert result.exit_code != 0 and "2" in result.output


def test_lan_address_is_an_ipv4_address():
    from scorekeeper.web.server import lan_address

    parts = lan_address().split(".")
    assert len(parts) == 4 and all(part.isdigit() for part in parts)
