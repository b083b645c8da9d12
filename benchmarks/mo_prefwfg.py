"""WFG1–9 with two objectives and a preference: does paretom3 find the preferred point, and does its status
ever claim more than it found?

The models are `benchmarks/mo_wfg.py`'s (24 variables, x_i ∈ [0, 2i], k = 4) with a `prefer` line drawn per
problem: the distance of F to a point, a weighted sum f1 + w f2, and the Chebyshev achievement
max(w1 (f1 − r1), w2 (f2 − r2)). The exact answer is the least φ over the analytic front (200 001 positions,
non-dominated), a one-dimensional problem. A run is a hit when its φ is within 1e-4 (relative above 1) of
the exact one and its objective vector within 1e-4 of the front (sampled); a `converged` miss is a false
claim. The draws do not depend on `--problems` or `--kinds` (every problem's are drawn in turn).
Slow: minutes per model (24 variables, nonsmooth transformations).
Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/mo_prefwfg.py [--problems 1,2,...] [--kinds dist,lin,cheb]
       [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

import optlang

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mo_wfg import front, model  # noqa: E402

KINDS = ("dist", "lin", "cheb")


def _draw(rnd: random.Random, kind: str) -> tuple[str, object]:
    """(preference source, φ on rows of F) for one kind; draws in a fixed order."""
    r = [round(rnd.uniform(0, 2.2), 2), round(rnd.uniform(0, 4.4), 2)]
    if kind == "dist":
        return f"(f1 - {r[0]})^2 + (f2 - {r[1]})^2", lambda F: (F[:, 0] - r[0]) ** 2 + (F[:, 1] - r[1]) ** 2
    if kind == "lin":
        w = round(rnd.uniform(0.2, 3), 2)
        return f"f1 + {w} * f2", lambda F: F[:, 0] + w * F[:, 1]
    v = [round(rnd.uniform(0.5, 2), 2) for _ in range(2)]
    return (
        f"maximum({v[0]} * (f1 - {r[0]}), {v[1]} * (f2 - {r[1]}))",
        lambda F: np.maximum(v[0] * (F[:, 0] - r[0]), v[1] * (F[:, 1] - r[1])),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="1,2,3,4,5,6,7,8,9")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    chosen = {int(s) for s in args.problems.split(",")}
    kinds = set(args.kinds.split(","))
    rnd = random.Random(args.seed)
    hits = runs = false_claims = 0
    print("| problem | preference | status | φ error | distance of F to the front | seconds |")
    print("|---|---|---|---|---|---|")
    for p in range(1, 10):
        R = front(p, 2) if p in chosen else None
        for kind in KINDS:
            src, phi = _draw(rnd, kind)
            if R is None or kind not in kinds:
                continue
            best = float(np.min(phi(R)))  # type: ignore[operator]
            t = time.perf_counter()
            res = optlang.parse(model(p, 2) + f"prefer {src}\n").solve(seed=args.seed)
            secs = time.perf_counter() - t
            F = np.array([[res.info["objectives"]["f1"], res.info["objectives"]["f2"]]])
            err = float(phi(F)[0]) - best  # type: ignore[operator]
            dist = float(np.min(np.linalg.norm(R - F, axis=1)))
            hit = abs(err) <= 1e-4 * max(1.0, abs(best)) and dist <= 1e-4
            runs += 1
            hits += hit
            false_claims += (not hit) and res.status.value == "converged"
            print(f"| WFG{p} | {src} | {res.status.value} | {err:+.2e} | {dist:.1e} | {secs:.1f} |", flush=True)
    print(f"\nhits {hits} / {runs}; misses claimed converged: {false_claims}")


if __name__ == "__main__":
    main()
