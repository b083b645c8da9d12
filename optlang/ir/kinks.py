"""Coordinate kinks: where an expression stops being differentiable along one variable element.

`abs(a·x[i] + b)`, `relu(...)` and `maximum` / `minimum` of such a term and a constant have a kink at
x[i] = −b/a. Gradient methods cross such a point back and forth instead of landing on it (|x|^0.8 in
Kursawe's f2 keeps Adam's iterates ~1e-2 off 0), so a backend can try the point itself. Only terms that
are elementwise affine in the elements of one variable count; anything else (a cone sqrt(x² + y²), a
data table's rows) is left alone. Pure analysis of the IR, no evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from optlang.ir.nodes import Const, Node, Op, Var

_KINK_ATOMS = ("abs", "relu")  # kink where the (only) argument is 0
_PAIR_ATOMS = ("maximum", "minimum")  # kink where the two arguments are equal


@dataclass(frozen=True, order=True)
class Kink:
    """Element `index` (flat, C order) of variable `name` has a kink at `value`."""

    name: str
    index: int
    value: float


@dataclass(frozen=True)
class _Affine:
    """a ⊙ x.flat[idx] + b elementwise, every array shaped as the expression."""

    name: str
    idx: np.ndarray
    a: np.ndarray
    b: np.ndarray


def _const(node: Node) -> np.ndarray | None:
    if isinstance(node, Const) and node.type.sample is None:
        v = node.value
        if isinstance(v, (int, float, np.ndarray, np.number)):
            arr = np.asarray(v, dtype=np.float64)
            return arr if np.all(np.isfinite(arr)) else None
    return None


def _affine(node: Node, variables: frozenset[str]) -> _Affine | None:
    """node as an elementwise affine function of one variable's elements, or None."""
    if node.type.sample is not None:
        return None
    shape = node.type.shape
    if isinstance(node, Var):
        if node.name not in variables:
            return None
        size = int(np.prod(shape)) if shape else 1
        return _Affine(node.name, np.arange(size).reshape(shape), np.ones(shape), np.zeros(shape))
    if not isinstance(node, Op):
        return None
    if node.atom == "index":
        inner = _affine(node.args[0], variables)
        if inner is None:
            return None
        ix = tuple(node.static.get("index", ()))
        return _Affine(inner.name, inner.idx[ix], inner.a[ix], inner.b[ix])
    if node.atom == "neg":
        inner = _affine(node.args[0], variables)
        return None if inner is None else _Affine(inner.name, inner.idx, -inner.a, -inner.b)
    if node.atom in ("add", "sub", "mul", "div") and len(node.args) == 2:
        left, right = node.args
        la, rc = _affine(left, variables), _const(right)
        ra, lc = _affine(right, variables), _const(left)
        try:
            if la is not None and rc is not None:
                return _combine(node.atom, la, rc, shape, const_first=False)
            if ra is not None and lc is not None and node.atom != "div":
                return _combine(node.atom, ra, lc, shape, const_first=True)
        except ValueError:  # shapes that do not broadcast elementwise (never after type checking)
            return None
    return None


def _combine(atom: str, f: _Affine, c: np.ndarray, shape: tuple[int, ...], const_first: bool) -> _Affine | None:
    """f (op) c, or c (op) f when `const_first`, broadcast to the node's shape."""
    idx = np.broadcast_to(f.idx, shape)
    a, b = np.broadcast_to(f.a, shape), np.broadcast_to(f.b, shape)
    c = np.broadcast_to(c, shape)
    if atom == "add":
        return _Affine(f.name, idx, a, b + c)
    if atom == "sub":
        return _Affine(f.name, idx, -a, c - b) if const_first else _Affine(f.name, idx, a, b - c)
    if atom == "mul":
        return _Affine(f.name, idx, a * c, b * c)
    if np.any(c == 0):  # div by a constant (f / c only)
        return None
    return _Affine(f.name, idx, a / c, b / c)


def _zeros(f: _Affine) -> Iterable[Kink]:
    a, b, idx = f.a.ravel(), f.b.ravel(), f.idx.ravel()
    for k in np.flatnonzero(a != 0):
        yield Kink(f.name, int(idx[k]), float(-b[k] / a[k]) + 0.0)  # + 0.0: no −0.0


def coordinate_kinks(exprs: Iterable[Node], variables: Iterable[str]) -> tuple[Kink, ...]:
    """The coordinate kinks of every expression in `exprs` (each element and value once, sorted)."""
    names = frozenset(variables)
    found: set[Kink] = set()
    for expr in exprs:
        for node in expr.walk():
            if not isinstance(node, Op):
                continue
            if node.atom in _KINK_ATOMS and len(node.args) == 1:
                f = _affine(node.args[0], names)
                if f is not None:
                    found.update(_zeros(f))
            elif node.atom in _PAIR_ATOMS and len(node.args) == 2:
                p, q = node.args
                fp, cq = _affine(p, names), _const(q)
                fq, cp = _affine(q, names), _const(p)
                if fp is not None and cq is not None:
                    d = _combine("sub", fp, cq, node.type.shape, const_first=False)
                elif fq is not None and cp is not None:
                    d = _combine("sub", fq, cp, node.type.shape, const_first=False)
                else:
                    d = None
                if d is not None:
                    found.update(_zeros(d))
    return tuple(sorted(k for k in found if np.isfinite(k.value)))
