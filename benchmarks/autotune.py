"""`lr = auto` candidates as one batched run vs one backend fit per candidate and fold (backends/autotune.py).

    .venv/bin/python benchmarks/autotune.py [--rows 400] [--features 8] [--iters 300] [--repeats 3]

A least-squares model on a data table (kind smooth, planned backend gd), `solver gd { method = adam,
lr = auto in [5 values] }`, chosen by 5-fold validation: 25 Adam fits. Solved twice per row: as it
ships (the candidates of each fold as one batched Adam run, gd_batched.py) and with gd's
`solve_candidates` switched off (the fallback: one fit per candidate and fold). Rows with
polish_iter = 0 (Adam only) and with gd's default float64 polish (run per candidate on both sides).
Prints process CPU seconds (median over repeats, the final fit included), the ratio, and the largest
relative score difference between the two. CPU time, not wall: the machine may be shared.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import optlang
from optlang.backends.smooth.gd import GD

MODEL = (
    'data D = load("d.csv", target = "y")\nvar w[{p}]\nminimize mean((D.X @ w - D.y)^2) + 0.01 * sumsq(w)\n'
    "solver gd {{ method = adam, lr = auto in [0.001, 0.003, 0.01, 0.03, 0.1], max_iter = {it}{extra} }}\n"
)


def run(text: str, base: Path, repeats: int) -> tuple[float, list[float | None], str]:
    times, rec = [], {}
    for _ in range(repeats):
        t0 = time.process_time()
        rec = optlang.parse(text, base_dir=base).solve(seed=0).info["auto_options"]
        times.append(time.process_time() - t0)
    return statistics.median(times), [c["score"] for c in rec["candidates"]], rec["execution"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400)
    ap.add_argument("--features", type=int, default=8)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, a.features))
    y = X @ rng.standard_normal(a.features) + 0.3 * rng.standard_normal(a.rows)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        header = ",".join([f"x{i}" for i in range(a.features)] + ["y"])
        np.savetxt(base / "d.csv", np.c_[X, y], delimiter=",", header=header, comments="")
        print(f"{a.rows} rows × {a.features} features, 5 lr candidates × 5 folds, {a.iters} Adam steps")
        print(f"{'row':<22} {'batched CPU s':>14} {'looped CPU s':>13} {'ratio':>6} {'max rel score diff':>19}")
        run(MODEL.format(p=a.features, it=20, extra=""), base, 1)  # warm-up: imports, first compiles
        for label, extra in (("adam, polish_iter = 0", ", polish_iter = 0"), ("adam + default polish", "")):
            text = MODEL.format(p=a.features, it=a.iters, extra=extra)
            tb, sb, eb = run(text, base, a.repeats)
            saved = GD.solve_candidates
            GD.solve_candidates = lambda self, p, o, c: None  # type: ignore[method-assign,assignment]
            try:
                tl, sl, el = run(text, base, a.repeats)
            finally:
                GD.solve_candidates = saved  # type: ignore[method-assign]
            assert eb.startswith("batched") and el.startswith("looped")
            diff = max(
                (
                    abs(x - z) / max(1e-12, abs(z))
                    for x, z in zip(sb, sl, strict=True)
                    if x is not None and z is not None
                ),
                default=float("nan"),
            )
            print(f"{label:<22} {tb:>14.2f} {tl:>13.2f} {tl / tb:>6.2f} {diff:>19.2e}")


if __name__ == "__main__":
    main()
