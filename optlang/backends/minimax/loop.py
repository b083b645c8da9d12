"""The shared minimax loop of the first-order minimax backends, and what they share besides.

`minimax_loop` runs any step rule (fixed steps in gda.py, adaptive orthogonalized ones in adasgda.py):
minibatch sampling, projections onto both players' domains, a stationarity proxy (the unit-step
gradient mapping of both players, full batch), best-iterate tracking, divergence detection,
time/iteration limits, convergence verified by the inner solve of stationarity.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from optlang.backends.base import RawSolution, RunContext, Status
from optlang.backends.common import KeepBest, finite, init_tensors, to_numpy
from optlang.backends.loop import End, LoopOptions, Step, diverged, from_fields, run_loop
from optlang.backends.minimax.stationarity import mapping_sq, project, sq_norm, stationarity_report, value_and_grads
from optlang.backends.stopping import Stagnation
from optlang.lazy import lazy_module, no_grad
from optlang.problem import MinimaxProblem, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

if TYPE_CHECKING:
    from optlang.analysis import Form

Tensors = dict[str, "torch.Tensor"]
Callback = Callable[[int, Tensors, Tensors], bool]

DEFAULT_MAX_ITER = 10_000
STALL_ITERS = 1000  # iterations without a 1% better proxy before a run counts as stagnated
BLOWUP = 1e8  # a gradient this many times the first one means the run diverged


class MinimaxOracle:
    """Gradients of the compiled objective split by player, and the players' projections (the bilevel wing's
    Oracle is another thing: one level on a flat vector, with its own minibatches and sample counts)."""

    def __init__(self, problem: MinimaxProblem, ctx: RunContext) -> None:
        self.problem = problem
        self.fn = problem.objective.compile(ctx.device, ctx.dtype)
        self.x_names = [v.name for v in problem.min_vars]
        self.y_names = [v.name for v in problem.max_vars]
        self.evaluations = 0

    def grads(self, x: Tensors, y: Tensors, batch: torch.Tensor | None) -> tuple[torch.Tensor, Tensors, Tensors]:
        """f, ∇ₓf, ∇ᵧf at (x, y) on `batch` (None = every sample)."""
        self.evaluations += 1
        f, g = value_and_grads(self.fn, {**x, **y}, self.x_names + self.y_names, batch)
        return f, {k: g[k] for k in self.x_names}, {k: g[k] for k in self.y_names}

    @no_grad
    def project_x_(self, x: Tensors) -> None:
        _project_(self.problem.min_vars, x)

    @no_grad
    def project_y_(self, y: Tensors) -> None:
        _project_(self.problem.max_vars, y)

    def proxy(self, x: Tensors, y: Tensors, gx: Tensors, gy: Tensors) -> float:
        """The stationarity proxy √(‖G_x‖² + ‖G_y‖²) from gradients at (x, y) (unit-step mappings)."""
        return math.sqrt(mapping_sq(self.problem.min_vars, x, gx, 1.0) + mapping_sq(self.problem.max_vars, y, gy, -1.0))


def _project_(variables: Iterable[Variable], tensors: Tensors) -> None:
    """Project in place; a non-finite tensor is left as it is for the loop's divergence test."""
    for v in variables:
        t = tensors[v.name]
        if v.domain.kind != "free" and math.isfinite(float(torch.sum(t * t))):
            t.copy_(project(v.domain, t))


class StepRule(Protocol):
    """One minimax update: move x (descent) and y (ascent) in place, projected, from gradients at (x, y)."""

    def update(
        self,
        t: int,
        x: Tensors,
        y: Tensors,
        gx: Tensors,
        gy: Tensors,
        batch: torch.Tensor | None,
        oracle: MinimaxOracle,
    ) -> None: ...

    def info(self) -> dict[str, Any]: ...


# the declared meaning of the loop options every minimax backend has (Backend.option_ranges / option_choices)
LOOP_RANGES = {"batch": ">=0", "check_every": ">=0", "report_every": ">=1", "inner_iters": ">=1", "patience": ">=0"}
LOOP_CHOICES = {"convex_concave": ("auto", "yes", "no")}


@dataclass
class LoopSettings:
    """Loop-level settings shared by the minimax backends (batch 0 = automatic, check_every 0 = automatic)."""

    batch: int = 0
    check_every: int = 0
    report_every: int = 50
    inner_iters: int = 3000
    convex_concave: str = "auto"
    final_report: bool = True
    patience: int = STALL_ITERS  # stagnation: iterations without a 1% better proxy (stopping.py); 0: never

    @classmethod
    def from_options(cls, options: Any) -> LoopSettings:
        """The loop settings named in a backend's Options (each field copied by name, never by position)."""
        return from_fields(cls, options)


def default_tol(ctx: RunContext) -> float:
    """Relative stationarity tolerance: ctx.tol, else 1e-5 in float32 and 1e-8 in float64."""
    if ctx.tol is not None:
        return float(ctx.tol)
    return 1e-8 if ctx.dtype_name == "float64" else 1e-5


class Sampler:
    """Minibatches of sample indices: shuffled epochs, seeded; None when the objective is full batch."""

    def __init__(self, n: int | None, batch: int, seed: int, device: Any) -> None:
        if n is not None and batch == 0:
            batch = n if n <= 1024 else 256
        self.n = n or 0  # 0: no sample axis (then batch is 0 and nothing is drawn)
        self.batch = batch if (n is not None and 0 < batch < n) else 0
        self.rng = np.random.default_rng(seed + 7919)
        self.device = device
        self._perm = np.empty(0, dtype=np.int64)

    @property
    def stochastic(self) -> bool:
        return self.batch > 0

    def next(self) -> torch.Tensor | None:
        if not self.stochastic:
            return None
        if self._perm.size < self.batch:
            self._perm = np.concatenate([self._perm, self.rng.permutation(self.n)])
        idx, self._perm = self._perm[: self.batch], self._perm[self.batch :]
        return torch.as_tensor(idx, dtype=torch.long, device=self.device)


def _clone(t: Tensors) -> Tensors:
    return {k: v.detach().clone() for k, v in t.items()}


class _MinimaxStep(Step):
    """One minimax iteration for the shared run loop: gradients (divergence, and the deterministic
    stationarity test before the move), the rule's update, the stochastic test after it."""

    def __init__(
        self,
        problem: MinimaxProblem,
        rule: StepRule,
        ctx: RunContext,
        settings: LoopSettings,
        oracle: MinimaxOracle,
        sampler: Sampler,
        x: Tensors,
        y: Tensors,
        p0: float,
        g_first: float,
        tol: float,
    ) -> None:
        self.problem, self.rule, self.ctx, self.settings = problem, rule, ctx, settings
        self.oracle, self.sampler, self.x, self.y = oracle, sampler, x, y
        self.g_first = g_first
        self.tol_abs = tol * p0
        self.threshold = self.tol_abs
        self.best = KeepBest({**x, **y})  # the lowest stationarity proxy (not the objective)
        self.best.take(p0)
        self.verifications: list[dict[str, Any]] = []
        self.batch: torch.Tensor | None = None
        self.gx: Tensors = {}
        self.gy: Tensors = {}
        self.last_f = 0.0
        self.t: float = 0

    def consider(self, p: float) -> bool:
        """Track the best iterate; True when the current point is verified stationary (an inner solve)."""
        self.best.offer(p)
        if p > self.threshold:
            return False
        s, ctx = self.settings, self.ctx
        point = to_numpy({**self.x, **self.y})
        rep = stationarity_report(self.problem, point, ctx.device, s.inner_iters, convex_concave="no", seed=ctx.seed)
        self.verifications.append({"iteration": self.t, "proxy": p, "grad_phi_norm": rep["grad_phi_norm"]})
        g = rep["grad_phi_norm"]
        if g is not None and g <= self.tol_abs:
            self.best.take(p)
            return True
        self.threshold = p / 10.0
        return False

    def measure(self, t: float) -> End | None:
        self.t = t
        x, y, oracle = self.x, self.y, self.oracle
        self.batch = self.sampler.next()
        f, self.gx, self.gy = oracle.grads(x, y, self.batch)
        gnorm = math.sqrt(sq_norm(self.gx) + sq_norm(self.gy))  # inf or nan when any entry is
        if not (math.isfinite(gnorm) and math.isfinite(float(f))) or gnorm > BLOWUP * max(self.g_first, 1e-30):
            return diverged()
        self.last_f = float(f)
        if not self.sampler.stochastic and self.consider(oracle.proxy(x, y, self.gx, self.gy)):
            return End(Status.CONVERGED)
        return None

    def update(self, t: float) -> End | None:
        x, y = self.x, self.y
        self.rule.update(int(t), x, y, self.gx, self.gy, self.batch, self.oracle)
        if not math.isfinite(sq_norm(x) + sq_norm(y)):
            return diverged(counted=True)
        return None

    def row(self, t: float, value: float | None, ctx: RunContext) -> None:
        ctx.report(self.last_f)

    def check(self, t: float) -> End | None:
        """Stochastic runs: the full-batch proxy every check_every steps."""
        self.t = t
        x, y, oracle = self.x, self.y, self.oracle
        _, fgx, fgy = oracle.grads(x, y, None)
        if finite(*fgx.values(), *fgy.values()) and self.consider(oracle.proxy(x, y, fgx, fgy)):
            return End(Status.CONVERGED)
        return None


def minimax_loop(
    problem: MinimaxProblem,
    rule: StepRule,
    ctx: RunContext,
    settings: LoopSettings,
    callback: Callback | None = None,
) -> RawSolution:
    """Run `rule` from the seeded feasible start until converged, diverged or out of budget.

    Convergence: proxy ≤ tol·proxy₀ (relative), then verified by ‖∇Φ‖ ≤ tol·proxy₀ from an inner
    solve; a failed verification tightens the proxy threshold tenfold and the loop goes on.
    `callback(t, x, y)` (for benchmarks) may stop the run by returning True.
    The iterations run in the shared loop (backends/loop.py); this function sets it up and reports.
    """
    oracle = MinimaxOracle(problem, ctx)
    start = init_tensors(problem.min_vars + problem.max_vars, ctx, requires_grad=False)
    x = {k: start[k] for k in oracle.x_names}
    y = {k: start[k] for k in oracle.y_names}
    sampler = Sampler(problem.objective.n_samples, settings.batch, ctx.seed, ctx.device)
    max_iter = ctx.max_iter if ctx.max_iter is not None else DEFAULT_MAX_ITER
    tol = default_tol(ctx)
    check_every = settings.check_every or (max(1, math.ceil(sampler.n / sampler.batch)) if sampler.stochastic else 1)

    f0, gx0, gy0 = oracle.grads(x, y, None)
    if not finite(f0, *gx0.values(), *gy0.values()):
        raise ValueError("the minimax objective is not finite at the starting point")
    p0 = oracle.proxy(x, y, gx0, gy0)
    g_first = math.sqrt(sq_norm(gx0) + sq_norm(gy0))
    tol_abs = tol * p0
    step = _MinimaxStep(problem, rule, ctx, settings, oracle, sampler, x, y, p0, g_first, tol)
    stopped_by_callback = False

    def stop_here(t: float) -> bool:
        nonlocal stopped_by_callback
        stopped_by_callback = callback is not None and callback(int(t), x, y)
        return stopped_by_callback

    if p0 == 0.0:
        status: Status = Status.CONVERGED
        stop, t = "converged", 0
    else:
        options = LoopOptions(
            max_iter=max_iter,
            report_every=settings.report_every,
            check_every=check_every if sampler.stochastic else 0,
            restore="never",  # a diverged run returns the best-proxy point below, without copying it back
        )
        # stagnation (stopping.py): the best proxy has not fallen by 1% in `patience` iterations and in as
        # many iterations and seconds again as it took to reach it (a cycling or creeping run ends early)
        stagnation = Stagnation(settings.patience, rtol=1e-2, floor=0.0)
        end = run_loop(step, ctx, options, keep=step.best, stagnation=stagnation, callback=stop_here)
        status, stop, t = end.status or Status.ITERATION_LIMIT, end.stop, int(end.iterations)
    best, best_p, verifications = step.best.state, step.best.value, step.verifications

    # The last iterate is returned (a converged run stopped at the verified point); the best-proxy
    # iterate only when the run diverged, since the unit-step proxy need not decrease monotonically.
    final = best
    proxy_final = best_p
    if status != Status.DIVERGED and finite(*x.values(), *y.values()):
        final = _clone({**x, **y})
        _, fgx, fgy = oracle.grads(x, y, None)
        proxy_final = oracle.proxy(x, y, fgx, fgy) if finite(*fgx.values(), *fgy.values()) else math.inf
    values = to_numpy(final)
    objective = float(problem.objective.value(values))
    ctx.report(objective)
    info: dict[str, Any] = {
        "proxy": proxy_final,
        "proxy_best": best_p,
        "proxy_initial": p0,
        "tol_relative": tol,
        "tol_absolute": tol_abs,
        "batch": sampler.batch or None,
        "gradient_evaluations": oracle.evaluations,
        "verifications": verifications,
        **rule.info(),
    }
    info["stop"] = stop
    if stopped_by_callback:
        info["stopped_by_callback"] = True
    checks: dict[str, tuple[bool, str]] = {}
    if settings.final_report:
        verified = stationarity_report(
            problem, values, ctx.device, settings.inner_iters, convex_concave=settings.convex_concave, seed=ctx.seed
        )
        info["stationarity"] = verified
        g = verified["grad_phi_norm"]
        checks["stationarity"] = (
            g is not None and g <= tol_abs,
            f"‖∇Φ(x)‖ = {g} vs tol {tol_abs:.3g} (inner solve: {verified['inner']['iterations']} iterations)",
        )
        if verified["duality_gap"] is not None:
            gap = verified["duality_gap"]
            limit = math.sqrt(tol) * max(1.0, abs(objective))  # the gap is quadratic in the distance to the saddle
            checks["duality_gap"] = (gap <= limit, f"Φ(x) − Ψ(y) = {gap:.3g} vs {limit:.3g}")
    return RawSolution(
        status=status,
        values=values,
        objective=objective,
        bound=None,
        iterations=t,
        history=list(ctx.history),
        info=info,
        checks=checks,
    )


def minimax_refusal(form: Form, kinds: frozenset[str]) -> str | None:
    """The refusal shared by the minimax backends: kind, general constraints, non-real variables, domains."""
    if form.kind not in kinds:
        return f"solves minimax problems, not {form.kind}"
    if form.constraints:
        return (
            f"honours only variable domains (box, ball, simplex) and cannot enforce the general constraint "
            f"'{form.constraints[0]}'"
        )
    for v in form.variables:
        if v.kind != "real":
            return f"needs real variables, but '{v.name}' is {v.kind}"
        if v.domain not in ("free", "box", "simplex", "ball"):
            return f"cannot project onto the domain '{v.domain}' of '{v.name}'"
    return None
