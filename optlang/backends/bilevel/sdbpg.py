"""SDBPG: stochastic dynamic barrier perturbed gradient for simple bilevel problems.

Solves  min f(x)  s.t.  x ∈ argmin g(x)  (same variables, projections for the domains) with one
loop of (minibatch) gradient steps along d = ∇f + λ∇g, where the multiplier
λ = max(0, (φ − ⟨∇f, ∇g⟩) / (‖∇g‖² + ρ_t)) is kept bounded by the perturbation ρ_t.
Variants: `sdbpg` (plain), `pr` (a vanishing penalty μ_t g added to f), `vr` (STORM recursive
gradient estimators). The gradient oracle with minibatches and counters and the float64 certificate
checks, shared with the `penalty` baseline, are in `oracle.py`. Formulas: docs/backends/sdbpg.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.bilevel.faces import Faces, Tangent
from optlang.backends.bilevel.oracle import (
    BLOWUP,
    FLOOR_CAP,
    LOWER_AT_MIN,
    MONITOR_CURVATURE_DIM,
    FlatVars,
    Oracle,
    StallTest,
    Tracer,
    certificate,
    kkt_test,
    lipschitz,
    make_generator,
    oracle_info,
    refuse_bilevel,
)
from optlang.backends.common import check_range_or_auto, finite
from optlang.backends.loop import REDO, End, LoopOptions, Redo, Step, diverged, run_loop
from optlang.lazy import lazy_module
from optlang.problem import BilevelProblem
from optlang.result import jsonable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

MAX_ROLLBACKS = 5  # adaptive steps: blow-ups answered by 4× curvature estimates before `diverged`
# automatic settings for stochastic levels, chosen on held-out regressions (docs/backends/sdbpg.md)
MOMENTUM_STOCHASTIC = 0.8  # constant heavy-ball weight
SMOOTHING_STOCHASTIC = 0.2  # EMA weight of the multiplier's scalars
PHASE_STOCHASTIC = 10  # min_phase and patience
LAM0_STOCHASTIC = 1.0  # Λ₀
GROWTH_STOCHASTIC = 100.0  # Λ's growth factor


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


# the declared meaning of the options (checked by make_options, so `optlang check` sees them); options whose
# negative values mean "automatic" (min_phase, patience, batch_f, batch_g) are not in the table, and those
# with one documented automatic value −1 beside a range are checked by SDBPG.check_options
RANGES = {
    "alpha": ">=0",
    "stall_ratio": ">=0",
    "lam_cap": ">0",
    "bind_frac": ">=0",
    "rho_power": ">=0",
    "rho_tau": ">0",
    "rho_min": ">=0",
    "step": ">=0",
    "step_scale": ">0",
    "pr_mu": ">=0",
    "pr_tau": ">0",
    "pr_power": ">=0",
    "vr_a": "(0,1]",
    "tol_g": ">0",
    "lipschitz_iters": ">=0",
    "report_every": ">=1",
    "trace_points": ">=1",
    "eval_samples": ">=1",
}
CHOICES = {
    "variant": ("sdbpg", "pr", "vr"),
    "alpha_rule": ("fixed", "level", "auto"),
    "phi": ("grad", "gap"),
    "rho_rule": ("stall", "power"),
    "step_rule": ("adaptive", "constant", "diminishing"),
}
# (rule, beside the automatic value −1)
RANGES_OR_AUTO = {"lam_target": ">0", "lam_growth": ">=1", "momentum": "[0,1)", "lam_smoothing": "[0,1]"}


class SDBPG(Backend):
    """The SDBPG family: dynamic barrier gradient with a perturbed, bounded multiplier."""

    name = "sdbpg"
    kinds = frozenset({"bilevel"})
    summary = "stochastic dynamic barrier perturbed gradient (SDBPG, PR-SDBPG, VR-PR-SDBPG) for x ∈ argmin g"
    priority = 10
    Options = SDBPGOptions
    option_ranges = RANGES
    option_choices = CHOICES
    preload = ("torch._dynamo",)  # the first double backward imports it (≈1–9 s on a loaded machine)

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """The declared ranges and choices, and the options that are −1 (automatic) or in a range."""
        super().check_options(options, auto)
        for key, rule in RANGES_OR_AUTO.items():
            check_range_or_auto(self.name, options, key, rule, auto)

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        for v in getattr(form, "variables", ()):
            if v.domain == "simplex":
                # measured (docs/backends/sdbpg.md, "Simplex domains"): where λ = 0 a step on f alone reaches
                # a vertex and the momentum cycles; the penalty baseline converges on the same models
                return (
                    f"sdbpg does not converge on a simplex ('{v.name}'): its steps cycle through the vertices; "
                    "the penalty backend does"
                )
        return refuse_bilevel(form, self.name)

    def solve(self, problem: BilevelProblem, options: SDBPGOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # make_options checked them; options built by hand are checked here
        return _Run(problem, options, ctx).run()


def validate(o: SDBPGOptions) -> None:
    """Refuse option values outside their meaning (what SDBPG.check_options refuses; for options built by hand)."""
    SDBPG().check_options(o)


class _Run(Step):
    """One SDBPG solve: state, the loop, and the RawSolution it ends with."""

    avg: list[float] | None  # EMAs of ‖∇g‖², ⟨F, ∇g⟩, φ (lam_smoothing)

    def __init__(self, problem: BilevelProblem, o: SDBPGOptions, ctx: RunContext) -> None:
        self.p, self.o, self.ctx = problem, o, ctx
        self.flat = FlatVars(problem.variables)
        self.faces = Faces(self.flat, ctx.dtype, ctx.device)
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

    def _multiplier(self, t: int, ng2: float, nf2: float, inner: float, phi: float, commit: bool = False) -> float:
        """λ = max(0, (φ − ⟨F, ∇g⟩)/(‖∇g‖² + ρ_t)), from EMAs of the scalars when smoothing (stored if commit)."""
        if self.smoothing > 0:
            # averaged estimates of ‖∇g‖² and ⟨∇F, ∇g⟩: a ratio of noisy minibatch numbers is biased,
            # and a λ that jumps every step makes each step minimize a different function
            s_ = self.smoothing
            new = (ng2, inner, phi)
            avg = list(new) if self.avg is None else [(1 - s_) * a + s_ * b for a, b in zip(self.avg, new, strict=True)]
            if commit:
                self.avg = avg
            ng2, inner, phi = avg
        den = ng2 + self.rho(t, nf2)
        if den <= 0.0:  # only an unperturbed split estimate can get here: the barrier is undefined
            den = 1e-30 * max(nf2, 1e-30)
        return max(0.0, (phi - inner) / den)

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
        self.x, self.x_prev = x, x.clone()
        self.y_prev: torch.Tensor | None = None
        self.m_f: torch.Tensor | None = None
        self.m_g: torch.Tensor | None = None
        self.lam_max, self.lam = 0.0, 0.0
        self.avg = None
        self.stall = StallTest(o.stall_ratio, self.patience, self.min_phase)
        self.lam_ema = 0.0
        self.next_check = 0  # fresh lower-level tests before raising Λ: at most one per report_every steps
        self.best = (x.clone(), 0)  # the last monitored finite iterate (rollbacks and `diverged` return to it)
        self.rollbacks = 0
        self.k_mom = 0
        self.phases = 0
        self.rho_now = self.eta = 0.0
        # limits checked before each step (time or interrupt first); the monitor writes the history rows
        end = run_loop(self, ctx, LoopOptions(max_iter=self.max_iter, check_every=1))
        status, note, t = end.status, end.note, int(end.iterations)
        x = self.x
        if status == Status.DIVERGED:
            x = self.best[0]
        else:
            self._monitor(x, t, self.lam, self.lam_max, 0.0, 0.0, final=True)
        return self._finish(x, status or Status.ITERATION_LIMIT, t, note, self.lam_max)

    # --- one step for the shared run loop (backends/loop.py)
    def update(self, t: float) -> End | Redo | None:
        """The move from iteration t: momentum point, (minibatch) gradients, the multiplier λ, the step."""
        o, flat, ti = self.o, self.flat, int(t)
        x, x_prev = self.x, self.x_prev
        beta = self.beta(self.k_mom) if ti > self.stall.start else 0.0
        self.k_mom += 1
        y = x + beta * (x - x_prev) if beta > 0 else x
        if beta > 0 and flat.needs_projection:
            y = flat.project_(y.clone())
        bf, bg = self.of.draw(), None
        fv, gf = self.of.grad(y, bf)
        split = o.split_batch and self.og.stochastic and o.variant != "vr" and (self.og.batch or 0) >= 2
        gg1 = gg2 = None
        if split:
            # two independent half batches: their mean is the usual estimate, and ⟨∇g₁, ∇g₂⟩ is an
            # unbiased estimate of ‖∇g‖² (the plain ‖∇g_B‖² is inflated by the minibatch variance)
            gv, gg, gg1, gg2 = self.og.grad_halves(y)
        else:
            bg = self.og.draw()
            gv, gg = self.og.grad(y, bg)
        if o.variant == "vr":
            m_f, m_g, y_prev = self.m_f, self.m_g, self.y_prev
            if m_f is not None and m_g is not None and y_prev is not None:  # (all three are set together)
                # STORM: correct the previous estimate with the same minibatch at the previous point
                _, gf_old = self.of.grad(y_prev, bf) if self.of.stochastic else (None, m_f)
                _, gg_old = self.og.grad(y_prev, bg) if self.og.stochastic else (None, m_g)
                if self.of.stochastic:
                    gf = gf + (1.0 - o.vr_a) * (m_f - gf_old)
                if self.og.stochastic:
                    gg = gg + (1.0 - o.vr_a) * (m_g - gg_old)
            self.m_f, self.m_g, self.y_prev = gf, gg, y
        self.t_now = ti
        mu = self.mu(ti)
        F = gf + mu * gg if mu > 0 else gf
        alpha = self.alpha()
        gap = alpha * max(0.0, float(gv) - float(self.g_star)) if o.phi == "gap" and self.g_star is not None else None

        def face(T: Tangent | None) -> tuple[float, float, float, float]:
            """‖∇g‖², ‖F‖², ⟨F, ∇g⟩ and φ on the tangent parts of the face (T; None: everything)."""
            Fk, gk = (F, gg) if T is None else (T.apply(F), T.apply(gg))
            if split:
                assert gg1 is not None and gg2 is not None
                ng2 = float((gg1 if T is None else T.apply(gg1)) @ (gg2 if T is None else T.apply(gg2)))
            else:
                ng2 = float(gk @ gk)
            return ng2, float(Fk @ Fk), float(Fk @ gk), gap if gap is not None else alpha * ng2

        # on a face of the domain (a box bound, a ball's sphere, the simplex), what the projection takes
        # away does not move: the barrier's λ is set from the tangent parts (the held parts would ask g
        # for progress the projection removes). The face of the step that λ gives, until it settles.
        T = self.faces.tangent(y, gg) if self.faces.any else None
        for _ in range(3):
            scalars = face(T)
            if T is None:
                break
            new = self.faces.tangent(y, F + self._multiplier(ti, *scalars) * gg)
            if new.same_face(T):
                break
            T = new
        ng2, nf2, inner, phi = scalars
        lam = self._multiplier(ti, ng2, nf2, inner, phi, commit=True)
        rho = self.rho(ti, nf2)
        self.lam = lam
        if not math.isfinite(lam):
            return diverged("the multiplier is not finite (‖∇g‖² + ρ = 0 with ⟨∇f, ∇g⟩ ≠ 0)")
        self.lam_max = max(self.lam_max, lam)
        d = F + lam * gg
        eta = self.step_size(ti, lam, mu)
        x_new = y - eta * d
        if flat.needs_projection:
            flat.project_(x_new)
        if not finite(x_new, fv, gv) or float(torch.linalg.vector_norm(x_new)) > BLOWUP * self.start_scale:
            if o.step_rule == "adaptive" and self.rollbacks < MAX_ROLLBACKS:
                # the curvature met on the way is larger than the one estimated at the start (a
                # nonconvex or quartic level): back to the last monitored point with 4× the estimates
                self.rollbacks += 1
                self.Lf, self.Lg = 4.0 * self.Lf, 4.0 * self.Lg
                self.x, self.k_mom, self.avg = self.best[0].clone(), 0, None
                self.x_prev = self.x.clone()
                self.m_f = self.m_g = self.y_prev = None
                self.stall.reset(ti)
                return REDO
            return diverged(f"non-finite or exploding iterate at iteration {ti}")
        if o.momentum < 0 and float(d @ (x_new - x)) > 0:
            self.k_mom = 0  # adaptive restart (O'Donoghue & Candès): momentum points uphill
        self.x_prev, self.x = x, x_new
        # what the test after the step needs
        # the stall test sees the step's moving part (a held coordinate's component never vanishes)
        Td = self.faces.tangent(y, d).apply if self.faces.any else (lambda v: v)
        if gg1 is not None and gg2 is not None:
            self.dd = float(Td(F + lam * gg1) @ Td(F + lam * gg2))
        else:
            self.dd = float(Td(d) @ Td(d))
        self.nf2, self.rho_now, self.eta = nf2, rho, eta
        return None

    def check(self, t: float) -> End | None:
        """After the step: the stall rule (raise Λ), then every report_every steps the monitor (history row,
        convergence test, the iterate kept for rollbacks)."""
        o, x, lam = self.o, self.x, self.lam
        stall, ti = self.stall, int(t)
        # stall rule: when the phase has reached its resting point (the expected direction has
        # vanished relative to ‖F‖) or stopped getting closer, raise the multiplier level
        stalled = stall.update(ti, self.dd / max(self.nf2, 1e-60))
        # … or when λ presses against the level Λ the perturbation allows (bind_frac)
        self.lam_ema = lam if ti - stall.start <= 1 else 0.9 * self.lam_ema + 0.1 * lam
        if self.bind_frac > 0 and self.lam_ema >= self.bind_frac * self.Lam and ti - stall.start >= stall.min_steps:
            stalled = True
        may_grow = o.perturbation and o.rho_rule == "stall" and self.Lam < o.lam_cap
        if may_grow and stalled and ti >= self.next_check:
            self.next_check = ti + o.report_every
            grow = not self._lower_ok_now(x)
        else:
            grow = False
        if grow:
            self.Lam *= self.growth
            self.phases += 1
            stall.reset(ti)
            self.k_mom = 0
            self.x_prev = x.clone()
            self.m_f = self.m_g = self.y_prev = None
        if ti % o.report_every == 0:
            done, row = self._monitor(x, ti, lam, self.lam_max, self.rho_now, self.eta)
            if row is None:
                return diverged(f"non-finite objective at iteration {ti}")
            self.best = (x.clone(), ti)
            if done:
                return End(Status.CONVERGED)
        return None

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
        flat = self.flat
        with torch.no_grad():
            ngg = float(torch.linalg.vector_norm(gg))
            pg_g = float(torch.linalg.vector_norm(x - flat.project_(x - gg))) if flat.needs_projection else ngg
        ok_g = pg_g <= self.o.tol_g * max(1.0, self.g0_norm)
        nf, nx = float(torch.linalg.vector_norm(gf)), float(torch.linalg.vector_norm(x))
        subset = self.eval_g
        lam_hat, kkt, _ = kkt_test(
            flat,
            x,
            gf,
            gg,
            lambda z: self.og.fn(flat.unpack(z), subset),
            lambda lam_: self.kkt_tol(lam_, nf, nx),
            pg_g <= LOWER_AT_MIN * self.o.tol_g * max(1.0, self.g0_norm),
            MONITOR_CURVATURE_DIM,
        )
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
        self.lower_ok = ok_g
        ok_f = kkt <= self.kkt_tol(lam_hat, nf, nx)
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
            info=jsonable(info),
            checks=checks,
        )
