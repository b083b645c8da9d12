"""Sweeps and `auto`: a 64-point path as one batched solve vs 64 separate solves, and TC-DRO with
`radius = auto` on held-out splits.

    .venv/bin/python benchmarks/sweep.py [--points 64] [--only speed|auto|ising] [--datasets boston,cpus]
        [--splits 5] [--split-seed 1000]

speed: for each kind, the same .opt solved at every point of a 64-point path (ridge weight of a
least-squares model — kind smooth; the χ² radius and the target-conditional radius of a linear
DRO regression — kind dro; the upper-level weight of a min-norm simple bilevel model — kind bilevel;
the weight w of the preference w·f1 + (1 − w)·f2 on ZDT1 — kind multiobjective; the regularization
weight of a strongly-convex–strongly-concave game — kind minimax) once as `Model.sweep` (one batched
problem) and once as 64 separate in-process solves (`optlang.parse(text, params=point).solve()`,
planned backend: gd / tcdro / sdbpg / paretom3 / adasgda; the bilevel row's separate solves in float64
like its batched one). `--rows bilevel` runs only the rows whose label contains it; `--kinds
multiobjective,minimax` only the rows whose label starts with one of those.
Both sides include lowering each point and verifying each Result. Prints wall time and the ratio,
CPU time (this process) and its ratio, the 1-minute load average after the row, and the accuracy:
the largest relative objective difference between the two, how many points the batched solve
reached an objective at least as low (minimization) up to 1e-9 relative, and the largest relative
amount by which a batched objective is above the separate one.

ising: the same for Ising / Max-Cut / QUBO paths (a field scale solved exactly, a field, the seed of a
torus's ±1 weights, a QUBO penalty weight), the planned backend on both sides (bruteforce, specann;
the batch: backends/ising/batched.py); wall and CPU seconds, the mean objective difference in the
user's sense (> 0: the batch is better), how many points the batch did better / equally / worse,
and the 1-minute load average after each row.

auto: per dataset (../shared/data/regression and the generated imbalanced set of dro_tail.py),
`splits` seeded 80/20 train/test splits; features and targets standardized with the training
statistics; the training part is written to a CSV and solved from the .opt

    data D = load("train.csv", target = "y")
    var w[D.p]
    var b
    minimize robust mean((D.X @ w + b - D.y)^2) within target_conditional(chi2, radius = auto)

(the radius chosen inside tcdro by 5-fold validation on that training CSV alone) and the ERM
baseline (the same loss, `chi2(radius = 0)`, backend erm). Test MSE and tail MSE (test targets at
or above the training targets' 90 % quantile), in target units, as means of per-split ratios to
ERM; the goal: tail ≤ 0.8 × ERM with MSE ≤ 1.25 × ERM. The test part never reaches the solver.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import optlang  # noqa: E402
from optlang.backends.dro import metrics  # noqa: E402

DATASETS = ("boston", "concrete", "forestfires_area", "forestfires_logarea", "cpus", "bikeshare", "synthetic")

SPEED_MODELS = {
    "smooth (ridge weight)": (
        """param X = randn(1000, 20, seed = 1)
param y = X @ randn(20, seed = 3) + randn(1000, seed = 2)
param lam = 0.1
var w[20]
minimize mean((X @ w - y)^2) + lam * sumsq(w)""",
        "lam",
        np.logspace(-3, 1, 64),
    ),
    "dro (chi2 radius)": (
        """param X = randn(1000, 20, seed = 1)
param y = X @ randn(20, seed = 3) + randn(1000, seed = 2) ^ 3
param r = 0.1
var w[20]
var b
minimize robust mean((X @ w + b - y)^2) within chi2(radius = r)""",
        "r",
        np.logspace(-2, 0.5, 64),
    ),
    "dro (target_conditional radius)": (
        """param X = randn(1000, 20, seed = 1)
param y = X @ randn(20, seed = 3) + randn(1000, seed = 2) ^ 3
param r = 0.1
var w[20]
var b
minimize robust mean((X @ w + b - y)^2) within target_conditional(chi2, radius = r, by = y)""",
        "r",
        np.logspace(-2, 0.5, 64),
    ),
    "bilevel (upper weight, sdbpg)": (
        """param A = randn(4, 12, seed = 1)
param b = randn(4, seed = 2)
param x0 = randn(12, seed = 3)
param lam = 1
var x[12]
minimize 0.5 * sumsq(x - lam * x0)
subject to { x in argmin 0.5 * sumsq(A @ x - b) }""",
        "lam",
        np.logspace(-1, 0, 64),
    ),
    "multiobjective (preference weight)": (
        """var x[30] in [0, 1]
let g = 1 + 9 * mean(x[1:])
param w = 0.5
minimize {
  f1: x[0]
  f2: g * (1 - sqrt(x[0] / g))
}
prefer w * f1 + (1 - w) * f2""",
        "w",
        np.linspace(0.35, 0.9, 64),
    ),
    "minimax (regularization weight)": (
        """param B = randn(10, 8, seed = 21)
param a = randn(10, seed = 22)
param c = randn(8, seed = 23)
param lam = 1
var x[10]
var y[8]
minimize max over y: 0.5 * lam * sumsq(x) + dot(a, x) + x @ B @ y - sumsq(y) + dot(c, y)""",
        "lam",
        np.logspace(-1, 1, 64),
    ),
}
# options of the separate solves of a row: the batched bilevel sweep runs in float64, so its
# separate solves do too (same accuracy; sdbpg's float32 default stalls on this model's KKT test)
SINGLE_OPTIONS: dict[str, dict[str, str]] = {"bilevel (upper weight, sdbpg)": {"dtype": "float64"}}

AUTO_MODEL = """data D = load("train.csv", target = "y")
var w[D.p]
var b
minimize robust mean((D.X @ w + b - D.y)^2) within target_conditional(chi2, radius = auto)
"""
ERM_MODEL = """data D = load("train.csv", target = "y")
var w[D.p]
var b
minimize robust mean((D.X @ w + b - D.y)^2) within chi2(radius = 0)
solver erm {}
"""


def speed(points: int, rows: str = "", kinds: str = "") -> None:
    print(f"## {points}-point paths: one batched sweep vs {points} separate in-process solves (shared 2-core machine)")
    print(
        "| kind (swept) | sweep s | separate s | ratio | CPU: sweep s | separate s | ratio "
        "| max rel. objective diff | batched ≤ separate | worst excess of batched | all ok | load (1 min) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, (text, name, values) in SPEED_MODELS.items():
        if rows and rows not in label:
            continue
        if kinds and not any(label.startswith(k) for k in kinds.split(",")):
            continue
        values = values[:points] if points <= len(values) else np.logspace(-2, 0.5, points)
        model = optlang.parse(text)
        # warm-up on a path of the same length and shapes but other values (the midpoints of the measured
        # path, and its last value): imports, torch kernels and the first call at the 64-point batch shape,
        # which a 2-point warm-up left in the measured sweep (~25 ms on the ridge row), without letting
        # anything keyed on the measured values be reused; the separate solves are warmed by one solve below
        v = np.asarray(values, dtype=float)
        model.sweep({name: np.append((v[:-1] + v[1:]) / 2, v[-1])})
        t0, c0 = time.perf_counter(), time.process_time()
        sw = model.sweep({name: values})
        t_sweep, c_sweep = time.perf_counter() - t0, time.process_time() - c0
        opts = SINGLE_OPTIONS.get(label, {})
        optlang.parse(text).solve(seed=0, max_iter=2, **opts)  # warm-up of the single solve's imports
        t0, c0 = time.perf_counter(), time.process_time()
        singles = [optlang.parse(text, params={name: float(v)}).solve(seed=0, **opts) for v in values]
        t_sep, c_sep = time.perf_counter() - t0, time.process_time() - c0
        a = np.array([r.objective for r in sw.results])
        b = np.array([r.objective for r in singles])
        rel = np.abs(a - b) / np.maximum(1.0, np.abs(b))
        le = int(np.sum(a <= b + 1e-9 * np.maximum(1.0, np.abs(b))))
        excess = float(np.max((a - b) / np.maximum(1.0, np.abs(b))))
        ok = all(r.ok for r in sw.results) and all(r.ok for r in singles)
        print(
            f"| {label} | {t_sweep:.2f} | {t_sep:.2f} | {t_sep / t_sweep:.1f}× | {c_sweep:.2f} | {c_sep:.2f} "
            f"| {c_sep / c_sweep:.1f}× | {rel.max():.1e} | {le}/{len(a)} | {max(excess, 0.0):.1e} "
            f"| {'yes' if ok else 'no'} | {os.getloadavg()[0]:.1f} |"
        )
        print(f"<!-- {sw.plan} -->")


ISING_MODELS = {
    "ising, exact (field scale t, SK glass, 18 spins)": (
        """param n = 18
param A = randn(n, n, seed = 7)
param h = randn(n, seed = 8)
param t = 0.3
spin s[n]
minimize quad(s, (A + A.T) / 2) / sqrt(n) + t * dot(h, s)""",
        "t",
        lambda k: np.linspace(-1, 1, k),
    ),
    "ising (field h, 16×16 ±J torus, 256 spins)": (
        """param h = 0.2
graph T = torus(16, 16, weights = "signed", seed = 3)
spin s[T.n]
minimize quad(s, adjacency(T)) / 2 - h * sum(s)""",
        "h",
        lambda k: np.linspace(-1, 1, k),
    ),
    "maxcut (±1 weights' seed, 16×16 torus, 256 nodes)": (
        """param k = 0
graph T = torus(16, 16, weights = "signed", seed = k)
maxcut T""",
        "k",
        lambda k: np.arange(k),
    ),
    "qubo (penalty weight, independent set, 3-regular, 200 binaries)": (
        """param lam = 1
graph G = random_regular(200, 3, seed = 5)
binary x[G.n]
maximize sum(x) - lam * quad(x, adjacency(G)) / 2""",
        "lam",
        lambda k: np.linspace(0.25, 2.5, k),
    ),
}


def ising_speed(points: int) -> None:
    """Ising / Max-Cut / QUBO: a path as one batched sweep vs separate in-process solves of the planned backend."""
    import os

    print(
        f"\n## Ising / Max-Cut: {points}-point sweeps as one batch vs {points} separate in-process solves "
        "(the planned backend on both sides: bruteforce for 18 spins, specann above; shared 2-core machine)"
    )
    print(
        "| model (swept) | sweep s (CPU s) | separate s (CPU s) | ratio | mean objective diff (batched − separate, "
        "user sense) | batched better / equal / worse | all ok | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, (text, name, values_of) in ISING_MODELS.items():
        values = values_of(points)
        model = optlang.parse(text)
        model.sweep({name: values[:2]})  # warm-up: imports and torch kernels
        optlang.parse(text, params={name: float(values[0])}).solve(seed=0)
        c0, t0 = time.process_time(), time.perf_counter()
        sw = model.sweep({name: values})
        t_sweep, c_sweep = time.perf_counter() - t0, time.process_time() - c0
        c0, t0 = time.process_time(), time.perf_counter()
        singles = [optlang.parse(text, params={name: float(v)}).solve(seed=0) for v in values]
        t_sep, c_sep = time.perf_counter() - t0, time.process_time() - c0
        sign = 1.0 if sw.results[0].sense == "maximize" else -1.0  # diff > 0: the batch is better
        a = np.array([r.objective for r in sw.results])
        b = np.array([r.objective for r in singles])
        d = sign * (a - b)
        tol = 1e-9 * np.maximum(1.0, np.abs(b))
        ok = all(r.ok for r in sw.results) and all(r.ok for r in singles)
        print(
            f"| {label} | {t_sweep:.2f} ({c_sweep:.2f}) | {t_sep:.2f} ({c_sep:.2f}) | {t_sep / t_sweep:.1f}× "
            f"| {float(np.mean(d)):+.3g} | {int(np.sum(d > tol))} / {int(np.sum(np.abs(d) <= tol))} / "
            f"{int(np.sum(d < -tol))} | {'yes' if ok else 'no'} | {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
        print(f"<!-- {sw.plan}; separate: {singles[0].backend} -->")


def split(X: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    cut = int(0.8 * len(y))
    tr, te = perm[:cut], perm[cut:]
    mu, sd = X[tr].mean(0), X[tr].std(0)
    sd[sd == 0] = 1.0
    return (X[tr] - mu) / sd, y[tr], (X[te] - mu) / sd, y[te]


def fit(text: str, Xtr: np.ndarray, ytr: np.ndarray, seed: int, folder: Path) -> tuple[np.ndarray, float, dict]:
    ym, ys = ytr.mean(), ytr.std()
    arr = np.column_stack([Xtr, (ytr - ym) / ys])
    header = ",".join([f"x{i}" for i in range(Xtr.shape[1])] + ["y"])
    np.savetxt(folder / "train.csv", arr, delimiter=",", header=header, comments="", fmt="%.17g")
    r = optlang.parse(text, base_dir=folder).solve(seed=seed)
    if not r.ok:
        raise RuntimeError(f"solve not ok: {r.status} {[c for c in r.checks if not c.passed]}")
    return r.values["w"], float(r.values["b"]), {"ym": ym, "ys": ys, "auto": r.info.get("auto")}


def auto_table(names: list[str], splits: int, split_seed: int) -> None:
    from dro_tail import load

    print(f"\n## TC-DRO with radius = auto vs ERM: {splits} splits (80/20, seeds {split_seed}…), test parts unseen")
    print("| dataset | tail/ERM | MSE/ERM | goal met | chosen (radius/outer) per split | s |")
    print("|---|---|---|---|---|---|")
    met_real = 0
    n_real = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in names:
            t0 = time.perf_counter()
            X, y = load(name)
            rt, rm, chosen = [], [], []
            for s in range(splits):
                Xtr, ytr, Xte, yte = split(X, y, split_seed + s)
                preds = {}
                for label, text in (("tc", AUTO_MODEL), ("erm", ERM_MODEL)):
                    w, b, meta = fit(text, Xtr, ytr, s, folder)
                    preds[label] = (Xte @ w + b) * meta["ys"] + meta["ym"]
                    if label == "tc" and meta["auto"]:
                        c = meta["auto"]["chosen"]
                        star = "*" if meta["auto"]["how"] != "validation" else ""
                        chosen.append(f"{c['radius']:g}/{c.get('outer_radius', c['radius']):g}{star}")
                tail = {k: metrics.tail_mse(yte, p, ytr, 0.9) for k, p in preds.items()}
                mse = {k: metrics.mse(yte, p) for k, p in preds.items()}
                if np.isfinite(tail["erm"]) and np.isfinite(tail["tc"]):
                    rt.append(tail["tc"] / tail["erm"])
                rm.append(mse["tc"] / mse["erm"])
            t, m = float(np.mean(rt)), float(np.mean(rm))
            ok = t <= 0.8 and m <= 1.25
            if name != "synthetic":
                n_real += 1
                met_real += ok
            print(
                f"| {name} | {t:.3f} | {m:.3f} | {'yes' if ok else 'no'} | {', '.join(chosen)} "
                f"| {time.perf_counter() - t0:.0f} |",
                flush=True,
            )
    print(f"\nreal datasets meeting the goal (tail ≤ 0.8 × ERM, MSE ≤ 1.25 × ERM): {met_real} of {n_real}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=64)
    ap.add_argument("--only", choices=["speed", "auto", "ising"], default=None)
    ap.add_argument("--kinds", default="", help="speed rows whose label starts with one of these (comma-separated)")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--split-seed", type=int, default=1000)
    ap.add_argument("--rows", default="", help="speed: only the rows whose label contains this (e.g. bilevel)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.only in (None, "speed"):
        speed(args.points, args.rows, args.kinds)
    if args.only in (None, "ising"):
        ising_speed(args.points)
    if args.only in (None, "auto"):
        auto_table([d for d in args.datasets.split(",") if d], args.splits, args.split_seed)


if __name__ == "__main__":
    main()
