"""The float64 solution report of a DRO point: regions of a problem, its robust objective recomputed
exactly, per-region losses and weights. Shared by `tcdro`, `erm`, `dro-cvxpy` and the re-verification
in optlang/verify.py (numpy only, no torch, no solver loop).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optlang.backends.dro.common import (
    Regions,
    RobustValue,
    make_regions,
    robust_value,
    single_region,
    wasserstein_linear_value,
    weights_summary,
)
from optlang.problem import DROProblem


def region_targets(problem: DROProblem) -> np.ndarray | None:
    """The per-sample targets that define regions: `targets`, else the linear residual's y."""
    if problem.targets is not None:
        return np.asarray(problem.targets, dtype=np.float64).ravel()
    if problem.linear is not None:
        return np.asarray(problem.linear.y, dtype=np.float64).ravel()
    return None


def problem_regions(problem: DROProblem, scheme: str, rule: str) -> Regions:
    """Regions for the problem's ambiguity: one region for chi2/kl, target regions otherwise."""
    amb = problem.ambiguity
    if amb.kind in ("chi2", "kl"):
        return single_region(problem.n_samples, amb.radius)
    if amb.kind != "target_conditional":
        raise ValueError(f"ambiguity '{amb.kind}' has no regions")
    y = region_targets(problem)
    if y is None or y.size != problem.n_samples:
        raise ValueError("target_conditional needs one target per sample (DROProblem.targets)")
    return make_regions(y, amb.bins, amb.radius, edges=amb.edges, scheme=scheme, rule=rule)


def base_divergence(problem: DROProblem) -> str:
    amb = problem.ambiguity
    return amb.base if amb.kind == "target_conditional" else amb.kind


def linear_residuals(problem: DROProblem, values: dict[str, np.ndarray]) -> np.ndarray | None:
    """x_iᵀw + b − y_i in float64 when the loss has linear-residual structure."""
    lin = problem.linear
    if lin is None:
        return None
    res = np.asarray(lin.X, dtype=np.float64) @ np.asarray(values[lin.weight], dtype=np.float64).ravel()
    if lin.bias is not None:
        res = res + float(np.asarray(values[lin.bias]).reshape(()))
    return res - np.asarray(lin.y, dtype=np.float64)


def resolve_mix(mix: str, base: str) -> str:
    """The region weighting an 'auto' option means: the robust (two-level χ²) mix for any base."""
    return "robust" if mix == "auto" else mix


def _divergence(base: str, q: np.ndarray) -> float:
    n = q.size
    if base == "chi2":
        return float(0.5 * np.mean((n * q - 1.0) ** 2))
    pos = q > 0
    return float(np.sum(q[pos] * np.log(n * q[pos])))


def solution_report(
    problem: DROProblem,
    values: dict[str, np.ndarray],
    scheme: str = "quantile",
    rule: str = "count",
    mix: str = "robust",
    outer_radius: float = -1.0,
    losses: np.ndarray | None = None,
    regions: Regions | None = None,
    rv: RobustValue | None = None,
) -> tuple[float, dict[str, Any], dict[str, tuple[bool, str]]]:
    """The robust objective recomputed in float64 at `values`, the per-region info and checks.

    `losses` (float64 per-sample losses at `values`) and `regions` (this problem's, from
    `problem_regions`) may be given when the caller has them (a batched sweep computes every
    point's losses in one call); by default they are computed here. `rv`, the robust value of these
    losses over these regions solved by the caller (a batched sweep's duals), is then checked here
    like the one computed by default.

    The check `worst_case_weights` verifies, without trusting any solver, that the reported
    worst-case distribution lies in each region's ball and attains the dual value (a primal
    point equal to a dual bound certifies that the value is the exact supremum).
    """
    amb = problem.ambiguity
    info: dict[str, Any] = {"ambiguity": amb.kind, "radius": float(amb.radius)}
    checks: dict[str, tuple[bool, str]] = {}
    res = linear_residuals(problem, values)
    if amb.kind == "wasserstein":
        lin = problem.linear
        if lin is None or res is None:
            raise ValueError("wasserstein needs linear-residual structure")
        w = np.asarray(values[lin.weight], dtype=np.float64).ravel()
        wn = float(np.linalg.norm(w))
        value = wasserstein_linear_value(res, wn, amb.radius, amb.p, lin.loss)
        info.update({"p": int(amb.p), "weight_norm": wn, "mse": float(np.mean(res * res))})
        if np.isfinite(value) and wn > 0 and amb.radius > 0 and (lin.loss == "abs" or amb.p == 2):
            # Build the attaining feature shift and evaluate the loss on the shifted data.
            X = np.asarray(lin.X, dtype=np.float64)
            if lin.loss == "square":
                scale = amb.radius / max(np.sqrt(np.mean(res * res)), 1e-300)
                shift = (scale * res)[:, None] * (w / wn)[None, :]
            else:
                shift = (amb.radius * np.sign(res))[:, None] * (w / wn)[None, :]
            res2 = (X + shift) @ w - np.asarray(lin.y, dtype=np.float64)
            if lin.bias is not None:
                res2 = res2 + float(np.asarray(values[lin.bias]).reshape(()))
            cost = float(np.mean(np.linalg.norm(shift, axis=1) ** amb.p)) ** (1.0 / amb.p)
            attained = float(np.mean(res2 * res2)) if lin.loss == "square" else float(np.mean(np.abs(res2)))
            ok = abs(attained - value) <= 1e-7 * max(1.0, abs(value)) and cost <= amb.radius * (1 + 1e-9)
            checks["worst_case_attained"] = (
                ok,
                f"shifted-data loss {attained:.10g} vs closed form {value:.10g}, transport cost {cost:.6g}",
            )
        return value, info, checks
    if losses is None:
        losses = np.asarray(problem.loss.value(values), dtype=np.float64)
    losses = np.asarray(losses, dtype=np.float64).ravel()
    if regions is None:
        regions = problem_regions(problem, scheme, rule)
    base = base_divergence(problem)
    mix = resolve_mix(mix, base)
    outer = amb.radius if outer_radius < 0 else outer_radius
    if rv is None:
        rv = robust_value(losses, regions, base, mix, outer)
    worst_gap, worst_div = 0.0, 0.0
    if mix == "adaptive":  # L_i = w_i N: E L = 1 and ½ E[(L − 1)² | R_k] ≤ ρ_k, Σ w ℓ = dual value
        L = rv.sample_weights * losses.size
        worst_gap = abs(float(rv.sample_weights @ losses) - rv.value) / max(1.0, abs(rv.value))
        worst_gap = max(worst_gap, abs(float(rv.sample_weights.sum()) - 1.0))
    rows = []
    for k in range(regions.k):
        idx = regions.index(k)
        if mix == "adaptive":
            excess = 0.5 * float(np.mean((L[idx] - 1.0) ** 2)) - regions.radii[k]
            worst_div = max(worst_div, excess - 1e-6 * regions.radii[k] - 1e-9)
        elif rv.region_weights[k] > 0:
            q = rv.sample_weights[idx] / rv.region_weights[k]
            gap = abs(float(q @ losses[idx]) - rv.region_values[k]) / max(1.0, abs(rv.region_values[k]))
            worst_gap = max(worst_gap, gap)
            worst_div = max(worst_div, _divergence(base, q) - regions.radii[k] * (1 + 1e-6) - 1e-9)
        row = {
            "region": k,
            "lo": float(regions.edges[k]),
            "hi": float(regions.edges[k + 1]),
            "size": int(regions.counts[k]),
            "radius": float(regions.radii[k]),
            "weight": float(rv.region_weights[k]),
            "worst_case": float(rv.region_values[k]),
            "mean_loss": float(losses[idx].mean()),
        }
        if res is not None:
            row["mse"] = float(np.mean(res[idx] ** 2))
        rows.append(row)
    info.update(
        {
            "base": base,
            "regions": rows,
            "region_weights": mix if regions.k > 1 else "single",
            "sample_weights": weights_summary(rv.sample_weights),
            "mean_loss": float(losses.mean()),
        }
    )
    checks["worst_case_weights"] = (
        worst_gap <= 1e-6 and worst_div <= 0.0,
        f"max |Σqℓ − dual| = {worst_gap:.2e}, max divergence excess = {max(worst_div, 0.0):.2e}",
    )
    return rv.value, info, checks
