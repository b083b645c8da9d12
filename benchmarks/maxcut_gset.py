"""Gset Max-Cut: specann vs neal (reads filling the same wall time) vs localsearch vs simulated bifurcation.

Usage: .venv/bin/python benchmarks/maxcut_gset.py [--quick] [--time 10] [--seeds 3] [--graphs G1,G14]
       [--methods specann,neal,localsearch,sb] [--opt specann:key=value ...]
`sb` (the simulated-bifurcation package, benchmarks/sb_anchor.py) is in the default methods when it is
installed, and dropped with a note when it is asked for but absent.
Reads ../shared/data/gset (override with OPTLANG_SHARED_DATA) and BEST_KNOWN.tsv. Per graph and
method: best and mean cut over the seeds, gap of the best to the best known cut, mean wall time.
Last lines: mean gap per method, the specann/neal gap ratio, and on how many graphs specann's best
is at least neal's. Numbers depend on the machine (ours: a shared, loaded 2-core CPU).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import sb_anchor  # noqa: E402
from benchmarks.graphs import read_gset  # noqa: E402
from optlang.backends.base import RunContext  # noqa: E402
from optlang.backends.ising.ops import cut_value  # noqa: E402
from optlang.problem import IsingProblem  # noqa: E402

ALL = ["G1", "G2", "G3", "G11", "G14", "G15", "G22", "G35", "G43", "G48", "G55"]
QUICK = ["G1", "G11", "G14", "G22", "G43", "G55"]


def data_dir() -> Path:
    env = os.environ.get("OPTLANG_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


def backend(name: str):
    if name == "sb":
        return None  # not a backend: benchmarks/sb_anchor.py
    if name == "specann":
        from optlang.backends.ising.specann import SpecAnn

        return SpecAnn()
    if name == "neal":
        from optlang.backends.ising.neal import Neal

        return Neal()
    from optlang.backends.ising.localsearch import LocalSearch

    return LocalSearch()


def parse_opts(items: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in items:
        meth, kv = item.split(":", 1)
        k, v = kv.split("=", 1)
        try:
            val: object = int(v)
        except ValueError:
            try:
                val = float(v)
            except ValueError:
                val = {"true": True, "false": False}.get(v.lower(), v)
        out.setdefault(meth, {})[k] = val
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 graphs, 5 s each")
    ap.add_argument("--time", type=float, default=None, help="seconds per run (default 10, quick 5)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--graphs", default=None)
    ap.add_argument("--methods", default=None, help="default: specann,neal,localsearch (+ sb when installed)")
    ap.add_argument("--opt", action="append", default=[], help="method:key=value backend option")
    args = ap.parse_args()
    tl = args.time if args.time is not None else (5.0 if args.quick else 10.0)
    graphs = args.graphs.split(",") if args.graphs else (QUICK if args.quick else ALL)
    methods = (args.methods or "specann,neal,localsearch" + (",sb" if sb_anchor.available() else "")).split(",")
    if "sb" in methods and not sb_anchor.available():
        print("# sb skipped: the simulated-bifurcation package is not installed (pip install simulated-bifurcation)")
        methods.remove("sb")
    opts = parse_opts(args.opt)
    torch.set_num_threads(1)
    root = data_dir() / "gset"
    with open(root / "BEST_KNOWN.tsv") as f:
        best_known = {r["name"]: float(r["best_known_cut"]) for r in csv.DictReader(f, delimiter="\t")}
    print(f"# Gset Max-Cut, {tl:g} s per run, seeds {args.seeds}, torch threads 1 (shared loaded 2-core CPU)")
    head = f"{'graph':<5} {'n':>5} {'best':>6}"
    for m in methods:
        head += f" | {m + ' best':>16} {'mean':>9} {'gap%':>6} {'s':>5}"
    print(head)
    if "sb" in methods:
        print(f"# {sb_anchor.settings()}")
    gaps: dict[str, list[float]] = {m: [] for m in methods}
    bests: dict[str, list[float]] = {m: [] for m in methods}
    for g in graphs:
        W = read_gset(root / f"{g}.txt")
        p = IsingProblem.from_maxcut(W)
        bk = best_known[g]
        row = f"{g:<5} {p.n:>5} {bk:>6.0f}"
        for m in methods:
            b = backend(m)
            cuts, walls = [], []
            for seed in range(args.seeds):
                t = time.perf_counter()
                if b is None:  # sb
                    res = sb_anchor.solve(p, tl, seed)
                    if res is None:
                        raise SystemExit(f"sb cannot run on {g} (dense {p.n} x {p.n} too large)")
                    s, energy = res["s"], res["energy"]
                else:
                    o = b.make_options({"patience": 0, **opts.get(m, {})})  # equal wall time: no stagnation stop
                    r = b.solve(p, o, RunContext(seed=seed, time_limit=tl))
                    s, energy = r.values["s"], r.objective
                walls.append(time.perf_counter() - t)
                cut = cut_value(W, s)
                assert abs(cut + energy) < 1e-6 * max(1.0, abs(cut)), "cut and energy disagree"
                cuts.append(cut)
            best = max(cuts)
            gap = 100.0 * (bk - best) / bk
            gaps[m].append(gap)
            bests[m].append(best)
            row += f" | {best:>16.0f} {sum(cuts) / len(cuts):>9.1f} {gap:>6.3f} {sum(walls) / len(walls):>5.1f}"
        print(row, flush=True)
    line = "mean gap%:"
    for m in methods:
        line += f" {m} {sum(gaps[m]) / len(gaps[m]):.3f}"
    print(line)
    if "specann" in methods and "neal" in methods:
        sg, ng = sum(gaps["specann"]), sum(gaps["neal"])
        ratio = f"{sg / ng:.2f}" if ng > 0 else ("1.00" if sg == 0 else "inf")
        wins = sum(a >= b for a, b in zip(bests["specann"], bests["neal"], strict=True))
        print(f"specann/neal mean-gap ratio {ratio}; specann best >= neal best on {wins}/{len(graphs)} graphs")
    if "specann" in methods and "sb" in methods:
        wins = sum(a >= b for a, b in zip(bests["specann"], bests["sb"], strict=True))
        print(f"specann best >= sb best on {wins}/{len(graphs)} graphs")


if __name__ == "__main__":
    main()
