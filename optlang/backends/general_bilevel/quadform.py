"""A level's follower-only quadratic part as an explicit form c + bᵀy + ½yᵀQy (computed once).

When a summand of F or g depends on the follower's variables y alone and has polynomial degree
≤ 2 (compiler.quadratic_split: e.g. ½ mean((X w − t)²) over 10⁴ data rows), it equals
c + bᵀy + ½yᵀQy exactly, with c its value at 0, b its gradient at 0 and Q its (constant) Hessian:
n_y Hessian-vector products once (batched), in float64. Afterwards its value, gradient and
Hessian-vector products cost one n_y × n_y matrix-vector product instead of a pass over the data.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from optlang.lazy import lazy_module
from optlang.problem import QuadraticSplit, TorchFunction, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

MAX_DENSE = 4096  # follower sizes up to this get a dense Q (128 MiB in float64)
CHUNK_ELEMENTS = 1 << 23  # batched Hessian-vector products: columns per chunk × sample rows ≤ this

# one float64 form per quadratic part and device, shared by the float32 run and the float64 polish
_FORMS: weakref.WeakKeyDictionary[TorchFunction, dict[str, tuple[Any, Any, Any]]] = weakref.WeakKeyDictionary()


def clear_cache() -> None:
    """Forget every computed form (benchmarks: each timed solve pays for its own Q)."""
    _FORMS.clear()


def applies(split: QuadraticSplit | None, n_y: int, batch: int) -> bool:
    """The automatic rule: n_y ≤ MAX_DENSE, no minibatch size given, and the quadratic part reads
    at least n_y² constant entries (a pass through it costs at least a product with Q)."""
    if split is None or batch > 0 or not 0 < n_y <= MAX_DENSE:
        return False
    return split.data_size >= n_y * n_y


def _pack(variables: tuple[Variable, ...], values: Mapping[str, Any]) -> Any:
    return torch.cat([values[v.name].reshape(-1) for v in variables])


def form64(
    quad: TorchFunction, variables: tuple[Variable, ...], device: Any, data_size: int = 0
) -> tuple[Any, Any, Any]:
    """(c, b, Q) of the quadratic part in float64 on `device` (cached)."""
    per = _FORMS.setdefault(quad, {})
    key = str(device)
    if key in per:
        return per[key]
    fn = quad.compile(device, torch.float64)
    n = sum(v.size for v in variables)
    y = torch.zeros(n, dtype=torch.float64, device=device, requires_grad=True)
    with torch.enable_grad():
        vals = {}
        off = 0
        for v in variables:
            vals[v.name] = y[off : off + v.size].reshape(v.shape)
            off += v.size
        val = fn(vals, None)
        (gy,) = torch.autograd.grad(val, y, create_graph=True)
    c, b = val.detach(), gy.detach().clone()
    Q = torch.zeros(n, n, dtype=torch.float64, device=device)
    if gy.requires_grad:
        rows = max(1, data_size // max(n, 1))  # the rows a batched product's intermediates have
        chunk = max(1, min(n, CHUNK_ELEMENTS // rows))
        eye = torch.eye(n, dtype=torch.float64, device=device)
        for a in range(0, n, chunk):
            Q[a : a + chunk] = _hessian_rows(fn, variables, y, gy, eye[a : a + chunk])
        Q = 0.5 * (Q + Q.T)
    per[key] = (c, b, Q)
    return per[key]


def _hessian_rows(fn: Callable[..., Any], variables: tuple[Variable, ...], y: Any, gy: Any, cols: Any) -> Any:
    """∇²q·e for the unit vectors `cols` (one per row). Forward over reverse (torch.func: vmap of a
    jvp of the gradient) batches each product with data into one matrix product; batched reverse
    mode (is_grads_batched) turns a matrix-vector product's backward into a slow batched product
    (30× slower at 2000 × 300), and one product at a time is the last resort."""
    with warnings.catch_warnings():  # torch.func's first import warns that torch.jit.script is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        from torch.func import grad, jvp, vmap

    def q(z: Any) -> Any:
        vals, off = {}, 0
        for v in variables:
            vals[v.name] = z[off : off + v.size].reshape(v.shape)
            off += v.size
        return fn(vals, None)

    gq = grad(q)
    try:
        y0 = y.detach()
        return vmap(lambda e: jvp(gq, (y0,), (e,))[1])(cols)
    except (RuntimeError, NotImplementedError):  # an op without a forward-mode or batching rule
        pass
    try:
        return torch.autograd.grad(gy, y, grad_outputs=cols, retain_graph=True, is_grads_batched=True)[0]
    except RuntimeError:
        return torch.stack([torch.autograd.grad(gy, y, grad_outputs=e, retain_graph=True)[0] for e in cols])


@functools.cache
def _quad_function() -> Any:
    """c + bᵀy + ½yᵀQy as an autograd Function whose backward is b + Qy (differentiable in y), so a
    gradient costs two products with Q and a Hessian-vector product one (plain autograd: two)."""

    class Quad(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, y: Any, c: Any, b: Any, Q: Any) -> Any:
            ctx.save_for_backward(y, b, Q)
            return c + torch.dot(b, y) + 0.5 * torch.dot(y, Q @ y)

        @staticmethod
        def backward(ctx: Any, go: Any) -> Any:
            y, b, Q = ctx.saved_tensors
            return go * (b + Q @ y), None, None, None

    return Quad


def level_function(
    split: QuadraticSplit, variables: tuple[Variable, ...], device: Any, dtype: Any
) -> Callable[..., Any]:
    """fn(values, batch) = rest(values, batch) + c + bᵀy + ½yᵀQy, in `dtype` (Q computed in float64)."""
    c, b, Q = (t.to(dtype) for t in form64(split.quadratic, variables, device, split.data_size))
    rest = split.rest.compile(device, dtype) if split.rest is not None else None
    quad = _quad_function()

    def call(values: Mapping[str, Any], batch: Any = None) -> Any:
        q = quad.apply(_pack(variables, values), c, b, Q)
        return q if rest is None else rest(values, batch) + q

    return call
