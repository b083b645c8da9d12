"""Minimax sweeps as ONE batched problem (`optlang sweep`, `Model.sweep`).

B points of one min-max model that differ only in constants (a swept `param`, e.g. a regularization
weight) are solved together in float64 as min_x Φ_b(x), Φ_b(x) = max_y f_b(x, y): an outer batched
L-BFGS (`batched.lbfgs`) on x whose every evaluation runs an inner batched L-BFGS on y (the Danskin
gradient ∇Φ_b(x) = ∇_x f_b(x, y*_b(x)) at the inner maximizer), each point with its own curvature
pairs and line searches, every objective evaluation one `torch.func.vmap` call through the compiled
objective over the stacked variables and swept constants. The inner solves are warm-started from
the point's last maximizer, and the points along the path from their solved neighbours
(`batched.path_lbfgs`). This is sound where the inner problem has one maximizer (strongly concave
in y, as the games the sweep benchmark and tests use); the end-of-run check decides either way.

Each point is then verified exactly as a `gda` / `adasgda` single solve: `stationarity_report`
(float64 inner solve of Φ, ‖∇Φ‖, the duality gap when sampled curvature says convex-concave) against
the relative tolerance from the point's seeded start, and `verify` recomputes the objective.
Batched: free variables (no domains: the batched L-BFGS has no projection); the rest runs point by
point with the reason in the plan.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RawSolution, RunContext, Status
from optlang.backends.common import init_tensors
from optlang.backends.minimax.loop import MinimaxOracle, default_tol
from optlang.backends.minimax.stationarity import stationarity_report
from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch

    from optlang.result import Result
else:
    torch = lazy_module("torch")

BACKEND = "batched-minimax-lbfgs"
INNER_ITERS = 200
OUTER_ITERS = 500
INNER_GTOL = 1e-12
HISTORY = 8  # inner curvature pairs per point (the inner solves take a few steps; the two-loop runs over every slot)


def cannot_batch(models: list[Any], backend: str | None) -> str | None:
    """Why these points cannot share one batched minimax solve (None: they can)."""
    m = models[0]
    planned = m.plan(backend if backend not in (None, "", "auto") else None).chosen
    if backend not in (None, "", "auto", planned) or planned not in ("adasgda", "gda"):
        return f"backend '{backend or planned}': the batched solver replaces adasgda / gda only"
    if any(v.domain != "free" for v in m.form.variables):  # (per-element bounds are domains too)
        return "variables with domains (the batched nested L-BFGS has no projection)"
    if m.form.constraints:
        return "general constraints"
    return None


def solve(models: list[Any], seed: int = 0, max_iter: int | None = None) -> tuple[list[Result], str]:
    """Every point's minimax point in one batched nested L-BFGS; one verified Result each."""
    from optlang.batched import Layout, batched_function, call_batched, lbfgs, path_lbfgs
    from optlang.batched_solve import NotBatchable
    from optlang.verify import verify

    t0 = time.perf_counter()
    B = len(models)
    be = batched_function([mm.ir.objective.expr for mm in models])
    if be is None:
        raise NotBatchable("the points differ in structure (shapes or operations), not only in constants")
    compiled = [mm.compiled for mm in models]
    problem = compiled[0].problem
    lx = Layout(tuple(v.name for v in problem.min_vars), tuple(tuple(v.shape) for v in problem.min_vars))
    ly = Layout(tuple(v.name for v in problem.max_vars), tuple(tuple(v.shape) for v in problem.max_vars))
    ctx = RunContext(seed=seed, device="cpu", dtype="float64")
    start = {k: v.detach().numpy() for k, v in init_tensors(problem.min_vars + problem.max_vars, ctx).items()}
    zx0 = lx.pack([start] * B)
    Ycache = ly.pack([start] * B)  # each point's last inner maximizer: the next inner solve's start
    inner_iters: list[int] = []
    inner_failed = torch.zeros(B, dtype=torch.bool)

    def f_rows(zx: torch.Tensor, zy: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return call_batched(be, {**lx.unpack(zx), **ly.unpack(zy)}, rows)

    def value_and_grad(fn: Any, z: torch.Tensor, rows: torch.Tensor, sign: float) -> tuple[torch.Tensor, torch.Tensor]:
        zz = z.detach().requires_grad_(True)
        with torch.enable_grad():
            v = fn(zz, rows)
            (g,) = torch.autograd.grad(v.sum(), zz)
        return sign * v.detach(), sign * g.detach()

    def phi(zx: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Φ at zx (rows `rows`) by the inner batched L-BFGS on -f, and the Danskin gradient."""
        xs = zx.detach()

        def neg_f(zy: torch.Tensor, sub: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return value_and_grad(lambda z, r: f_rows(xs[sub], z, rows[r]), zy, sub, -1.0)

        inner = lbfgs(neg_f, Ycache[rows], max_iter=INNER_ITERS, tol=0.0, gtol=INNER_GTOL, history=HISTORY)
        Ycache[rows] = inner.z
        inner_iters.append(int(inner.iterations.max()) if len(inner.iterations) else 0)
        inner_failed[rows] |= torch.as_tensor(~inner.finite)
        zy = inner.z
        return value_and_grad(lambda z, r: f_rows(z, zy, rows), zx, torch.arange(len(rows)), 1.0)

    iters = max_iter if max_iter is not None else OUTER_ITERS
    out = path_lbfgs(phi, zx0, max_iter=iters, tol=0.0)
    # the final inner maximizers at the returned x (the cache holds the last evaluation, maybe a trial)
    phi(out.z, torch.arange(B))
    t_solve = time.perf_counter() - t0

    tol = default_tol(ctx)
    the_plan = models[0].plan()
    results: list[Result] = []
    for b, (mm, c) in enumerate(zip(models, compiled, strict=True)):
        values = {**lx.to_numpy(out.z, b), **ly.to_numpy(Ycache, b)}
        p0 = _start_proxy(c.problem, start, ctx)
        tol_abs = tol * p0
        diverged = not bool(out.finite[b]) or bool(inner_failed[b])
        finite = all(np.all(np.isfinite(v)) for v in values.values())
        info: dict[str, Any] = {
            "proxy_initial": p0,
            "tol_relative": tol,
            "tol_absolute": tol_abs,
            "sweep": {
                "batch": B,
                "index": b,
                "iterations": int(out.iterations[b]),
                "solver": BACKEND,
                "inner_iterations_max": max(inner_iters) if inner_iters else 0,
            },
        }
        checks: dict[str, tuple[bool, str]] = {}
        objective = None
        if finite:  # a diverged point's last iterate is reported and checked too, as by minimax_loop
            objective = float(c.problem.objective.value(values))
            o = _report_options(mm)
            rep = stationarity_report(
                c.problem, values, ctx.device, o["inner_iters"], convex_concave=o["convex_concave"], seed=ctx.seed
            )
            info["stationarity"] = rep
            g = rep["grad_phi_norm"]
            checks["stationarity"] = (
                g is not None and g <= tol_abs,
                f"‖∇Φ(x)‖ = {g} vs tol {tol_abs:.3g} (inner solve: {rep['inner']['iterations']} iterations)",
            )
            if rep["duality_gap"] is not None:
                gap = rep["duality_gap"]
                limit = math.sqrt(tol) * max(1.0, abs(objective))
                checks["duality_gap"] = (gap <= limit, f"Φ(x) − Ψ(y) = {gap:.3g} vs {limit:.3g}")
        ok = bool(checks) and all(v[0] for v in checks.values())
        if diverged or not finite:
            status = Status.DIVERGED
        else:
            status = Status.CONVERGED if (out.converged[b] and ok) else Status.ITERATION_LIMIT
        info["stop"] = {Status.DIVERGED: "diverged", Status.CONVERGED: "converged"}.get(status, "iteration_limit")
        raw = RawSolution(
            status, values, objective=objective, iterations=int(out.iterations[b]), info=info, checks=checks
        )
        timing = {"compile": 0.0, "solve": t_solve / B, "total": t_solve / B}
        results.append(verify(mm.ir, mm.form, c, raw, the_plan, BACKEND, timing, ctx))
    note = (
        f"{B} points as one minimax problem (outer batched L-BFGS on Φ(x) = max_y f, inner batched L-BFGS on y "
        f"warm-started, vmapped objective{'' if be.vectorized else ' (row loop)'}, float64; "
        f"{int(out.converged.sum())} of {B} converged in ≤ {int(out.iterations.max())} outer iterations; "
        f"solve {t_solve:.2f} s, then each point's stationarity report)"
    )
    return results, note


def _report_options(m: Any) -> dict[str, Any]:
    """The end-of-run report's settings a single solve would use (the model's solver block, else defaults)."""
    solver = m.ir.solver
    given = dict(solver.options) if solver and solver.name in ("auto", "adasgda", "gda") else {}
    return {
        "inner_iters": int(given.get("inner_iters", 3000)),
        "convex_concave": str(given.get("convex_concave", "auto")),
    }


def _start_proxy(problem: Any, start: dict[str, np.ndarray], ctx: RunContext) -> float:
    """The stationarity proxy at the seeded start, the unit of a single solve's relative tolerance."""
    oracle = MinimaxOracle(problem, ctx)
    vals = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in start.items()}
    x = {k: vals[k] for k in oracle.x_names}
    y = {k: vals[k] for k in oracle.y_names}
    _, gx, gy = oracle.grads(x, y, None)
    return oracle.proxy(x, y, gx, gy)
