"""Tests of compare.py and executors.py: summaries, contradiction flags, executors, the CLI parser.

The toy solvers below (brute force, 1-flip local search, random sampling on a small seeded Max-Cut)
are real computations whose Results feed the summaries and reports (test_report and test_bench
import them); end-to-end tests through optlang.load run when the language core is present.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from pathlib import Path

import numpy as np
import pytest

from optlang.backends.base import Status
from optlang.cli_common import UsageError, backend_list, parse_assignments
from optlang.compare import (
    Comparison,
    best_of,
    find_contradictions,
    summarize,
    tightest_bound,
)
from optlang.compare.environment import environment
from optlang.executors import DaskExecutor, InlineExecutor, Job, LocalExecutor, error_result, stream
from optlang.result import Check, Result

FIXTURES = Path(__file__).parent / "fixtures" / "compare"


# ----------------------------------------------------------------------------- toy Max-Cut solvers
def toy_graph(n: int = 12, p: float = 0.5, seed: int = 7) -> np.ndarray:
    """A seeded random weighted graph (symmetric weight matrix, zero diagonal, weights in {1, 2, 3})."""
    rng = np.random.default_rng(seed)
    w = np.triu((rng.random((n, n)) < p) * rng.integers(1, 4, size=(n, n)), 1).astype(float)
    return w + w.T


def cut_value(w: np.ndarray, s: np.ndarray) -> float:
    """Σ_{i<j} w_ij (1 − s_i s_j) / 2, in float64."""
    return float(np.sum(np.triu(w, 1) * (1 - np.outer(s, s))) / 2)


def brute_force(w: np.ndarray) -> tuple[np.ndarray, list[tuple[float, float, float | None]], float]:
    """Exact maximum cut by enumeration (s_0 fixed to +1); history rows at each improvement."""
    n = w.shape[0]
    t0 = time.perf_counter()
    best, best_s, hist = -np.inf, None, []
    for bits in itertools.product((-1.0, 1.0), repeat=n - 1):
        s = np.array((1.0, *bits))
        c = cut_value(w, s)
        if c > best:
            best, best_s = c, s
            hist.append((time.perf_counter() - t0, c, None))
    hist.append((time.perf_counter() - t0, best, best))  # enumeration finished: the bound is proven
    return best_s, hist, time.perf_counter() - t0


def local_search(w: np.ndarray, seed: int) -> tuple[np.ndarray, list[tuple[float, float, float | None]], float]:
    """Greedy best-improvement 1-flip local search from a seeded random assignment."""
    rng = np.random.default_rng(seed)
    s = rng.choice((-1.0, 1.0), size=w.shape[0])
    t0 = time.perf_counter()
    hist = [(time.perf_counter() - t0, cut_value(w, s), None)]
    while True:
        gains = s * (w @ s)  # flipping i changes the cut by s_i (W s)_i
        i = int(np.argmax(gains))
        if gains[i] <= 0:
            break
        s[i] = -s[i]
        hist.append((time.perf_counter() - t0, cut_value(w, s), None))
    return s, hist, time.perf_counter() - t0


def random_sampling(w: np.ndarray, seed: int, k: int = 3) -> tuple[np.ndarray, list, float]:
    """The best of k seeded random assignments (a deliberately weak solver)."""
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    best, best_s, hist = -np.inf, None, []
    for _ in range(k):
        s = rng.choice((-1.0, 1.0), size=w.shape[0])
        c = cut_value(w, s)
        if c > best:
            best, best_s = c, s
            hist.append((time.perf_counter() - t0, c, None))
    return best_s, hist, time.perf_counter() - t0


def as_result(
    w: np.ndarray,
    backend: str,
    seed: int,
    s: np.ndarray,
    hist: list,
    secs: float,
    status: Status = Status.FEASIBLE,
    bound: float | None = None,
    model: str = "toy",
) -> Result:
    """A Result for a maxcut run, objective recomputed from the graph, with a recomputation check."""
    obj = cut_value(w, s)
    gap = None if bound is None else abs(bound - obj) / max(1.0, abs(obj))
    return Result(
        status=status,
        objective=obj,
        values={"s": s},
        backend=backend,
        kind="maxcut",
        sense="maximize",
        bound=bound,
        gap=gap,
        timing={"compile": 0.0, "solve": secs, "total": secs},
        iterations=len(hist),
        history=tuple(hist),
        seed=seed,
        model=model,
        backend_objective=obj,
        checks=(Check("cut recomputed", abs(obj - hist[-1][1]) < 1e-9 if hist else True, "float64"),),
    )


def maxcut_results(
    seeds: range = range(3), n: int = 12, graph_seed: int = 7, overclaim: bool = False
) -> tuple[list[Result], float]:
    """Results of brute force, local search and random sampling on one toy graph; the true optimum."""
    w = toy_graph(n, seed=graph_seed)
    results = []
    s, h, t = brute_force(w)
    opt = cut_value(w, s)
    for seed in seeds:
        results.append(as_result(w, "brute", seed, s, h, t, Status.OPTIMAL, bound=opt))
        results.append(as_result(w, "local", seed, *local_search(w, seed)))
        s2, h2, t2 = random_sampling(w, seed)
        if overclaim:  # claims its sample is optimal, with a matching "bound": both are false claims
            results.append(as_result(w, "sampler", seed, s2, h2, t2, Status.OPTIMAL, bound=cut_value(w, s2)))
        else:
            results.append(as_result(w, "sampler", seed, s2, h2, t2))
    return results, opt


def toy_comparison(**kw: object) -> Comparison:
    results, _ = maxcut_results(**kw)
    return Comparison(
        model="toy",
        path="toy.opt",
        kind="maxcut",
        sense="maximize",
        backends=["brute", "local", "sampler"],
        results=results,
        repeats=3,
        seeds=[0, 1, 2],
        time_limit=5.0,
        source='graph G = load("toy.txt")\nmaxcut G\n',
        device="cpu",
        environment=environment("cpu"),
    )


# ----------------------------------------------------------------------------- summaries and flags
def test_brute_force_is_exact_on_a_tiny_graph() -> None:
    w = toy_graph(6, seed=3)
    s, _, _ = brute_force(w)
    assert cut_value(w, s) == max(cut_value(w, np.array(x, float)) for x in itertools.product((-1, 1), repeat=6))


def test_summary_statistics_follow_the_runs() -> None:
    results, opt = maxcut_results()
    local = [r.objective for r in results if r.backend == "local"]
    s = summarize(results, "local", "maximize")
    assert s.runs == 3 and s.solved == 3
    assert s.best == max(local) and s.worst == min(local)
    assert s.median == sorted(local)[1]
    assert s.spread == pytest.approx(max(local) - min(local))
    assert s.bound is None and s.gap is None
    b = summarize(results, "brute", "maximize")
    assert b.best == opt and b.bound == opt and b.gap == 0.0
    assert b.statuses == {"optimal": 3} and b.checks_passed == b.checks_total == 3


def test_best_and_bound_respect_the_sense() -> None:
    assert best_of([1.0, 3.0, 2.0], "maximize") == 3.0
    assert best_of([1.0, 3.0, 2.0], "minimize") == 1.0
    assert tightest_bound([5.0, 4.0], "maximize") == 4.0  # the least upper bound
    assert tightest_bound([5.0, 4.0], "minimize") == 5.0  # the greatest lower bound
    assert best_of([float("nan"), None], "minimize") is None  # type: ignore[list-item]


def test_consistent_claims_are_not_flagged() -> None:
    results, _ = maxcut_results()
    assert find_contradictions(results, "maximize") == []


def test_a_false_optimum_and_bound_are_flagged() -> None:
    results, opt = maxcut_results(overclaim=True)
    sampler = [r for r in results if r.backend == "sampler"]
    assert all(r.objective < opt for r in sampler), "precondition: 3 random samples miss the optimum"
    flags = find_contradictions(results, "maximize")
    assert {(f.claimant, f.claim) for f in flags} == {("sampler", "optimal"), ("sampler", "bound")}
    assert all(f.witness == "brute" and f.witness_objective == opt for f in flags)
    assert all(f.excess == pytest.approx(opt - f.claimed) for f in flags)
    assert "contradicted" in flags[0].sentence("maximize")
    c = Comparison("toy", "toy.opt", "maxcut", "maximize", ["brute", "local", "sampler"], results)
    assert [s.backend for s in c.summaries() if s.flagged] == ["sampler"]


def test_a_lower_bound_above_a_found_minimum_is_flagged() -> None:
    # minimize x^2 - 2x on a grid: a coarse grid search claims a bound that the fine one beats.
    xs_fine, xs_coarse = np.linspace(0, 2, 201), np.linspace(0, 2, 4)
    f = xs_fine**2 - 2 * xs_fine
    fc = xs_coarse**2 - 2 * xs_coarse
    fine = Result(
        Status.OPTIMAL, float(f.min()), {"x": np.array([xs_fine[f.argmin()]])}, "fine", "smooth", bound=float(f.min())
    )
    coarse = Result(
        Status.FEASIBLE,
        float(fc.min()),
        {"x": np.array([xs_coarse[fc.argmin()]])},
        "coarse",
        "smooth",
        bound=float(fc.min()),
    )  # wrongly claims its value is a lower bound
    flags = find_contradictions([fine, coarse], "minimize")
    assert [(x.claimant, x.claim) for x in flags] == [("coarse", "bound")]
    # within tolerance: no flag
    near = Result(Status.FEASIBLE, float(f.min()) + 1e-9, {}, "near", "smooth", bound=float(f.min()) + 1e-9)
    assert find_contradictions([fine, near], "minimize") == []


def test_infeasible_witness_does_not_contradict() -> None:
    results, opt = maxcut_results(seeds=range(1))
    cheat = Result(
        Status.FEASIBLE,
        opt + 10,
        {},
        "cheat",
        "maxcut",
        "maximize",
        checks=(Check("feasible", False, "violates a constraint"),),
    )
    assert find_contradictions(results + [cheat], "maximize") == []


def test_comparison_json_round_trip_recomputes_flags() -> None:
    c = toy_comparison(overclaim=True)
    d = Comparison.from_dict(c.to_dict())
    assert [r.to_dict() for r in d.results] == [r.to_dict() for r in c.results]
    assert [x.to_dict() for x in d.contradictions()] == [x.to_dict() for x in c.contradictions()]
    assert c.to_dict()["contradictions"]


# ----------------------------------------------------------------------------- executors
def toy_job(job: Job) -> dict:
    """A real job for executor tests: solve the toy Max-Cut named by params with the job's 'backend'."""
    w = toy_graph(int(job.params.get("n", 10)), seed=int(job.params.get("graph_seed", 7)))
    if job.backend == "crash":
        os._exit(3)  # the worker dies, as on a segfault or an OOM kill
    if job.backend == "raise":
        raise ValueError("this backend always fails")
    if job.backend == "brute":
        s, h, t = brute_force(w)
        r = as_result(w, "brute", job.seed, s, h, t, Status.OPTIMAL, bound=cut_value(w, s), model=job.model)
    else:
        r = as_result(w, job.backend, job.seed, *local_search(w, job.seed), model=job.model)
    return r.to_dict()


def _jobs(backends: list[str], seeds: range = range(2)) -> list[Job]:
    return [Job("toy.opt", b, s, 5.0, "cpu", {"n": 10}) for s in seeds for b in backends]


def _table(pairs: list) -> list[tuple]:
    return sorted((j.backend, j.seed, r["status"], r["objective"]) for j, r in pairs)


def test_inline_executor_turns_exceptions_into_error_rows() -> None:
    pairs = stream(InlineExecutor(), _jobs(["local", "raise"]), toy_job)
    rows = _table(pairs)
    assert len(rows) == 4
    errors = [r for j, r in pairs if j.backend == "raise"]
    assert all(r["status"] == "error" and "always fails" in r["info"]["error"] for r in errors)
    assert all(r["status"] == "feasible" for j, r in pairs if j.backend == "local")
    assert Result.from_dict(errors[0]).status == Status.ERROR


def test_local_processes_survive_a_crashing_worker_and_match_inline() -> None:
    jobs = _jobs(["local", "brute"]) + _jobs(["crash"], range(1))
    seen: list[str] = []
    pairs = stream(LocalExecutor(workers=2), jobs, toy_job, on_result=lambda j, r: seen.append(j.backend))
    assert len(pairs) == len(jobs) == len(seen)
    crashed = [r for j, r in pairs if j.backend == "crash"]
    assert len(crashed) == 1 and all(r["status"] == "error" and "died" in r["info"]["error"] for r in crashed)
    good = [(j, r) for j, r in pairs if j.backend != "crash"]
    inline = stream(InlineExecutor(), [j for j in jobs if j.backend != "crash"], toy_job)
    assert _table(good) == _table(inline)


def test_dask_local_cluster_matches_inline() -> None:
    distributed = pytest.importorskip("distributed")
    jobs = _jobs(["local", "brute", "raise"])
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        ex = DaskExecutor(cluster.scheduler_address)
        try:
            pairs = stream(ex, jobs, toy_job)
        finally:
            ex.close()
    assert _table(pairs) == _table(stream(InlineExecutor(), jobs, toy_job))
    assert sum(r["status"] == "error" for _, r in pairs) == 2


def test_progress_bar_streams_the_same_results(capsys: pytest.CaptureFixture[str]) -> None:
    jobs = _jobs(["local", "brute"])
    seen: list[str] = []
    pairs = stream(InlineExecutor(), jobs, toy_job, progress=True, on_result=lambda j, r: seen.append(j.backend))
    assert _table(pairs) == _table(stream(InlineExecutor(), jobs, toy_job)) and len(seen) == len(jobs)
    assert "4/4" in capsys.readouterr().err  # progress goes to stderr


def test_error_result_is_a_valid_result() -> None:
    r = Result.from_dict(error_result(Job("m.opt", "b", 3), "boom"))
    assert r.status == Status.ERROR and r.seed == 3 and r.info["error"] == "boom" and not r.ok


# ----------------------------------------------------------------------------- CLI pieces
def test_cli_parsers_register_the_documented_flags() -> None:
    from optlang import bench, compare

    parser = argparse.ArgumentParser(prog="optlang")
    sub = parser.add_subparsers(dest="command")
    compare.add_parser(sub)
    bench.add_parser(sub)
    a = parser.parse_args(
        [
            "compare",
            "m.opt",
            "-b",
            "a,b",
            "-b",
            "c",
            "--repeats",
            "3",
            "--time-limit",
            "2",
            "--seed",
            "5",
            "--device",
            "cpu",
            "--report",
            "out.html",
            "--format",
            "md",
            "-p",
            "n=20",
            "-d",
            "G=g.txt",
            "--executor",
            "dask",
            "--scheduler",
            "tcp://h:8786",
        ]
    )
    assert a.func is compare.run and backend_list(a) == ["a", "b", "c"]
    assert (a.repeats, a.time_limit, a.seed, a.device, a.report, a.format) == (3, 2.0, 5, "cpu", "out.html", "md")
    assert parse_assignments(a.param, "-p") == {"n": 20} and parse_assignments(a.data, "-d") == {"G": "g.txt"}
    assert (a.executor, a.scheduler) == ("dask", "tcp://h:8786")
    b = parser.parse_args(["bench", "suite/", "--results", "r.jsonl", "--repeats", "2"])
    assert b.func is bench.run and b.results == "r.jsonl"
    with pytest.raises(UsageError):
        parse_assignments(["novalue"], "-p")


# ----------------------------------------------------------------------------- end to end
def _core() -> object:
    return pytest.importorskip("optlang.api")


def test_compare_runs_every_applicable_backend_with_the_same_seeds() -> None:
    _core()
    from optlang.compare import compare

    c = compare(
        FIXTURES / "minimax_small.opt",
        repeats=2,
        time_limit=30,
        seed=4,
        device="cpu",
        options={"max_iter": 40},
        executor="inline",
    )
    assert c.kind == "minimax" and c.sense == "minimize" and c.seeds == [4, 5]
    assert len(c.backends) >= 2 and len(c.results) == 2 * len(c.backends)
    for b in c.backends:
        assert [r.seed for r in c.runs(b)] == [4, 5]
    assert all(r.status.has_solution and r.iterations <= 40 for r in c.results)
    assert "minimize max over y" in c.source and c.environment["python"]
    named = compare(
        FIXTURES / "minimax_small.opt",
        backends=["gda"],
        repeats=1,
        time_limit=30,
        seed=4,
        device="cpu",
        options={"max_iter": 40},
        executor="inline",
    )
    assert named.backends == ["gda"] and named.seeds == [4]
    # same seed, same iteration cap: the same run again
    assert named.results[0].objective == next(r.objective for r in c.results if r.backend == "gda" and r.seed == 4)


def test_compare_cli_writes_the_report_and_returns_the_exit_code(tmp_path: Path) -> None:
    _core()
    from optlang.bench import main

    out = tmp_path / "cmp.json"
    code = main(
        [
            "compare",
            str(FIXTURES / "smooth_small.opt"),
            "--repeats",
            "2",
            "--time-limit",
            "30",
            "-O",
            "max_iter=50",
            "--executor",
            "inline",
            "--device",
            "cpu",
            "--report",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    d = Comparison.from_dict(__import__("json").loads(out.read_text()))
    assert d.kind == "smooth" and len(d.results) == 2 * len(d.backends) and d.best_objective is not None
    from optlang.errors import OptionError

    with pytest.raises(OptionError, match="unknown backend"):
        main(["compare", str(FIXTURES / "smooth_small.opt"), "-b", "no-such-backend", "--executor", "inline"])


def test_compare_refusal_points_at_the_constraint(tmp_path: Path) -> None:
    """No backend accepts the model (a minimax model with a general constraint): compare's E802 carries
    the constraint's line:col, as plan's does."""
    import optlang
    from optlang.bench import main
    from optlang.errors import PlanError

    model = tmp_path / "m.opt"
    text = (
        "var x[2] in [-1, 1]\nvar y[2] in [-1, 1]\nminimize max over y: dot(y, x) - 0.5 * sumsq(y)\n\n\n"
        "subject to { sum(x) <= 1 }\n"
    )
    model.write_text(text)
    with pytest.raises(PlanError) as info:
        main(["compare", str(model), "--executor", "inline", "--no-progress"])
    assert (info.value.code, info.value.line, info.value.column) == ("E802", 6, 14)
    with pytest.raises(PlanError) as info:
        optlang.load(model).plan()
    assert (info.value.line, info.value.column) == (6, 14)


def _front_result(backend: str, seed: int, F: np.ndarray) -> Result:
    """A multiobjective Result whose info["front"] holds the rows of F (objectives f1, f2)."""
    front = [{"objectives": {"f1": float(a), "f2": float(b)}, "values": {}} for a, b in F]
    return Result(Status.CONVERGED, None, {}, backend, "multiobjective", info={"front": front}, seed=seed)


def test_fronts_compare_by_one_reference_point() -> None:
    """Each front's hypervolume is taken against one reference for the whole comparison (the worst value of
    each objective over all fronts + 10 % of the range), recomputed here by hand on staircases."""
    t = np.linspace(0, 1, 11)
    dense = np.c_[t, 1 - t]  # the segment f1 + f2 = 1, 11 points
    sparse = np.c_[t[::5], 1 - t[::5]] + 0.1  # 3 points, shifted away from the segment
    results = [_front_result("dense", 0, dense), _front_result("sparse", 0, sparse), _front_result("sparse", 1, dense)]
    c = Comparison(model="fronts", path="f.opt", kind="multiobjective", sense="minimize",
                   backends=["dense", "sparse"], results=results)
    fh = c.front_hypervolumes()
    assert fh is not None and fh.objectives == ["f1", "f2"]
    assert fh.reference == pytest.approx([1.1 + 0.11, 1.1 + 0.11])  # worst 1.1, range 1.1
    r = 1.21

    def staircase(F: np.ndarray) -> float:  # 2-D hypervolume of points sorted by f1, by rectangles
        F = F[np.argsort(F[:, 0])]
        return float(sum((r - a) * ((r if i == 0 else F[i - 1, 1]) - b) for i, (a, b) in enumerate(F)))

    assert fh.values["dense"] == pytest.approx([staircase(dense)])
    assert fh.values["sparse"] == pytest.approx([staircase(sparse), staircase(dense)])
    assert fh.median("sparse") == pytest.approx((staircase(sparse) + staircase(dense)) / 2)
    assert fh.points == {"dense": [11], "sparse": [3, 11]}
    assert c.to_dict()["front_hypervolumes"]["reference"] == fh.reference
    from optlang import report

    md = report.render(c, "md")
    assert "| dense | 11 | " + f"{staircase(dense):.6g}" in md and "one reference point for every run" in md
    scalar = Comparison(model="m", path="m.opt", kind="smooth", sense="minimize", backends=["a"],
                        results=[Result(Status.CONVERGED, 1.0, {}, "a", "smooth")])
    assert scalar.front_hypervolumes() is None and scalar.to_dict()["front_hypervolumes"] is None
