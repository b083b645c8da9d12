"""The `penalty` baseline for simple bilevel problems: minimize f + g/ε with ε decreasing.

Each stage minimizes P_ε = f + g/ε from the previous stage's point: L-BFGS (torch, strong Wolfe
line search) when both levels are deterministic and the variables are free, otherwise projected
(minibatch) gradient steps with momentum and the same independent minibatches as SDBPG.
It is what a user without a bilevel method would write; `benchmarks/bilevel.py` compares against it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import Backend, RawSolution, RunContext, Status
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
from optlang.backends.common import check_range_or_auto
from optlang.backends.loop import End, LoopOptions, Step, diverged, run_loop
from optlang.lazy import lazy_module
from optlang.problem import BilevelProblem
from optlang.result import jsonable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

# stage rule for stochastic levels, chosen for this baseline on held-out regressions (docs/backends/sdbpg.md)
PATIENCE_STOCHASTIC = 10
MIN_STAGE_STOCHASTIC = 10
MOMENTUM_STOCHASTIC = 0.8  # constant heavy ball (the restarted k/(k+3) schedule: 220/240 against 170/160 evaluations)


@dataclass
class PenaltyOptions:
    """Options of the penalty baseline (defaults documented in docs/backends/sdbpg.md)."""

    eps0: float = 1.0  # first penalty parameter ε₀
    eps_decay: float = 0.1  # ε ← decay·ε after each stage
    eps_min: float = 1e-9  # stop decreasing below this
    inner: str = "auto"  # auto | lbfgs | sgd  (auto: lbfgs when deterministic and unconstrained)
    inner_iters: int = 2000  # at most this many steps per stage
    inner_tol: float = 1e-3  # stage ends when ‖∇P_ε‖ ≤ inner_tol·max(1, ‖∇f‖) (lbfgs) or the step EMA stalls
    stall_ratio: float = 0.01  # sgd: stage ends when the windowed ‖E ∇P‖/max(‖∇f‖, ‖∇g‖/ε) falls below this …
    patience: int = -1  # sgd: … or when it has not shrunk 10% in this many steps (−1: PATIENCE_STOCHASTIC or 1000)
    min_stage: int = -1  # sgd: steps before a stage may end (−1: MIN_STAGE_STOCHASTIC if stochastic, else 50)
    split_batch: bool = True  # sgd, stochastic g: two half batches make ⟨∇P₁, ∇P₂⟩ an unbiased ‖E ∇P‖²
    step_scale: float = 1.0  # sgd step c/(L_f + L_g/ε)
    momentum: float = -1.0  # sgd: β in [0, 1); −1: MOMENTUM_STOCHASTIC if stochastic, else k/(k+3) with restarts
    batch_f: int = 0  # minibatch for ∇f: 0 auto (full when ≤ 4096 samples), -1 full, k > 0 size
    batch_g: int = 0
    history_size: int = 20  # lbfgs memory
    tol_g: float = 1e-4  # lower level: projected ‖∇g‖ ≤ tol_g · max(1, ‖∇g(x₀)‖)
    lipschitz_iters: int = 15
    report_every: int = 10
    trace_points: int = 200
    eval_samples: int = 4096


# the declared meaning of the options (checked by make_options, so `optlang check` sees them); patience,
# min_stage, batch_f and batch_g mean "automatic" when negative and are not in the table; momentum is in
# [0, 1) or −1 (automatic), checked by Penalty.check_options
RANGES = {
    "eps0": ">0",
    "eps_decay": "(0,1)",
    "eps_min": ">=0",
    "inner_iters": ">=1",
    "inner_tol": ">0",
    "stall_ratio": ">=0",
    "step_scale": ">0",
    "history_size": ">=1",
    "tol_g": ">0",
    "lipschitz_iters": ">=1",
    "report_every": ">=1",
    "trace_points": ">=1",
    "eval_samples": ">=1",
}
CHOICES = {"inner": ("auto", "lbfgs", "sgd")}


class Penalty(Backend):
    """Quadratic-free penalty continuation f + g/ε: the baseline for simple bilevel problems."""

    name = "penalty"
    kinds = frozenset({"bilevel"})
    summary = "penalty continuation f + g/ε with L-BFGS or minibatch gradient inner solves (baseline)"
    priority = 60
    Options = PenaltyOptions
    option_ranges = RANGES
    option_choices = CHOICES
    preload = ("torch._dynamo",)  # torch.optim imports it on first use

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """The declared ranges and choices, and `momentum` in [0, 1) or −1 (automatic)."""
        super().check_options(options, auto)
        check_range_or_auto(self.name, options, "momentum", "[0,1)", auto)

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        return refuse_bilevel(form, self.name)

    def solve(self, problem: BilevelProblem, options: PenaltyOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # make_options checked them; options built by hand are checked here
        return _PenaltyRun(problem, options, ctx).run()


class _PenaltyRun:
    """One penalty solve: stages of inner minimizations, monitoring, the RawSolution."""

    def __init__(self, problem: BilevelProblem, o: PenaltyOptions, ctx: RunContext) -> None:
        self.p, self.o, self.ctx = problem, o, ctx
        self.flat = FlatVars(problem.variables)
        self.gen_f = make_generator(ctx, 1)
        self.gen_g = make_generator(ctx, 2)
        self.of = Oracle(problem.upper, self.flat, ctx, o.batch_f, self.gen_f)
        self.og = Oracle(problem.lower, self.flat, ctx, o.batch_g, self.gen_g)
        self.tol = ctx.tol or 1e-4  # the common option `tol`
        self.max_iter = ctx.max_iter if ctx.max_iter is not None else 100_000
        self.tracer = Tracer(o.trace_points)
        gen_e = make_generator(ctx, 3)
        self.eval_f = (
            None
            if (self.of.n or 0) <= o.eval_samples
            else torch.randperm(int(self.of.n or 0), generator=gen_e, device=ctx.device)[: o.eval_samples]
        )
        self.eval_g = (
            None
            if (self.og.n or 0) <= o.eval_samples
            else torch.randperm(int(self.og.n or 0), generator=gen_e, device=ctx.device)[: o.eval_samples]
        )
        stochastic = self.of.stochastic or self.og.stochastic
        self.patience = o.patience if o.patience > 0 else (PATIENCE_STOCHASTIC if stochastic else 1000)
        self.min_stage = o.min_stage if o.min_stage >= 0 else (MIN_STAGE_STOCHASTIC if stochastic else 50)
        self.momentum = o.momentum if o.momentum >= 0 else (MOMENTUM_STOCHASTIC if stochastic else -1.0)
        self.use_lbfgs = o.inner == "lbfgs" or (o.inner == "auto" and not stochastic and not self.flat.needs_projection)
        if self.use_lbfgs and self.flat.needs_projection:
            from optlang.errors import OptionError

            raise OptionError("inner", "inner = 'lbfgs' cannot honour the variable domains; use inner = 'sgd'")
        self.t: float = 0  # gradient evaluations: LBFGS stages add the oracle's (fractional) call count
        self.stages = 0
        self.eps = o.eps0
        self.lower_ok = False

    def run(self) -> RawSolution:
        o, ctx, flat = self.o, self.ctx, self.flat
        x = flat.project_(flat.initial(ctx))
        self.Lf = max(lipschitz(self.of, x, o.lipschitz_iters, self.gen_f), 1e-12)
        self.Lg = max(lipschitz(self.og, x, o.lipschitz_iters, self.gen_g), 1e-12)
        if not (math.isfinite(self.Lf) and math.isfinite(self.Lg)):
            return self._finish(x, Status.DIVERGED, "curvature estimate is not finite at the start")
        with torch.enable_grad():
            _, gg0 = self._full_grad(self.og, x, self.eval_g)
        self.g0_norm = float(torch.linalg.vector_norm(gg0))
        self.start_scale = max(1.0, float(torch.linalg.vector_norm(x)))
        self.best = x.clone()
        status: Status | None = None
        note = ""
        while status is None:
            stage = self._stage_lbfgs if self.use_lbfgs else self._stage_sgd
            x, status, note = stage(x)
            if status is not None:
                break
            self.stages += 1
            done = self._monitor(x)
            if done is None:
                status, note = Status.DIVERGED, "non-finite objective after a stage"
                break
            if done:
                status = Status.CONVERGED
                break
            if self.eps * o.eps_decay < o.eps_min:
                status, note = Status.ITERATION_LIMIT, f"ε reached its floor {o.eps_min:g} before the tolerances"
                break
            self.eps *= o.eps_decay
        if status == Status.DIVERGED:
            x = self.best
        return self._finish(x, status, note)

    # --- one stage each way, each run by the shared loop (backends/loop.py) on the run's iteration counter
    def _stage(self, step: _LBFGSStage | _SGDStage, x: torch.Tensor) -> tuple[torch.Tensor, Status | None, str]:
        """Run one stage's steps from the run's counter; its own end (status None) or a limit or divergence."""
        o = self.o
        # limits before each step (time or interrupt first), a history row every report_every iterations
        # (L-BFGS: after every step), the stage's end test after each step
        every = 1 if isinstance(step, _LBFGSStage) else o.report_every
        end = run_loop(step, self.ctx, LoopOptions(max_iter=self.max_iter, start=self.t, report_every=every))
        self.t = end.iterations
        return step.result(end.status), end.status, end.note

    def _stage_lbfgs(self, x: torch.Tensor) -> tuple[torch.Tensor, Status | None, str]:
        return self._stage(_LBFGSStage(self, x), x)

    def _stage_sgd(self, x: torch.Tensor) -> tuple[torch.Tensor, Status | None, str]:
        if self.o.inner_iters <= 0:
            return x, None, ""
        return self._stage(_SGDStage(self, x), x)

    # --- monitoring
    def _full_grad(
        self, oracle: Oracle, x: torch.Tensor, subset: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        xr = x.detach().requires_grad_(True)
        val = oracle.fn(self.flat.unpack(xr), subset)
        gr = torch.autograd.grad(val, xr, allow_unused=True)[0] if val.requires_grad else None
        return val.detach(), (torch.zeros_like(xr) if gr is None else gr.detach())

    def _report(self, x: torch.Tensor) -> None:
        """History/progress row at x (monitoring subsets; not counted as algorithm gradients)."""
        with torch.no_grad():
            f = float(self.of.value(x, self.eval_f))
            g = float(self.og.value(x, self.eval_g))
        if math.isfinite(f) and math.isfinite(g):
            self.best = x.clone()
        row = {
            "iter": self.t,
            "time": self.ctx.elapsed(),
            "f": f,
            "g": g,
            "eps": self.eps,
            "lam": 1.0 / self.eps,
            "grad_evals": self.of.calls + self.og.calls,
            "samples": self.of.samples + self.og.samples,
        }
        if self.p.lower_optimum is not None:
            row["gap"] = g - float(self.p.lower_optimum)
        self.tracer.add(row)
        flat = self.flat
        self.ctx.report(
            f,
            None,
            iteration=self.t,
            g=g,
            lam=1.0 / self.eps,
            lam_max=1.0 / self.eps,
            grad_evals=row["grad_evals"],
            samples=row["samples"],
            point=lambda: flat.to_numpy(x),
        )

    def _monitor(self, x: torch.Tensor) -> bool | None:
        """End-of-stage test: projected ‖∇g‖ and the KKT residual within tolerance (None: non-finite)."""
        with torch.enable_grad():
            fv, gf = self._full_grad(self.of, x, self.eval_f)
            gv, gg = self._full_grad(self.og, x, self.eval_g)
        if not (math.isfinite(float(fv)) and math.isfinite(float(gv))):
            return None
        with torch.no_grad():
            flat = self.flat
            pg = (
                float(torch.linalg.vector_norm(x - flat.project_(x - gg)))
                if flat.needs_projection
                else float(torch.linalg.vector_norm(gg))
            )
            eps = float(torch.finfo(self.ctx.dtype).eps)
            scale = max(1.0, float(torch.linalg.vector_norm(gf)))
            nx = float(torch.linalg.vector_norm(x))
        ok_g = pg <= self.o.tol_g * max(1.0, self.g0_norm)

        def tol_at(lam: float) -> float:
            return max(self.tol * scale, min(2.0 * eps * (self.Lf + lam * self.Lg) * nx, FLOOR_CAP * scale))

        subset = self.eval_g
        lam, kkt, _ = kkt_test(
            flat,
            x,
            gf,
            gg,
            lambda z: self.og.fn(flat.unpack(z), subset),
            tol_at,
            pg <= LOWER_AT_MIN * self.o.tol_g * max(1.0, self.g0_norm),
            MONITOR_CURVATURE_DIM,
        )
        ok_f = kkt <= tol_at(lam)
        self.lower_ok = ok_g
        return self.lower_ok and ok_f

    def _finish(self, x: torch.Tensor, status: Status, note: str = "") -> RawSolution:
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
            status = Status.FEASIBLE
        info: dict[str, Any] = {
            "inner": "lbfgs" if self.use_lbfgs else "sgd",
            "eps_final": self.eps,
            "stages": self.stages,
            "lower_reached": bool(checks["lower_stationary"][0] and checks.get("lower_gap", (True, ""))[0]),
            "lam_max": 1.0 / self.eps,
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
            iterations=self.t,  # type: ignore[arg-type]  # counted in oracle calls, fractional for half batches
            history=list(self.ctx.history),
            info=jsonable(info),
            checks=checks,
        )


class _LBFGSStage(Step):
    """One penalty stage by torch L-BFGS (strong Wolfe) on P_ε; each step counts the oracle calls it made.
    The stage ends when ‖∇P_ε‖ is small, after inner_iters counted calls, or when the line search stalls."""

    def __init__(self, run: _PenaltyRun, x: torch.Tensor) -> None:
        o = run.o
        self.run = run
        self.xp = x.detach().clone().requires_grad_(True)
        self.opt = torch.optim.LBFGS(
            [self.xp],
            lr=1.0,
            max_iter=o.report_every,
            history_size=o.history_size,
            tolerance_grad=0.0,
            tolerance_change=0.0,
            line_search_fn="strong_wolfe",
        )
        self.state = {"gnorm": math.inf, "gf": 1.0}
        self.steps: float = 0
        self.last: float | None = None
        self.loss = math.inf
        self.finished = False

    def _closure(self) -> torch.Tensor:
        run, xp = self.run, self.xp
        self.opt.zero_grad()
        fv, gf = run.of.grad(xp.detach(), None)
        gv, gg = run.og.grad(xp.detach(), None)
        grad = gf + gg / run.eps
        xp.grad = grad
        self.state["gnorm"] = float(torch.linalg.vector_norm(grad))
        self.state["gf"] = float(torch.linalg.vector_norm(gf))
        return fv + gv / run.eps

    def update(self, t: float) -> End | None:
        run = self.run
        before = run.of.calls
        loss = self.opt.step(self._closure)
        self.count = max(1, run.of.calls - before)
        self.steps += self.count
        xd = self.xp.detach()
        if not bool(torch.isfinite(loss)) or not bool(torch.isfinite(xd).all()):
            return diverged(f"non-finite penalty value at ε = {run.eps:g}", counted=True)
        self.loss = float(loss)
        return None

    def row(self, t: float, value: float | None, ctx: RunContext) -> None:
        self.run.t = t
        self.run._report(self.xp.detach().clone())  # LBFGS updates xp in place; the report keeps its own copy

    def check(self, t: float) -> End | None:
        run, o = self.run, self.run.o
        xd = self.xp.detach()
        eps = float(torch.finfo(run.ctx.dtype).eps)
        floor = 2.0 * eps * (run.Lf + run.Lg / run.eps) * float(torch.linalg.vector_norm(xd))
        stalled = self.last is not None and self.loss >= self.last  # the line search made no progress
        self.last = self.loss
        state = self.state
        if state["gnorm"] <= max(o.inner_tol * max(1.0, state["gf"]), floor) or self.steps >= o.inner_iters or stalled:
            self.finished = True
            return End(None)
        return None

    def result(self, status: Status | None) -> torch.Tensor:
        """The stage's point: a copy when the stage finished, else the iterate itself."""
        xd = self.xp.detach()
        return xd.clone() if self.finished else xd


class _SGDStage(Step):
    """One penalty stage by projected (minibatch) gradient steps with momentum on P_ε, step c/(L_f + L_g/ε);
    it ends after inner_iters steps or when the windowed expected gradient stalls (StallTest)."""

    def __init__(self, run: _PenaltyRun, x: torch.Tensor) -> None:
        o = run.o
        self.run = run
        self.eta = o.step_scale / (run.Lf + run.Lg / run.eps)
        self.x, self.x_prev = x, x.clone()
        self.k = 0
        self.local = 0  # steps taken in this stage
        self.stall = StallTest(o.stall_ratio, run.patience, run.min_stage)
        self.split = o.split_batch and run.og.stochastic and (run.og.batch or 0) >= 2
        self.dd = self.scale2 = 0.0

    def update(self, t: float) -> End | None:
        run, flat, x = self.run, self.run.flat, self.x
        beta = (run.momentum if run.momentum >= 0 else self.k / (self.k + 3.0)) if self.local > 0 else 0.0
        self.k += 1
        y = x + beta * (x - self.x_prev) if beta > 0 else x
        if beta > 0 and flat.needs_projection:
            y = flat.project_(y.clone())
        fv, gf = run.of.grad(y, run.of.draw())
        if self.split:  # two independent half batches, as in sdbpg: the same cost as one batch
            gv, gg, gg1, gg2 = run.og.grad_halves(y)
        else:
            gv, gg = run.og.grad(y, run.og.draw())
        d = gf + gg / run.eps
        dd = float((gf + gg1 / run.eps) @ (gf + gg2 / run.eps)) if self.split else float(d @ d)
        x_new = y - self.eta * d
        if flat.needs_projection:
            flat.project_(x_new)
        bad = not (bool(torch.isfinite(x_new).all()) and math.isfinite(float(fv)) and math.isfinite(float(gv)))
        if bad or float(torch.linalg.vector_norm(x_new)) > BLOWUP * run.start_scale:
            return diverged(f"non-finite or exploding iterate at ε = {run.eps:g}")
        if run.momentum < 0 and float(d @ (x_new - x)) > 0:
            self.k = 0
        self.x_prev, self.x = x, x_new
        self.local += 1
        self.dd = dd
        self.scale2 = max(float(gf @ gf), float(gg @ gg) / run.eps**2, 1e-60)
        return None

    def row(self, t: float, value: float | None, ctx: RunContext) -> None:
        self.run.t = t
        self.run._report(self.x)

    def check(self, t: float) -> End | None:
        if self.stall.update(self.local, self.dd / self.scale2) or self.local >= self.run.o.inner_iters:
            return End(None)
        return None

    def result(self, status: Status | None) -> torch.Tensor:
        return self.x
