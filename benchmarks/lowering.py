"""Parse / check / lower times for large discrete models (target: under 5 s each on 2 cores).

Models: Max-Cut on a generated graph of 100k nodes and ~1M edges, and the same couplings written
as an Ising model with quad(s, J) plus a field. Run: python benchmarks/lowering.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import optlang
from optlang.compiler import classify, compile_problem
from optlang.grammar.parser import parse_tree
from optlang.ir.lower import lower_source
from optlang.source import Source

MAXCUT = """
graph G = erdos_renyi({n}, {p}, seed = 1, weights = "signed")
maxcut G
"""
ISING = """
graph G = erdos_renyi({n}, {p}, seed = 1, weights = "signed")
param h = randn({n}, seed = 2)
spin s[{n}]
minimize quad(s, adjacency(G)) + 0.1 * dot(h, s)
"""


def measure(name: str, text: str) -> tuple[str, float, float, float, int]:
    src = Source(text)
    t0 = time.perf_counter()
    parse_tree(src)
    t1 = time.perf_counter()
    ir = lower_source(src)  # includes generating the graph
    form = classify(ir)
    t2 = time.perf_counter()
    compiled = compile_problem(ir, form)
    t3 = time.perf_counter()
    return name, t1 - t0, t2 - t1, t3 - t2, int(compiled.problem.J.nnz // 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k nodes, 100k edges")
    args = ap.parse_args()
    n = 10_000 if args.quick else 100_000
    m = 100_000 if args.quick else 1_000_000
    p = m / (n * (n - 1) / 2)
    rows = [measure("maxcut", MAXCUT.format(n=n, p=p)), measure("ising quad(s, J)", ISING.format(n=n, p=p))]
    print(f"{'model':<18} {'parse s':>8} {'check s':>8} {'lower s':>8} {'total s':>8} {'edges':>9}  (n = {n})")
    for name, a, b, c, e in rows:
        print(f"{name:<18} {a:8.3f} {b:8.3f} {c:8.3f} {a + b + c:8.3f} {e:9d}")
    print(f"optlang {optlang.__version__}; 'check' includes generating the graph; target: total < 5 s")


if __name__ == "__main__":
    main()
