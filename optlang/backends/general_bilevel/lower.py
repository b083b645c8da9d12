"""The lower-level solve: y ← argmin_y g(x, y) from a warm start, to a gradient tolerance.

Deterministic levels use L-BFGS with a strong-Wolfe line search (torch); a minibatch lower level
uses heavy-ball gradient steps of size c/L_g with L_g from power iteration on Hessian-vector products.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from optlang.backends.general_bilevel import krylov
from optlang.backends.general_bilevel.levels import Levels
from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


def lbfgs(
    levels: Levels, x: torch.Tensor, y: torch.Tensor, tol: float, max_iter: int, newton: int = 3
) -> tuple[torch.Tensor, float, int]:
    """Up to `newton` Newton steps y ← y − H⁺∇ᵧg by MINRES (the minimum-norm step: no drift along a
    solution set), then L-BFGS on g(x, ·) until ‖∇ᵧg‖ ≤ tol (absolute) or it stalls, then Newton again.

    The Newton steps reach gradients that a line search on function values cannot resolve (near
    the minimum g changes by ‖∇ᵧg‖²/L, below float rounding). Returns (y, ‖∇ᵧg‖, iterations).
    """
    if y.numel() == 0:
        return y, 0.0, 0
    xd = x.detach()
    g0, gr = levels.grad_g_y(xd, y.detach())
    gnorm = float(torch.linalg.vector_norm(gr))
    yd = y.detach()
    if newton > 0:  # warm starts are usually in Newton's basin: try it first (exact on quadratics)
        yd, gnorm = _newton(levels, xd, yd, g0, gnorm, tol, newton)
    if gnorm <= tol or not math.isfinite(gnorm):
        return yd, gnorm, 0
    yv = yd.clone().requires_grad_(True)
    chunk = min(50, max_iter)
    opt = torch.optim.LBFGS(  # built only when needed: its first construction imports torch._dynamo (seconds)
        [yv],
        lr=1.0,
        max_iter=chunk,
        history_size=20,
        line_search_fn="strong_wolfe",
        tolerance_grad=tol,
        tolerance_change=0.0,
    )
    evals = [0]

    def closure() -> torch.Tensor:
        opt.zero_grad()
        val = levels.g_fn(levels.values(xd, yv), None)
        val.backward()
        evals[0] += 1
        return val

    for _ in range(max(1, math.ceil(max_iter / chunk))):
        opt.step(closure)
        _, gr = levels.grad_g_y(xd, yv.detach())
        new = float(torch.linalg.vector_norm(gr))
        stalled = not new < 0.5 * gnorm
        gnorm = new
        if stalled or gnorm <= tol or not math.isfinite(gnorm):
            break
        opt.state.clear()  # a stalled strong-Wolfe search leaves a useless memory: restart it
    levels.grads += evals[0]
    yn = yv.detach()
    if newton > 0 and gnorm > tol:
        yn, gnorm = _newton(levels, xd, yn, levels.g(xd, yn), gnorm, tol, newton)
    return yn, gnorm, evals[0]


def _newton(
    levels: Levels, x: torch.Tensor, y: torch.Tensor, gval: float, gnorm: float, tol: float, steps: int
) -> tuple[torch.Tensor, float]:
    """Up to `steps` minimum-norm Newton steps y − H⁺∇ᵧg (MINRES), each kept only when it lowers
    both g (up to rounding) and ‖∇ᵧg‖ — so a nonconvex g never climbs towards a saddle."""
    for _ in range(steps):
        if gnorm <= tol or not math.isfinite(gnorm):
            break
        eps = torch.finfo(y.dtype).eps
        ops = levels.hessian_ops(x, y)
        # inexact Newton: the system's residual is (to first order) the next gradient, so solve only
        # to the accuracy that reaches `tol` (a warm start near S(x) needs a few products, not hundreds)
        rtol = min(0.5, max(1e-12, 100 * eps, 0.5 * tol / gnorm))
        step = krylov.minres(ops.yy, ops.gy.detach(), None, min(1000, 2 * y.numel() + 10), rtol).x
        cand = y - step
        gc, gr = levels.grad_g_y(x, cand)
        new = float(torch.linalg.vector_norm(gr))
        if not (new < gnorm and gc <= gval + 10 * eps * max(1.0, abs(gval))):
            break
        y, gnorm, gval = cand, new, gc
    return y, gnorm


def power_lipschitz(levels: Levels, x: torch.Tensor, y: torch.Tensor, iters: int = 20) -> float:
    """Largest |eigenvalue| of ∇²ᵧᵧg at (x, y) by power iteration (on one minibatch when stochastic)."""
    if y.numel() == 0:
        return 1.0
    ops = levels.hessian_ops(x, y, levels.draw(upper=False))
    v = torch.randn(y.shape, generator=levels.gen, device=y.device, dtype=y.dtype)
    v = v / torch.linalg.vector_norm(v)
    est = 0.0
    for _ in range(iters):
        hv = ops.yy(v)
        nrm = float(torch.linalg.vector_norm(hv))
        if not math.isfinite(nrm) or nrm == 0.0:
            break
        est = nrm
        v = hv / nrm
    return est if est > 0 else 1.0


def sgd(
    levels: Levels, x: torch.Tensor, y: torch.Tensor, steps: int, lr: float, momentum: float = 0.5
) -> tuple[torch.Tensor, float]:
    """`steps` minibatch heavy-ball steps on g(x, ·); returns (y, last minibatch ‖∇ᵧg‖)."""
    yv = y.detach().clone()
    buf = torch.zeros_like(yv)
    gnorm = math.inf
    for _ in range(steps):
        _, gr = levels.grad_g_y(x, yv, levels.draw(upper=False))
        gnorm = float(torch.linalg.vector_norm(gr))
        buf = momentum * buf + gr
        yv = yv - lr * buf
    return yv, gnorm
