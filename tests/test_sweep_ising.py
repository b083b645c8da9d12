"""Ising/Max-Cut sweeps as one batch: the shared-pattern stack, the batched enumeration (every point
equal to its single bruteforce solve), the batched annealing path (every point equal to the
enumerated optimum on small instances, never claimed optimal), and the fallbacks with their reasons."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import optlang
from optlang import batched_ising
from optlang.backends.ising.batched import IsingBatch, PathOptions, anneal_path, brute_force_batch, stack
from optlang.backends.ising.ops import brute_force_min
from optlang.cli import main
from optlang.problem import IsingProblem

MODELS = Path(__file__).resolve().parents[1] / "models"

SK = """param n = 12
param A = randn(n, n, seed = 7)
param h = randn(n, seed = 8)
param t = 0.3
spin s[n]
minimize quad(s, (A + A.T) / 2) / sqrt(n) + t * dot(h, s)
"""

TORUS = """param h = 0.5
graph T = torus(4, 4, weights = "signed", seed = 3)
spin s[T.n]
minimize quad(s, adjacency(T)) / 2 - h * sum(s)
"""

QUBO = """param n = 10
param V = rand(n, seed = 5)
param C = rand(n, n, seed = 6)
param lam = 0.5
binary x[n]
maximize dot(V, x) - lam * quad(x, C) / n
"""

MAXCUT = """param k = 1
graph T = torus(3, 5, weights = "signed", seed = k)
maxcut T
"""


def _random_problem(rng: np.random.Generator, n: int, scale: float = 1.0) -> IsingProblem:
    A = sp.random(n, n, density=0.4, random_state=rng, data_rvs=rng.standard_normal)
    J = sp.triu(A, 1)
    J = (J + J.T).tocsr() * scale
    return IsingProblem(J=J, h=rng.standard_normal(n), constant=float(rng.standard_normal()))


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


# ----------------------------------------------------------------------------- the stack
def test_stack_keeps_each_problem_and_takes_the_union_pattern() -> None:
    rng = np.random.default_rng(0)
    base = _random_problem(rng, 9)
    # a coupling scale swept through 0: the zero point has no couplings, the union is the others' pattern
    probs = [IsingProblem(J=(base.J * c).tocsr(), h=base.h * c, constant=c) for c in (-1.0, 0.0, 2.0)]
    probs[1].J.eliminate_zeros()
    batch = stack(probs)
    assert isinstance(batch, IsingBatch) and batch.size == 3 and batch.nnz == base.J.nnz
    S = np.where(rng.random((3, 5, 9)) < 0.5, -1.0, 1.0)
    want = np.array([[p.energy(s) for s in S[b]] for b, p in enumerate(probs)])
    assert np.allclose(batch.energies(S), want, rtol=1e-13, atol=1e-12)


def test_stack_refuses_other_sizes_and_other_patterns() -> None:
    rng = np.random.default_rng(1)
    assert "different numbers of spins" in str(stack([_random_problem(rng, 6), _random_problem(rng, 7)]))
    why = stack([_random_problem(rng, 12) for _ in range(4)])
    assert isinstance(why, str) and "coupling patterns differ" in why


def test_brute_force_batch_equals_single_enumeration() -> None:
    rng = np.random.default_rng(2)
    for n in (1, 5, 13):
        base = _random_problem(rng, n)
        probs = [IsingProblem(J=base.J, h=base.h * t + rng.standard_normal(n) * 0.1, constant=t) for t in (-1, 0.3, 2)]
        batch = stack(probs)
        assert isinstance(batch, IsingBatch)
        E, S = brute_force_batch(batch, max_elems=1 << 12)  # small chunks: several groups and chunks
        for b, p in enumerate(probs):
            e1, _ = brute_force_min(p)
            assert _same(E[b], e1) and _same(p.energy(S[b]), e1)


# ----------------------------------------------------------------------------- exact sweeps
@pytest.mark.parametrize(
    ("text", "name", "values"),
    [
        (SK, "t", [-1.0, -0.2, 0.0, 0.4, 1.5]),
        (TORUS, "h", [-2.0, -0.5, 0.0, 0.25, 3.0]),
        (QUBO, "lam", [0.0, 0.2, 1.0, 5.0]),
        (MAXCUT, "k", [1, 2, 3, 4]),
    ],
)
def test_exact_sweep_points_equal_single_bruteforce_solves(text: str, name: str, values: list[float]) -> None:
    sw = optlang.parse(text).sweep({name: values})
    assert sw.batched and "enumerated exactly" in sw.plan, sw.plan
    for v, r in zip(values, sw.results, strict=True):
        single = optlang.parse(text, params={name: v}).solve(seed=0)
        assert single.backend == "bruteforce"
        assert r.status.value == single.status.value == "optimal"
        assert r.ok, [c for c in r.checks if not c.passed]
        assert any(c.name == "energy_recomputed" and c.passed for c in r.checks)
        assert _same(r.objective, single.objective)
        assert r.bound is not None and _same(r.bound, r.objective)
        assert r.info["sweep"]["solver"] == "batched-bruteforce"


def test_maximize_qubo_sweep_reports_the_user_sense() -> None:
    sw = optlang.parse(QUBO).sweep({"lam": [0.0, 100.0]})
    V = optlang.parse(QUBO).ir.params["V"]
    # lam = 0: take every item (all values positive); a huge penalty leaves one item at most
    assert sw.results[0].objective == pytest.approx(V.sum(), rel=1e-12)
    assert sw.results[0].values["x"] == pytest.approx(np.ones(10))
    assert sw.results[1].values["x"].sum() <= 1


# ----------------------------------------------------------------------------- the heuristic path
def test_heuristic_sweep_reaches_the_enumerated_optimum_without_claiming_it() -> None:
    values = list(np.linspace(-2, 2, 12))
    m = optlang.parse(TORUS)
    sw = m.sweep({"h": values}, backend="specann")
    exact = m.sweep({"h": values})
    assert sw.batched and "annealed as one batch" in sw.plan, sw.plan
    for r, e in zip(sw.results, exact.results, strict=True):
        assert r.ok, [c for c in r.checks if not c.passed]
        assert r.status.value == "feasible" and r.bound is None
        assert _same(r.objective, e.objective)
        assert r.info["sweep"]["solver"] == "batched-anneal" and isinstance(r.info["warm_start"], bool)


def test_heuristic_maxcut_and_qubo_sweeps_equal_enumeration() -> None:
    for text, name, values in ((MAXCUT, "k", [1, 2, 3, 4, 5]), (QUBO, "lam", [0.1, 0.5, 2.0, 8.0])):
        sw = optlang.parse(text).sweep({name: values}, backend="localsearch", seed=3)
        assert sw.batched
        for v, r in zip(values, sw.results, strict=True):
            best = optlang.parse(text, params={name: v}).solve(backend="bruteforce")
            assert r.ok and r.status.value == "feasible"
            assert _same(r.objective, best.objective)


def test_anneal_path_warm_starts_carry_states_along_the_path() -> None:
    # one instance family whose ground state changes slowly with the field: with no restarts and no
    # rounds, only the warm starts from the neighbours can bring the points to their optima
    probs = [optlang.parse(TORUS, params={"h": float(h)}).compiled.problem for h in np.linspace(-3, 3, 16)]
    batch = stack(probs)
    assert isinstance(batch, IsingBatch)
    exact, _ = brute_force_batch(batch)
    opts = PathOptions(restarts=1, rounds=0)
    cold = anneal_path(batch, PathOptions(restarts=1, rounds=0, neighbours=0), seed=0)
    warm = anneal_path(batch, opts, seed=0)
    assert np.all(warm.energies <= cold.energies + 1e-12)
    assert warm.warm.any() and not cold.warm.any()
    assert np.all(warm.energies >= exact - 1e-9)


def test_max_iter_is_an_iteration_limit() -> None:
    sw = optlang.parse(TORUS).sweep({"h": [0.0, 1.0]}, backend="specann", max_iter=1)
    assert [r.status.value for r in sw.results] == ["iteration_limit"] * 2
    assert all(r.info["rounds"] == 1 for r in sw.results)


# ----------------------------------------------------------------------------- fallbacks
def test_other_patterns_run_point_by_point_with_the_reason() -> None:
    text = "param k = 1\ngraph G = erdos_renyi(14, 0.3, seed = k)\nmaxcut G\n"
    sw = optlang.parse(text).sweep({"k": [1, 2, 3]}, backend="localsearch")
    assert not sw.batched and "coupling patterns differ" in sw.plan
    assert all(r.ok for r in sw.results)


def test_other_sizes_run_point_by_point() -> None:
    text = "param L = 3\ngraph T = torus(L, 4)\nmaxcut T\n"
    sw = optlang.parse(text).sweep({"L": [3, 4]})
    assert not sw.batched and "different numbers of spins" in sw.plan
    assert [r.status.value for r in sw.results] == ["optimal", "optimal"]


@pytest.mark.parametrize(
    ("extra", "backend", "reason"),
    [
        ("", "gnnsdp", "planned backend is gnnsdp"),
        ("solver specann { sweeps = 50 }", None, "specann options in the solver block (sweeps)"),
        ('solver auto { bound = "sdp" }', None, "SDP bound per point"),
    ],
)
def test_what_the_batch_cannot_honour_is_refused_with_the_reason(extra: str, backend: str | None, reason: str) -> None:
    models = [optlang.parse(TORUS + extra, params={"h": h}) for h in (0.0, 1.0)]
    with pytest.raises(batched_ising.NotBatchable, match=reason.replace("(", r"\(").replace(")", r"\)")):
        batched_ising.solve(models, backend=backend)


def test_bnb_sized_models_say_why_and_batch_when_a_heuristic_is_named() -> None:
    text = TORUS.replace("torus(4, 4", "torus(5, 5")  # 25 spins: beyond enumeration, the planner picks bnb
    m = optlang.parse(text)
    assert m.plan().chosen == "bnb"
    models = [optlang.parse(text, params={"h": h}) for h in (0.0, 0.5)]
    with pytest.raises(batched_ising.NotBatchable, match="bnb proves each point optimal"):
        batched_ising.solve(models)
    named = m.sweep({"h": [0.0, 0.5]}, backend="specann")
    assert named.batched
    exact = models[1].solve(seed=0)
    assert exact.status.value == "optimal" and _same(named.results[1].objective, exact.objective)


def test_cli_sweep_of_the_example_model(capsys) -> None:
    assert main(["sweep", str(MODELS / "ising_field_path.opt"), "-p", "h=linspace(-2, 2, 5)", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["batched"] and [r["status"] for r in out["records"]] == ["optimal"] * 5
    objs = [r["objective"] for r in out["records"]]
    assert objs == pytest.approx(objs[::-1])  # E(s; h) = E(-s; -h): the path is symmetric in h


def test_a_time_limit_lets_the_batch_stop_when_no_point_improves() -> None:
    sw = optlang.parse(TORUS + "solver specann { time_limit = 5 }\n").sweep({"h": [0.0, 1.0]})
    assert sw.batched
    for r in sw.results:
        assert r.ok and r.status.value in ("feasible", "time_limit")
        assert r.info["stop"] in ("stagnated", "time_limit")
