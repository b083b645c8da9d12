"""The batched solve behind sweeps: B lowered models of one structure solved as one problem.

smooth: the objective of every point, vmapped over stacked variables and swept constants, minimized
by `batched.lbfgs` in float64. dro: the per-sample losses of every point in one vmapped call, each
point's exact worst-case weights (tcdro's duals, in float64) applied to its row — the robust
objective tcdro trains, for all points at once. Each point then becomes a RawSolution that
`verify` turns into a Result exactly as after a single solve (objective recomputed in float64 from
that point's own model; tcdro's worst-case-weights certificate for DRO points).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from optlang.backends.base import COMMON_OPTIONS, RawSolution, RunContext, Status
from optlang.batched import Layout, batched_function, call_batched, path_lbfgs, value_and_grad
from optlang.result import Result
from optlang.verify import verify

BACKEND = "batched-lbfgs"
# relative decrease that, 3 iterations running, stops a row: smooth rows stop on the gradient test
# long before; DRO rows are piecewise smooth (kinks where the worst case changes), where L-BFGS
# crawls with short steps, and stopping at 1e-7 still lands at or below tcdro's single solves
# (benchmarks/sweep.py prints the largest excess over them)
TOL = {"smooth": 1e-10, "dro": 1e-7}


class NotBatchable(Exception):
    """The points cannot share one batched problem (the message says why)."""


def solve(models: list[Any], seed: int = 0, max_iter: int | None = None) -> tuple[list[Result], str]:
    """Solve every model (same kind and structure) in one batched run; one verified Result each."""
    kind = models[0].kind
    t0 = time.perf_counter()
    obj = [m.ir.objective for m in models]
    nodes = [o.expr for o in obj]
    be = batched_function(nodes, per_sample=(kind == "dro"))
    if be is None:
        raise NotBatchable("the points differ in structure (shapes or operations), not only in constants")
    compiled = [m.compiled for m in models]
    variables = compiled[0].problem.variables
    layout = Layout(tuple(v.name for v in variables), tuple(tuple(v.shape) for v in variables))
    ctx = RunContext(seed=seed, device="cpu", dtype="float64")
    from optlang.backends.common import init_tensors

    start = {k: v.detach().numpy() for k, v in init_tensors(variables, ctx, requires_grad=False).items()}
    B = len(models)
    z0 = layout.pack([start] * B)
    iters = max_iter if max_iter is not None else 1000
    linear: Any = None
    extra: list[dict[str, Any]] = [{} for _ in models]
    if kind == "smooth":
        sign = torch.tensor([-1.0 if o.form == "maximize" else 1.0 for o in obj], dtype=torch.float64)

        def objective(z: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
            return sign[rows] * call_batched(be, layout.unpack(z), rows)

        out = path_lbfgs(value_and_grad(objective), z0, max_iter=iters, tol=TOL["smooth"], carry=True)
        raw_values: list[float | None] = [None] * B
    elif kind == "dro":
        from optlang.backends.dro import auto as dro_auto
        from optlang.backends.dro.tcdro import TCDRO, base_divergence, problem_regions, resolve_mix, solution_report

        backend = TCDRO()
        members, opts = [], []
        for m, c in zip(models, compiled, strict=True):
            given = dict(m.ir.solver.options) if m.ir.solver and m.ir.solver.name in ("auto", "tcdro") else {}
            o = backend.make_options({k: v for k, v in given.items() if k not in COMMON_OPTIONS})
            if getattr(o, "_auto", None) or getattr(o, "_auto_options", None):
                raise NotBatchable("auto options inside a sweep")
            if o.batch_size or c.problem.n_samples > o.full_batch_max:
                raise NotBatchable("minibatch training (a sample set above full_batch_max)")
            p = c.problem
            base = base_divergence(p)
            regions = problem_regions(p, o.regions, o.radius_rule)
            outer = p.ambiguity.radius if o.outer_radius < 0 else o.outer_radius
            members.append(dro_auto.Member(None, regions, base, resolve_mix(o.region_weights, base), outer))
            opts.append(o)
        n = compiled[0].problem.n_samples
        linear = _linear_losses(be, nodes[0], layout, z0)
        if linear is not None:  # ℓ = φ(X w + b − y): losses and the Danskin gradient in closed form
            weights = dro_auto.robust_batch_weights(members, n)

            def robust_fun(z: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                L, dL = linear(z)
                W = torch.from_numpy(weights(L.numpy(), rows.numpy()))
                return (W * L).sum(1), linear.grad(W * dL)

            out = path_lbfgs(robust_fun, z0, max_iter=iters, tol=TOL["dro"])
        else:
            robust = dro_auto.robust_batch_objective(lambda env, rows: call_batched(be, env, rows), members, n)
            out = path_lbfgs(
                value_and_grad(lambda z, rows: robust(layout.unpack(z), rows)), z0, max_iter=iters, tol=TOL["dro"]
            )
        raw_values = []  # the DRO branch only; the annotation above is the smooth branch's
        with torch.no_grad():  # every point's float64 losses at its solution, in one call
            losses = call_batched(be, layout.unpack(out.z)).detach().numpy()
        rvs: list[Any] = [None] * B  # robust values from the batched duals (χ² bases), checked in the report
        duals = dro_auto.batch_duals(members, n)
        if duals is not None:
            rows = np.nonzero(np.all(np.isfinite(losses), 1))[0]
            if rows.size:
                for r, point_rv in zip(rows, duals.robust_values(losses[rows], rows, members), strict=True):
                    rvs[r] = point_rv
        for b, (c, o) in enumerate(zip(compiled, opts, strict=True)):
            vals = layout.to_numpy(out.z, b)
            value, info, checks = solution_report(
                c.problem,
                vals,
                o.regions,
                o.radius_rule,
                o.region_weights,
                o.outer_radius,
                losses=losses[b],
                regions=members[b].regions,
                rv=rvs[b],
            )
            raw_values.append(value)
            extra[b] = {"info": info, "checks": checks}
    else:
        raise NotBatchable(f"kind {kind} has no batched solver")
    t_solve = time.perf_counter() - t0
    results = []
    the_plan = models[0].plan()  # every point has the same form (same structure), so the same plan
    for b, (m, c) in enumerate(zip(models, compiled, strict=True)):
        vals = layout.to_numpy(out.z, b)
        if not out.finite[b]:
            status = Status.DIVERGED
        elif out.converged[b]:
            status = Status.CONVERGED
        else:
            status = Status.ITERATION_LIMIT
        rv = raw_values[b]
        own = float(out.f[b]) if rv is None else float(rv)
        info = dict(extra[b].get("info", {}))
        info["sweep"] = {"batch": B, "index": b, "iterations": int(out.iterations[b]), "solver": BACKEND}
        raw = RawSolution(
            status,
            vals,
            objective=own if np.isfinite(own) else None,
            iterations=int(out.iterations[b]),
            info=info,
            checks=extra[b].get("checks", {}),
        )
        timing = {"compile": 0.0, "solve": t_solve / B, "total": t_solve / B}
        results.append(verify(m.ir, m.form, c, raw, the_plan, BACKEND, timing, ctx))
    note = (
        f"{B} points as one {kind} problem (vmapped {'objective' if kind == 'smooth' else 'losses'}"
        f"{'' if be.vectorized else ', row loop: an atom without a batching rule'}"
        f"{', linear residuals in closed form' if linear is not None else ''}, batched L-BFGS, float64; "
        f"{int(out.converged.sum())} of {B} converged in ≤ {int(out.iterations.max())} iterations)"
    )
    return results, note


class _LinearLosses:
    """ℓ_i = φ(x_iᵀw + b − y_i), φ square or abs, for rows z = (w, b) of the layout: the losses and
    dℓ/dr for every row with two matrix products, and the gradient Σ_i G_i ∂ℓ_i (G = weights · dℓ/dr)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, phi: str, w_cols: slice, b_col: int | None, d: int) -> None:
        self.X = torch.as_tensor(np.asarray(X, dtype=np.float64))
        self.y = torch.as_tensor(np.asarray(y, dtype=np.float64).ravel())
        self.phi, self.w_cols, self.b_col, self.d = phi, w_cols, b_col, d

    def __call__(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r = z[:, self.w_cols] @ self.X.T - self.y
        if self.b_col is not None:
            r = r + z[:, self.b_col : self.b_col + 1]
        if self.phi == "square":
            return r * r, 2.0 * r
        return r.abs(), torch.sign(r)

    def grad(self, G: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(G.shape[0], self.d, dtype=G.dtype)
        out[:, self.w_cols] = G @ self.X
        if self.b_col is not None:
            out[:, self.b_col] = G.sum(1)
        return out


def _linear_losses(be: Any, node: Any, layout: Layout, z0: torch.Tensor) -> _LinearLosses | None:
    """The closed form of a per-sample loss φ(X @ w + b − y) shared by every point (no swept constant in
    it) over exactly the variables w and b; None otherwise. Checked once against the model's own
    function at a seeded random point (the same losses to 1e-12), else None."""
    from optlang.compiler import linear_residual

    if be.consts or not be.vectorized:
        return None
    lin = linear_residual(node, samples=False)
    if lin is None:
        return None
    X, y, w, b, phi = lin
    if set(layout.names) != {w} | ({b} if b is not None else set()):
        return None
    cols = layout.columns
    if np.ndim(X) != 2 or cols[w].stop - cols[w].start != np.shape(X)[1]:
        return None
    out = _LinearLosses(X, y, phi, cols[w], None if b is None else cols[b].start, layout.size)
    probe = torch.as_tensor(np.random.default_rng(0).standard_normal((2, layout.size)))
    with torch.no_grad():
        want = call_batched(be, layout.unpack(probe))
    got, _ = out(probe)
    scale = float(want.abs().max()) if want.numel() else 1.0
    if got.shape != want.shape or not bool(torch.all((got - want).abs() <= 1e-12 * max(scale, 1.0))):
        return None
    return out
