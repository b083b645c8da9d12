"""What the bilevel backends share: the flat variable vector, the minibatch gradient oracle with its counters,
curvature estimates, the end-of-phase stall test, the trace, the float64 certificate checks and the refusals.

Used by `sdbpg` (the research method) and `penalty` (its baseline); formulas in docs/backends/sdbpg.md.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.bilevel.faces import Faces
from optlang.backends.common import init_tensors, project
from optlang.lazy import lazy_module, no_grad
from optlang.problem import BilevelProblem, TorchFunction, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

FLOOR_CAP = 1e-2  # the dtype rounding floor never loosens the KKT test beyond 1% of ‖∇f‖

BLOWUP = 1e12  # |f|, |g| or ‖x‖ beyond this (relative to the start) counts as divergence

STALL_WINDOW = 10  # steps averaged by the stall test


class FlatVars:
    """The decision variables packed into one flat tensor, with per-variable views and projection."""

    def __init__(self, variables: tuple[Variable, ...]) -> None:
        self.variables = variables
        self.slices: list[tuple[Variable, int, int]] = []
        off = 0
        for v in variables:
            self.slices.append((v, off, off + v.size))
            off += v.size
        self.size = off
        self.needs_projection = any(v.domain.kind != "free" for v in variables)

    def unpack(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of the flat tensor shaped as each variable (gradients flow back to x)."""
        return {v.name: x[a:b].reshape(v.shape) for v, a, b in self.slices}

    def initial(self, ctx: RunContext) -> torch.Tensor:
        """The seeded feasible starting point (common.init_tensors), flattened."""
        ts = init_tensors(self.variables, ctx, requires_grad=False)
        if not ts:
            return torch.zeros(0, dtype=ctx.dtype, device=ctx.device)
        return torch.cat([ts[v.name].reshape(-1) for v in self.variables]).clone()

    @no_grad
    def project_(self, x: torch.Tensor) -> torch.Tensor:
        """Project x onto the product of the domains, in place; returns x."""
        if self.needs_projection:
            for v, a, b in self.slices:
                if v.domain.kind != "free":
                    x[a:b] = project(v.domain, x[a:b].reshape(v.shape)).reshape(-1)
        return x

    def to_numpy(self, x: torch.Tensor) -> dict[str, np.ndarray]:
        xn = x.detach().to("cpu", torch.float64).numpy()
        return {v.name: xn[a:b].reshape(v.shape).copy() for v, a, b in self.slices}


def kkt_multiplier(
    x: torch.Tensor,
    gf: torch.Tensor,
    gg: torch.Tensor,
    faces: Faces | None,
    residual: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """λ̂ ≥ 0 and the projected KKT residual ‖x − P(x − ∇f − λ̂∇g)‖ (`residual(x, v)`), the smaller of two
    candidates: the least-squares λ over all coordinates, and over the tangent parts of the face x sits
    on (`faces.py`; the face of the step the multiplier gives, until it stops changing).

    On a face, the held parts of ∇g say nothing about λ: with `x in [-1, 0.5]` and g = (x₀ + x₁ − 2)²,
    the all-coordinate λ̂ balances ∇f against the held x₀ too and leaves a residual of O(1) at the answer
    (on a simplex, the mean that Σx = 1 removes). Any λ ≥ 0 with a small residual certifies, so the
    least is taken. One point (n,) or rows (B, n)."""

    def least_squares(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n2 = (b * b).sum(-1)
        ratio = -(a * b).sum(-1) / torch.where(n2 > 0, n2, torch.ones_like(n2))
        return torch.where(n2 > 0, torch.clamp(ratio, min=0.0), torch.zeros_like(n2))

    lam = least_squares(gf, gg)
    res = residual(x, gf + lam[..., None] * gg)
    if faces is None or not faces.any:
        return lam, res
    T = faces.tangent(x, gg)
    lam_f = least_squares(T.apply(gf), T.apply(gg))
    for _ in range(3):
        new = faces.tangent(x, gf + lam_f[..., None] * gg)
        if new.same_face(T):
            break
        T = new
        lam_f = least_squares(T.apply(gf), T.apply(gg))
    res_f = residual(x, gf + lam_f[..., None] * gg)
    better = res_f < res
    return torch.where(better, lam_f, lam), torch.where(better, res_f, res)


def auto_batch(n: int | None, batch: int) -> int | None:
    """Minibatch size for a sample axis of length n: None means full batch (deterministic)."""
    if n is None:
        return None
    if batch < 0:
        return None
    if batch == 0:  # auto: full batch when small, else about 1% of the samples (at least 256)
        if n <= 4096:
            return None
        batch = max(256, n // 100)
    return None if batch >= n else int(batch)


class Oracle:
    """Gradients of one TorchFunction on independent seeded minibatches, counting every call.

    `calls` counts gradient evaluations in minibatch units (a call on a batch of the configured size
    is 1, a half batch 0.5, a full-batch or deterministic call 1); `samples` the per-sample
    gradients they cost (the full sample-axis length for a full-batch call, 1 without a sample axis).
    """

    def __init__(self, fn: TorchFunction, flat: FlatVars, ctx: RunContext, batch: int, gen: torch.Generator) -> None:
        self.fn = fn.compile(ctx.device, ctx.dtype)
        self.n = fn.n_samples
        self.batch = auto_batch(self.n, batch)
        self.flat = flat
        self.device = ctx.device
        self.gen = gen
        self.calls = 0.0
        self.samples = 0

    @property
    def stochastic(self) -> bool:
        return self.batch is not None

    def draw(self, size: int | None = None) -> torch.Tensor | None:
        """A fresh minibatch of sample indices (with replacement), or None for the full batch."""
        if self.batch is None or self.n is None:  # a batch size is set only when there is a sample axis
            return None
        return torch.randint(0, self.n, (size or self.batch,), generator=self.gen, device=self.device)

    def grad(self, x: torch.Tensor, batch: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(value, gradient) at x on `batch`; counted."""
        self.calls += 1.0 if batch is None or self.batch is None else len(batch) / self.batch
        self.samples += len(batch) if batch is not None else (self.n or 1)
        xr = x.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.fn(self.flat.unpack(xr), batch)
            if val.requires_grad:
                (gr,) = torch.autograd.grad(val, xr, allow_unused=True)
            else:
                gr = None
        if gr is None:
            gr = torch.zeros_like(xr)
        return val.detach(), gr.detach()

    def grad_halves(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(value, gradient, g₁, g₂) from two independent half batches: the mean is the usual minibatch
        estimate at the cost of one batch, and ⟨g₁, g₂⟩-type products are unbiased (no variance term)."""
        assert self.batch is not None, "grad_halves needs a stochastic oracle"
        half = self.batch // 2
        v1, g1 = self.grad(x, self.draw(half))
        v2, g2 = self.grad(x, self.draw(half))
        return 0.5 * (v1 + v2), 0.5 * (g1 + g2), g1, g2

    @no_grad
    def value(self, x: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return self.fn(self.flat.unpack(x), batch)

    def hvp_norm(self, x: torch.Tensor, iters: int, gen: torch.Generator) -> float:
        """Largest |eigenvalue| of the Hessian at x by power iteration on Hessian-vector products.

        Uses one fixed minibatch (or the full batch); each product is counted as one gradient call.
        """
        batch = self.draw()
        v = torch.randn(x.shape, generator=gen, device=x.device, dtype=x.dtype)
        v = v / torch.clamp(torch.linalg.vector_norm(v), min=1e-30)
        est = 0.0
        xr = x.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.fn(self.flat.unpack(xr), batch)
            if not val.requires_grad:
                return 0.0
            (gr,) = torch.autograd.grad(val, xr, create_graph=True, allow_unused=True)
            if gr is None or not gr.requires_grad:
                return 0.0
            for _ in range(iters):
                self.calls += 1
                self.samples += len(batch) if batch is not None else (self.n or 1)
                (hv,) = torch.autograd.grad(gr, xr, grad_outputs=v, retain_graph=True, allow_unused=True)
                if hv is None:
                    return 0.0
                nrm = float(torch.linalg.vector_norm(hv))
                if not math.isfinite(nrm) or nrm == 0.0:
                    return est if math.isfinite(nrm) else float("nan")
                est = nrm
                v = hv.detach() / nrm
        return est


def make_generator(ctx: RunContext, offset: int) -> torch.Generator:
    """A torch generator on ctx.device seeded from ctx.seed (offset keeps streams independent)."""
    g = torch.Generator(device=ctx.device)
    g.manual_seed(ctx.seed * 1_000_003 + offset)
    return g


def lipschitz(oracle: Oracle, x: torch.Tensor, iters: int, gen: torch.Generator) -> float:
    """Curvature scale of one level at x (power iteration; a secant estimate when Hessians fail)."""
    try:
        est = oracle.hvp_norm(x, iters, gen)
    except RuntimeError:  # a function torch cannot differentiate twice: use a gradient secant
        batch = oracle.draw()
        delta = torch.randn(x.shape, generator=gen, device=x.device, dtype=x.dtype)
        delta = 1e-3 * delta * max(1.0, float(torch.linalg.vector_norm(x))) / float(torch.linalg.vector_norm(delta))
        _, g0 = oracle.grad(x, batch)
        _, g1 = oracle.grad(x + delta, batch)
        est = float(torch.linalg.vector_norm(g1 - g0) / torch.linalg.vector_norm(delta))
    return est if math.isfinite(est) else float("nan")


CURVATURE_MAX_DIM = 2000  # the curvature multipliers build ∇²g: at most this many scalars
CURVATURE_RCOND = 1e-6  # directions of ∇²g flatter than this (relative) are not constraints of the lower level
LOWER_AT_MIN = 1e-2  # ∇g "vanishes": the projected ‖∇g‖ is within this fraction of the lower level's tolerance


def curvature_residual(
    lower: Any,
    x: torch.Tensor,
    gf: torch.Tensor,
    faces: Faces | None,
    residual: Any,
) -> torch.Tensor | None:
    """The projected KKT residual of ∇f + ∇²g·w with the least-squares w, at a point where ∇g vanishes.

    There ∇g carries no multiplier (an answer with g = g* exactly leaves λ̂ = 0 and the residual ‖∇f‖),
    but the lower level's minimizers near x move only along the null space of ∇²g, so every ∇²g·w is
    normal to them and −∇f ∈ range(∇²g) + (the domain's normal cone) is first-order stationarity for
    the upper level. w is fitted on the tangent parts of the face x sits on. `lower(x)` is g on the
    flat vector; None above CURVATURE_MAX_DIM scalars."""
    if x.numel() > CURVATURE_MAX_DIM:
        return None
    H = torch.autograd.functional.hessian(lower, x.detach())
    T = faces.tangent(x, gf) if faces is not None and faces.any else None
    v = gf
    for _ in range(3):  # the face of the step v, until it settles
        P = T.apply(torch.eye(x.numel(), dtype=x.dtype, device=x.device)) if T is not None else None
        A, b = (H, -gf) if P is None else (P @ H, -(P @ gf))
        w = torch.linalg.lstsq(A, b, rcond=CURVATURE_RCOND, driver="gelsd").solution
        v = gf + H @ w
        if T is None or faces is None:
            break
        new = faces.tangent(x, v)
        if new.same_face(T):
            break
        T = new
    return residual(x, v)


def _pgrad(flat: FlatVars, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """‖x − P(x − v)‖ for one point: the projected-gradient norm."""
    xp = flat.project_(x - v) if flat.needs_projection else x - v
    return torch.linalg.vector_norm(x - xp)


MONITOR_CURVATURE_DIM = 200  # the solvers' own convergence tests build ∇²g only for this many scalars


def kkt_test(
    flat: FlatVars,
    x: torch.Tensor,
    gf: torch.Tensor,
    gg: torch.Tensor,
    lower: Any,
    tol_at: Any,
    at_min: bool,
    max_dim: int = CURVATURE_MAX_DIM,
) -> tuple[float, float, str]:
    """(λ̂, KKT residual, which multipliers) at one point: `kkt_multiplier`'s λ̂, and where that leaves the
    residual above `tol_at(λ̂)` where ∇g vanishes (at_min: projected ‖∇g‖ ≤ LOWER_AT_MIN × its tolerance),
    the curvature multipliers (`curvature_residual`, `lower(x)` = g on the flat vector) when x has at most
    max_dim scalars (then λ̂ is returned as 0, so that the tolerance has no λ̂·L_g rounding floor). Off such
    points λ̂ is meaningful, and the test is λ̂'s alone."""
    faces = Faces(flat, x.dtype, x.device)
    with torch.no_grad():
        lam_t, kkt_t = kkt_multiplier(x, gf, gg, faces, lambda z, v: _pgrad(flat, z, v))
    lam, kkt, how = float(lam_t), float(kkt_t), f"λ̂ = {float(lam_t):.3g}"
    if kkt > tol_at(lam) and at_min and x.numel() <= max_dim:
        with torch.enable_grad():
            res = curvature_residual(lower, x, gf, faces, lambda z, v: _pgrad(flat, z, v))
        if res is not None and float(res) < kkt:
            # no scalar λ̂ here: the tolerance is the one of λ̂ = 0 (its rounding floor without λ̂·L_g)
            lam, kkt, how = 0.0, float(res), "multipliers on the range of ∇²g"
    return lam, kkt, how


def certificate(
    problem: BilevelProblem,
    flat: FlatVars,
    x_np: dict[str, np.ndarray],
    tol: float,
    tol_g: float,
    g0_norm: float,
    floor: Any = lambda lam: 0.0,
) -> tuple[dict[str, float], dict[str, tuple[bool, str]]]:
    """Float64 full-batch f, g, ‖∇g‖, KKT residual and lower-level gap at the returned point.

    The KKT residual is the projected-gradient norm of ∇f + λ̂∇g with the least-squares multiplier
    λ̂ = max(0, −⟨∇f, ∇g⟩/‖∇g‖²), over all coordinates or over those off a box face
    (`kkt_multiplier`), or with multipliers on the range of ∇²g where ∇g vanishes (`kkt_test`); it does
    not trust the solver's own λ. `floor(λ̂)` is the rounding floor of the precision the point was
    computed in (float32 iterates cannot do better).
    """
    dev, dt = "cpu", torch.float64
    x = torch.cat([torch.as_tensor(x_np[v.name], dtype=dt).reshape(-1) for v in flat.variables])
    out: dict[str, float] = {}
    grads = []
    lower = problem.lower.compile(dev, dt)
    for key, c in (("f", problem.upper.compile(dev, dt)), ("g", lower)):
        xr = x.clone().requires_grad_(True)
        val = c(flat.unpack(xr), None)
        gr = torch.autograd.grad(val, xr, allow_unused=True)[0] if val.requires_grad else None
        gr = torch.zeros_like(x) if gr is None else gr.detach()
        out[key] = float(val.detach())
        grads.append(gr)
    gf, gg = grads
    ng2 = float(gg @ gg)
    with torch.no_grad():
        # the lower level's own projected gradient (zero at a lower-level minimizer)
        pg_g = float(_pgrad(flat, x, gg))
    ok_g = pg_g <= tol_g * max(1.0, g0_norm)
    scale_f = max(1.0, float(torch.linalg.vector_norm(gf)))

    def tol_at(lam: float) -> float:
        return max(tol * scale_f, min(floor(lam), FLOOR_CAP * scale_f))

    at_min = pg_g <= LOWER_AT_MIN * tol_g * max(1.0, g0_norm)
    lam, kkt, how = kkt_test(flat, x, gf, gg, lambda z: lower(flat.unpack(z), None), tol_at, at_min)
    out.update(
        grad_g_norm=math.sqrt(ng2),
        lower_pgrad=pg_g,
        grad_f_norm=float(torch.linalg.vector_norm(gf)),
        kkt_residual=kkt,
        kkt_lambda=lam,
    )
    checks: dict[str, tuple[bool, str]] = {}
    finite_ok = all(math.isfinite(v) for v in out.values())
    checks["finite"] = (finite_ok, "f, g and gradients are finite in float64" if finite_ok else "non-finite values")
    scale_g = max(1.0, g0_norm)
    detail = f"projected ‖∇g‖ = {pg_g:.3e} vs tol {tol_g * scale_g:.3e} (float64, full batch)"
    checks["lower_stationary"] = (ok_g, detail)
    if problem.lower_optimum is not None:
        gap = out["g"] - float(problem.lower_optimum)
        out["lower_gap"] = gap
        gtol = tol_g * max(1.0, abs(float(problem.lower_optimum)), g0_norm)
        checks["lower_gap"] = (gap <= gtol, f"g − g* = {gap:.3e} vs tol {gtol:.3e}")
    ktol = tol_at(lam)
    checks["kkt"] = (kkt <= ktol, f"KKT residual {kkt:.3e} vs tol {ktol:.3e} ({how}, float64, full batch)")
    return out, checks


class Tracer:
    """Sub-sampled trace rows (JSON-able) kept in RawSolution.info["trace"]."""

    def __init__(self, max_points: int) -> None:
        self.rows: list[dict[str, float]] = []
        self.max_points = max(2, max_points)
        self.stride = 1
        self.count = 0

    def add(self, row: dict[str, float]) -> None:
        self.count += 1
        if (self.count - 1) % self.stride == 0:
            self.rows.append({k: float(v) for k, v in row.items()})
            if len(self.rows) > self.max_points:  # halve the resolution, keep the ends
                self.rows = self.rows[::2]
                self.stride *= 2


class StallTest:
    """End-of-phase test of a continuation (shared by sdbpg and penalty), robust to minibatch noise.

    It averages the last `STALL_WINDOW` estimates of r² = ‖E d‖²/scale² for the phase's step direction
    d. With two independent half batches, ⟨d₁, d₂⟩ is unbiased for ‖E d‖²; the plain ‖d‖² keeps the
    minibatch variance and never falls below the noise level at a stochastic resting point. The phase
    has stalled, after `min_steps`, when √mean < `ratio` or the mean has not shrunk by 10 % for
    `patience` steps.
    """

    def __init__(self, ratio: float, patience: int, min_steps: int) -> None:
        self.ratio, self.patience, self.min_steps = ratio, patience, min_steps
        self.window: deque[float] = deque(maxlen=STALL_WINDOW)
        self.reset(0)

    def reset(self, t: int) -> None:
        """A new phase starts at step t."""
        self.window.clear()
        self.start, self.best, self.best_t, self.level = t, math.inf, t, math.inf

    def update(self, t: int, r2: float) -> bool:
        """Record step t's squared relative residual estimate; True when the phase has stalled."""
        self.window.append(r2)
        self.level = math.sqrt(max(sum(self.window) / len(self.window), 0.0))
        if self.level < 0.9 * self.best:
            self.best, self.best_t = self.level, t
        if t - self.start < self.min_steps:
            return False
        return self.level < self.ratio or t - self.best_t >= self.patience


def oracle_info(run: Any) -> dict[str, Any]:
    """Lipschitz estimates, evaluation and sample counts, batch sizes and the trace of a bilevel run
    (shared by sdbpg and penalty)."""
    return {
        "L_f": getattr(run, "Lf", float("nan")),
        "L_g": getattr(run, "Lg", float("nan")),
        "grad_evals": run.of.calls + run.og.calls,
        "grad_evals_f": run.of.calls,
        "grad_evals_g": run.og.calls,
        "samples": run.of.samples + run.og.samples,
        "batch_f": run.of.batch,
        "batch_g": run.og.batch,
        "trace": run.tracer.rows,
    }


def refuse_bilevel(form: Any, name: str) -> str | None:
    """Shared refusals of the first-order bilevel backends (constraints, discrete variables)."""
    if getattr(form, "constraints", ()):
        return (
            f"{name} honours only variable domains and the argmin constraint; this model has general "
            f"constraints ({'; '.join(form.constraints)}) that it cannot enforce"
        )
    for v in getattr(form, "variables", ()):
        if v.kind != "real":
            return f"{name} needs real variables; '{v.name}' is {v.kind}"
        if v.domain not in ("free", "box", "simplex", "ball"):
            return f"{name} cannot project onto the domain '{v.domain}' of '{v.name}'"
    return None
