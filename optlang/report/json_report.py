"""The JSON renderer: the comparison or suite as one JSON document (every Result included)."""

from __future__ import annotations

import json
from typing import Any

from optlang.result import jsonable


def render(obj: Any) -> str:
    """`obj.to_dict()` as indented, strict JSON (non-finite numbers as strings: `result.jsonable`)."""
    return json.dumps(jsonable(obj.to_dict()), indent=1, allow_nan=False) + "\n"
