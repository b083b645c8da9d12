"""Stationarity of a minimax point: gradients, gradient mappings, inner solves and the end-of-run report.

Shared by the `gda` and `adasgda` backends. For min_x max_y f(x, y) the report estimates
Φ(x) = max_y f(x, y) by an accelerated projected inner ascent from the returned y, takes
∇Φ(x) = ∇_x f(x, y*(x)) (Danskin), and, when f is convex-concave, the duality gap
Φ(x̂) − Ψ(ŷ) with Ψ(y) = min_x f(x, y). Convex-concavity is tested by sampled curvature
(Hessian-vector products), which is evidence, not a proof. Everything here runs in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.common import finite
from optlang.backends.common import project as _project
from optlang.lazy import lazy_module
from optlang.problem import Domain, MinimaxProblem, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

Fn = Callable[..., "torch.Tensor"]
Tensors = dict[str, "torch.Tensor"]


def project(domain: Domain, x: torch.Tensor) -> torch.Tensor:
    """common.project, with simplex inputs shifted by their max first (the projection is shift-invariant).

    common.project's sort-and-cumsum loses the threshold in float32 once entries reach ~1e7 (u₀ − (u₀ − 1)
    rounds to 0 and no index qualifies); after the shift the largest entry is 0 and index 0 always does.
    """
    if domain.kind == "simplex":
        return _project(domain, x - x.max())
    return _project(domain, x)


def value_and_grads(
    fn: Fn, values: Mapping[str, torch.Tensor], wrt: Iterable[str], batch: torch.Tensor | None = None
) -> tuple[torch.Tensor, Tensors]:
    """f(values) and its gradients with respect to the names in `wrt` (zeros where f ignores one)."""
    wrt = list(wrt)
    leaves = {k: (v.detach().requires_grad_(k in wrt)) for k, v in values.items()}
    with torch.enable_grad():
        out = fn(leaves, batch) if batch is not None else fn(leaves)
        if out.ndim != 0:
            if out.numel() != 1:
                raise ValueError("a minimax objective must be a scalar, got shape " + str(tuple(out.shape)))
            out = out.reshape(())
        gs = torch.autograd.grad(out, [leaves[k] for k in wrt], allow_unused=True)
    grads = {k: (torch.zeros_like(leaves[k]) if g is None else g.detach()) for k, g in zip(wrt, gs, strict=True)}
    return out.detach(), grads


def mapping_sq(variables: Iterable[Variable], values: Mapping[str, torch.Tensor], grads: Tensors, sign: float) -> float:
    """Squared norm of the unit-step gradient mapping x − P(x − sign·g) (= ‖g‖² on free variables)."""
    total = 0.0
    for v in variables:
        g = grads[v.name]
        if v.domain.kind == "free":
            total += float(torch.sum(g * g))
        else:
            x = values[v.name].detach()
            step = x - sign * g
            if not math.isfinite(float(torch.sum(step * step))):
                return math.inf
            d = x - project(v.domain, step)
            total += float(torch.sum(d * d))
    return total


def sq_norm(tensors: Mapping[str, torch.Tensor]) -> float:
    """Σ ‖t‖² over a dict of tensors, as a Python float."""
    return float(sum(float(torch.sum(t * t)) for t in tensors.values()))


@dataclass
class InnerResult:
    """One inner solve: the optimizing point, its value, iterations, final residual, and how it ended."""

    point: Tensors
    value: float
    iterations: int
    residual: float
    converged: bool
    unbounded: bool

    def summary(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "residual": self.residual,
            "converged": self.converged,
            "unbounded": self.unbounded,
            "value": self.value,
        }


def inner_solve(
    fn: Fn,
    fixed: Mapping[str, torch.Tensor],
    variables: tuple[Variable, ...],
    start: Mapping[str, torch.Tensor],
    maximize: bool,
    max_iter: int = 3000,
    tol: float = 1e-10,
) -> InnerResult:
    """Optimize f over `variables` with the others fixed: FISTA with backtracking and restarts.

    Projected onto each variable's domain. Stops when the gradient mapping at the extrapolated
    point is ≤ tol, after max_iter iterations, or when the iterates run away (unbounded).
    """
    sgn = 1.0 if maximize else -1.0
    names = [v.name for v in variables]

    def h(point: Mapping[str, torch.Tensor]) -> tuple[float, Tensors]:
        val, g = value_and_grads(fn, {**fixed, **point}, names)
        return sgn * float(val), {k: sgn * t for k, t in g.items()}

    def step(point: Mapping[str, torch.Tensor], g: Tensors, s: float) -> Tensors:
        return {v.name: project(v.domain, point[v.name] + s * g[v.name]) for v in variables}

    y = {k: start[k].detach().clone() for k in names}
    hy, gy = h(y)
    w = {k: t.clone() for k, t in y.items()}
    theta, s = 1.0, _initial_step(h, y, gy)
    start_norm = math.sqrt(sq_norm(y))
    residual, converged, unbounded, it, calm = math.inf, False, False, 0, 0
    while it < max_iter:
        it += 1
        hw, gw = h(w)
        clean = True
        for _ in range(60):  # backtracking on the ascent condition of a 1/s-smooth function
            yn = step(w, gw, s)
            d = {k: yn[k] - w[k] for k in names}
            hn, _ = h(yn)
            lin = sum(float(torch.sum(gw[k] * d[k])) for k in names)
            if hn >= hw + lin - sq_norm(d) / (2 * s) - 1e-12 * (1 + abs(hw)):
                break
            s, clean = 0.5 * s, False
        calm = calm + 1 if clean else 0
        if s < 1e-30:  # the step collapsed (rounding at a flat point): stop, unconverged
            break
        residual = math.sqrt(sq_norm(d)) / s
        if not (finite(hn) and all(finite(t) for t in yn.values())):
            unbounded = True
            break
        if hn < hy and theta > 1.0:  # function-value restart: drop the momentum, keep the better point
            theta, w, calm = 1.0, {k: t.clone() for k, t in y.items()}, 0
            continue
        theta_n = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
        w = {k: yn[k] + ((theta - 1.0) / theta_n) * (yn[k] - y[k]) for k in names}
        y, hy, theta = yn, hn, theta_n
        if calm >= 10:  # ten clean steps: probe a longer one (lets linear directions run away fast)
            s, calm = 2.0 * s, 0
        if residual <= tol and s > 1e-20:  # a collapsed step proves nothing
            converged = True
            break
        if math.sqrt(sq_norm(y)) > 1e8 * (1.0 + start_norm) or abs(hy) > 1e30:
            unbounded = True
            break
    return InnerResult(y, sgn * hy, it, residual, converged, unbounded)


def _initial_step(h: Callable[..., tuple[float, Tensors]], y: Tensors, g: Tensors) -> float:
    """1/L from the gradient change along a small random direction (backtracking corrects it)."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    d = {k: torch.randn(t.shape, generator=gen, dtype=t.dtype).to(t.device) for k, t in y.items()}
    scale = 1e-4 * (1.0 + math.sqrt(sq_norm(y))) / (math.sqrt(sq_norm(d)) or 1.0)
    _, g2 = h({k: y[k] + scale * d[k] for k in y})
    change = math.sqrt(sq_norm({k: g2[k] - g[k] for k in g}))
    lip = change / (scale * math.sqrt(sq_norm(d)) or 1.0)
    return 1.0 / lip if math.isfinite(lip) and lip > 1e-12 else 1.0


@dataclass
class CurvatureCheck:
    """Sampled curvature of f: smallest vᵀ∇²ₓₓf v and largest vᵀ∇²ᵧᵧf v over random unit directions."""

    convex_concave: bool
    min_curv_x: float
    max_curv_y: float
    scale: float


def curvature_check(
    fn: Fn, problem: MinimaxProblem, at: Mapping[str, torch.Tensor], seed: int = 0, points: int = 4, dirs: int = 3
) -> CurvatureCheck:
    """Hessian-vector products at `at` and at random nearby feasible points (evidence of convex-concavity)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    groups = ((problem.min_vars, 1.0), (problem.max_vars, -1.0))
    curv = {1.0: math.inf, -1.0: math.inf}  # min of sign·curvature per player
    scale = 0.0
    for p in range(points + 2):
        base = {}
        for v in problem.min_vars + problem.max_vars:
            t = at[v.name].detach()
            if p == 1:  # the projected origin: where many nonconvexities (tanh, x⁴ − x²) show
                t = project(v.domain, torch.zeros_like(t))
            elif p:
                noise = torch.randn(t.shape, generator=gen, dtype=t.dtype).to(t.device)
                t = project(v.domain, t + noise * (1.0 + t.abs().mean()))
            base[v.name] = t
        for variables, sgn in groups:
            names = [v.name for v in variables]
            for _ in range(dirs):
                leaves = {k: t.detach().clone().requires_grad_(k in names) for k, t in base.items()}
                vec = {
                    k: torch.randn(leaves[k].shape, generator=gen, dtype=leaves[k].dtype).to(leaves[k].device)
                    for k in names
                }
                nrm = math.sqrt(sq_norm(vec)) or 1.0
                with torch.enable_grad():
                    out = fn(leaves).reshape(())
                    gs = torch.autograd.grad(out, [leaves[k] for k in names], create_graph=True, allow_unused=True)
                    gv = sum((g * vec[k]).sum() for k, g in zip(names, gs, strict=True) if g is not None)
                    if not isinstance(gv, torch.Tensor) or not gv.requires_grad:
                        c = 0.0  # f is linear (or constant) in this player: zero curvature
                    else:
                        hv = torch.autograd.grad(gv, [leaves[k] for k in names], allow_unused=True)
                        c = sum(float((h * vec[k]).sum()) for k, h in zip(names, hv, strict=True) if h is not None)
                c /= nrm * nrm
                scale = max(scale, abs(c))
                curv[sgn] = min(curv[sgn], sgn * c)
    thr = -1e-7 * max(scale, 1e-300)
    ok = curv[1.0] >= thr and curv[-1.0] >= thr
    return CurvatureCheck(bool(ok), float(curv[1.0]), float(-curv[-1.0]), float(scale))


def stationarity_report(
    problem: MinimaxProblem,
    values: Mapping[str, np.ndarray],
    device: Any = "cpu",
    inner_iters: int = 3000,
    inner_tol: float = 1e-10,
    convex_concave: str = "auto",
    seed: int = 0,
) -> dict[str, Any]:
    """The end-of-run report at (x̂, ŷ): ‖∇Φ(x̂)‖ by an inner solve, and the duality gap if convex-concave.

    grad_phi_norm is the unit-step gradient mapping of Φ (‖∇Φ‖ when x is free). inner_tol is relative
    to ‖∇f(x̂, ŷ)‖ (floored at 1). convex_concave: "auto" (sampled curvature), "yes" or "no".
    """
    fn = problem.objective.compile(device, torch.float64)
    vals = {k: torch.as_tensor(np.asarray(v, dtype=np.float64), device=device) for k, v in values.items()}
    xs = {v.name: vals[v.name] for v in problem.min_vars}
    ys = {v.name: vals[v.name] for v in problem.max_vars}
    all_names = list(xs) + list(ys)
    f_hat, g_hat = value_and_grads(fn, vals, all_names)
    tol = inner_tol * max(1.0, math.sqrt(sq_norm(g_hat)))

    inner = inner_solve(fn, xs, problem.max_vars, ys, maximize=True, max_iter=inner_iters, tol=tol)
    _, gx = value_and_grads(fn, {**xs, **inner.point}, list(xs))
    report: dict[str, Any] = {
        "f_value": float(f_hat),
        "phi": float(inner.value),
        "grad_phi_norm": math.sqrt(mapping_sq(problem.min_vars, xs, gx, 1.0)),
        "grad_phi_raw_norm": math.sqrt(sq_norm(gx)),
        "grad_x_norm": math.sqrt(mapping_sq(problem.min_vars, xs, g_hat, 1.0)),
        "grad_y_norm": math.sqrt(mapping_sq(problem.max_vars, ys, g_hat, -1.0)),
        "y_distance_to_inner": math.sqrt(sq_norm({k: inner.point[k] - ys[k] for k in ys})),
        "inner": inner.summary(),
    }
    if inner.unbounded:
        report["phi"] = math.inf if not math.isnan(inner.value) else None
        report["grad_phi_norm"] = None
        report["note"] = "the inner maximization is unbounded at the returned x"
    cc: bool | None
    detail: dict[str, Any]
    if convex_concave == "yes":
        cc, detail = True, {"source": "declared"}
    elif convex_concave == "no":
        cc, detail = False, {"source": "declared"}
    else:
        chk = curvature_check(fn, problem, vals, seed=seed)
        cc = chk.convex_concave
        detail = {"source": "sampled curvature", "min_curv_x": chk.min_curv_x, "max_curv_y": chk.max_curv_y}
    report["convex_concave"] = cc
    report["convex_concave_detail"] = detail
    report["duality_gap"] = None
    report["dual_value"] = None
    if cc and not inner.unbounded:
        dual = inner_solve(fn, ys, problem.min_vars, xs, maximize=False, max_iter=inner_iters, tol=tol)
        report["dual_inner"] = dual.summary()
        if dual.unbounded:
            report["gap_note"] = "the inner minimization is unbounded at the returned y (gap infinite)"
        else:
            report["dual_value"] = float(dual.value)
            report["duality_gap"] = max(0.0, float(inner.value) - float(dual.value))
    return report
