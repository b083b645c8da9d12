"""Max-Cut at scale: specann vs neal at equal wall time on generated sparse graphs.

Usage: .venv/bin/python benchmarks/maxcut_scale.py [--quick] [--sizes 10000,100000,1000000]
       [--times 10,30,300] [--graphs regular3,torus] [--device cpu|cuda] [--methods specann,neal,sb]
       [--threads 1] [--opt key=value ...] [--memory-limit GB]
Graphs: random simple 3-regular and a 2-D torus, both with ±1 weights, seeded, drawn by the
language's generators (optlang.data through benchmarks/graphs.py). Each run is its own subprocess, so its peak
memory (ru_maxrss) is its own.
Columns: time to the first cut, the first cut, the cut at the limit, wall time, peak memory (ru_maxrss),
sweeps, for the torus the gap to the ground-state estimate (e∞ = −1.4015 per spin), and the cut ratio
to neal at equal time (how neal is run where one 1000-sweep read does not fit: `neal_fitted`).
Under each specann row: its spectral and colouring seconds (for a ±J torus: its detection and bit
layout) and how many colour-class updates of the anneal propagated only the flipped spins (sparse) or
the whole class (dense), or that the torus was annealed bit-packed (specann/lattice.py).
Numbers were measured on a shared, loaded 2-core CPU unless noted.
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


E_INF_TORUS = -1.4015  # ground-state energy per spin of the 2-D ±J spin glass (De Simone et al. 1996), ± 0.0008


def ground_state_cut(W: sp.csr_matrix) -> float:
    """The torus cut at the thermodynamic ground-state energy: (W + 1.4015·N) / 2 (W = Σ edge weights)."""
    return (float(W.sum()) / 2.0 - E_INF_TORUS * W.shape[0]) / 2.0


def neal_fitted(p, tl: float, seed: int, graph: str) -> dict:
    """neal at equal time on a big graph, as one read with its sweeps fitted to the limit.

    A sampler call at 8·10⁶ spins has a large per-call setup (the BQM is converted each call), so
    the cost is calibrated off the clock on a 10⁵-node graph of the same family (a 20- and a
    200-sweep read: setup and cost of a sweep per edge), scaled to this graph's edges; the read then
    gets sweeps = 90 % of (limit − BQM build − predicted setup) / predicted sweep cost, neal's own
    geometric schedule. When a 1000-sweep read fits three times in the limit, returns {} and the
    Neal backend fills the time with reads of 1000 sweeps instead (`fill_time`, as in
    maxcut_gset.py)."""
    from dwave.samplers import SimulatedAnnealingSampler

    from optlang.backends.ising.neal import samples_to_array, to_bqm
    from optlang.problem import IsingProblem

    sampler = SimulatedAnnealingSampler()
    small_W = (regular3 if graph == "regular3" else torus)(min(p.n, 100_000), seed + 1)
    small = to_bqm(IsingProblem.from_maxcut(small_W))
    cost = []
    for sw in (20, 200):
        tc = time.perf_counter()
        sampler.sample(small, num_reads=1, num_sweeps=sw, seed=seed)
        cost.append(time.perf_counter() - tc)
    scale = p.J.nnz / max(small_W.nnz, 1)
    per_sweep = max((cost[1] - cost[0]) / 180, cost[1] / 400, 1e-12) * scale
    setup = max(cost[0] - 20 * per_sweep / scale, 0.0) * scale
    if 1000 * per_sweep < tl / 3:
        return {}  # small enough: the backend's reads of 1000 sweeps
    t0 = time.perf_counter()
    bqm = to_bqm(p)
    left = tl - (time.perf_counter() - t0) - setup
    sweeps = max(1, int(0.9 * left / per_sweep))
    ss = sampler.sample(bqm, num_reads=1, num_sweeps=sweeps, seed=seed)
    wall = time.perf_counter() - t0
    s, e = samples_to_array(ss, p.n)[0], float(ss.record.energy[0])
    return {"s": s, "first_time": wall, "first_e": e, "reads": 1, "sweeps": sweeps, "cost": [setup, per_sweep]}


def worker(graph: str, n: int, method: str, tl: float, device: str, seed: int, opts: dict, threads: int) -> None:
    """One run, in this process; prints one JSON line."""
    import torch

    from optlang.backends.base import RunContext
    from optlang.backends.ising.ops import cut_value
    from optlang.problem import IsingProblem

    torch.set_num_threads(threads)
    W = (regular3 if graph == "regular3" else torus)(n, seed)
    p = IsingProblem.from_maxcut(W)
    t = time.perf_counter()
    extra: dict = {}
    res: dict = {}
    if method == "sb":
        from benchmarks import sb_anchor

        res = sb_anchor.solve(p, tl, seed, max_dense_gb=0.1) or {}
        if not res:
            raise SystemExit("sb skipped: it needs the dense n x n matrix (over 0.1 GB here) or is not installed")
        s, first_t, first_e = res["s"], res["first_time"], res["energy"]
        extra = {"sweeps": res["steps"]}
    else:
        if method == "neal":
            res = neal_fitted(p, tl, seed, graph)
        if res:
            s, first_t, first_e = res["s"], res["first_time"], res["first_e"]
            extra = {"reads": res["reads"], "sweeps": res["sweeps"], "calibration_s": res["cost"]}
        else:
            if method == "specann":
                from optlang.backends.ising.specann import SpecAnn

                b = SpecAnn()
                o = {"patience": 0, "threads": threads, **opts}
            else:
                from optlang.backends.ising.neal import Neal

                b = Neal()
                o = {"patience": 0}
            ctx = RunContext(seed=seed, time_limit=tl, device=device)
            r = b.solve(p, b.make_options(o), ctx)  # equal wall time: no stagnation stop
            s, first_t, first_e = r.values["s"], r.history[0][0], r.history[0][1]
            keys = (
                "reads",
                "sweeps",
                "rounds",
                "time_to_first",
                "spectral_time",
                "coloring_time",
                "anneal_updates",
                "lattice",
            )
            extra = {k: r.info.get(k) for k in keys}
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    peak_gpu = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else 0.0
    cut = cut_value(W, s)
    out = {
        "graph": graph,
        "n": p.n,
        "edges": W.nnz // 2,
        "method": method,
        "time_limit": tl,
        "first_time": first_t,
        "first_cut": -first_e,
        "cut": cut,
        "wall": wall,
        "peak_mb": peak,
        "peak_gpu_mb": peak_gpu,
        "gs_gap": 100.0 * (1.0 - cut / ground_state_cut(W)) if graph == "torus" else None,
        **extra,
    }
    print(json.dumps(out))


def parse_opts(items: list[str]) -> dict:
    """--opt key=value specann options (numbers parsed)."""
    out: dict = {}
    for item in items:
        k, v = item.split("=", 1)
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^4 and 10^5 nodes, 10 s and 20 s")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--times", default=None, help="time limit per size (seconds)")
    ap.add_argument("--graphs", default="regular3,torus")
    ap.add_argument("--methods", default=None, help="default specann,neal (+ sb when installed)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the specann run (neal: 1)")
    ap.add_argument("--opt", action="append", default=[], help="specann option key=value")
    ap.add_argument("--memory-limit", type=float, default=None, help="GB of address space per run (RLIMIT_AS)")
    ap.add_argument("--worker", nargs=4, metavar=("GRAPH", "N", "METHOD", "TIME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        if args.memory_limit:
            lim = int(args.memory_limit * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        g, n, m, tl = args.worker
        worker(g, int(float(n)), m, float(tl), args.device, args.seed, parse_opts(args.opt), args.threads)
        return
    sizes = [
        int(float(s)) for s in (args.sizes or ("10000,100000" if args.quick else "10000,100000,1000000")).split(",")
    ]
    times = [float(t) for t in (args.times or ("10,20" if args.quick else "10,30,300")).split(",")]
    from benchmarks import sb_anchor

    methods = (args.methods or "specann,neal" + (",sb" if sb_anchor.available() else "")).split(",")
    print(
        f"# Max-Cut scale, device {args.device}, specann torch threads {args.threads}, seed {args.seed}"
        + (f", options {' '.join(args.opt)}" if args.opt else "")
        + (f", address space <= {args.memory_limit:g} GB per run" if args.memory_limit else "")
    )
    print("# neal: reads of 1000 sweeps filling the limit, or (when such a read takes over a third of it) one")
    print("#   5- and 20-sweep calibration reads (the first cut), then one read with sweeps fitted to 90 % of the rest")
    if "sb" in methods:
        print(f"# {sb_anchor.settings()}; skipped above 0.1 GB of dense matrix (n > 5000)")
    print("# gs gap%: torus only, 100·(1 − cut / ((W + 1.4015·N)/2)), e∞ = −1.4015 per spin")
    print(
        f"{'graph':<9} {'n':>8} {'edges':>8} {'method':<8} {'limit':>6} {'t_first':>8} {'first cut':>10} "
        f"{'cut':>10} {'wall':>7} {'peak MB':>8} {'sweeps':>7} {'gs gap%':>7} {'cut/neal':>8}"
    )
    for graph in args.graphs.split(","):
        for n, tl in zip(sizes, times, strict=False):
            res = {}
            for m in methods:
                cmd = [sys.executable, __file__, "--worker", graph, str(n), m, str(tl), "--device", args.device]
                cmd += ["--seed", str(args.seed), "--threads", str(args.threads)]
                cmd += [f"--opt={o}" for o in args.opt]
                if args.memory_limit:
                    cmd += ["--memory-limit", str(args.memory_limit)]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    why = (out.stderr.strip().splitlines() or ["?"])[-1]
                    print(f"{graph:<9} {n:>8} {'':>8} {m:<8} {tl:>6.0f} failed or skipped: {why}", flush=True)
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                res[m] = r
                ratio = f"{r['cut'] / res['neal']['cut']:.4f}" if m != "neal" and "neal" in res else ""
                gs = f"{r['gs_gap']:.3f}" if r.get("gs_gap") is not None else ""
                print(
                    f"{graph:<9} {r['n']:>8} {r['edges']:>8} {m:<8} {tl:>6.0f} {r['first_time']:>8.2f} "
                    f"{r['first_cut']:>10.0f} {r['cut']:>10.0f} {r['wall']:>7.1f} {r['peak_mb']:>8.0f} "
                    f"{r.get('sweeps') or '':>7} {gs:>7} {ratio:>8}",
                    flush=True,
                )
                if r.get("spectral_time") is not None:  # where specann's time went
                    upd = r.get("anneal_updates") or {}
                    how = (
                        f"annealed {r['lattice']}"
                        if r.get("lattice")
                        else f"class updates sparse {upd.get('sparse', 0)} / dense {upd.get('dense', 0)}"
                    )
                    print(
                        f"{'':<9} {'':>8}   spectral {r['spectral_time']:.1f} s,"
                        f" colouring {r.get('coloring_time') or 0:.1f} s, {how}",
                        flush=True,
                    )
            if "specann" in res and "neal" in res:
                print(f"{'':<9} {'':>8} specann/neal cut ratio {res['specann']['cut'] / res['neal']['cut']:.4f}")


if __name__ == "__main__":
    main()
