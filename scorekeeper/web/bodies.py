"""Request bodies: the JSON object a request sends, read strictly."""

from __future__ import annotations

import json
from typing import Any

from flask import abort, request


def json_object(required: bool = True) -> dict[str, Any]:
    """The request's JSON object; 400 with a reason when it is not one."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if required:
            abort(400, "the request needs a JSON object as its body")
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        abort(400, f"the body is not valid JSON: {error}")
    if not isinstance(data, dict):
        abort(400, f"the body must be a JSON object, not {type(data).__name__}")
    return data
