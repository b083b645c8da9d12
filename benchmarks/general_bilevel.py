"""Benchmark of the general bilevel backends (hgms, aid, itd, kkt) on problems with known answers.

Problems (the shipped models, sizes through params; each reference computed here in float64):
- `ridge`     models/ridge_hyper.opt: Φ(t) in closed form, minimized by a bounded 1-D search;
- `stack`     models/stackelberg.opt: strongly convex follower, the leader's QP by L-BFGS-B;
- `reweight`  models/source_reweight.opt: Φ(a) in closed form, minimized over the simplex by SLSQP;
- `wide`      models/overparam_bilevel.opt (5×12, singular lower level): closed form;
- `wide200`   the same with m = 50, n = 200, k = 10;
- `feat`      models/feature_reg.opt (200 samples, 20 features): Φ(t) in closed form by L-BFGS-B;
- `feat1000`  the same with 10000 samples and 1000 features (time limit 60 s; pass --methods hgms,aid and --ref).

Each backend prints: status, relative upper-value error |Φ − Φ*|/|Φ*|, the lower-level gap
g(x, y) − min g(x, ·) (verify's float64 re-solve), Hessian-vector products, gradients, wall time and
the time at which the progress stream first came within 1e-3 of Φ* (t@1e-3), plus the time ratio to aid;
then the process CPU time of the whole call (solve and verify's float64 checks) and its ratio to aid's
(steadier than wall time on a loaded machine).

    .venv/bin/python benchmarks/general_bilevel.py [--only ridge,wide] [--methods hgms,aid] [--time-limit S]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize, minimize_scalar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import optlang  # noqa: E402
from optlang.backends.general_bilevel import quadform  # noqa: E402

MODELS = ROOT / "models"
METHODS = ("hgms", "aid", "itd", "kkt", "kkt-cvxpy")  # kkt-cvxpy: backend kkt, solver = cvxpy (refuses non-convex)


def _p(m: optlang.Model, *names: str) -> list[np.ndarray]:
    return [np.asarray(m.ir.params[n], dtype=np.float64) for n in names]


class RidgePhi:
    """Φ(t) = ½ mean((Xv w − yv)²) with w = (XᵀX/n + diag(eᵗ))⁻¹Xᵀy/n, and ∇Φ (adjoint), float64.

    XᵀX/n and Xᵀy/n are formed once; each evaluation is one Cholesky factorization and two solves.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, Xv: np.ndarray, yv: np.ndarray) -> None:
        n = X.shape[0]
        self.G, self.b, self.Xv, self.yv = X.T @ X / n, X.T @ y / n, Xv, yv

    def __call__(self, t: np.ndarray) -> tuple[float, np.ndarray]:
        from scipy.linalg import cho_factor, cho_solve

        p = self.G.shape[0]
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        lam = np.full(p, np.exp(t[0])) if t.size == 1 else np.exp(t)
        c = cho_factor(self.G + np.diag(lam))
        w = cho_solve(c, self.b)
        r = self.Xv @ w - self.yv
        u = cho_solve(c, self.Xv.T @ r / len(self.yv))
        grad = -(lam * w) * u
        return 0.5 * float(np.mean(r**2)), (np.array([grad.sum()]) if t.size == 1 else grad)


def ref_ridge(m: optlang.Model) -> float:
    phi = RidgePhi(*_p(m, "Xt", "yt", "Xv", "yv"))
    r = minimize_scalar(lambda t: phi(np.array([t]))[0], bounds=(-12, 6), method="bounded", options={"xatol": 1e-10})
    return float(r.fun)


def ref_feat(m: optlang.Model) -> float:
    phi = RidgePhi(*_p(m, "X", "y", "Xv", "yv"))
    p = phi.G.shape[0]
    starts = (0.0, -3.0, 3.0) if p <= 100 else (0.0,)
    best = math.inf
    for t0 in starts:
        r = minimize(
            phi,
            np.full(p, t0),
            jac=True,
            method="L-BFGS-B",
            bounds=[(-6, 6)] * p,
            options={"maxiter": 5000, "ftol": 1e-14, "gtol": 1e-10},
        )
        best = min(best, float(r.fun))
    return best


def ref_stack(m: optlang.Model) -> float:
    Q, C, d, E, f = _p(m, "Q", "C", "d", "E", "f")
    Qi = np.linalg.inv(Q)
    dy = -Qi @ C

    def phi(x: np.ndarray) -> tuple[float, np.ndarray]:
        y = Qi @ (d - C @ x)
        val = 0.5 * x @ x + x @ E @ y + f @ x + 0.5 * np.sum((y - d) ** 2)
        return float(val), x + E @ y + dy.T @ (E.T @ x) + f + dy.T @ (y - d)

    k = C.shape[1]
    r = minimize(phi, np.zeros(k), jac=True, method="L-BFGS-B", bounds=[(-1, 1)] * k, options={"gtol": 1e-13})
    return float(r.fun)


def ref_wide(m: optlang.Model) -> float:
    A, B, c, x0 = _p(m, "A", "B", "c", "x0")
    P = np.linalg.pinv(A)
    M = P @ B
    x = np.linalg.solve(M.T @ M + np.eye(B.shape[1]), M.T @ (P @ A @ c) + x0)
    y = M @ x + (np.eye(A.shape[1]) - P @ A) @ c
    return 0.5 * float(np.sum((y - c) ** 2) + np.sum((x - x0) ** 2))


def ref_reweight(m: optlang.Model) -> float:
    X1, y1, X2, y2, X3, y3, Xv, yv = _p(m, "X1", "y1", "X2", "y2", "X3", "y3", "Xv", "yv")
    Xs, ys = (X1, X2, X3), (y1, y2, y3)
    p = X1.shape[1]

    def phi(a: np.ndarray) -> float:
        A = sum(2 * ai * X.T @ X / len(yy) for ai, X, yy in zip(a, Xs, ys, strict=True)) + 0.02 * np.eye(p)
        b = sum(2 * ai * X.T @ yy / len(yy) for ai, X, yy in zip(a, Xs, ys, strict=True))
        w = np.linalg.solve(A, b)
        return 0.5 * float(np.mean((Xv @ w - yv) ** 2))

    best = math.inf
    for a0 in (np.full(3, 1 / 3), np.array([0.8, 0.1, 0.1]), np.array([0.1, 0.8, 0.1])):
        r = minimize(
            phi,
            a0,
            method="SLSQP",
            bounds=[(0, 1)] * 3,
            constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1}],
            options={"ftol": 1e-15, "maxiter": 500},
        )
        best = min(best, float(r.fun))
    return best


PROBLEMS: dict[str, tuple[str, dict[str, Any], Any, float]] = {
    "ridge": ("ridge_hyper.opt", {}, ref_ridge, 60.0),
    "stack": ("stackelberg.opt", {}, ref_stack, 60.0),
    "reweight": ("source_reweight.opt", {}, ref_reweight, 60.0),
    "wide": ("overparam_bilevel.opt", {}, ref_wide, 60.0),
    "wide200": ("overparam_bilevel.opt", {"m": 50, "n": 200, "k": 10}, ref_wide, 60.0),
    "feat": ("feature_reg.opt", {}, ref_feat, 60.0),
    "feat1000": ("feature_reg.opt", {"n": 10000, "p": 1000}, ref_feat, 60.0),
}
DEFAULT = ("ridge", "stack", "reweight", "wide", "wide200", "feat")


def run(
    key: str, methods: tuple[str, ...], time_limit: float | None, opts: dict[str, Any], given: float | None = None
) -> None:
    fname, params, ref_fn, limit = PROBLEMS[key]
    m = optlang.load(MODELS / fname, params=params)
    t0 = time.perf_counter()
    ref = ref_fn(m) if given is None else given
    print(f"\n## {key}: {fname} {params or ''} — Φ* = {ref:.10g} (reference {time.perf_counter() - t0:.1f} s)")
    print(
        f"{'method':<9} {'status':<16} {'rel err Φ':>10} {'lower gap':>10} {'HVPs':>8} {'grads':>8} "
        f"{'time s':>7} {'t@1e-3':>7} {'×aid':>6} {'cpu s':>7} {'×aid':>6}"
    )
    rows: list[tuple[str, Any, float, float]] = []
    for meth in methods:
        hit: list[float] = []

        def progress(ev: dict[str, Any], hit: list[float] = hit) -> None:
            if not hit and abs(ev["objective"] - ref) <= 1e-3 * abs(ref):
                hit.append(ev["time"])

        backend, bopts = ("kkt", {**opts, "solver": "cvxpy"}) if meth == "kkt-cvxpy" else (meth, opts)
        quadform.clear_cache()  # a form is cached per model: the first method would pay for the others' Q
        c0 = time.process_time()
        try:
            r = m.solve(backend=backend, seed=0, time_limit=time_limit or limit, progress=progress, options=bopts)
        except optlang.OptlangError as e:
            print(f"{meth:<9} refused: {e.message[:110]}")
            continue
        err = abs(r.objective - ref) / max(abs(ref), 1e-12) if r.objective is not None else math.nan
        rows.append((meth, r, err, hit[0] if hit else math.nan, time.process_time() - c0))
    t_aid = next((r.timing["solve"] for meth, r, *_ in rows if meth == "aid"), math.nan)
    c_aid = next((c for meth, _, _, _, c in rows if meth == "aid"), math.nan)
    for meth, r, err, t_hit, cpu in rows:
        print(
            f"{meth:<9} {str(r.status):<16} {err:>10.2e} {r.info.get('lower_gap', math.nan):>10.2e} "
            f"{r.info.get('hvps', 0):>8} {r.info.get('gradients', 0):>8} {r.timing['solve']:>7.2f} "
            f"{t_hit:>7.2f} {r.timing['solve'] / t_aid:>6.2f} {cpu:>7.2f} {cpu / c_aid:>6.2f}"
        )


def warm_up() -> None:
    """One small solve first, so that no row pays torch's one-time imports (torch.optim pulls in dynamo)."""
    optlang.load(MODELS / "stackelberg.opt").solve(backend="hgms", seed=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(DEFAULT), help="problem keys: " + ", ".join(PROBLEMS))
    ap.add_argument("--methods", default=",".join(METHODS), help="subset of: " + ", ".join(METHODS))
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per method and problem")
    ap.add_argument("--set", default="{}", help="JSON object of options for every run")
    ap.add_argument("--ref", type=float, default=None, help="Φ* printed by an earlier run (skips the reference solve)")
    a = ap.parse_args()
    methods = tuple(x for x in a.methods.split(",") if x)
    warm_up()
    for key in (k for k in a.only.split(",") if k):
        run(key, methods, a.time_limit, json.loads(a.set), a.ref)


if __name__ == "__main__":
    main()
