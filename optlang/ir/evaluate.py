"""Lowering targets for expressions: torch callables (autograd), numpy float64 evaluation, cvxpy.

`torch_function(node)` returns a TorchFunction whose compiled callable walks a closure tree built
once per (device, dtype): constants become tensors once, sample-axis constants are sliced by the
minibatch `batch` index. `evaluate_np` is the float64 reference used by Result and checks.
"""

from __future__ import annotations

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

        def make(n: Node) -> Callable[[Mapping[str, Any], Any], Any]:
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

        root = make(node)

        def call(values: Mapping[str, Any], batch: Any = None) -> Any:
            return root(values, batch)

        return call

    return TorchFunction(
        build,
        n_samples=n_samples,
        per_sample=per_sample,
        cvxpy=(lambda var_map, nd=node: cvxpy_expr(nd, var_map)) if cvxpy_ok(node) else None,
        source=lambda nd=node: to_text(nd),  # made when printed: a sweep compiles every point
    )


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
