"""Random one-variable preference models with exact answers: how often paretom3's preferred point is
right, and whether its status ever claims more than it found.

Each model is `var x in [-3, 3]` with two objectives drawn from smooth and nonsmooth families
((x − a)², |x − a|, e^(±(x − a)), (x − a)⁴, log(1 + (x − a)²)) and a preference (distance of F to a
point, a weighted sum, or a target for x). The exact answer minimizes the preference over the
non-dominated points of a 600 001-point grid. A run is a hit when its preference value is within 1e-4
of the exact one and x lies within 1e-4 of the grid's Pareto set; a `converged` miss is a false claim.
Usage: .venv/bin/python benchmarks/mo_pref1d.py [--seed 0] [--n 30]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import numpy as np

import optlang
from optlang.backends.multiobjective.metrics import nondominated_mask

FAMILIES: list[tuple[str, Callable[[np.ndarray, float], np.ndarray]]] = [
    ("(x - {a})^2", lambda x, a: (x - a) ** 2),
    ("abs(x - {a})", lambda x, a: np.abs(x - a)),
    ("exp(x - {a})", lambda x, a: np.exp(x - a)),
    ("exp({a} - x)", lambda x, a: np.exp(a - x)),
    ("(x - {a})^4", lambda x, a: (x - a) ** 4),
    ("log(1 + (x - {a})^2)", lambda x, a: np.log1p((x - a) ** 2)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    X = np.linspace(-3.0, 3.0, 600_001)
    hits = false_claims = 0
    print("| case | objectives | preference | status | x | exact x | preference error | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for i in range(args.n):
        (s1, g1), (s2, g2) = rnd.sample(FAMILIES, 2)
        a1, a2 = round(rnd.uniform(-2, 2), 2), round(rnd.uniform(-2, 2), 2)
        r1, r2 = round(rnd.uniform(0, 2), 2), round(rnd.uniform(0, 2), 2)
        kind = rnd.choice(["dist", "lin", "x"])
        pref = {"dist": f"(f1 - {r1})^2 + (f2 - {r2})^2", "lin": f"f1 + {r1} * f2", "x": f"(x - {r1})^2"}[kind]

        def P(
            f1: np.ndarray, f2: np.ndarray, x: np.ndarray, kind: str = kind, r1: float = r1, r2: float = r2
        ) -> np.ndarray:
            """The preference, in numpy."""
            if kind == "dist":
                return (f1 - r1) ** 2 + (f2 - r2) ** 2
            return f1 + r1 * f2 if kind == "lin" else (x - r1) ** 2

        e1, e2 = s1.format(a=a1), s2.format(a=a2)
        src = f"var x in [-3, 3]\nminimize {{\n  f1: {e1}\n  f2: {e2}\n}}\nprefer {pref}\n"
        F1, F2 = g1(X, a1), g2(X, a2)
        nd = nondominated_mask(np.stack([F1, F2], 1))
        Pv = P(F1[nd], F2[nd], X[nd])
        best, x_star = float(Pv.min()), float(X[nd][np.argmin(Pv)])
        t = time.perf_counter()
        res = optlang.parse(src).solve(seed=i)
        secs = time.perf_counter() - t
        x = float(res.values["x"])
        err = float(P(g1(np.array(x), a1), g2(np.array(x), a2), np.array(x))) - best
        on_set = float(np.abs(X[nd] - x).min()) <= 1e-4
        hit = err <= 1e-4 and on_set
        hits += hit
        false_claims += (not hit) and res.status.value == "converged"
        print(
            f"| {i} | {e1}; {e2} | {pref} | {res.status.value} | {x:.6f} | {x_star:.6f} | {err:.1e} | {secs:.1f} |",
            flush=True,
        )
    print(f"\nhits {hits} / {args.n}; misses claimed converged: {false_claims}")


if __name__ == "__main__":
    main()
