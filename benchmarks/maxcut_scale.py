"""Max-Cut at scale: specann vs neal at equal wall time on generated sparse graphs.

Usage: .venv/bin/python benchmarks/maxcut_scale.py [--quick] [--sizes 10000,100000,1000000]
       [--times 10,30,300] [--graphs regular3,torus] [--device cpu|cuda] [--methods specann,neal]
Graphs: random simple 3-regular and a 2-D torus, both with ±1 weights, seeded, drawn by the
language's generators (optlang.data through benchmarks/graphs.py). Each run is its own subprocess,
so its peak memory (ru_maxrss) is its own.
Columns: time to the first cut, the first cut, the cut at the limit, wall time, peak memory, and
the specann/neal cut ratio. Numbers were measured on a shared, loaded 2-core CPU unless noted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def regular3(n: int, seed: int) -> sp.csr_matrix:
    """A random simple 3-regular graph with ±1 weights (the language's random_regular; n rounded up to even)."""
    from benchmarks.graphs import random_regular

    return random_regular(n + n % 2, 3, np.random.default_rng(seed), signed=True)


def torus(n: int, seed: int) -> sp.csr_matrix:
    """An L × L torus (L = ⌊√n⌋) with ±1 weights on its 2L² edges (the language's torus)."""
    from benchmarks.graphs import torus as torus_graph

    L = int(np.sqrt(n))
    return torus_graph(L, L, np.random.default_rng(seed), signed=True)


def worker(graph: str, n: int, method: str, tl: float, device: str, seed: int) -> None:
    """One run, in this process; prints one JSON line."""
    import torch

    from optlang.backends.base import RunContext
    from optlang.backends.ising.ops import cut_value
    from optlang.problem import IsingProblem

    torch.set_num_threads(1)
    W = (regular3 if graph == "regular3" else torus)(n, seed)
    p = IsingProblem.from_maxcut(W)
    if method == "specann":
        from optlang.backends.ising.specann import SpecAnn

        b = SpecAnn()
    else:
        from optlang.backends.ising.neal import Neal

        b = Neal()
    ctx = RunContext(seed=seed, time_limit=tl, device=device)
    t = time.perf_counter()
    r = b.solve(p, b.make_options({"patience": 0}), ctx)  # equal wall time: no stagnation stop
    wall = time.perf_counter() - t
    first_t, first_e = r.history[0][0], r.history[0][1]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if device == "cuda":
        peak_gpu = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_gpu = 0.0
    out = {
        "graph": graph,
        "n": p.n,
        "edges": W.nnz // 2,
        "method": method,
        "time_limit": tl,
        "first_time": first_t,
        "first_cut": -first_e,
        "cut": cut_value(W, r.values["s"]),
        "wall": wall,
        "peak_mb": peak,
        "peak_gpu_mb": peak_gpu,
        "status": r.status.value,
        "reads": r.info.get("reads"),
        "sweeps": r.info.get("sweeps"),
        "rounds": r.info.get("rounds"),
    }
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^4 and 10^5 nodes, 10 s and 20 s")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--times", default=None, help="time limit per size (seconds)")
    ap.add_argument("--graphs", default="regular3,torus")
    ap.add_argument("--methods", default="specann,neal")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=4, metavar=("GRAPH", "N", "METHOD", "TIME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        g, n, m, tl = args.worker
        worker(g, int(n), m, float(tl), args.device, args.seed)
        return
    sizes = [
        int(float(s)) for s in (args.sizes or ("10000,100000" if args.quick else "10000,100000,1000000")).split(",")
    ]
    times = [float(t) for t in (args.times or ("10,20" if args.quick else "10,30,300")).split(",")]
    methods = args.methods.split(",")
    print(f"# Max-Cut scale, device {args.device}, torch threads 1, seed {args.seed}")
    print(
        f"{'graph':<9} {'n':>8} {'edges':>8} {'method':<8} {'limit':>6} {'t_first':>8} {'first cut':>10} "
        f"{'cut':>10} {'wall':>7} {'peak MB':>8} {'reads':>5} {'cut/neal':>8}"
    )
    for graph in args.graphs.split(","):
        for n, tl in zip(sizes, times, strict=False):
            res = {}
            for m in methods:
                cmd = [
                    sys.executable,
                    __file__,
                    "--worker",
                    graph,
                    str(n),
                    m,
                    str(tl),
                    "--device",
                    args.device,
                    "--seed",
                    str(args.seed),
                ]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    print(f"{graph:<9} {n:>8} {m}: failed: {out.stderr.strip().splitlines()[-1:]}")
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                res[m] = r
                ratio = ""
                if m != "neal" and "neal" in res:
                    ratio = f"{r['cut'] / res['neal']['cut']:.4f}"
                print(
                    f"{graph:<9} {r['n']:>8} {r['edges']:>8} {m:<8} {tl:>6.0f} {r['first_time']:>8.2f} "
                    f"{r['first_cut']:>10.0f} {r['cut']:>10.0f} {r['wall']:>7.1f} {r['peak_mb']:>8.0f} "
                    f"{r['reads'] or '':>5} {ratio:>8}",
                    flush=True,
                )
            if "specann" in res and "neal" in res and methods.index("specann") < methods.index("neal"):
                print(f"{'':<9} {'':>8} specann/neal cut ratio {res['specann']['cut'] / res['neal']['cut']:.4f}")


if __name__ == "__main__":
    main()
