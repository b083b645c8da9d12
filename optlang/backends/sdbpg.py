"""SDBPG: stochastic dynamic barrier perturbed gradient for simple bilevel problems.

Solves  min f(x)  s.t.  x ∈ argmin g(x)  (same variables, projections for the domains) with one
loop of (minibatch) gradient steps along d = ∇f + λ∇g, where the multiplier
λ = max(0, (φ − ⟨∇f, ∇g⟩) / (‖∇g‖² + ρ_t)) is kept bounded by the perturbation ρ_t.
Variants: `sdbpg` (plain), `pr` (a vanishing penalty μ_t g added to f), `vr` (STORM recursive
gradient estimators). Also here: the gradient oracle with minibatches and counters, and the
float64 certificate checks, which the `penalty` baseline reuses. Formulas: docs/backends/sdbpg.md.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.torch_vars import finite, init_tensors, project
from optlang.lazy import lazy_module, no_grad
from optlang.problem import BilevelProblem, TorchFunction, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

FLOOR_CAP = 1e-2  # the dtype rounding floor never loosens the KKT test beyond 1% of ‖∇f‖
BLOWUP = 1e12  # |f|, |g| or ‖x‖ beyond this (relative to the start) counts as divergence
STALL_WINDOW = 10  # steps averaged by the stall test
MAX_ROLLBACKS = 5  # adaptive steps: blow-ups answered by 4× curvature estimates before `diverged`
# automatic settings for stochastic levels, chosen on held-out regressions (docs/backends/sdbpg.md)
MOMENTUM_STOCHASTIC = 0.8  # constant heavy-ball weight
SMOOTHING_STOCHASTIC = 0.2  # EMA weight of the multiplier's scalars
PHASE_STOCHASTIC = 10  # min_phase and patience
LAM0_STOCHASTIC = 1.0  # Λ₀
GROWTH_STOCHASTIC = 100.0  # Λ's growth factor


# ----------------------------------------------------------------------------- shared helpers
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
        """The seeded feasible starting point (torch_vars.init_tensors), flattened."""
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
        if self.batch is None:
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
    λ̂ = max(0, −⟨∇f, ∇g⟩/‖∇g‖²); it does not trust the solver's own λ. `floor(λ̂)` is the
    rounding floor of the precision the point was computed in (float32 iterates cannot do better).
    """
    dev, dt = "cpu", torch.float64
    x = torch.cat([torch.as_tensor(x_np[v.name], dtype=dt).reshape(-1) for v in flat.variables])
    out: dict[str, float] = {}
    grads = []
    for key, fn in (("f", problem.upper), ("g", problem.lower)):
        c = fn.compile(dev, dt)
        xr = x.clone().requires_grad_(True)
        val = c(flat.unpack(xr), None)
        gr = torch.autograd.grad(val, xr, allow_unused=True)[0] if val.requires_grad else None
        gr = torch.zeros_like(x) if gr is None else gr.detach()
        out[key] = float(val.detach())
        grads.append(gr)
    gf, gg = grads
    ng2 = float(gg @ gg)
    lam = max(0.0, -float(gf @ gg) / ng2) if ng2 > 0 else 0.0
    with torch.no_grad():
        step = gf + lam * gg
        xp = flat.project_(x - step) if flat.needs_projection else x - step
        kkt = float(torch.linalg.vector_norm(x - xp))
        # the lower level's own projected gradient (zero at a lower-level minimizer)
        xq = flat.project_(x - gg) if flat.needs_projection else x - gg
        pg_g = float(torch.linalg.vector_norm(x - xq))
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
    ok_g = pg_g <= tol_g * scale_g
    detail = f"projected ‖∇g‖ = {pg_g:.3e} vs tol {tol_g * scale_g:.3e} (float64, full batch)"
    checks["lower_stationary"] = (ok_g, detail)
    if problem.lower_optimum is not None:
        gap = out["g"] - float(problem.lower_optimum)
        out["lower_gap"] = gap
        gtol = tol_g * max(1.0, abs(float(problem.lower_optimum)), g0_norm)
        checks["lower_gap"] = (gap <= gtol, f"g − g* = {gap:.3e} vs tol {gtol:.3e}")
    scale_f = max(1.0, out["grad_f_norm"])
    ktol = max(tol * scale_f, min(floor(lam), FLOOR_CAP * scale_f))
    checks["kkt"] = (kkt <= ktol, f"KKT residual {kkt:.3e} vs tol {ktol:.3e} (λ̂ = {lam:.3g}, float64, full batch)")
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


# ----------------------------------------------------------------------------- the backend
@dataclass
class SDBPGOptions:
    """Options of the SDBPG family (defaults documented in docs/backends/sdbpg.md)."""

    variant: str = "sdbpg"  # sdbpg | pr | vr
    alpha: float = 1.0  # barrier strength α₀ in φ (stochastic defaults: Λ₀ = 1 and rule `level`, so α_t = Λ_t)
    alpha_rule: str = "auto"  # fixed: α; level: α·Λ_t/Λ₀ (grows with the multiplier level); auto: level if stochastic
    phi: str = "grad"  # grad: φ = α‖∇g‖²; gap: φ = α(g − g*) (needs problem.lower_optimum)
    perturbation: bool = True  # False: the plain dynamic barrier (ρ = 0)
    rho_rule: str = "stall"  # stall: raise Λ when progress stalls; power: Λ_t = Λ₀(1 + t/τ)^p
    lam_target: float = -1.0  # Λ₀: the multiplier level aimed for at first (−1: LAM0_STOCHASTIC if stochastic, else 10)
    lam_growth: float = -1.0  # stall rule: Λ ← growth·Λ (−1: GROWTH_STOCHASTIC if stochastic, else 10)
    stall_ratio: float = 1e-3  # stall rule: phase ends when the windowed ‖E d‖/‖F‖ falls below this …
    min_phase: int = -1  # stall rule: iterations before a phase may end (−1: 10 if stochastic, else 50)
    lam_cap: float = 1e6  # stall rule: Λ grows no further
    bind_frac: float = 0.0  # stall rule: a phase also ends when EMA λ ≥ bind_frac·Λ (0: off)
    patience: int = -1  # stall rule: … or when it has not shrunk 10% in this many steps (−1: 10 stochastic, else 1000)
    rho_power: float = 0.5  # power rule exponent p
    rho_tau: float = 100.0  # power rule time scale τ
    rho_min: float = 0.0  # floor on ρ_t
    step_rule: str = "adaptive"  # adaptive: η = c/(L_f + (λ+μ)L_g); constant: η = step; diminishing: step/√(1+t/τ)
    step: float = 0.0  # base step size (0: from the estimated curvature, c/(L_f + Λ₀ L_g))
    step_scale: float = 1.0  # c
    momentum: float = -1.0  # β in [0, 1); −1: k/(k+3) with adaptive restart, or MOMENTUM_STOCHASTIC if stochastic
    batch_f: int = 0  # minibatch for ∇f: 0 auto (full when ≤ 4096 samples), -1 full, k > 0 size
    batch_g: int = 0  # minibatch for ∇g, same convention
    lam_smoothing: float = -1.0  # s > 0: λ from EMAs (weight s) of ‖∇g‖², ⟨∇F, ∇g⟩, φ; 0 per step; −1 auto
    split_batch: bool = True  # stochastic g: estimate ‖∇g‖² by ⟨∇g₁, ∇g₂⟩ on two half batches (unbiased)
    pr_mu: float = 1.0  # PR: penalty μ_t = pr_mu / (1 + t/pr_tau)^pr_power added to f as μ_t g
    pr_tau: float = 100.0
    pr_power: float = 1.0
    vr_a: float = 0.1  # VR: STORM weight a in m_t = ∇h(x_t) + (1 − a)(m_{t−1} − ∇h(x_{t−1}))
    tol_g: float = 1e-4  # lower level: projected ‖∇g‖ ≤ tol_g · max(1, ‖∇g(x₀)‖)
    lipschitz_iters: int = 15  # power iterations for L_f, L_g
    report_every: int = 10  # iterations between history rows / convergence checks
    trace_points: int = 200
    eval_samples: int = 4096  # monitoring evaluations use at most this many (fixed) samples


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


class SDBPG(Backend):
    """The SDBPG family: dynamic barrier gradient with a perturbed, bounded multiplier."""

    name = "sdbpg"
    kinds = frozenset({"bilevel"})
    summary = "stochastic dynamic barrier perturbed gradient (SDBPG, PR-SDBPG, VR-PR-SDBPG) for x ∈ argmin g"
    research = True
    priority = 10
    Options = SDBPGOptions
    preload = ("torch._dynamo",)  # the first double backward imports it (≈1–9 s on a loaded machine)

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        return refuse_bilevel(form, self.name)

    def solve(self, problem: BilevelProblem, options: SDBPGOptions, ctx: RunContext) -> RawSolution:
        validate(options)
        return _Run(problem, options, ctx).run()


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


def validate(o: SDBPGOptions) -> None:
    """Reject option values outside their documented sets (make_options checks only the types)."""
    from optlang.errors import OptionError

    choices = {
        "variant": ("sdbpg", "pr", "vr"),
        "phi": ("grad", "gap"),
        "alpha_rule": ("fixed", "level", "auto"),
        "rho_rule": ("stall", "power"),
        "step_rule": ("adaptive", "constant", "diminishing"),
    }
    for key, allowed in choices.items():
        if getattr(o, key) not in allowed:
            raise OptionError(
                key, f"option '{key}' of 'sdbpg' must be one of {', '.join(allowed)}, got {getattr(o, key)!r}"
            )
    if not (0.0 <= o.momentum < 1.0 or o.momentum == -1.0):
        raise OptionError("momentum", "option 'momentum' of 'sdbpg' must be in [0, 1), or −1 (automatic)")
    if not 0.0 < o.vr_a <= 1.0:
        raise OptionError("vr_a", "option 'vr_a' of 'sdbpg' must be in (0, 1]")
    bad_level = (o.lam_target <= 0 and o.lam_target != -1.0) or (o.lam_growth < 1.0 and o.lam_growth != -1.0)
    if bad_level or o.alpha < 0 or o.step < 0 or o.step_scale <= 0:
        raise OptionError(
            "lam_target",
            "sdbpg needs lam_target > 0 and lam_growth ≥ 1 (−1: automatic), alpha ≥ 0, step ≥ 0, step_scale > 0",
        )


class _Run:
    """One SDBPG solve: state, the loop, and the RawSolution it ends with."""

    def __init__(self, problem: BilevelProblem, o: SDBPGOptions, ctx: RunContext) -> None:
        self.p, self.o, self.ctx = problem, o, ctx
        self.flat = FlatVars(problem.variables)
        self.gen_f = make_generator(ctx, 1)
        self.gen_g = make_generator(ctx, 2)
        self.of = Oracle(problem.upper, self.flat, ctx, o.batch_f, self.gen_f)
        self.og = Oracle(problem.lower, self.flat, ctx, o.batch_g, self.gen_g)
        # float32 iterates carry ~1e-7 relative rounding, amplified by λ·L_g in the KKT residual
        self.tol = ctx.tol or 1e-4  # the common option `tol`
        self.max_iter = ctx.max_iter if ctx.max_iter is not None else 100_000
        self.tracer = Tracer(o.trace_points)
        self.stochastic = self.of.stochastic or self.og.stochastic
        self.smoothing = o.lam_smoothing if o.lam_smoothing >= 0 else (SMOOTHING_STOCHASTIC if self.stochastic else 0.0)
        self.alpha_level = o.alpha_rule == "level" or (o.alpha_rule == "auto" and self.stochastic)
        # with minibatch noise, phases reach their resting point in a few dozen steps and then only wait
        self.min_phase = o.min_phase if o.min_phase >= 0 else (PHASE_STOCHASTIC if self.stochastic else 50)
        self.patience = o.patience if o.patience > 0 else (PHASE_STOCHASTIC if self.stochastic else 1000)
        # stochastic: start at Λ₀ = 1 (what ∇f alone moves decays fast before Λ is large) and grow 100×
        self.lam0 = o.lam_target if o.lam_target > 0 else (LAM0_STOCHASTIC if self.stochastic else 10.0)
        self.growth = o.lam_growth if o.lam_growth >= 1 else (GROWTH_STOCHASTIC if self.stochastic else 10.0)
        # λ pressing against its level Λ (the perturbed resting point has λ = Λ) ends a phase only when asked
        self.bind_frac = max(o.bind_frac, 0.0)
        self.t_now = 0
        self.g_star = problem.lower_optimum
        if o.phi == "gap" and self.g_star is None:
            from optlang.errors import OptionError

            raise OptionError("phi", "phi = 'gap' needs the lower-level optimum g*, which this problem does not know")
        # fixed monitoring subsets (same for every report, so the trace is comparable over time)
        gen_e = make_generator(ctx, 3)
        self.eval_f = self._eval_subset(self.of.n, gen_e)
        self.eval_g = self._eval_subset(self.og.n, gen_e)

    def _eval_subset(self, n: int | None, gen: torch.Generator) -> torch.Tensor | None:
        if n is None or n <= self.o.eval_samples:
            return None
        return torch.randperm(n, generator=gen, device=self.ctx.device)[: self.o.eval_samples]

    # --- the multiplier and its perturbation
    def rho(self, t: int, nf2: float) -> float:
        """ρ_t = α‖∇F‖²/Λ_t³ (floored): bounds λ by α + Λ_t^{3/2}/(2√α) and sets its resting level ≈ Λ_t."""
        if not self.o.perturbation:
            return 0.0
        lam_t = self.lam_level(t)
        a = max(self.alpha(), 1e-12)
        return max(self.o.rho_min, a * nf2 / lam_t**3)

    def alpha(self) -> float:
        """Barrier strength: with minibatch noise the steps rest near λ ≈ O(α), so α follows Λ there."""
        if self.alpha_level:
            return self.o.alpha * self.lam_level(self.t_now) / self.lam0
        return self.o.alpha

    def lam_level(self, t: int) -> float:
        if self.o.rho_rule == "power":
            return self.lam0 * (1.0 + t / self.o.rho_tau) ** self.o.rho_power
        return self.Lam

    def mu(self, t: int) -> float:
        if self.o.variant not in ("pr", "vr"):
            return 0.0
        return self.o.pr_mu / (1.0 + t / self.o.pr_tau) ** self.o.pr_power

    def beta(self, k: int) -> float:
        """Momentum weight: constant, or the accelerated schedule k/(k+3) with restarts (momentum < 0)."""
        if self.o.momentum >= 0:
            return self.o.momentum
        if self.stochastic:  # the accelerated schedule accumulates minibatch noise: a constant heavy ball
            return MOMENTUM_STOCHASTIC
        return k / (k + 3.0)

    def step_size(self, t: int, lam: float, mu: float) -> float:
        o = self.o
        if o.step_rule == "adaptive":
            return o.step_scale / (self.Lf + (lam + mu) * self.Lg + 1e-30)
        if o.step_rule == "constant":
            return self.eta0
        return self.eta0 / math.sqrt(1.0 + t / o.rho_tau)

    # --- main loop
    def run(self) -> RawSolution:
        o, ctx, flat = self.o, self.ctx, self.flat
        x = flat.project_(flat.initial(ctx))
        self.Lf = lipschitz(self.of, x, o.lipschitz_iters, self.gen_f) if o.lipschitz_iters > 0 else 1.0
        self.Lg = lipschitz(self.og, x, o.lipschitz_iters, self.gen_g) if o.lipschitz_iters > 0 else 1.0
        if not (math.isfinite(self.Lf) and math.isfinite(self.Lg)):
            return self._finish(x, Status.DIVERGED, 0, "curvature estimate is not finite at the start")
        self.Lf = max(self.Lf, 1e-8 * max(self.Lg, 1.0), 1e-12)
        self.Lg = max(self.Lg, 1e-12)
        self.Lam = self.lam0
        self.lower_ok = False
        self.eta0 = o.step if o.step > 0 else o.step_scale / (self.Lf + self.lam0 * self.Lg)
        with torch.enable_grad():
            _, gg0 = self._eval_grad(self.og, x, self.eval_g)  # monitoring, not counted
        self.g0_norm = float(torch.linalg.vector_norm(gg0))
        self.start_scale = max(1.0, float(torch.linalg.vector_norm(x)))
        x_prev = x.clone()
        y_prev: torch.Tensor | None = None
        m_f = m_g = None
        lam_max, lam = 0.0, 0.0
        avg: list[float] | None = None
        stall = StallTest(o.stall_ratio, self.patience, self.min_phase)
        lam_ema = 0.0
        next_check = 0  # fresh lower-level tests before raising Λ: at most one per report_every steps
        best = (x.clone(), 0)
        self.rollbacks = 0
        status: Status | None = None
        note = ""
        t = 0
        k_mom = 0
        self.phases = 0
        while True:
            if ctx.should_stop():
                status = ctx.stop_status()
                break
            if t >= self.max_iter:
                status = Status.ITERATION_LIMIT
                break
            beta = self.beta(k_mom) if t > stall.start else 0.0
            k_mom += 1
            y = x + beta * (x - x_prev) if beta > 0 else x
            if beta > 0 and flat.needs_projection:
                y = flat.project_(y.clone())
            bf, bg = self.of.draw(), None
            fv, gf = self.of.grad(y, bf)
            split = o.split_batch and self.og.stochastic and o.variant != "vr" and self.og.batch >= 2
            if split:
                # two independent half batches: their mean is the usual estimate, and ⟨∇g₁, ∇g₂⟩ is an
                # unbiased estimate of ‖∇g‖² (the plain ‖∇g_B‖² is inflated by the minibatch variance)
                gv, gg, gg1, gg2 = self.og.grad_halves(y)
                ng2 = float(gg1 @ gg2)
            else:
                bg = self.og.draw()
                gv, gg = self.og.grad(y, bg)
            if o.variant == "vr":
                if m_f is not None and y_prev is not None:
                    # STORM: correct the previous estimate with the same minibatch at the previous point
                    _, gf_old = self.of.grad(y_prev, bf) if self.of.stochastic else (None, m_f)
                    _, gg_old = self.og.grad(y_prev, bg) if self.og.stochastic else (None, m_g)
                    if self.of.stochastic:
                        gf = gf + (1.0 - o.vr_a) * (m_f - gf_old)
                    if self.og.stochastic:
                        gg = gg + (1.0 - o.vr_a) * (m_g - gg_old)
                m_f, m_g, y_prev = gf, gg, y
            self.t_now = t
            mu = self.mu(t)
            F = gf + mu * gg if mu > 0 else gf
            if not split:
                ng2 = float(gg @ gg)
            nf2 = float(F @ F)
            inner = float(F @ gg)
            alpha = self.alpha()
            if o.phi == "gap":
                phi = alpha * max(0.0, float(gv) - float(self.g_star))
            else:
                phi = alpha * ng2
            rho = self.rho(t, nf2)
            if self.smoothing > 0:
                # averaged estimates of ‖∇g‖² and ⟨∇F, ∇g⟩: a ratio of noisy minibatch numbers is biased,
                # and a λ that jumps every step makes each step minimize a different function
                s_ = self.smoothing
                new = (ng2, inner, phi)
                avg = list(new) if avg is None else [(1 - s_) * a + s_ * b for a, b in zip(avg, new, strict=True)]
                ng2_, inner_, phi_ = avg
            else:
                ng2_, inner_, phi_ = ng2, inner, phi
            den = ng2_ + rho
            num = phi_ - inner_
            if den <= 0.0:  # only an unperturbed split estimate can get here: the barrier is undefined
                den = 1e-30 * max(nf2, 1e-30)
            lam = max(0.0, num / den)
            if not math.isfinite(lam):
                status, note = Status.DIVERGED, "the multiplier is not finite (‖∇g‖² + ρ = 0 with ⟨∇f, ∇g⟩ ≠ 0)"
                break
            lam_max = max(lam_max, lam)
            d = F + lam * gg
            eta = self.step_size(t, lam, mu)
            x_new = y - eta * d
            if flat.needs_projection:
                flat.project_(x_new)
            if not finite(x_new, fv, gv) or float(torch.linalg.vector_norm(x_new)) > BLOWUP * self.start_scale:
                if o.step_rule == "adaptive" and self.rollbacks < MAX_ROLLBACKS:
                    # the curvature met on the way is larger than the one estimated at the start (a
                    # nonconvex or quartic level): back to the last monitored point with 4× the estimates
                    self.rollbacks += 1
                    self.Lf, self.Lg = 4.0 * self.Lf, 4.0 * self.Lg
                    x, k_mom, avg = best[0].clone(), 0, None
                    x_prev = x.clone()
                    m_f = m_g = y_prev = None
                    stall.reset(t)
                    continue
                status, note = Status.DIVERGED, f"non-finite or exploding iterate at iteration {t}"
                break
            if o.momentum < 0 and float(d @ (x_new - x)) > 0:
                k_mom = 0  # adaptive restart (O'Donoghue & Candès): momentum points uphill
            x_prev, x = x, x_new
            t += 1
            # stall rule: when the phase has reached its resting point (the expected direction has
            # vanished relative to ‖F‖) or stopped getting closer, raise the multiplier level
            dd = float((F + lam * gg1) @ (F + lam * gg2)) if split else float(d @ d)
            stalled = stall.update(t, dd / max(nf2, 1e-60))
            # … or when λ presses against the level Λ the perturbation allows (bind_frac)
            lam_ema = lam if t - stall.start <= 1 else 0.9 * lam_ema + 0.1 * lam
            if self.bind_frac > 0 and lam_ema >= self.bind_frac * self.Lam and t - stall.start >= stall.min_steps:
                stalled = True
            may_grow = o.perturbation and o.rho_rule == "stall" and self.Lam < o.lam_cap
            if may_grow and stalled and t >= next_check:
                next_check = t + o.report_every
                grow = not self._lower_ok_now(x)
            else:
                grow = False
            if grow:
                self.Lam *= self.growth
                self.phases += 1
                stall.reset(t)
                k_mom = 0
                x_prev = x.clone()
                m_f = m_g = y_prev = None
            if t % o.report_every == 0:
                done, row = self._monitor(x, t, lam, lam_max, rho, eta)
                if row is None:
                    status, note = Status.DIVERGED, f"non-finite objective at iteration {t}"
                    break
                best = (x.clone(), t)
                if done:
                    status = Status.CONVERGED
                    break
        if status == Status.DIVERGED:
            x = best[0]
        else:
            self._monitor(x, t, lam, lam_max, 0.0, 0.0, final=True)
        return self._finish(x, status or Status.ITERATION_LIMIT, t, note, lam_max)

    def _monitor(
        self, x: torch.Tensor, t: int, lam: float, lam_max: float, rho: float, eta: float, final: bool = False
    ) -> tuple[bool, dict[str, float] | None]:
        """Full-batch (or fixed-subset) f, g, ‖∇g‖ at x: history row, trace row, convergence test."""
        with torch.enable_grad():
            fv, gf = self._eval_grad(self.of, x, self.eval_f)
            gv, gg = self._eval_grad(self.og, x, self.eval_g)
        f, g = float(fv), float(gv)
        if not (math.isfinite(f) and math.isfinite(g)):
            return False, None
        with torch.no_grad():
            ngg = float(torch.linalg.vector_norm(gg))
            if self.flat.needs_projection:
                pg_g = float(torch.linalg.vector_norm(x - self.flat.project_(x - gg)))
            else:
                pg_g = ngg
            n2 = float(gg @ gg)
            lam_hat = max(0.0, -float(gf @ gg) / n2) if n2 > 0 else 0.0
            step = gf + lam_hat * gg
            if self.flat.needs_projection:
                kkt = float(torch.linalg.vector_norm(x - self.flat.project_(x - step)))
            else:
                kkt = float(torch.linalg.vector_norm(step))
        row = {
            "iter": t,
            "time": self.ctx.elapsed(),
            "f": f,
            "g": g,
            "grad_g": ngg,
            "lam": lam,
            "rho": rho,
            "step": eta,
            "grad_evals": self.of.calls + self.og.calls,
            "samples": self.of.samples + self.og.samples,
        }
        if self.g_star is not None:
            row["gap"] = g - float(self.g_star)
        if not final:
            self.tracer.add(row)
            flat = self.flat
            self.ctx.report(
                f,
                None,
                iteration=t,
                g=g,
                grad_g=ngg,
                lam=lam,
                lam_max=lam_max,
                grad_evals=row["grad_evals"],
                samples=row["samples"],
                point=lambda: flat.to_numpy(x),
            )
        self.last = {"f": f, "g": g, "grad_g": ngg, "lower_pgrad": pg_g, "kkt": kkt}
        ok_g = pg_g <= self.o.tol_g * max(1.0, self.g0_norm)
        self.lower_ok = ok_g
        ok_f = kkt <= self.kkt_tol(lam_hat, float(torch.linalg.vector_norm(gf)), float(torch.linalg.vector_norm(x)))
        return ok_g and ok_f, row

    def _lower_ok_now(self, x: torch.Tensor) -> bool:
        """Fresh lower-level test (monitoring subset) before raising Λ, so Λ never overshoots on stale news."""
        with torch.enable_grad():
            _, gg = self._eval_grad(self.og, x, self.eval_g)
        with torch.no_grad():
            pg = self.flat.project_(x - gg) if self.flat.needs_projection else x - gg
            self.lower_ok = float(torch.linalg.vector_norm(x - pg)) <= self.o.tol_g * max(1.0, self.g0_norm)
        return self.lower_ok

    def kkt_tol(self, lam_hat: float, nf: float, nx: float) -> float:
        """tol·max(1, ‖∇f‖), raised to the rounding floor 2·eps·(L_f + λ̂L_g)·‖x‖ of the working dtype."""
        eps = float(torch.finfo(self.ctx.dtype).eps)
        scale = max(1.0, nf)
        floor = min(2.0 * eps * (self.Lf + lam_hat * self.Lg) * max(nx, 1e-30), FLOOR_CAP * scale)
        return max(self.tol * scale, floor)

    def _eval_grad(
        self, oracle: Oracle, x: torch.Tensor, subset: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        xr = x.detach().requires_grad_(True)
        val = oracle.fn(self.flat.unpack(xr), subset)
        gr = torch.autograd.grad(val, xr, allow_unused=True)[0] if val.requires_grad else None
        return val.detach(), (torch.zeros_like(xr) if gr is None else gr.detach())

    def _finish(self, x: torch.Tensor, status: Status, t: int, note: str = "", lam_max: float = 0.0) -> RawSolution:
        values = self.flat.to_numpy(x)
        nx = float(torch.linalg.vector_norm(x))
        Lf, Lg = getattr(self, "Lf", 0.0), getattr(self, "Lg", 0.0)
        eps = float(torch.finfo(self.ctx.dtype).eps)
        stats, checks = certificate(
            self.p,
            self.flat,
            values,
            self.tol,
            self.o.tol_g,
            getattr(self, "g0_norm", 1.0),
            floor=lambda lam: 2.0 * eps * (Lf + lam * Lg) * nx,
        )
        if status == Status.CONVERGED and not checks["lower_stationary"][0]:
            status = Status.FEASIBLE  # a monitoring subset said yes, the full float64 check says no
        info: dict[str, Any] = {
            "variant": self.o.variant,
            "perturbation": self.o.perturbation,
            "lower_reached": bool(checks["lower_stationary"][0] and checks.get("lower_gap", (True, ""))[0]),
            "lam_max": lam_max,
            "lam_level": getattr(self, "Lam", None),
            "phases": getattr(self, "phases", 0),
            "rollbacks": getattr(self, "rollbacks", 0),
            **oracle_info(self),
            **stats,
        }
        if note:
            info["note"] = note
        return RawSolution(
            status=status,
            values=values,
            objective=stats.get("f"),
            bound=None,
            iterations=t,
            history=list(self.ctx.history),
            info=_jsonable(info),
            checks=checks,
        )


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    """Replace non-finite floats by None-free strings so info stays JSON-able."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, float) and not math.isfinite(v):
            out[k] = str(v)
        else:
            out[k] = v
    return out
