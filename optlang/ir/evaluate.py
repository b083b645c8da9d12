"""Lowering targets for expressions: torch callables (autograd), numpy float64 evaluation, cvxpy.

`torch_function(node)` returns a TorchFunction whose compiled callable walks a closure tree built
once per (device, dtype): constants become tensors once, sample-axis constants are sliced by the
minibatch `batch` index. `evaluate_np` is the float64 reference used by Result and checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.ir.atoms import ATOMS
from optlang.ir.nodes import Const, Node, Op, Var, to_text
from optlang.problem import TorchFunction


def sample_size(node: Node) -> int | None:
    """Length of the sample axis the expression ranges over (None if none)."""
    for n in node.walk():
        if n.type.sample and isinstance(n, Const):
            return int(n.type.shape[0])
    return None


def torch_function(node: Node, per_sample: bool = False) -> TorchFunction:
    """Compile an IR expression into a TorchFunction (device/dtype chosen at compile())."""
    n_samples = sample_size(node)

    def build(device: Any, dtype: Any) -> Callable[..., Any]:
        roots = _closures([node], device, dtype)
        return lambda values, batch=None: roots(values, batch)[0]

    return TorchFunction(
        build,
        n_samples=n_samples,
        per_sample=per_sample,
        cvxpy=(lambda var_map, nd=node: cvxpy_expr(nd, var_map)) if cvxpy_ok(node) else None,
        source=lambda nd=node: to_text(nd),  # made when printed: a sweep compiles every point
    )


def constraint_sides(node: Node) -> tuple[Node, Node] | None:
    """(a, b) of a constraint lowered to `a - b` (its `sub` Op), None for another shape of node."""
    if isinstance(node, Op) and node.atom == "sub" and len(node.args) == 2:
        return node.args[0], node.args[1]
    return None


def constraint_size(node: Node) -> TorchFunction | None:
    """|a| + |b| (elementwise) of a constraint lowered to `a - b` (`constraint_sides`), evaluated in one pass:
    the size of the constraint's two sides at a point, to which a feasibility tolerance is relative (a stress
    limit of 13 600 psi is not met to 1e-6 psi by float32 arithmetic); None for another shape of node."""
    sides = constraint_sides(node)
    if sides is None:
        return None
    a, b = sides

    def build(device: Any, dtype: Any) -> Callable[..., Any]:
        import torch

        roots = _closures([a, b], device, dtype)

        def size(values: Any, batch: Any = None) -> Any:
            va, vb = roots(values, batch)
            return torch.abs(va) + torch.abs(vb)

        return size

    return TorchFunction(build, n_samples=sample_size(node), source=lambda: f"|{to_text(a)}| + |{to_text(b)}|")


def torch_functions(nodes: list[Node]) -> TorchFunction:
    """The scalar expressions `nodes` as one TorchFunction whose value is the list of their 0-d values,
    evaluated in one pass: what they share (the `let`s of a model's objectives) is computed once per
    call, and the autograd graph holds it once (WFG9's three objectives: 2 470 tree nodes, 181
    distinct). A list, not a stacked vector: the gradient of one of them then never runs through the
    others (a zero upstream gradient times an infinite local slope is NaN)."""
    n_samples = next((k for k in (sample_size(n) for n in nodes) if k is not None), None)

    def build(device: Any, dtype: Any) -> Callable[..., Any]:
        roots = _closures(nodes, device, dtype)
        return lambda values, batch=None: [r.reshape(()) for r in roots(values, batch)]

    return TorchFunction(build, n_samples=n_samples, source=lambda: "[" + ", ".join(to_text(n) for n in nodes) + "]")


Closure = Callable[[Mapping[str, Any], Any], Any]


def _closures(nodes: list[Node], device: Any, dtype: Any) -> Callable[[Mapping[str, Any], Any], list[Any]]:
    """`call(values, batch)` -> the values of `nodes`: a closure tree per node, walked per call. A node
    that several parents use (`_shared_ops`) is evaluated once per call: its closure keeps the call's
    value (so the autograd graph holds it once too)."""
    import torch

    cache: dict[int, Any] = {}

    def tensor_of(c: Const) -> Any:
        key = id(c)
        if key not in cache:
            v = c.value
            if sp.issparse(v):
                coo = v.tocoo()
                idx = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
                t = torch.sparse_coo_tensor(idx, torch.as_tensor(coo.data, dtype=dtype), coo.shape)
                cache[key] = t.coalesce().to_sparse_csr().to(device)
            else:
                cache[key] = torch.as_tensor(np.asarray(v, dtype=np.float64), dtype=dtype, device=device)
        return cache[key]

    memo = threading.local()  # `.seen`: one call's values of the shared nodes (per thread: a compiled
    # function is shared by every solve of its model, and an API user may run two in threads)
    made: dict[int, Closure] = {}  # a shared node's closure, built once

    def make(n: Node) -> Closure:
        if id(n) not in shared:
            return make_node(n)
        if id(n) in made:
            return made[id(n)]
        fn = make_node(n)

        def once(env: Mapping[str, Any], batch: Any, f: Closure = fn, key: int = id(n)) -> Any:
            seen = getattr(memo, "seen", None)
            if seen is None:  # outside `call` (cannot happen): no sharing
                return f(env, batch)
            if key not in seen:
                seen[key] = f(env, batch)
            return seen[key]

        made[id(n)] = once
        return once

    def make_node(n: Node) -> Closure:
        if isinstance(n, Const):
            if n.type.sample:
                return lambda env, batch, c=n: tensor_of(c) if batch is None else tensor_of(c)[batch]
            return lambda env, batch, c=n: tensor_of(c)
        if isinstance(n, Var):
            return lambda env, batch, name=n.name: env[name]
        assert isinstance(n, Op)
        fn = ATOMS[n.atom].torch
        kids = [make(a) for a in n.args]
        kw = n.static
        if len(kids) == 2 and not kw:
            return lambda env, batch, f=fn, a=kids[0], b=kids[1]: f(a(env, batch), b(env, batch))
        if len(kids) == 1:
            return lambda env, batch, f=fn, a=kids[0]: f(a(env, batch), **kw)
        return lambda env, batch, f=fn: f(*[k(env, batch) for k in kids], **kw)

    shared = _shared_ops(nodes)
    roots = [make(n) for n in nodes]
    if not shared:
        return lambda values, batch: [r(values, batch) for r in roots]

    def call(values: Mapping[str, Any], batch: Any) -> list[Any]:
        outer = getattr(memo, "seen", None)  # a call from inside a call (none today) keeps the outer's values
        memo.seen = {}
        try:
            return [r(values, batch) for r in roots]
        finally:
            memo.seen = outer

    return call


def _shared_ops(nodes: list[Node]) -> set[int]:
    """The ids of the operations that more than one parent (or root) uses (a `let` used twice, `t1` in
    two terms): evaluated once per call instead of once per use (WFG9's objective: 902 tree nodes, 165
    distinct)."""
    parents: dict[int, int] = {}
    for n in nodes:  # a root counts as one use (two when it is listed twice)
        if isinstance(n, Op):
            parents[id(n)] = parents.get(id(n), 0) + 1
    stack: list[Node] = list({id(n): n for n in nodes}.values())
    while stack:
        n = stack.pop()
        for c in n.children():
            if isinstance(c, Op):
                parents[id(c)] = parents.get(id(c), 0) + 1
                if parents[id(c)] == 1:  # first visit: walk its subtree once
                    stack.append(c)
    return {k for k, v in parents.items() if v > 1}


def evaluate_np(node: Node, values: Mapping[str, np.ndarray]) -> Any:
    """Evaluate an expression in float64 numpy (the reference for Result and certificates)."""
    memo: dict[int, Any] = {}

    def ev(n: Node) -> Any:
        key = id(n)
        if key in memo:
            return memo[key]
        if isinstance(n, Const):
            out = n.value
        elif isinstance(n, Var):
            out = np.asarray(values[n.name], dtype=np.float64).reshape(n.type.shape)
        else:
            assert isinstance(n, Op)
            with np.errstate(all="ignore"):
                out = ATOMS[n.atom].np(*[ev(a) for a in n.args], **n.static)
        memo[key] = out
        return out

    out = ev(node)
    if sp.issparse(out):
        out = out.toarray()
    out = np.asarray(out, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def cvxpy_ok(node: Node) -> bool:
    """True when every atom in the expression has a cvxpy implementation."""
    return all(not isinstance(n, Op) or ATOMS[n.atom].cvx is not None for n in node.walk())


def cvxpy_expr(node: Node, var_map: Mapping[str, Any]) -> Any:
    """Build the cvxpy expression of `node` (var_map: variable name -> cvxpy Variable)."""

    def ev(n: Node) -> Any:
        if isinstance(n, Const):
            return n.value
        if isinstance(n, Var):
            return var_map[n.name]
        assert isinstance(n, Op)
        fn = ATOMS[n.atom].cvx
        assert fn is not None
        return fn(*[ev(a) for a in n.args], **n.static)

    return ev(node)
