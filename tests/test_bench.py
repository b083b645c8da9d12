"""Tests of bench.py: suite discovery, the resumable results file (a killed run resumes), performance
profiles, the suite report, and the same table on local processes and a Dask LocalCluster.

Real suites are small .opt models (tests/fixtures/compare) solved with max_iter caps so runs are
deterministic; toy Max-Cut results from test_compare feed the profile and report unit tests.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_compare import as_result, brute_force, local_search, random_sampling, toy_graph
from test_report import parse

from optlang import report
from optlang.backends.base import Status
from optlang.bench import (
    BenchReport,
    ModelEntry,
    ResultsFile,
    bench,
    discover,
    objective_gap,
    performance_profile,
    time_to_target,
)
from optlang.executors import Job, execute
from optlang.result import Result

FIXTURES = Path(__file__).parent / "fixtures" / "compare"
ROOT = Path(__file__).resolve().parents[1]
CAP = {"max_iter": 60}  # iteration caps make the runs deterministic whatever the machine load


def _suite(tmp_path: Path, names: tuple[str, ...] = ("smooth_small", "minimax_small")) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    for n in names:
        shutil.copy(FIXTURES / f"{n}.opt", suite / f"{n}.opt")
    return suite


def _core_backends(kind_files: tuple[str, ...]) -> None:
    """Skip when the language core or the backends these models need are not there."""
    optlang = pytest.importorskip("optlang.api")
    for f in kind_files:
        m = optlang.load(FIXTURES / f"{f}.opt")
        from optlang.compare import candidate_backends

        try:
            candidate_backends(m, None)
        except Exception as e:  # PlanError: no backend registered for this kind yet
            pytest.skip(f"{f}: {e}")


# ----------------------------------------------------------------------------- profiles
def test_performance_profile_ratios_and_curves() -> None:
    costs = {
        "m1": {"a": 1.0, "b": 2.0},
        "m2": {"a": 4.0, "b": 2.0},
        "m3": {"a": math.inf, "b": 3.0},
        "m4": {"a": math.inf, "b": math.inf},
        "m5": {"c": 5.0},  # a model of another kind: only c runs on it
    }
    p = performance_profile(costs)
    assert p.rho("c", 1.0) == 1.0 and p.curves["c"][0] == (1.0, 1.0)  # shares are over the models run
    assert p.ratios["m1"] == {"a": 1.0, "b": 2.0} and p.ratios["m2"] == {"a": 2.0, "b": 1.0}
    assert p.ratios["m3"] == {"a": math.inf, "b": 1.0} and all(math.isinf(v) for v in p.ratios["m4"].values())
    assert p.rho("a", 1.0) == 0.25 and p.rho("a", 2.0) == 0.5 and p.rho("a", 100.0) == 0.5
    assert p.rho("b", 1.0) == 0.5 and p.rho("b", 2.0) == 0.75
    assert p.curves["a"][0] == (1.0, 0.25) and p.curves["a"][-1][1] == 0.5
    assert all(t1 <= t2 and r1 <= r2 for (t1, r1), (t2, r2) in zip(p.curves["b"], p.curves["b"][1:], strict=False))


def test_time_to_target_reads_the_history_of_a_real_run() -> None:
    w = toy_graph(12, seed=5)
    s, h, t = local_search(w, seed=1)
    r = as_result(w, "local", 1, s, h, t)
    target = r.objective
    first = next(tt for tt, o, _ in h if o >= target)
    assert time_to_target(r, target, "maximize") == pytest.approx(max(first, 1e-3))
    assert time_to_target(r, target + 1, "maximize") == math.inf
    assert objective_gap(r, target + 4, "maximize") == pytest.approx(4 / (target + 4))
    assert objective_gap(r, target - 1, "maximize") == 0.0


def toy_bench() -> BenchReport:
    """Two toy Max-Cut models, three solvers, two seeds (real runs)."""
    rows, models = [], []
    for gseed in (5, 6):
        w = toy_graph(12, seed=gseed)
        mid = f"g{gseed}.opt"
        models.append(ModelEntry(mid, f"g{gseed}", "maxcut", "maximize", ["brute", "local", "sampler"]))
        s, h, t = brute_force(w)
        for seed in range(2):
            rows.append((mid, as_result(w, "brute", seed, s, h, t, Status.OPTIMAL, bound=float(h[-1][1]))))
            rows.append((mid, as_result(w, "local", seed, *local_search(w, seed))))
            rows.append((mid, as_result(w, "sampler", seed, *random_sampling(w, seed))))
    return BenchReport("toy", models, ["brute", "local", "sampler"], rows, seeds=[0, 1], time_limit=5.0)


def test_bench_report_profiles_and_tables() -> None:
    b = toy_bench()
    table = {r["backend"]: r for r in b.backend_table()}
    assert table["brute"]["reached_best"] == 2 and table["brute"]["failed_models"] == 0
    assert table["sampler"]["median_gap"] is None or table["sampler"]["median_gap"] >= 0
    html = report.render(b, "html")
    p = parse(html)
    assert p.count("svg") == 2 and "Performance profile" in html and "Dolan–Moré" in html
    assert html.count('<table class="summary">') == 1 and html.count('<table class="models">') == 1
    md = report.render(b, "md")
    assert "| brute | 2 | 2 |" in md and "| g5 | maxcut |" in md
    d = report.json_report.render(b)
    assert '"format": "optlang-bench/1"' in d


# ----------------------------------------------------------------------------- results file
def test_results_file_skips_a_truncated_line_and_appends_after_it(tmp_path: Path) -> None:
    w = toy_graph(8)
    res = as_result(w, "local", 0, *local_search(w, 0)).to_dict()
    f = ResultsFile(tmp_path / "r.jsonl")
    f.append(Job("a.opt", "local", 0), res)
    with open(f.path, "a", encoding="utf-8") as fh:
        fh.write('{"key": ["a.opt", "local", 1], "result": {"sta')  # a write cut short by a kill
    f.append(Job("a.opt", "local", 2), res)
    rows = f.load()
    assert set(rows) == {("a.opt", "local", 0), ("a.opt", "local", 2)}
    assert Result.from_dict(rows[("a.opt", "local", 2)]["result"]).objective == res["objective"]


def test_discover_folder_glob_and_file(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    (suite / "notes.txt").write_text("not a model")
    assert [p.name for p in discover(suite)] == ["minimax_small.opt", "smooth_small.opt"]
    assert [p.name for p in discover(str(suite / "s*.opt"))] == ["smooth_small.opt"]
    assert len(discover(suite / "smooth_small.opt")) == 1
    with pytest.raises(Exception, match="no .opt models"):
        discover(tmp_path / "nothing-*.opt")


# ----------------------------------------------------------------------------- real suites
def test_killed_bench_resumes_without_rerunning_finished_runs(tmp_path: Path) -> None:
    _core_backends(("smooth_small", "minimax_small"))
    suite = _suite(tmp_path)
    results = tmp_path / "results.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "optlang.bench",
        "bench",
        str(suite),
        "--results",
        str(results),
        "--repeats",
        "2",
        "--executor",
        "inline",
        "--time-limit",
        "30",
        "-O",
        "max_iter=60",
        "--device",
        "cpu",
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and len(ResultsFile(results).load()) >= 2:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # as a kill -9 or a lost machine would
        proc.wait()
    done = ResultsFile(results).load()
    total = 3 * 2  # (smooth: gd; minimax: adasgda, gda) × 2 seeds
    assert 2 <= len(done) < total, f"killed after {len(done)} rows (stderr: {proc.stderr.read()[-500:]!r})"

    calls: list[tuple] = []

    def counting(job: Job) -> dict:
        calls.append(job.key)
        return execute(job)

    b = bench(
        suite, repeats=2, time_limit=30, device="cpu", results_path=results, executor="inline", options=CAP, fn=counting
    )
    assert len(calls) == total - len(done) and not set(calls) & set(done)
    rows = ResultsFile(results).load()
    assert len(rows) == total and len(b.rows) == total
    lines = [ln for ln in results.read_text().splitlines() if ln.strip()]
    assert len(lines) == total  # each key written once: nothing finished was run again
    assert all(r.status.has_solution for _, r in b.rows)
    # a third run finds everything done
    calls.clear()
    again = bench(
        suite, repeats=2, time_limit=30, device="cpu", results_path=results, executor="inline", options=CAP, fn=counting
    )
    assert calls == [] and again.model_table(timing=False) == b.model_table(timing=False)


def test_same_table_on_local_processes_and_dask(tmp_path: Path) -> None:
    _core_backends(("smooth_small", "minimax_small"))
    distributed = pytest.importorskip("distributed")
    suite = _suite(tmp_path)
    kw = dict(repeats=1, time_limit=30, device="cpu", options=CAP)
    local = bench(suite, executor="local", workers=1, **kw)  # one worker: each pays the backend imports
    # One worker thread: backends seed torch's process-global RNG, so runs sharing a process must not overlap.
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        dask = bench(suite, executor="dask", scheduler=cluster.scheduler_address, **kw)
    assert local.model_table(timing=False) == dask.model_table(timing=False)
    assert [r.objective for _, r in local.rows] == [r.objective for _, r in dask.rows]
    assert len(local.rows) == 3 and all(r.status.has_solution for _, r in local.rows)
    html = report.render(dask, "html")
    parse(html)
    assert "Performance profile" in html
