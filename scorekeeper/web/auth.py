"""Who may do what: the host token, join codes, and the token of the device that holds a seat.

A player token names a game, a seat and the claim the server made when that device joined; its
signature proves the server issued it. The claim is what makes a seat one device's: while it
holds, nobody else can join that seat, and once the holder leaves or the host frees the seat the
token stops working. Claims live in memory, like the random signing secret: after a restart,
phones join again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable

# No vowels (no accidental words) and no look-alikes such as 0/O or 1/I.
JOIN_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
#: 20**8 (2.6e10) codes: with failed tries rate-limited per client, guessing one takes centuries.
JOIN_CODE_LENGTH = 8
#: The shortest host token accepted: it guards every host action on the network.
MIN_HOST_TOKEN = 16
_PLAYER_PREFIX = "p2"


@dataclass(frozen=True)
class HeldSeat:
    """A seat some device holds: the player's name and the claim made when it joined."""

    player: str
    claim: str


#: Finds who holds a seat: (game id, seat index) -> HeldSeat, or None for a free or unknown seat.
SeatLookup = Callable[[str, int], "HeldSeat | None"]


@dataclass(frozen=True)
class Caller:
    """The sender of a request: the host, the holder of one seat of one game, or an onlooker."""

    host: bool = False
    game_id: str | None = None
    seat: int | None = None
    player: str | None = None
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
    return "".join(code.split()).replace("-", "").upper()


def weak_host_token(token: str) -> str | None:
    """Why `token` may not guard host actions, or None when it may."""
    if len(token) < MIN_HOST_TOKEN:
        return f"the host token must be at least {MIN_HOST_TOKEN} characters (it has {len(token)})"
    if "change-me" in token.lower():
        return "the host token is still the placeholder from the unit file: set a random one"
    return None


class Auth:
    def __init__(self, host_token: str, secret: bytes) -> None:
        problem = weak_host_token(host_token)
        if problem:
            raise ValueError(problem)
        self.host_token = host_token
        self._secret = secret

    def new_claim(self) -> str:
        return secrets.token_urlsafe(12)

    def _signature(self, game_id: str, seat: int, name: str, claim: str) -> str:
        message = f"{game_id}\0{seat}\0{name}\0{claim}".encode()
        mac = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:18]).decode().rstrip("=")

    def player_token(self, game_id: str, seat: int, held: HeldSeat) -> str:
        signature = self._signature(game_id, seat, held.player, held.claim)
        return f"{_PLAYER_PREFIX}.{game_id}.{seat}.{held.claim}.{signature}"

    def identify(self, authorization: str | None, seat_of: SeatLookup) -> Caller:
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
        if len(parts) != 5 or parts[0] != _PLAYER_PREFIX or not is_small_number(parts[2], 3):
            return Caller(bad_token=True)
        game_id, seat, claim, signature = parts[1], int(parts[2]), parts[3], parts[4]
        held = seat_of(game_id, seat)
        if held is None:
            return Caller(bad_token=True)
        expected = self._signature(game_id, seat, held.player, held.claim)
        # Both checks always run and compare in constant time: no timing tells which part was wrong.
        same_claim = hmac.compare_digest(held.claim.encode(), claim.encode())
        same_signature = hmac.compare_digest(expected.encode(), signature.encode())
        if not (same_claim and same_signature):
            return Caller(bad_token=True)
        return Caller(game_id=game_id, seat=seat, player=held.player)
