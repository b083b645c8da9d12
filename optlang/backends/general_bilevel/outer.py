"""The upper-level loop shared by hgms, aid and itd: projected steps on x along a hypergradient.

A hypergradient oracle maps x to (Φ(x), ∇Φ(x), y) and keeps its own warm state (y, Krylov vector).
Deterministic levels: spectral projected gradient (Barzilai–Borwein steps with a non-monotone
Armijo test, Birgin–Martínez–Raydan 2000). Minibatch levels: projected steps α₀/(1 + k/τ), α₀ from a
Barzilai–Borwein ratio of the first two hypergradients. Either stops at a projected hypergradient
norm ‖x − Π(x − ∇Φ)‖ ≤ tol·max(1, |Φ|).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optlang.backends.base import RunContext, Status
from optlang.backends.general_bilevel.levels import Block
from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class Eval:
    """One hypergradient evaluation at x."""

    phi: float  # F(x, y) at the oracle's y
    grad: torch.Tensor  # the hypergradient estimate
    y: torch.Tensor
    info: dict[str, Any] = field(default_factory=dict)


Oracle = Callable[["torch.Tensor"], "Eval"]


@dataclass
class OuterResult:
    x: torch.Tensor
    last: Eval
    status: Status
    iterations: int
    pg_norm: float
    trace: list[tuple[int, float, float]]  # (iteration, Φ, projected hypergradient norm)


def projected_norm(xb: Block, x: torch.Tensor, h: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(x - xb.project(x - h)))


def finite_eval(e: Eval) -> bool:
    return math.isfinite(e.phi) and bool(torch.isfinite(e.grad).all()) and bool(torch.isfinite(e.y).all())


STALL_WINDOW = 10  # iterations over which a stage with `stall` > 0 must lower Φ
STALL_PG = 1e-4  # a stalled stage counts as converged below this projected hypergradient (relative)


def _checkpoint(
    k: int,
    xb: Block,
    x: torch.Tensor,
    e: Eval,
    trace: list[tuple[int, float, float]],
    report: Callable[[float, float], None] | None,
    tol: float,
    ctx: RunContext,
    stall: float = 0.0,
) -> tuple[float, Status | None]:
    """The start of an upper iteration shared by spg and plbfgs: record and report (Φ, ‖projected ∇Φ‖),
    then the status that ends the loop here (converged, or the limit / interrupt), else None.
    `stall` > 0: also end when Φ fell by ≤ stall·max(1, |Φ|) over the last STALL_WINDOW iterations
    (converged if ‖projected ∇Φ‖ ≤ STALL_PG·max(1, |Φ|), else iteration_limit)."""
    pgn = projected_norm(xb, x, e.grad)
    trace.append((k - 1, e.phi, pgn))
    if report is not None:
        report(e.phi, pgn)
    scale = max(1.0, abs(e.phi))
    if pgn <= tol * scale or x.numel() == 0:
        return pgn, Status.CONVERGED
    if stall > 0 and len(trace) > STALL_WINDOW and trace[-1 - STALL_WINDOW][1] - e.phi <= stall * scale:
        return pgn, Status.CONVERGED if pgn <= STALL_PG * scale else Status.ITERATION_LIMIT
    if ctx.should_stop():
        return pgn, ctx.stop_status()
    return pgn, None


def spg(
    oracle: Oracle,
    xb: Block,
    x0: torch.Tensor,
    ctx: RunContext,
    max_iter: int,
    tol: float,
    lr: float,
    memory: int = 10,
    report: Callable[[float, float], None] | None = None,
    stall: float = 0.0,
) -> OuterResult:
    """Spectral projected gradient on Φ; `lr` caps the first step (≤ 0: 1/‖∇Φ(x₀)‖∞)."""
    x = xb.project(x0)
    e = oracle(x)
    trace: list[tuple[int, float, float]] = []
    if not finite_eval(e):
        return OuterResult(x, e, Status.DIVERGED, 0, math.nan, trace)
    hmax = float(e.grad.abs().max()) if e.grad.numel() else 0.0
    alpha = 1.0 / hmax if hmax > 0 else 1.0
    if lr > 0:
        alpha = min(alpha, lr)
    phis: deque[float] = deque([e.phi], maxlen=max(1, memory))
    status = Status.ITERATION_LIMIT
    k = 0
    pgn = projected_norm(xb, x, e.grad)
    for k in range(1, max_iter + 1):
        pgn, done = _checkpoint(k, xb, x, e, trace, report, tol, ctx, stall)
        if done is not None:
            status = done
            break
        lam = alpha
        ref = max(phis)
        accepted = False
        for _ in range(40):
            xn = xb.project(x - lam * e.grad)
            d = xn - x
            if float(torch.linalg.vector_norm(d)) == 0.0:
                break
            en = oracle(xn)
            if finite_eval(en) and en.phi <= ref + 1e-4 * float(torch.dot(e.grad, d)):
                accepted = True
                break
            lam *= 0.25 if not finite_eval(en) else 0.5
        if not accepted:
            status = Status.CONVERGED if pgn <= 1e2 * tol * max(1.0, abs(e.phi)) else Status.ITERATION_LIMIT
            if not finite_eval(e):
                status = Status.DIVERGED
            break
        s = xn - x
        yv = en.grad - e.grad
        sy = float(torch.dot(s, yv))
        ss = float(torch.dot(s, s))
        alpha = min(max(ss / sy, 1e-10), 1e10) if sy > 0 else min(10.0 * lam, 1e10)
        x, e = xn, en
        phis.append(e.phi)
    else:
        pgn = projected_norm(xb, x, e.grad)
    return OuterResult(x, e, status, k, pgn, trace)


def stochastic(
    oracle: Oracle,
    xb: Block,
    x0: torch.Tensor,
    ctx: RunContext,
    max_iter: int,
    lr: float,
    decay: float,
    report: Callable[[float, float], None] | None = None,
) -> OuterResult:
    """Projected minibatch hypergradient steps α_k = α₀/(1 + k/τ) (τ = `decay`), with iterate averaging
    over the last half of the run (the averaged point is returned)."""
    x = xb.project(x0)
    e = oracle(x)
    trace: list[tuple[int, float, float]] = []
    if not finite_eval(e):
        return OuterResult(x, e, Status.DIVERGED, 0, math.nan, trace)
    if lr > 0:
        alpha0 = lr
    else:  # Barzilai–Borwein ratio from a trial step of 1/‖h‖∞, capped at that trial step × 10
        hmax = float(e.grad.abs().max()) if e.grad.numel() else 0.0
        trial = 1.0 / hmax if hmax > 0 else 1.0
        xt = xb.project(x - trial * e.grad)
        et = oracle(xt)
        s, yv = xt - x, et.grad - e.grad
        sy = float(torch.dot(s, yv))
        alpha0 = min(float(torch.dot(s, s)) / sy, 10 * trial) if sy > 0 else trial
    avg = torch.zeros_like(x)
    n_avg = 0
    status = Status.ITERATION_LIMIT
    k = 0
    for k in range(1, max_iter + 1):
        pgn = projected_norm(xb, x, e.grad)
        trace.append((k - 1, e.phi, pgn))
        if report is not None:
            report(e.phi, pgn)
        if ctx.should_stop():
            status = ctx.stop_status()
            break
        x = xb.project(x - alpha0 / (1.0 + k / decay) * e.grad)
        e = oracle(x)
        if not finite_eval(e):
            status = Status.DIVERGED
            break
        if k > max_iter // 2:
            avg += x
            n_avg += 1
    if n_avg and status != Status.DIVERGED:
        x = xb.project(avg / n_avg)
        e = oracle(x)  # the follower's answer at the averaged point, not at the last one
    return OuterResult(x, e, status, k, projected_norm(xb, x, e.grad), trace)


def _bounds(xb: Block, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Per-entry bounds when every upper domain is free or a box (else None: no active-set method)."""
    lo = torch.full_like(x, -math.inf)
    hi = torch.full_like(x, math.inf)
    for v, a, b in xb.slices:
        if v.domain.kind == "box":
            lo[a:b], hi[a:b] = v.domain.lo, v.domain.hi
        elif v.domain.kind != "free":
            return None
    return lo, hi


def plbfgs(
    oracle: Oracle,
    xb: Block,
    x0: torch.Tensor,
    ctx: RunContext,
    max_iter: int,
    tol: float,
    lr: float,
    memory: int = 10,
    report: Callable[[float, float], None] | None = None,
    stall: float = 0.0,
) -> OuterResult:
    """Projected L-BFGS with an active set (free or box domains): the two-loop direction on the
    entries not held at a bound by the gradient, a projected Armijo backtracking from step 1."""
    x = xb.project(x0)
    bounds = _bounds(xb, x)
    if bounds is None:
        return spg(oracle, xb, x0, ctx, max_iter, tol, lr, memory, report, stall)
    lo, hi = bounds
    e = oracle(x)
    trace: list[tuple[int, float, float]] = []
    if not finite_eval(e):
        return OuterResult(x, e, Status.DIVERGED, 0, math.nan, trace)
    pairs: deque[tuple[torch.Tensor, torch.Tensor, float]] = deque(maxlen=max(1, memory))
    status = Status.ITERATION_LIMIT
    k = 0
    pgn = projected_norm(xb, x, e.grad)
    for k in range(1, max_iter + 1):
        pgn, done = _checkpoint(k, xb, x, e, trace, report, tol, ctx, stall)
        if done is not None:
            status = done
            break
        h = e.grad
        eps_b = 1e-10 * (1.0 + x.abs())
        active = ((x <= lo + eps_b) & (h > 0)) | ((x >= hi - eps_b) & (h < 0))
        free = (~active).to(x.dtype)
        q = h * free
        alphas = []
        for s, yv, rho in reversed(pairs):
            a = rho * float(torch.dot(s * free, q))
            alphas.append(a)
            q = q - a * yv * free
        if pairs:
            s, yv, _ = pairs[-1]
            q = q * (float(torch.dot(s, yv)) / float(torch.dot(yv, yv)))
        else:
            hmax = float(q.abs().max()) if q.numel() else 0.0
            q = q * (min(lr, 1.0 / hmax) if lr > 0 and hmax > 0 else (1.0 / hmax if hmax > 0 else 1.0))
        for (s, yv, rho), a in zip(pairs, reversed(alphas), strict=True):
            b = rho * float(torch.dot(yv * free, q))
            q = q + (a - b) * s * free
        d = -q * free
        if not float(torch.dot(d, h)) < 0:  # not a descent direction: restart from the gradient
            pairs.clear()
            hmax = float(h.abs().max())
            d = -h / hmax if hmax > 0 else -h
        t = 1.0
        accepted = False
        for _ in range(40):
            xn = xb.project(x + t * d)
            step = xn - x
            if float(torch.linalg.vector_norm(step)) == 0.0:
                break
            en = oracle(xn)
            if finite_eval(en) and en.phi <= e.phi + 1e-4 * float(torch.dot(h, step)):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            status = Status.CONVERGED if pgn <= 1e2 * tol * max(1.0, abs(e.phi)) else Status.ITERATION_LIMIT
            break
        s, yv = xn - x, en.grad - e.grad
        sy = float(torch.dot(s, yv))
        if sy > 1e-10 * float(torch.linalg.vector_norm(s)) * float(torch.linalg.vector_norm(yv)):
            pairs.append((s, yv, 1.0 / sy))
        x, e = xn, en
    else:
        pgn = projected_norm(xb, x, e.grad)
    return OuterResult(x, e, status, k, pgn, trace)
