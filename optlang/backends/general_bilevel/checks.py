"""Float64 re-derivations for a general bilevel answer (x, y), whichever backend produced it.

- lower-level gap g(x, y) − min g(x, ·), the minimum from an independent float64 L-BFGS solve
  started at y and at 0 (for a nonconvex g this is a lower bound on the true gap);
- optimistic selection: the part of ∇ᵧF along the solution set (the MINRES least-squares residual
  of ∇²ᵧᵧg·v = ∇ᵧF) relative to ‖∇ᵧF‖;
- the hypergradient ∇ₓF − ∇²ₓᵧg·(∇²ᵧᵧg)⁺∇ᵧF and its projected norm;
- on small problems with free or interior-box upper variables, that hypergradient against a central
  finite difference of the upper value Φ(x) = F(x, y*(x)) (each side re-solved and re-selected).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.general_bilevel import krylov
from optlang.backends.general_bilevel import lower as lower_solve
from optlang.backends.general_bilevel.levels import Levels
from optlang.lazy import lazy_module
from optlang.problem import GeneralBilevelProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

GAP_TOL = 1e-6  # relative to max(1, |min g|)
SELECT_TOL = 1e-3  # relative to max(1, ‖∇ᵧF‖)
FD_MAX_X, FD_MAX_Y, FD_MAX_SAMPLES = 10, 300, 5000


def general_bilevel_checks(
    problem: GeneralBilevelProblem, values: dict[str, np.ndarray]
) -> tuple[list[tuple[str, bool, str]], dict[str, Any]]:
    """(checks as (name, passed, detail), info entries) for the answer `values`."""
    ctx = RunContext(seed=0, device="cpu", dtype="float64")
    lv = Levels(problem, ctx, torch.float64, -1, -1, quadratic="off")  # independent: from the IR as written
    x = lv.xb.from_numpy(values, torch.float64, "cpu")
    y = lv.yb.from_numpy(values, torch.float64, "cpu")
    checks: list[tuple[str, bool, str]] = []
    info: dict[str, Any] = {}
    gval, g_y = lv.grad_g_y(x, y)
    scale = max(1.0, float(torch.linalg.vector_norm(g_y)), abs(gval))
    best = gval
    for start in (y, torch.zeros_like(y)):
        ys, _, _ = lower_solve.lbfgs(lv, x, start, 1e-11 * scale, 5000)
        best = min(best, lv.g(x, ys))
    gap = max(0.0, gval - best)
    info["lower_gap"] = gap
    info["lower_grad_norm_f64"] = float(torch.linalg.vector_norm(g_y))
    tol = GAP_TOL * max(1.0, abs(best))
    checks.append(("lower_level_gap", gap <= tol, f"g(x, y) − min g(x, ·) = {gap:.3g} (tolerance {tol:.2g})"))

    phi, gx, gy = lv.grad_F(x, y)
    ops = lv.hessian_ops(x, y)
    kmax = min(2000, 5 * max(1, y.numel()))
    res = krylov.minres(ops.yy, gy, None, kmax, 1e-10)
    r = res.residual
    gyn = float(torch.linalg.vector_norm(gy))
    sel = float(torch.linalg.vector_norm(r)) / max(1.0, gyn)
    info["selection_residual_f64"] = sel
    checks.append(
        (
            "optimistic_selection",
            sel <= SELECT_TOL,
            f"‖∇ᵧF along the lower solution set‖/max(1, ‖∇ᵧF‖) = {sel:.3g} (tolerance {SELECT_TOL:g})",
        )
    )
    v = krylov.minres(ops.yy, gy - r, None, kmax, 1e-10).x
    h = gx - ops.xy(v)
    pgn = float(torch.linalg.vector_norm(x - lv.xb.project(x - h)))
    info["hypergradient_norm_f64"] = pgn
    if _fd_applicable(problem, lv, x) and sel <= SELECT_TOL:
        checks.append(_fd_check(problem, lv, x, y, h, gx))
    return checks, info


def _fd_applicable(problem: GeneralBilevelProblem, lv: Levels, x: torch.Tensor) -> bool:
    n = max(problem.upper.n_samples or 0, problem.lower.n_samples or 0)
    if x.numel() == 0 or x.numel() > FD_MAX_X or lv.yb.size > FD_MAX_Y or n > FD_MAX_SAMPLES:
        return False
    for v, a, b in lv.xb.slices:
        d = v.domain
        if d.kind == "box":
            seg = x[a:b]
            if bool(torch.any(seg <= d.lo + 1e-3)) or bool(torch.any(seg >= d.hi - 1e-3)):
                return False
        elif d.kind != "free":
            return False
    return True


def _fd_check(
    problem: GeneralBilevelProblem, lv: Levels, x: torch.Tensor, y: torch.Tensor, h: torch.Tensor, gx: torch.Tensor
) -> tuple[str, bool, str]:
    from optlang.backends.general_bilevel.hgms import HGMSOptions, HGMSOracle

    hn = float(torch.linalg.vector_norm(h))
    d = h / hn if hn > 0 else torch.nn.functional.one_hot(torch.tensor(0), x.numel()).to(x)
    eps = 1e-4 * max(1.0, float(torch.linalg.vector_norm(x)))
    opts = HGMSOptions(warm_start=False)
    vals = []
    for sgn in (1.0, -1.0):
        oracle = HGMSOracle(lv, opts, y, 1.0)
        oracle.lower_tol = 1e-12 * max(1.0, abs(lv.g(x, y)))
        vals.append(oracle(x + sgn * eps * d).phi)
    fd = (vals[0] - vals[1]) / (2 * eps)
    an = float(torch.dot(h, d))
    tol = 1e-4 * max(1.0, hn, float(torch.linalg.vector_norm(gx)))
    ok = math.isfinite(fd) and abs(fd - an) <= tol
    return "hypergradient_fd", ok, f"directional derivative {an:.8g} vs central difference {fd:.8g} (step {eps:.1g})"
