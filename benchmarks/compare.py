"""Benchmark of the comparison workflow on real data: executors, and a Gset Max-Cut comparison.

Part A builds a suite of .opt models over the shared data (target-conditional robust regression on
../shared/data/regression, the bilevel/minimax/smooth examples), runs `optlang bench` on it with the
inline, local-process and Dask executors under iteration caps, and prints the wall time per
executor, its ratio to inline, and whether every executor produced the same objective table.
Part B runs `optlang compare` on a Gset graph (../shared/data/gset) with every maxcut backend under
the same time limit and seeds, and prints each backend's best and median cut against the best
known cut (BEST_KNOWN.tsv) and against the neal anchor, its bound and gap, and the contradiction
flags.

    .venv/bin/python benchmarks/compare.py [--quick] [--report out.html] [--parts A,B]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from optlang import report
from optlang.bench import bench
from optlang.compare import find_contradictions
from optlang.report import fmt

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("OPTLANG_SHARED_DATA", ROOT.parent / "shared" / "data"))

DRO = """# {name} — target-conditional robust regression on {csv}
data D = load("{path}", target = "y")
var w[D.p]
var b
minimize robust mean((D.X @ w + b - D.y)^2 / {scale}) within target_conditional(chi2, radius = 0.1, bins = 5)
"""
MAXCUT = """# {name} — Max-Cut of Gset {graph}
graph G = load("{path}")
maxcut G
"""


def best_known(graph: str) -> float | None:
    """The best known cut of a Gset graph from BEST_KNOWN.tsv."""
    path = DATA / "gset" / "BEST_KNOWN.tsv"
    for line in path.read_text().splitlines()[1:]:
        cols = line.split("\t")
        if cols and cols[0] == graph:
            return float(cols[3])
    return None


def part_b(console: Console, quick: bool, report_path: str | None) -> None:
    """compare on one Gset graph: every maxcut backend, same time limit and seeds."""
    from optlang.compare import compare

    graph = "G11" if quick else "G14"
    with tempfile.TemporaryDirectory(prefix="optlang-gset-") as tmp:
        model = Path(tmp) / f"maxcut_{graph}.opt"
        model.write_text(MAXCUT.format(name=graph, graph=graph, path=DATA / "gset" / f"{graph}.txt"))
        limit, repeats = (3.0, 2) if quick else (10.0, 3)
        t0 = time.perf_counter()
        c = compare(model, repeats=repeats, time_limit=limit, device="cpu", executor="inline")
        wall = time.perf_counter() - t0
    known = best_known(graph)
    sums = c.summaries()
    anchor = next((s.best for s in sums if s.backend == "neal" and s.best), None)
    t = Table(
        title=f"compare on Gset {graph} (best known {fmt.num(known)}): {limit:g} s per run, "
        f"{repeats} seeds, wall {wall:.0f} s"
    )
    for h in ("backend", "status", "best cut", "median", "best/known", "best/neal", "bound", "gap", "time", "flag"):
        t.add_column(h, justify="left" if h in ("backend", "status", "flag") else "right")
    for s in sums:
        t.add_row(
            s.backend,
            s.status_text,
            fmt.num(s.best),
            fmt.num(s.median),
            f"{s.best / known:.4f}" if s.best and known else "—",
            f"{s.best / anchor:.4f}" if s.best and anchor else "—",
            fmt.num(s.bound),
            fmt.pct(s.gap),
            fmt.seconds(s.time_median),
            "CONTRADICTED" if s.flagged else "",
        )
    console.print(t)
    for name, reason in c.refused.items():
        console.print(f"[dim]not run: {name} — {reason}[/dim]")
    for f in c.contradictions():
        console.print(f"[red]contradiction[/red] {f.sentence(c.sense)}")
    if report_path:
        out = Path(report_path)
        out = out.with_name(out.stem + f"_{graph}" + out.suffix)
        report.write(c, out, {".md": "md", ".json": "json"}.get(out.suffix, "html"))
        console.print(f"report written to {out}")


def build_suite(folder: Path, quick: bool) -> list[str]:
    """Write the suite's models into `folder`; returns notes on what was left out."""
    notes = []
    for csv, scale in (("boston.csv", 100.0), ("concrete.csv", 1000.0))[: 1 if quick else 2]:
        src = DATA / "regression" / csv
        if src.exists():
            name = f"dro_{csv.removesuffix('.csv')}"
            (folder / f"{name}.opt").write_text(DRO.format(name=name, csv=csv, path=src, scale=scale))
        else:
            notes.append(f"missing {src}")
    for m in ("robust_game.opt", "minnorm.opt", "smooth_box.opt")[: 2 if quick else 3]:
        shutil.copy(ROOT / "models" / m, folder / m)
    return notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer models, one seed, short caps (a few minutes)")
    ap.add_argument("--report", help="also write the suite report (html/md/json by suffix)")
    ap.add_argument("--executors", default="inline,local1,local2,dask2", help="which executors to time")
    ap.add_argument("--parts", default="A,B", help="A: executors on a suite; B: compare on a Gset graph")
    args = ap.parse_args()
    console = Console(width=130)
    if "B" in args.parts:
        part_b(console, args.quick, args.report)
    if "A" not in args.parts:
        return
    cap = {"max_iter": 40 if args.quick else 150}
    repeats = 1 if args.quick else 2
    with tempfile.TemporaryDirectory(prefix="optlang-bench-") as tmp:
        suite = Path(tmp)
        for note in build_suite(suite, args.quick):
            console.print(f"[dim]{note}[/dim]")
        runs = {}
        for ex in args.executors.split(","):
            kw = dict(repeats=repeats, time_limit=60, device="cpu", options=cap)
            t0 = time.perf_counter()
            if ex == "inline":
                b = bench(suite, executor="inline", **kw)
            elif ex.startswith("local"):
                b = bench(suite, executor="local", workers=int(ex[5:] or 1), **kw)
            elif ex.startswith("dask"):
                from distributed import LocalCluster

                n = int(ex[4:] or 1)
                with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
                    b = bench(suite, executor="dask", scheduler=cl.scheduler_address, **kw)
            else:
                raise SystemExit(f"unknown executor {ex}")
            runs[ex] = (time.perf_counter() - t0, b)
            console.print(f"[dim]{ex}: {len(b.rows)} runs in {runs[ex][0]:.1f} s[/dim]")

        base_name = next(iter(runs))
        base_t, base = runs[base_name]
        t = Table(title=f"executors on {len(base.models)} models × {len(base.backends)} backends × {repeats} seeds")
        for h in ("executor", "runs", "wall s", f"ratio to {base_name}", "errors", "same table"):
            t.add_column(h, justify="left" if h == "executor" else "right")
        for name, (secs, b) in runs.items():
            same = b.model_table(timing=False) == base.model_table(timing=False)
            errors = sum(not r.status.has_solution for _, r in b.rows)
            t.add_row(name, str(len(b.rows)), f"{secs:.1f}", f"{secs / base_t:.2f}", str(errors), str(same))
        console.print(t)
        for name, (_, b) in runs.items():  # name every run whose outcome differs from the base executor's
            for (mid, r0), (_, r1) in zip(base.rows, b.rows, strict=False):
                if (r0.status, r0.objective, r0.iterations) != (r1.status, r1.objective, r1.iterations):
                    console.print(
                        f"[yellow]{name} differs[/yellow] {Path(mid).stem} {r0.backend} seed {r0.seed}: "
                        f"{r0.status.value} {r0.objective!r} ({r0.iterations} it, {r0.timing.get('total', 0):.1f} s) "
                        f"vs {r1.status.value} {r1.objective!r} ({r1.iterations} it, {r1.timing.get('total', 0):.1f} s)"
                    )
        console.print(report.rich_table(base))
        flags = Table(title="contradiction flags per model")
        for h in ("model", "kind", "best", "flags"):
            flags.add_column(h)
        for m in base.models:
            rs = [r for mid, r in base.rows if mid == m.id]
            found = find_contradictions(rs, m.sense)
            flags.add_row(
                m.name,
                m.kind,
                fmt.num(base.target(m.id)),
                "; ".join(f.sentence(m.sense) for f in found[:2]) + (" …" if len(found) > 2 else "")
                or ("model error: " + m.error if m.error else "none"),
            )
        console.print(flags)
        if args.report:
            kind = {".md": "md", ".json": "json"}.get(Path(args.report).suffix, "html")
            report.write(base, args.report, kind)
            console.print(f"report written to {args.report}")


if __name__ == "__main__":
    main()
