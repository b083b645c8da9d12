"""The memory budget, and the size estimates every generator, loader and constant fold asks first.

One budget per process: `--memory-limit` (CLI), else `OPTLANG_MEMORY_LIMIT` (or the older
`OPTLANG_MAX_BYTES`), else 80% of physical memory. Sizes accept `8e9`, `8G`, `512MB`, `2GiB`.
Estimates are computed from shapes and sparsity before anything is allocated, in float arithmetic
so that absurd sizes (1e308 × 3) never overflow; a refusal is a DataError E610 at the call's span.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable

from optlang.errors import DataError
from optlang.source import Span

ENV = "OPTLANG_MEMORY_LIMIT"
LEGACY_ENV = "OPTLANG_MAX_BYTES"
DEFAULT_FRACTION = 0.8
# A decision variable costs its value, its gradient and two optimizer moments (Adam), in float64
# at most: 32 bytes per element is what a first-order backend holds at once.
BYTES_PER_VARIABLE = 32.0
# A generated or loaded dense constant is held as float64, copied once to the device (float32 or
# float64) and once more by the first evaluation: three copies at 8 bytes per element.
CONSTANT_COPIES = 3.0
# Graphs: CSR holds indptr (8 B per node) and, per stored edge (both directions), an index and a
# weight (16 B), plus the COO/triangle temporaries while building (about 3×).
BYTES_PER_NODE = 16.0
BYTES_PER_EDGE = 96.0

_override: int | None = None
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12}
_UNITS.update({"kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40})


def parse_size(text: str) -> int:
    """'8e9', '8G', '512MB', '2GiB' → bytes; ValueError for anything else (or ≤ 0)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (use bytes, or a unit: 512MB, 8G, 2GiB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"a memory limit must be a positive size, got {text!r}")
    return int(min(value, 2.0**62))


def set_limit(nbytes: int | None) -> None:
    """Set (or with None, clear) the process-wide budget; the CLI's --memory-limit calls this."""
    global _override
    _override = None if nbytes is None else int(nbytes)


def limit() -> int:
    """Bytes one model may allocate: --memory-limit, the env vars, else 80% of physical memory."""
    if _override is not None:
        return _override
    found: list[int] = []
    for name in (ENV, LEGACY_ENV):  # both set: the tighter one wins
        env = os.environ.get(name)
        if env:
            try:
                found.append(parse_size(env))
            except ValueError:
                raise DataError(
                    f"{name}={env[:40]!r} is not a size", None, hint="e.g. 8G, 512MB or 8e9 bytes", code="E610"
                ) from None
    if found:
        return min(found)
    try:
        return int(DEFAULT_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def human(n: float) -> str:
    """A byte count for messages: 1.5 GB, 589.0 TB."""
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024:
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.3g} EB"


def check(nbytes: float, what: str, span: Span | None, hint: str | None = None) -> None:
    """Refuse an allocation of `nbytes` (an estimate) before it happens, when over the budget."""
    budget = limit()
    if not nbytes <= budget:  # also catches NaN
        raise DataError(
            f"{what} would need {human(nbytes)}, more than the memory limit of {human(budget)}",
            span,
            hint=hint or "use smaller sizes or sparse data; the limit is --memory-limit or OPTLANG_MEMORY_LIMIT",
            code="E610",
        )


def dense_bytes(shape: Iterable[float], itemsize: float = 8.0) -> float:
    """Bytes of a dense array of this shape, as a float (never overflows)."""
    out = float(itemsize)
    for d in shape:
        out *= float(d)
    return out


def constant_bytes(shape: Iterable[float]) -> float:
    """Bytes a dense constant of this shape costs over a solve (CONSTANT_COPIES float64 copies)."""
    return dense_bytes(shape, 8.0 * CONSTANT_COPIES)


def graph_bytes(n: float, m: float) -> float:
    """Bytes to build a graph with n nodes and m undirected edges."""
    return BYTES_PER_NODE * float(n) + BYTES_PER_EDGE * float(m)


def variable_bytes(shape: Iterable[float]) -> float:
    """Bytes a first-order backend holds for one decision variable of this shape."""
    return dense_bytes(shape, BYTES_PER_VARIABLE)
