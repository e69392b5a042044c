"""Who may do what: the host token, join codes and per-player tokens.

Player tokens are signed, not stored: a token names a game and a seat, and its signature
proves the server issued it, so nothing needs remembering between requests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable

#: Looks up the player names of a game by id (None for an unknown game).
PlayersLookup = Callable[[str], "list[str] | None"]

# No vowels (no accidental words) and no look-alikes such as 0/O or 1/I.
JOIN_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
JOIN_CODE_LENGTH = 4
_PLAYER_PREFIX = "p1"


@dataclass(frozen=True)
class Caller:
    """The sender of a request: the host, a player of one game, or an onlooker."""

    host: bool = False
    game_id: str | None = None
    seat: int | None = None
    bad_token: bool = False

    @property
    def anonymous(self) -> bool:
        return not self.host and self.seat is None


def is_small_number(text: str, digits: int) -> bool:
    """ASCII digits only, at most `digits` of them: int() of it can neither fail nor take long."""
    return 0 < len(text) <= digits and text.isascii() and text.isdigit()


def new_join_code(taken: set[str]) -> str:
    while True:
        code = "".join(secrets.choice(JOIN_ALPHABET) for _ in range(JOIN_CODE_LENGTH))
        if code not in taken:
            return code


def normalise_join_code(code: str) -> str:
    return "".join(code.split()).upper()


class Auth:
    def __init__(self, host_token: str, secret: bytes) -> None:
        if not host_token:
            raise ValueError("the host token must not be empty")
        self.host_token = host_token
        self._secret = secret

    def _signature(self, game_id: str, seat: int, name: str) -> str:
        mac = hmac.new(self._secret, f"{game_id}\0{seat}\0{name}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:18]).decode().rstrip("=")

    def player_token(self, game_id: str, seat: int, name: str) -> str:
        return f"{_PLAYER_PREFIX}.{game_id}.{seat}.{self._signature(game_id, seat, name)}"

    def identify(self, authorization: str | None, players_of: PlayersLookup) -> Caller:
        """Read an `Authorization: Bearer ...` header value."""
        if not authorization:
            return Caller()
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return Caller(bad_token=True)
        if hmac.compare_digest(token.encode(), self.host_token.encode()):
            return Caller(host=True)
        parts = token.split(".")
        if len(parts) != 4 or parts[0] != _PLAYER_PREFIX or not is_small_number(parts[2], 3):
            return Caller(bad_token=True)
        game_id, seat = parts[1], int(parts[2])
        players = players_of(game_id)
        if players is None or seat >= len(players):
            return Caller(bad_token=True)
        expected = self._signature(game_id, seat, players[seat])
        if not hmac.compare_digest(expected.encode(), parts[3].encode()):
            return Caller(bad_token=True)
        return Caller(game_id=game_id, seat=seat)

