"""`gd`: the smooth-kind baseline — projected L-BFGS or Adam in torch.

L-BFGS (strong-Wolfe line search) runs on unconstrained variables; with domains (box, simplex,
ball, nonnegativity) it switches to projected Adam, or projected gradient with backtracking when
chosen. General constraints are refused: this backend cannot honour them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optlang.analysis import Form
from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.common import KeepBest, init_tensors, project_all_, to_numpy
from optlang.backends.loop import End, LoopOptions, Step, diverged, run_loop
from optlang.lazy import lazy_module
from optlang.problem import SmoothProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


METHODS = ("auto", "lbfgs", "adam", "pgd")


@dataclass
class GDOptions:
    """method: auto (L-BFGS when unconstrained, else projected Adam) | lbfgs | adam | pgd."""

    method: str = "auto"
    lr: float = 0.05
    max_iter: int = 5000
    tol: float = 1e-7
    restarts: int = 1
    polish_iter: int = 500  # float64 iterations after a float32 run (0: none)


class GD(Backend):
    name = "gd"
    kinds = frozenset({"smooth"})
    summary = "projected L-BFGS / Adam in torch (local optimum; box, simplex, ball, nonnegativity)"
    priority = 60
    Options = GDOptions
    # max_iter and tol are the common options (checked with them); polish_iter 0: no float64 polish
    option_ranges = {"lr": ">0", "restarts": ">=1", "polish_iter": ">=0"}
    option_choices = {"method": METHODS}
    preload = ("torch._dynamo",)  # torch.optim imports it on first use

    def refuse(self, form: Form) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        if form.constraints:
            return (
                f"cannot honour general constraints ({'; '.join(form.constraints)}); only variable domains "
                "are projected"
            )
        return None

    @staticmethod
    def method_for(problem: SmoothProblem, options: GDOptions) -> str:
        """The method that runs: `auto` and an L-BFGS that domains forbid resolved (the word itself is one
        of METHODS: option_choices, checked by make_options and by solve)."""
        method = options.method
        constrained = any(v.domain.kind != "free" for v in problem.variables)
        if method == "auto":
            method = "pgd" if constrained else "lbfgs"
        if method == "lbfgs" and constrained:
            method = "pgd"
        return method

    def solve_candidates(
        self, problem: SmoothProblem, candidates: list[GDOptions], ctx: RunContext
    ) -> list[RawSolution] | None:
        """`solve` at each of several options that differ only in Adam's `lr`, the Adam phase as one batched
        run (gd_batched.py), each float64 polish its own; None when that does not apply (then fit one by one)."""
        import dataclasses

        from optlang.backends.smooth.gd_batched import adam_phase, vmappable

        first = candidates[0]
        same = [dataclasses.replace(o, lr=first.lr) == first for o in candidates]
        if not all(same) or first.restarts != 1 or self.method_for(problem, first) != "adam":
            return None
        f = problem.objective.compile(ctx.device, ctx.dtype)
        x0 = init_tensors(problem.variables, ctx)
        if not vmappable(f, x0):
            return None
        tol = ctx.tol or first.tol
        ends = adam_phase(
            f, x0, problem.variables, [o.lr for o in candidates], ctx.max_iter or first.max_iter, tol, ctx
        )
        out = []
        for o, e in zip(candidates, ends, strict=True):
            x = {k: t.detach().clone().requires_grad_(True) for k, t in e.x.items()}
            st, iters, val = self._polish(problem, o, ctx, "adam", x, e.status, e.iterations, e.value, tol)
            out.append(
                RawSolution(status=st, values=to_numpy(x), objective=val, iterations=iters, info={"method": "adam"})
            )
        return out

    def _polish(self, problem, options, ctx, method, x, st, iters, val, tol):
        """float32 cannot resolve the last digits of f: polish in float64 from the float32 point (x updated)."""
        if ctx.dtype != torch.float64 and st != Status.DIVERGED and not ctx.should_stop():
            f64 = problem.objective.compile(ctx.device, torch.float64)
            for k, t in list(x.items()):
                x[k] = t.detach().to(torch.float64).requires_grad_(True)
            if method == "lbfgs":
                st, more, val = self._lbfgs(f64, x, options.polish_iter, tol, ctx)
            else:
                st, more, val = self._first_order(f64, x, problem, "pgd", options.lr, options.polish_iter, tol, ctx)
            iters += more
        return st, iters, val

    def solve(self, problem: SmoothProblem, options: GDOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # (options built by hand, not by make_options)
        method = self.method_for(problem, options)
        f = problem.objective.compile(ctx.device, ctx.dtype)
        max_iter = ctx.max_iter or options.max_iter
        tol = ctx.tol or options.tol
        best: dict | None = None
        best_val = float("inf")
        total_iters = 0
        status = Status.CONVERGED
        for r in range(max(1, options.restarts)):
            ctx_seed = ctx.seed + r
            g = torch.Generator().manual_seed(ctx_seed)
            x = init_tensors(problem.variables, ctx)
            if r:
                with torch.no_grad():
                    for t in x.values():
                        t.add_(0.5 * torch.randn(t.shape, generator=g).to(t))
                project_all_(problem.variables, x)
            if method == "lbfgs":
                st, iters, val = self._lbfgs(f, x, max_iter, tol, ctx)
            else:
                st, iters, val = self._first_order(f, x, problem, method, options.lr, max_iter, tol, ctx)
            st, iters, val = self._polish(problem, options, ctx, method, x, st, iters, val, tol)
            total_iters += iters
            if st == Status.DIVERGED and best is not None:
                continue
            if val < best_val or best is None:
                best_val, best, status = val, to_numpy(x), st
            if ctx.should_stop():
                break
        assert best is not None
        return RawSolution(
            status=status, values=best, objective=best_val, iterations=total_iters, info={"method": method}
        )

    def _lbfgs(self, f, x, max_iter, tol, ctx):
        """L-BFGS in rounds of 20 inner iterations (one loop iteration each); returns (status, iterations, value)."""
        best = KeepBest(x)
        step = _LBFGSStep(f, x, tol)
        rounds = max(1, max_iter // 20)
        end = run_loop(step, ctx, LoopOptions(max_iter=rounds, poll_first=False, report_every=1), keep=best)
        it = int(end.iterations)
        if end.status == Status.DIVERGED:
            return Status.DIVERGED, it * 20, best.value
        if end.status in (Status.CONVERGED, Status.ITERATION_LIMIT):
            return end.status, it * 20, float(f(x).detach())
        return end.status, it * 20, step.loss

    def _first_order(self, f, x, problem, method, lr, max_iter, tol, ctx):
        """Projected Adam or projected gradient with backtracking; returns (status, iterations, value)."""
        best = KeepBest(x)
        step = _FirstOrderStep(f, x, problem, method, lr, tol)
        end = run_loop(step, ctx, LoopOptions(max_iter=max_iter, poll_first=False, report_every=10), keep=best)
        if end.status == Status.DIVERGED:
            return Status.DIVERGED, int(end.iterations), best.value
        if end.status != Status.ITERATION_LIMIT:
            return end.status, int(end.iterations), float(f(x).detach())
        with torch.no_grad():
            final = float(f(x))
        if final > best.value:
            best.restore()
            final = best.value
        return Status.ITERATION_LIMIT, max_iter, final


class _LBFGSStep(Step):
    """One round of torch L-BFGS (20 inner iterations, strong Wolfe); converged on a small gradient or no change."""

    def __init__(self, f, x, tol) -> None:
        self.f, self.x, self.tol = f, x, tol
        self.params = list(x.values())
        self.opt = torch.optim.LBFGS(
            self.params,
            lr=1.0,
            max_iter=20,
            history_size=20,
            line_search_fn="strong_wolfe",
            tolerance_grad=tol,
            tolerance_change=1e-12,
        )
        self.prev = float("inf")
        self.loss = float("inf")

    def _closure(self):
        self.opt.zero_grad()
        loss = self.f(self.x)
        loss.backward()
        return loss

    def update(self, t):
        self.loss = float(self.opt.step(self._closure).detach())
        return self.loss

    def check(self, t):
        gnorm = max(float(p.grad.abs().max()) if p.grad is not None else 0.0 for p in self.params)
        loss = self.loss
        if gnorm <= self.tol or abs(self.prev - loss) <= 1e-12 * max(1.0, abs(loss)):
            return End(Status.CONVERGED)
        self.prev = loss
        return None


class _FirstOrderStep(Step):
    """Projected Adam, or projected gradient with Armijo backtracking; converged when x stops moving."""

    def __init__(self, f, x, problem, method, lr, tol) -> None:
        self.f, self.x, self.problem, self.tol = f, x, problem, tol
        self.params = list(x.values())
        self.opt = torch.optim.Adam(self.params, lr=lr) if method == "adam" else None
        self.step = lr
        self.moved = 0.0

    def measure(self, t):
        for p in self.params:
            p.grad = None
        self.loss = self.f(self.x)
        value = float(self.loss.detach())
        return value if math.isfinite(value) else diverged(counted=True)  # the diverging iteration counts

    def update(self, t):
        params, x, f = self.params, self.x, self.f
        self.loss.backward()
        val = float(self.loss.detach())
        old = [p.detach().clone() for p in params]
        if self.opt is not None:
            self.opt.step()
            project_all_(self.problem.variables, x)
        else:  # projected gradient with backtracking (Armijo on the projected step)
            grads = [p.grad.detach().clone() for p in params]
            self.step = min(self.step * 2.0, 1e6)
            while True:
                with torch.no_grad():
                    for p, o, g in zip(params, old, grads, strict=True):
                        p.copy_(o - self.step * g)
                project_all_(self.problem.variables, x)
                with torch.no_grad():
                    new = float(f(x))
                    moved = sum(float(((p - o) ** 2).sum()) for p, o in zip(params, old, strict=True))
                if new <= val - 0.5 / self.step * moved or self.step < 1e-12:
                    break
                self.step *= 0.5
        with torch.no_grad():
            self.moved = max(float((p - o).abs().max()) for p, o in zip(params, old, strict=True))
        return None

    def check(self, t):
        scale = max(1.0, max(float(p.detach().abs().max()) for p in self.params))
        return End(Status.CONVERGED) if self.moved <= self.tol * scale else None
