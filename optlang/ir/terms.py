"""A scalar expression as a weighted sum of its top-level summands, and a TorchFunction of a subset.

`summands` opens `+`, `-`, unary `-` and products with a scalar constant (c·(a + b) = c·a + c·b),
so a backend can treat parts of an objective differently (general bilevel: the part that is a
quadratic in the follower's variables alone is precomputed once as c + bᵀy + ½yᵀQy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from optlang.ir.evaluate import sample_size, torch_function
from optlang.ir.nodes import Const, Node, Op
from optlang.problem import TorchFunction


def _scalar_const(n: Node) -> float | None:
    if isinstance(n, Const) and not n.type.shape and np.ndim(n.value) == 0:
        return float(n.value)
    return None


def summands(node: Node, coef: float = 1.0) -> list[tuple[float, Node]]:
    """node = Σ coef_i · term_i over its scalar top-level summands (a single term when none opens)."""
    if isinstance(node, Op) and not node.type.shape:
        if node.atom in ("add", "sub") and all(not a.type.shape for a in node.args):
            a, b = node.args
            return summands(a, coef) + summands(b, -coef if node.atom == "sub" else coef)
        if node.atom == "neg":
            return summands(node.args[0], -coef)
        if node.atom == "mul":
            a, b = node.args
            ca, cb = _scalar_const(a), _scalar_const(b)
            if ca is not None and not b.type.shape:
                return summands(b, coef * ca)
            if cb is not None and not a.type.shape:
                return summands(a, coef * cb)
    return [(coef, node)]


def weighted_sum(terms: list[tuple[float, Node]], source: str = "") -> TorchFunction:
    """Σ coef_i · term_i as one TorchFunction (the sample axis: the first term's that has one)."""
    fns = [(c, torch_function(t)) for c, t in terms]
    n_samples = next((s for s in (sample_size(t) for _, t in terms) if s is not None), None)

    def build(device: Any, dtype: Any) -> Callable[..., Any]:
        compiled = [(c, f.compile(device, dtype)) for c, f in fns]

        def call(values: Mapping[str, Any], batch: Any = None) -> Any:
            out = None
            for c, f in compiled:
                v = f(values, batch)
                v = v if c == 1.0 else c * v
                out = v if out is None else out + v
            return out

        return call

    return TorchFunction(build, n_samples=n_samples, source=source)
