"""Measure the exact methods' cost on this machine: the numbers behind planner.COSTS.

bruteforce: seconds per enumerated state (2^n states, dense random couplings).
bnb: solve time of random Max-Cut graphs (G(n, p) with unit weights, and ±1 weights) by size; the
planner trusts bnb while its measured time stays well inside the budget.

    python benchmarks/planner_costs.py [--max-brute 22] [--bnb-sizes 20,30,40,50,60] [--limit 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp


def ising(n: int, seed: int) -> object:
    from optlang.problem import IsingProblem

    rng = np.random.default_rng(seed)
    A = np.triu(rng.normal(size=(n, n)), 1)
    J = sp.csr_matrix(A + A.T)
    return IsingProblem(J=J, h=rng.normal(size=n), constant=0.0)


def maxcut_ising(n: int, p: float, signed: bool, seed: int) -> object:
    from optlang.problem import IsingProblem

    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((n, n)) < p, 1).astype(float)
    if signed:
        A *= rng.choice([-1.0, 1.0], size=A.shape)
    W = A + A.T
    # maximize the cut ⇔ minimize sᵀ(W/4)s (each pair counted twice in sᵀJs)
    Wc = sp.csr_matrix(W)
    return IsingProblem(J=sp.csr_matrix(W / 4.0), h=np.zeros(n), constant=-W.sum() / 4.0, maxcut_weights=Wc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-brute", type=int, default=22)
    ap.add_argument("--bnb-sizes", default="20,30,40,50,60")
    ap.add_argument("--limit", type=float, default=20.0, help="time limit per bnb solve (s)")
    ap.add_argument("--seeds", type=int, default=2)
    a = ap.parse_args()

    from optlang.backends.base import RunContext
    from optlang.backends.ising.ops import brute_force_min

    print("bruteforce: n, states, seconds, ns/state")
    for n in range(12, a.max_brute + 1, 2):
        prob = ising(n, n)
        t = time.perf_counter()
        brute_force_min(prob)
        dt = time.perf_counter() - t
        print(f"  {n:3d}  2^{n:<3d} {dt:8.3f}  {dt / 2**n * 1e9:7.2f}")

    from optlang.backends import registry

    bnb = registry.get("bnb")
    print("bnb: n, p, weights, seeds → median s, max s, statuses")
    for n in (int(x) for x in a.bnb_sizes.split(",")):
        for p, signed in ((0.5, False), (0.15, True)):
            times, stats = [], []
            for seed in range(a.seeds):
                prob = maxcut_ising(n, p, signed, 100 * n + seed)
                ctx = RunContext(seed=seed, device="cpu", dtype="float32", time_limit=a.limit)
                t = time.perf_counter()
                raw = bnb.solve(prob, bnb.make_options({}), ctx)
                times.append(time.perf_counter() - t)
                stats.append(str(raw.status))
            w = "±1" if signed else "1"
            print(f"  {n:3d} {p:.2f} {w:>3}  {np.median(times):7.2f} {max(times):7.2f}  {','.join(stats)}")


if __name__ == "__main__":
    main()
