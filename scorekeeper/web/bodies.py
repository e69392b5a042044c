"""Request bodies: strict JSON, each body declared once as a pydantic model.

Strict means: no NaN or Infinity (they would be stored and then served as invalid JSON), no
nesting deeper than the parser's limit (a 400, not a RecursionError), no unknown fields (a
misspelled "verison" must not quietly skip the version check), no type coercion ("1" is not 1).
Every refusal is a 400 that names the field.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Annotated, Any, Literal, TypeVar

import pydantic_core
from flask import abort, request
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

#: Longest player name: fits a phone's scoreboard row.
MAX_NAME = 40
#: Unicode categories refused in names: controls, format characters (the bidi overrides among
#: them), unassigned, private-use and surrogates, and line/paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})
#: The zero-width joiner is a format character that emoji sequences (a family, a flag) need.
_ALLOWED_FORMAT = frozenset({"\u200d"})


def _plain_name(name: str) -> str:
    for char in name:
        if unicodedata.category(char) in _REFUSED_CATEGORIES and char not in _ALLOWED_FORMAT:
            raise ValueError(f"names may not hold control or direction characters (found U+{ord(char):04X})")
    return name


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME), AfterValidator(_plain_name)]
Version = Annotated[int, Field(ge=0, le=2**31)]
GameId = Annotated[str, Field(min_length=1, max_length=64)]


class Body(BaseModel):
    """A request body: unknown fields refused, types strict, floats finite."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class GameOptions(Body):
    """The options any game takes; the rules engine refuses those its game does not take."""

    target: Annotated[int, Field(le=1_000_000)] | None = None
    one_turn_each: bool | None = None
    high_stakes: bool | None = None

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class NewGame(Body):
    game: Annotated[str, Field(max_length=40)]
    players: Annotated[list[Name], Field(max_length=12)]
    options: GameOptions = GameOptions()


class NewEvent(Body):
    event: dict[str, Any]
    version: Version | None = None
    reading: dict[str, Any] | None = None


class VersionOnly(Body):
    version: Version | None = None


class Choice(Body):
    choice: Literal["in", "out"]
    player: Name | None = None
    version: Version | None = None


class Join(Body):
    player: Name


class LiveTarget(Body):
    game: GameId | None = None


class ResolvePending(Body):
    action: Annotated[str, Field(max_length=20)]
    dice: Any = None  # the live table checks the corrected dice and names what is wrong with them


class CalibrationStart(Body):
    name: Annotated[str, Field(max_length=80)] = "table"


class CalibrationTray(Body):
    corners: list[Any]  # the session checks for four [x, y] points and says which is wrong


class CalibrationExposure(Body):
    relock: bool = False


class CalibrationRoll(Body):
    dice: Literal["tossup", "tallyup"]


class CalibrationConfirm(Body):
    shot: Annotated[str, Field(max_length=80)] | None = None
    dice: Any = None  # checked die by die by the session, whose errors name the die


class CalibrationSave(Body):
    activate: bool = True


B = TypeVar("B", bound=Body)


def parse_json(raw: bytes) -> Any:
    """Strict JSON: no NaN/Infinity (not even as 1e999), nesting limited; ValueError says why."""
    data = pydantic_core.from_json(raw, allow_inf_nan=False)
    _require_finite(data, "")
    return data


def _require_finite(value: Any, where: str) -> None:
    # The parser bounds the depth, so this recursion is bounded too.
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where or 'a number'} is too large to be a JSON number here")
    if isinstance(value, dict):
        for key, item in value.items():
            _require_finite(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _require_finite(item, f"{where}.{index}" if where else str(index))


def json_object(required: bool = True) -> dict[str, Any]:
    """The request's JSON object; 400 with a reason when it is not one."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if required:
            abort(400, "the request needs a JSON object as its body")
        return {}
    try:
        data = parse_json(raw)
    except ValueError as error:
        abort(400, f"the body is not valid JSON: {error}")
    if not isinstance(data, dict):
        abort(400, f"the body must be a JSON object, not {type(data).__name__}")
    return data


def body(model: type[B], required: bool = True) -> B:
    """The request body as `model`; a 400 naming each wrong, missing or unknown field."""
    data = json_object(required)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        abort(400, describe(error, model))


def describe(error: ValidationError, model: type[Body]) -> str:
    """One sentence per problem (at most three), each naming its field."""
    expected = ", ".join(model.model_fields) or "none"
    lines = []
    for problem in error.errors(include_url=False)[:3]:
        field = ".".join(str(part) for part in problem["loc"]) or "body"
        kind = problem["type"]
        if kind == "extra_forbidden":
            lines.append(f"unknown field '{field}' (expected: {expected})" if len(problem["loc"]) == 1
                         else f"unknown field '{field}'")
        elif kind == "missing":
            lines.append(f"'{field}' is required")
        else:
            lines.append(f"'{field}': {problem['msg']}")
    return "; ".join(lines)
