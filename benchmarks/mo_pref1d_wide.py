"""One-variable preference models drawn wider than mo_pref1d.py, with exact answers: more objective
families (a sin valley that makes points Pareto only locally, monotone tanh, softplus, sqrt), Chebyshev
and L1 preferences besides distances, weighted sums and targets, three boxes, and (`--three`) a third
objective. The exact answer minimizes the preference over the non-dominated points of a grid (600 001
points; 60 001 with three objectives). A run is a hit when its preference value is within 1e-4 of the
exact one and x lies within 1e-4 of the grid's Pareto set; a `converged` miss is a false claim.
Usage: .venv/bin/python benchmarks/mo_pref1d_wide.py [--seed 0] [--n 30] [--three]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import optlang
from optlang.backends.multiobjective.metrics import nondominated_mask

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.mo_pref1d import FAMILIES as NARROW  # noqa: E402

FAMILIES: list[tuple[str, Callable[[np.ndarray, float], np.ndarray]]] = [
    *NARROW,
    ("sqrt(1 + (x - {a})^2)", lambda x, a: np.sqrt(1 + (x - a) ** 2)),
    ("(x - {a})^2 + 0.5 * sin(3 * x)", lambda x, a: (x - a) ** 2 + 0.5 * np.sin(3 * x)),
    ("softplus(x - {a})", lambda x, a: np.logaddexp(0, x - a)),
    ("tanh({a} - x)", lambda x, a: np.tanh(a - x)),
]
BOXES = [(-3.0, 3.0), (-1.0, 2.0), (-6.0, 6.0)]


def preference(kind: str, r: tuple[float, float, float], m: int) -> tuple[str, Callable[..., np.ndarray]]:
    """The preference's text and its numpy form P(F (n, m), x (n,))."""
    if kind == "dist":
        text = " + ".join(f"(f{j + 1} - {r[j]})^2" for j in range(m))
        return text, lambda F, x: ((F - np.asarray(r[:m])) ** 2).sum(1)
    if kind == "lin":
        w = (1.0, r[0], r[1])[:m]
        text = "f1 + " + " + ".join(f"{w[j]} * f{j + 1}" for j in range(1, m))
        return text, lambda F, x: F @ np.asarray(w)
    if kind == "x":
        return f"(x - {r[0]})^2", lambda F, x: (x - r[0]) ** 2
    if kind == "cheb":
        return f"maximum(f1 - {r[0]}, f2 - {r[1]})", lambda F, x: np.maximum(F[:, 0] - r[0], F[:, 1] - r[1])
    return f"abs(f1 - {r[0]}) + abs(f2 - {r[1]})", lambda F, x: np.abs(F[:, 0] - r[0]) + np.abs(F[:, 1] - r[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--three", action="store_true", help="three objectives (distance, weighted sum or target)")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    m = 3 if args.three else 2
    hits = false_claims = 0
    print("| case | box | objectives | preference | status | x | exact x | preference error | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i in range(args.n):
        fams = rnd.sample(FAMILIES, m)
        lo, hi = rnd.choice(BOXES)
        a = [round(rnd.uniform(0.7 * lo, 0.7 * hi), 2) for _ in range(m)]
        r = (round(rnd.uniform(0, 2), 2), round(rnd.uniform(0, 2), 2), round(rnd.uniform(0, 2), 2))
        kind = rnd.choice(["dist", "lin", "x"] if m == 3 else ["dist", "lin", "x", "cheb", "l1"])
        pref, P = preference(kind, r, m)
        texts = [f.format(a=aj) for (f, _), aj in zip(fams, a, strict=True)]
        lines = "".join(f"  f{j + 1}: {t}\n" for j, t in enumerate(texts))
        src = f"var x in [{lo}, {hi}]\nminimize {{\n{lines}}}\nprefer {pref}\n"

        def objectives(x: np.ndarray, fams: list = fams, a: list = a) -> np.ndarray:
            return np.stack([g(x, aj) for (_, g), aj in zip(fams, a, strict=True)], -1)

        X = np.linspace(lo, hi, 60_001 if m == 3 else 600_001)
        F = objectives(X)
        nd = nondominated_mask(F)
        Pv = P(F[nd], X[nd])
        best, x_star = float(Pv.min()), float(X[nd][np.argmin(Pv)])
        t = time.perf_counter()
        res = optlang.parse(src).solve(seed=i)
        secs = time.perf_counter() - t
        x = float(np.asarray(res.values["x"]).ravel()[0])
        err = float(P(objectives(np.array([x])), np.array([x]))[0]) - best
        hit = err <= 1e-4 and float(np.abs(X[nd] - x).min()) <= 1e-4
        hits += hit
        false_claims += (not hit) and res.status.value == "converged"
        print(
            f"| {i} | [{lo}, {hi}] | {'; '.join(texts)} | {pref} | {res.status.value} | {x:.6f} | {x_star:.6f} "
            f"| {err:.1e} | {secs:.1f} |",
            flush=True,
        )
    print(f"\nhits {hits} / {args.n}; misses claimed converged: {false_claims}")


if __name__ == "__main__":
    main()
