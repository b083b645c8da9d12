"""The JSON renderer: the comparison or suite as one JSON document (every Result included)."""

from __future__ import annotations

import json
import math
from typing import Any


def _clean(obj: Any) -> Any:
    """Replace inf/NaN (JSON has none) by strings, recursively, so json.dumps(allow_nan=False) works."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def render(obj: Any) -> str:
    """`obj.to_dict()` as indented, strict JSON."""
    return json.dumps(_clean(obj.to_dict()), indent=1, allow_nan=False, default=str) + "\n"
