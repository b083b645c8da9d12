"""Coordinate kinks: where an expression stops being differentiable along one variable element.

`abs(a·x[i] + b)`, `relu(...)` and `maximum` / `minimum` of such a term and a constant have a kink at
x[i] = −b/a. Gradient methods cross such a point back and forth instead of landing on it (|x|^0.8 in
Kursawe's f2 keeps Adam's iterates ~1e-2 off 0), so a backend can try the point itself. Only terms that
are elementwise affine in the elements of one variable count; anything else (a cone sqrt(x² + y²), a
data table's rows) is left alone. Pure analysis of the IR, no evaluation.

A kink along a curve — `abs(y[0] - 5 * cos(x))`, whose zero set moves with x — is a *moving* kink
(`moving_kinks`): its argument is affine in one variable element (y[0], slope a) plus a rest that does
not depend on that element, so one step y[0] ← y[0] − u/a (u the argument's value at the point) lands
on it exactly. The backend evaluates the argument to find where the kink is.
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


@dataclass(frozen=True, eq=False)
class MovingKink:
    """`arg` (an expression) is 0 on a kink; at its flat position k it equals coef[k] · x.flat[index[k]] +
    a rest that does not depend on that element of variable `name` (positions with coef 0 are none).
    Not `exact`: the rest depends on it too (OKA1's |v − 3 cos u − 3| with u, v both linear in the same two
    variables), so the kink along that element is found by Newton's method, not one step."""

    arg: Node
    name: str
    index: np.ndarray  # (arg size,) flat element of `name` per flat position of arg
    coef: np.ndarray  # (arg size,) the slope of arg's affine term in that element
    exact: bool = True


def _summands(node: Node, factor: np.ndarray) -> list[tuple[Node, np.ndarray]]:
    """node as Σ factor_k ⊙ term_k over its sums, differences, negations and products with constants."""
    if isinstance(node, Op) and node.type.sample is None:
        if node.atom == "neg" and len(node.args) == 1:
            return _summands(node.args[0], -factor)
        if node.atom in ("add", "sub") and len(node.args) == 2:
            second = -factor if node.atom == "sub" else factor
            return _summands(node.args[0], factor) + _summands(node.args[1], second)
        if node.atom in ("mul", "div") and len(node.args) == 2:
            left, right = node.args
            rc, lc = _const(right), _const(left)
            if rc is not None and (node.atom == "mul" or np.all(rc != 0)):
                return _summands(left, factor * rc if node.atom == "mul" else factor / rc)
            if lc is not None and node.atom == "mul":
                return _summands(right, factor * lc)
    return [(node, factor)]


_ALL = None  # every element of a variable


def _elements(node: Node, name: str) -> set[int] | None:
    """The flat elements of variable `name` that node depends on (None: possibly all of them)."""
    found: set[int] = set()
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Op) and n.atom == "index" and isinstance(n.args[0], Var) and n.args[0].name == name:
            shape = n.args[0].type.shape
            size = int(np.prod(shape)) if shape else 1
            try:
                picked = np.arange(size).reshape(shape)[tuple(n.static.get("index", ()))]
            except (IndexError, TypeError, ValueError):
                return _ALL
            found.update(int(i) for i in np.asarray(picked).ravel())
            continue
        if isinstance(n, Var) and n.name == name:
            return _ALL
        stack.extend(n.children())
    return found


def _moving(arg: Node, names: frozenset[str]) -> MovingKink | None:
    """arg's moving kink: one summand affine in an element of a variable that no other summand depends
    on, where some other summand is not affine (a kink along a curve; |x − y| is along a line, left
    alone as before); else, not exact, the first affine summand whose element the rest depends on too."""
    if arg.type.sample is not None or _affine(arg, names) is not None:
        return None
    shape = arg.type.shape
    terms = _summands(arg, np.ones(shape))
    if len(terms) < 2:
        return None
    fallback: MovingKink | None = None
    for k, (term, factor) in enumerate(terms):
        f = _affine(term, names)
        if f is None:
            continue
        rest = [t for j, (t, _) in enumerate(terms) if j != k]
        if all(_affine(t, names) is not None or not any(isinstance(n, Var) for n in t.walk()) for t in rest):
            continue  # an affine rest: a line kink
        try:
            idx = np.broadcast_to(f.idx, shape).ravel()
            coef = (np.broadcast_to(f.a, shape) * np.broadcast_to(factor, shape)).ravel().astype(np.float64)
        except ValueError:
            continue
        used = set(int(i) for i in idx[coef != 0])
        if not used or len(used) != int(np.count_nonzero(coef)):  # one position per element
            continue
        if not np.all(np.isfinite(coef)):
            continue
        clash = False
        for t in rest:
            deps = _elements(t, f.name)
            if deps is _ALL or deps & used:
                clash = True
                break
        if not clash:
            return MovingKink(arg, f.name, idx.astype(np.int64), coef)
        if fallback is None:  # the rest depends on the element too: Newton's method along it finds the kink
            fallback = MovingKink(arg, f.name, idx.astype(np.int64), coef, exact=False)
    return fallback


def moving_kinks(exprs: Iterable[Node], variables: Iterable[str]) -> tuple[MovingKink, ...]:
    """The moving kinks of `abs` and `relu` terms in `exprs` (each argument node once)."""
    names = frozenset(variables)
    out: list[MovingKink] = []
    seen: set[int] = set()
    for expr in exprs:
        for node in expr.walk():
            if (
                isinstance(node, Op)
                and node.atom in _KINK_ATOMS
                and len(node.args) == 1
                and id(node.args[0]) not in seen
            ):
                seen.add(id(node.args[0]))
                mk = _moving(node.args[0], names)
                if mk is not None:
                    out.append(mk)
    return tuple(out)


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
