"""Minimax benchmark: AdaSGDA's parameter-free claim against fixed-step GDA, measured.

Three tables, each method run in the same process (ratios, not absolute times, are the result):
1. the same strongly-convex-strongly-concave quadratic game with its data (hence f) scaled by
   1e-2, 1, 1e2, 1e4: iterations to 1e-4 relative distance to the closed-form saddle, for
   adasgda with default options and gda at five fixed steps;
2. a robust-regression game on real data (concrete.csv): an adversarial χ²-penalized weighting
   p ∈ simplex of the samples; ‖∇Φ(w)‖, Φ − Φ* and ‖w − w*‖ after a fixed budget of gradient
   evaluations (a minibatch of 64 counts 64/N), Φ*, w* from cvxpy;
3. a small adversarial game with a matrix variable: orthogonalized vs plain adaptive direction,
   iterations to the same verified stationarity, and their ratio.

Usage: .venv/bin/python benchmarks/minimax.py [--quick]
Data: ../shared/data relative to the repo root, or $OPTLANG_SHARED_DATA.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optlang.backends.base import RunContext  # noqa: E402
from optlang.backends.minimax.adasgda import AdaSGDA, AdaSGDARule  # noqa: E402
from optlang.backends.minimax.gda import GDA, FixedStepGDA  # noqa: E402
from optlang.backends.minimax.loop import LoopSettings, minimax_loop  # noqa: E402
from optlang.backends.minimax.stationarity import stationarity_report  # noqa: E402
from optlang.problem import Domain, MinimaxProblem, TorchFunction, Variable  # noqa: E402

SCALES = (1e-2, 1.0, 1e2, 1e4)
GDA_STEPS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def data_dir() -> Path:
    env = os.environ.get("OPTLANG_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


# ----------------------------------------------------------------------------- 1. scaled quadratic game
def quadratic_game(scale: float, n: int = 20, m: int = 15, seed: int = 0) -> tuple[MinimaxProblem, np.ndarray]:
    """½xᵀAx + xᵀBy − ½yᵀCy − aᵀx − bᵀy, all data × scale; A, C eigenvalues in [0.1, 1]; saddle z*."""
    rng = np.random.default_rng(seed)

    def spd(k: int) -> np.ndarray:
        q, _ = np.linalg.qr(rng.standard_normal((k, k)))
        return q @ np.diag(np.linspace(0.1, 1.0, k)) @ q.T

    A, C = spd(n), spd(m)
    B = rng.standard_normal((n, m)) / np.sqrt(m)
    a, b = rng.standard_normal(n), rng.standard_normal(m)
    Ci = np.linalg.inv(C)
    xs = np.linalg.solve(A + B @ Ci @ B.T, a + B @ Ci @ b)
    ys = Ci @ (B.T @ xs - b)
    mats = [scale * M for M in (A, B, C, a, b)]

    def build(device: Any, dtype: Any) -> Any:
        At, Bt, Ct, at, bt = (torch.as_tensor(M, device=device, dtype=dtype) for M in mats)
        return lambda v, batch=None: (
            0.5 * v["x"] @ At @ v["x"] + v["x"] @ Bt @ v["y"] - 0.5 * v["y"] @ Ct @ v["y"] - at @ v["x"] - bt @ v["y"]
        )

    p = MinimaxProblem((Variable("x", (n,)),), (Variable("y", (m,)),), TorchFunction(build, source="quadratic"))
    return p, np.concatenate([xs, ys])


def iterations_to(problem: MinimaxProblem, z_star: np.ndarray, rule: Any, max_iter: int, target: float = 1e-4) -> str:
    """Iterations until ‖z − z*‖/‖z*‖ ≤ target, or 'diverged' / 'not reached'."""
    hit: dict[str, int] = {}
    nz = float(np.linalg.norm(z_star))

    def cb(t: int, x: dict, y: dict) -> bool:
        z = torch.cat([x["x"], y["y"]]).double().cpu().numpy()
        d = float(np.linalg.norm(z - z_star)) / nz
        if not math.isfinite(d) or d > 1e8:
            hit["div"] = t
            return True
        if d <= target:
            hit["t"] = t
            return True
        return False

    ctx = RunContext(seed=0, max_iter=max_iter, tol=1e-30)
    sol = minimax_loop(problem, rule, ctx, LoopSettings(final_report=False), callback=cb)
    if "t" in hit:
        return str(hit["t"])
    return "diverged" if ("div" in hit or sol.status.value == "diverged") else "not reached"


def table_scales(max_iter: int) -> None:
    print(f"\n## 1. Quadratic game scaled by s: iterations to 1e-4 relative distance (max {max_iter})\n")
    rows: dict[str, list[str]] = {}
    for s in SCALES:
        p, z = quadratic_game(s)
        rows.setdefault("adasgda (defaults)", []).append(
            iterations_to(p, z, AdaSGDARule(AdaSGDA().make_options({})), max_iter)
        )
        rows.setdefault("adasgda-vr (defaults)", []).append(
            iterations_to(p, z, AdaSGDARule(AdaSGDA().make_options({"variant": "vr"})), max_iter)
        )
        for lr in GDA_STEPS:
            rows.setdefault(f"gda lr={lr:g}", []).append(iterations_to(p, z, FixedStepGDA(lr, lr, False), max_iter))
    head = "| method | " + " | ".join(f"s={s:g}" for s in SCALES) + " | scales reached |"
    print(head)
    print("|" + "---|" * (len(SCALES) + 2))
    for name, cells in rows.items():
        ok = sum(c.isdigit() for c in cells)
        print(f"| {name} | " + " | ".join(cells) + f" | {ok}/{len(SCALES)} |")
    best = []
    for j in range(len(SCALES)):
        g = [int(rows[f"gda lr={lr:g}"][j]) for lr in GDA_STEPS if rows[f"gda lr={lr:g}"][j].isdigit()]
        a = rows["adasgda (defaults)"][j]
        best.append(f"{int(a) / min(g):.2f}" if g and a.isdigit() else "n/a")
    print("| adasgda / best-tuned gda (per scale) | " + " | ".join(best) + " | |")


# ----------------------------------------------------------------------------- 2. robust regression
def load_regression(file: str = "concrete.csv") -> tuple[np.ndarray, np.ndarray]:
    """Standardized features and target of one shared regression CSV (target last, named y)."""
    raw = np.loadtxt(data_dir() / "regression" / file, delimiter=",", skiprows=1)
    X, y = raw[:, :-1], raw[:, -1]
    return (X - X.mean(0)) / (X.std(0) + 1e-12), (y - y.mean()) / y.std()


def robust_regression(X: np.ndarray, y: np.ndarray, rho: float = 1.0, lam: float = 1e-3) -> MinimaxProblem:
    """min_{w,b} max_{p∈Δ} Σ pᵢ ½(xᵢᵀw + b − yᵢ)² − (ρN/2)‖p − 1/N‖² + (λ/2)‖w‖² (χ²-penalized DRO)."""
    N, d = X.shape

    def build(device: Any, dtype: Any) -> Any:
        Xt = torch.as_tensor(X, device=device, dtype=dtype)
        yt = torch.as_tensor(y, device=device, dtype=dtype)

        def fn(v: dict, batch: Any = None) -> torch.Tensor:
            w, b, p = v["w"], v["b"], v["p"]
            Xb, yb, pb = (Xt, yt, p) if batch is None else (Xt[batch], yt[batch], p[batch])
            loss = 0.5 * (Xb @ w + b - yb) ** 2
            scale = 1.0 if batch is None else N / batch.numel()
            return scale * (pb * loss).sum() - 0.5 * rho * N * ((p - 1.0 / N) ** 2).sum() + 0.5 * lam * (w @ w)

        return fn

    return MinimaxProblem(
        (Variable("w", (d,)), Variable("b", ())),
        (Variable("p", (N,), Domain("simplex")),),
        TorchFunction(build, n_samples=N, source="χ²-penalized robust regression"),
    )


def robust_regression_cvxpy(X: np.ndarray, y: np.ndarray, rho: float = 1.0, lam: float = 1e-3) -> tuple[float, Any]:
    """Φ* and w* as one convex program: the inner max over the simplex dualized (τ, z = ℓ − τ + ν)."""
    import cvxpy as cp

    N, d = X.shape
    w, b, tau, z = cp.Variable(d), cp.Variable(), cp.Variable(), cp.Variable(N)
    obj = tau + cp.sum(z) / N + cp.sum_squares(z) / (2 * rho * N) + lam / 2 * cp.sum_squares(w)
    prob = cp.Problem(cp.Minimize(obj), [0.5 * cp.square(X @ w + b - y) <= z + tau])
    prob.solve()
    return float(prob.value), np.asarray(w.value)


def table_robust(budget: int) -> None:
    X, y = load_regression()
    p = robust_regression(X, y)
    n = p.objective.n_samples
    phi_star, w_star = robust_regression_cvxpy(X, y)
    print(f"\n## 2. Robust regression game (concrete.csv, N={n}, p ∈ simplex): {budget} gradient evaluations\n")
    print(f"reference (cvxpy, the inner max dualized): Φ* = {phi_star:.6f}\n")
    print("| method | batch | iterations | ‖∇Φ(w)‖ | Φ(w) − Φ* | ‖w − w*‖/‖w*‖ | seconds |")
    print("|---|---|---|---|---|---|---|")
    runs: list[tuple[str, Any, dict]] = [
        ("adasgda (defaults)", AdaSGDA(), {}),
        ("adasgda-vr", AdaSGDA(), {"variant": "vr"}),
        ("adasgda batch 64", AdaSGDA(), {"batch": 64}),
        ("adasgda-vr batch 64", AdaSGDA(), {"variant": "vr", "batch": 64}),
    ]
    runs += [(f"gda lr={lr:g}", GDA(), {"lr_x": lr, "lr_y": lr}) for lr in GDA_STEPS]
    for name, be, opts in runs:
        evals_per_iter = 2 if opts.get("variant") == "vr" else 1
        batch = opts.get("batch", 0)
        iters = budget * (n // batch if batch else 1) // evals_per_iter
        t0 = time.perf_counter()
        sol = be.solve(p, be.make_options({**opts, "final_report": False}), RunContext(max_iter=iters, tol=1e-30))
        dt = time.perf_counter() - t0
        if sol.status.value == "diverged":
            print(f"| {name} | {batch or 'full'} | {sol.iterations} | diverged | | | {dt:.1f} |")
            continue
        rep = stationarity_report(p, sol.values, convex_concave="no")
        g, dphi = rep["grad_phi_norm"], rep["phi"] - phi_star
        dw = float(np.linalg.norm(sol.values["w"] - w_star) / np.linalg.norm(w_star))
        print(f"| {name} | {batch or 'full'} | {sol.iterations} | {g:.2e} | {dphi:.2e} | {dw:.2e} | {dt:.1f} |")


# ----------------------------------------------------------------------------- 3. matrix-variable game
def matrix_game(m: int = 8, n: int = 32, seed: int = 0, whitened: bool = True, mu: float = 1.0) -> MinimaxProblem:
    """min_W max_y ½‖P(W − M)‖² + yᵀ(W c) − (μ/2)‖y‖²; PᵀP's eigenvalues log-spread over 1e-2..1.

    The target M has orthonormal rows × √n (whitened) or Gaussian entries: the anisotropy sits in
    the left factor P, where the polar factor of the gradient acts as a preconditioner.
    """
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    P = q @ np.diag(np.logspace(-1, 0, m)) @ q.T
    M = np.linalg.qr(rng.standard_normal((n, m)))[0].T * np.sqrt(n) if whitened else rng.standard_normal((m, n))
    c = rng.standard_normal(n) / np.sqrt(n)

    def build(device: Any, dtype: Any) -> Any:
        Pt, Mt, ct = (torch.as_tensor(a, device=device, dtype=dtype) for a in (P, M, c))
        return lambda v, batch=None: (
            0.5 * ((Pt @ (v["W"] - Mt)) ** 2).sum() + v["y"] @ (v["W"] @ ct) - 0.5 * mu * v["y"] @ v["y"]
        )

    return MinimaxProblem((Variable("W", (m, n)),), (Variable("y", (m,)),), TorchFunction(build, source="matrix game"))


def table_matrix(max_iter: int, seeds: tuple[int, ...], tols: tuple[float, ...] = (1e-2, 1e-4)) -> None:
    print(f"\n## 3. Matrix-variable game (W 8×32): iterations to verified ‖∇Φ‖ ≤ tol·proxy₀ (max {max_iter})\n")
    print(
        "| target M | tol | seed | orthogonalized (default) | always orthogonalized | plain adaptive "
        "| plain / default |"
    )
    print("|---|---|---|---|---|---|---|")
    variants = ({}, {"ortho_until": 0.0}, {"orthogonalize": False})
    for whitened in (True, False):
        for tol in tols:
            ratios = []
            for seed in seeds:
                p = matrix_game(seed=seed, whitened=whitened)
                its = []
                for opts in variants:
                    be = AdaSGDA()
                    sol = be.solve(
                        p,
                        be.make_options({**opts, "final_report": False}),
                        RunContext(seed=seed, max_iter=max_iter, tol=tol),
                    )
                    its.append(sol.iterations if sol.status.value == "converged" else None)
                r = its[2] / its[0] if its[0] and its[2] else None
                if r:
                    ratios.append(r)
                cells = [str(i) if i else "not reached" for i in its]
                name = "whitened" if whitened else "gaussian"
                print(f"| {name} | {tol:g} | {seed} | " + " | ".join(cells) + f" | {f'{r:.2f}' if r else 'n/a'} |")
            if ratios:
                gm = math.exp(float(np.mean(np.log(ratios))))
                print(f"| {'whitened' if whitened else 'gaussian'} | {tol:g} | geo. mean | | | | {gm:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller budgets (a few minutes)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    print("# minimax benchmark" + (" (--quick)" if args.quick else ""))
    table_scales(3000 if args.quick else 20000)
    table_robust(300 if args.quick else 2000)
    table_matrix(2500 if args.quick else 5000, (0,) if args.quick else (0, 1, 2))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
