"""Krylov solvers on a symmetric operator given only as products v ↦ H v (torch tensors).

`minres` (Paige–Saunders) solves symmetric, possibly indefinite or singular systems; started at 0 on
a consistent system it returns the minimum-norm solution H⁺b, and on an inconsistent one it stops
when the least-squares test ‖H r‖/(‖H‖‖r‖) is met, leaving in r the part of b outside range(H).
`cg` is the classical conjugate gradient (what AID assumes: H positive definite). `lanczos_clipped`
applies the spectrally clipped inverse Q·max(T, δ)⁻¹·Qᵀ b from k Lanczos steps (eigenvalues of H
below δ raised to δ), for indefinite or ill-conditioned lower levels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

MatVec = Callable[["torch.Tensor"], "torch.Tensor"]


@dataclass
class KrylovResult:
    x: torch.Tensor
    residual: torch.Tensor  # b − H x (recomputed at the end: one more product)
    iterations: int
    converged: bool
    reason: str


def _dot(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.dot(a, b))


def minres(matvec: MatVec, b: torch.Tensor, x0: torch.Tensor | None, max_iter: int, rtol: float) -> KrylovResult:
    """MINRES from x0 (None: 0): stops at ‖r‖ ≤ rtol·‖b‖ or ‖H r‖ ≤ rtol·‖H‖‖r‖ (least squares)."""
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r1 = b - matvec(x) if x0 is not None and bool(torch.any(x0 != 0)) else b.clone()
    y = r1.clone()
    beta1 = math.sqrt(max(_dot(r1, r1), 0.0))
    if beta1 == 0.0:
        return KrylovResult(x, r1, 0, True, "zero residual at start")
    oldb = 0.0
    beta = beta1
    dbar = epsln = 0.0
    phibar = beta1
    tnorm2 = 0.0
    cs, sn = -1.0, 0.0
    w = torch.zeros_like(b)
    w2 = torch.zeros_like(b)
    r2 = r1.clone()
    eps = torch.finfo(b.dtype).eps
    reason = "iteration limit"
    converged = False
    itn = 0
    bnorm = math.sqrt(_dot(b, b))
    for itn in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        v = y / beta
        y = matvec(v)
        if itn >= 2:
            y = y - (beta / oldb) * r1
        alfa = _dot(v, y)
        y = y - (alfa / beta) * r2
        r1, r2 = r2, y
        oldb = beta
        beta = math.sqrt(max(_dot(y, y), 0.0))
        tnorm2 += alfa * alfa + oldb * oldb + beta * beta
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        root = math.hypot(gbar, dbar)
        gamma = max(math.hypot(gbar, beta), eps)
        cs, sn = gbar / gamma, beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
        w1, w2 = w2, w
        w = (v - oldeps * w1 - delta * w2) / gamma
        x_prev = x
        x = x + phi * w
        anorm = math.sqrt(tnorm2)
        test1 = phibar / bnorm  # relative to b only: a growing ‖x‖ must not pass for convergence
        test2 = root / anorm if anorm > 0 else 0.0  # ‖H r_{k−1}‖/(‖H‖‖r_{k−1}‖): least-squares convergence
        if test1 <= rtol:
            converged, reason = True, "residual"
            break
        if test2 <= rtol:  # the test is about the previous iterate; this step divided by a null pivot
            converged, reason = True, "least-squares (b has a part outside range(H))"
            x = x_prev
            break
        if beta <= eps * anorm:  # the Krylov space is exhausted
            converged, reason = True, "Krylov space exhausted"
            break
        if not math.isfinite(phibar):
            reason = "breakdown"
            break
    return KrylovResult(x, b - matvec(x), itn, converged, reason)


def cg(matvec: MatVec, b: torch.Tensor, x0: torch.Tensor | None, max_iter: int, rtol: float) -> KrylovResult:
    """Conjugate gradient from x0 (None: 0); stops at ‖r‖ ≤ rtol·‖b‖, or on non-positive curvature."""
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r = b - matvec(x) if x0 is not None and bool(torch.any(x0 != 0)) else b.clone()
    p = r.clone()
    rr = _dot(r, r)
    bnorm = math.sqrt(_dot(b, b))
    if bnorm == 0.0 or math.sqrt(rr) <= rtol * bnorm:
        return KrylovResult(x, r, 0, True, "residual")
    itn = 0
    reason, converged = "iteration limit", False
    for itn in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        hp = matvec(p)
        curv = _dot(p, hp)
        if not curv > 0.0:
            reason = "non-positive curvature (H is not positive definite)"
            break
        a = rr / curv
        x = x + a * p
        r = r - a * hp
        rr_new = _dot(r, r)
        if math.sqrt(rr_new) <= rtol * bnorm:
            converged, reason = True, "residual"
            rr = rr_new
            break
        p = r + (rr_new / rr) * p
        rr = rr_new
    return KrylovResult(x, r, itn, converged, reason)


def lanczos_clipped(matvec: MatVec, b: torch.Tensor, delta: float, steps: int, rtol: float) -> KrylovResult:
    """v = Q·clip_δ(T)⁻¹·Qᵀb from ≤ `steps` Lanczos steps with full reorthogonalization.

    T's eigenvalues below δ are raised to δ (Riemannian-bilevel spectral clipping), so directions of
    tiny or negative curvature get the bounded weight 1/δ instead of an exploding or negative one.
    """
    bnorm = float(torch.linalg.vector_norm(b))
    if bnorm == 0.0:
        return KrylovResult(torch.zeros_like(b), b.clone(), 0, True, "zero right-hand side")
    qs = [b / bnorm]
    alphas: list[float] = []
    betas: list[float] = []
    reason = "step limit"
    for _ in range(min(steps, b.numel())):
        w = matvec(qs[-1])
        a = _dot(qs[-1], w)
        alphas.append(a)
        Q = torch.stack(qs, 1)
        w = w - Q @ (Q.T @ w)
        w = w - Q @ (Q.T @ w)  # twice is enough (Kahan–Parlett)
        bt = float(torch.linalg.vector_norm(w))
        if bt <= rtol * max(1.0, abs(a)) * 1e-3:
            reason = "invariant subspace"
            break
        betas.append(bt)
        qs.append(w / bt)
    k = len(alphas)
    Q = torch.stack(qs[:k], 1)
    T = torch.diag(torch.tensor(alphas, dtype=torch.float64))
    if k > 1:
        off = torch.tensor(betas[: k - 1], dtype=torch.float64)
        T = T + torch.diag(off, 1) + torch.diag(off, -1)
    evals, evecs = torch.linalg.eigh(T)
    clipped = torch.clamp(evals, min=delta)
    e1 = torch.zeros(k, dtype=torch.float64)
    e1[0] = bnorm
    coef = evecs @ ((evecs.T @ e1) / clipped)
    x = Q @ coef.to(b.dtype)
    return KrylovResult(x, b - matvec(x), k, True, reason)


def cg_normal(matvec: MatVec, b: torch.Tensor, x0: torch.Tensor | None, max_iter: int, rtol: float) -> KrylovResult:
    """CG on the normal equations H²x = Hb (CGLS form, two products per step), from x0 (None: 0).

    Started at 0 every iterate lies in range(H), so it converges to the minimum-norm least-squares
    solution H⁺b even when b has a part outside range(H); stops at ‖H r‖ ≤ rtol·‖H b‖ or ‖r‖ ≤ rtol·‖b‖.
    """
    x = torch.zeros_like(b) if x0 is None else x0.clone()
    r = b - matvec(x) if x0 is not None and bool(torch.any(x0 != 0)) else b.clone()
    s = matvec(r)
    p = s.clone()
    gamma = _dot(s, s)
    bnorm = math.sqrt(_dot(b, b))
    snorm0 = math.sqrt(gamma)
    if bnorm == 0.0 or snorm0 == 0.0:
        return KrylovResult(x, r, 0, True, "residual")
    itn = 0
    reason, converged = "iteration limit", False
    for itn in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        q = matvec(p)
        qq = _dot(q, q)
        if not qq > 0.0:
            converged, reason = True, "Krylov space exhausted"
            break
        a = gamma / qq
        x = x + a * p
        r = r - a * q
        if math.sqrt(_dot(r, r)) <= rtol * bnorm:
            converged, reason = True, "residual"
            break
        s = matvec(r)
        gamma_new = _dot(s, s)
        if math.sqrt(gamma_new) <= rtol * snorm0:
            converged, reason = True, "least-squares (b has a part outside range(H))"
            break
        p = s + (gamma_new / gamma) * p
        gamma = gamma_new
    return KrylovResult(x, r, itn, converged, reason)
