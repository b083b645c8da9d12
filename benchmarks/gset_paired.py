"""Paired option comparison on Gset and Gset-like graphs: each configuration back to back per graph and seed.

Usage: .venv/bin/python benchmarks/gset_paired.py --time 10 --graphs G35,G35pm,T2000 --seeds 0,1,2 \\
       --config 'old={"t_start": 1.0}' --config 'new={}' [--config 'neal={}']
A config named `neal...` runs the neal backend, any other specann with the given options (JSON), always
with `patience = 0` as in benchmarks/maxcut_gset.py. Running the configurations of one graph and seed one
after the other keeps them under the same machine load, which on a shared machine moves a time-limited
cut more than most option changes. Graph names: a Gset file (G35), a Gset graph with seeded random ±1
weights (G35pm: like G39-G42 from G35-G38's planar family), or a 2-D ±1 torus (T2000 = 40 x 50,
T3000 = 50 x 60, T5000 = 50 x 100, weights from seed 7). Prints one tab-separated row per run (graph,
seed, config, cut, wall s, rounds, sweeps, load average), then per graph the mean cut of each config.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.graphs import read_gset, shared_data_dir, torus  # noqa: E402
from optlang.backends.base import RunContext  # noqa: E402
from optlang.backends.ising.ops import cut_value  # noqa: E402
from optlang.problem import IsingProblem  # noqa: E402

TORI = {"T2000": (40, 50), "T3000": (50, 60), "T5000": (50, 100)}


def load_graph(name: str, root: Path) -> sp.csr_matrix:
    """A Gset graph, a Gset graph with seeded ±1 weights (suffix `pm`), or a ±1 torus (TORI)."""
    if name in TORI:
        return torus(*TORI[name], np.random.default_rng(7), signed=True)
    if name.endswith("pm"):
        upper = sp.triu(read_gset(root / f"{name[:-2]}.txt")).tocoo()
        signs = np.random.default_rng(7).choice([-1.0, 1.0], size=upper.nnz)
        U = sp.coo_matrix((upper.data * signs, (upper.row, upper.col)), shape=upper.shape)
        return (U + U.T).tocsr()
    return read_gset(root / f"{name}.txt")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=10.0)
    ap.add_argument("--graphs", default="G35")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--config", action="append", default=[], help="name=JSON options (repeatable)")
    args = ap.parse_args()
    configs = [(c.split("=", 1)[0], json.loads(c.split("=", 1)[1])) for c in args.config] or [("default", {})]
    torch.set_num_threads(1)
    root = shared_data_dir() / "gset"
    from optlang.backends.ising.neal import Neal
    from optlang.backends.ising.specann import SpecAnn

    cuts: dict[tuple[str, str], list[float]] = defaultdict(list)
    for g in args.graphs.split(","):
        W = load_graph(g, root)
        p = IsingProblem.from_maxcut(W)
        for seed in (int(s) for s in args.seeds.split(",")):
            for name, options in configs:
                b = Neal() if name.startswith("neal") else SpecAnn()
                o = b.make_options({"patience": 0, **options})
                t = time.perf_counter()
                r = b.solve(p, o, RunContext(seed=seed, time_limit=args.time))
                wall = time.perf_counter() - t
                cut = cut_value(W, r.values["s"])
                cuts[(g, name)].append(cut)
                info = r.info
                print(
                    f"{g}\t{seed}\t{name}\t{cut:.0f}\t{wall:.1f}\trounds={info.get('rounds')}\t"
                    f"sweeps={info.get('sweeps')}\tload={os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        print(f"# {g} mean cut: " + ", ".join(f"{n} {np.mean(cuts[(g, n)]):.2f}" for n, _ in configs), flush=True)


if __name__ == "__main__":
    main()
