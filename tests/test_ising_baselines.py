"""Ising kernels (ising_ops) and the baselines: bruteforce, localsearch, neal."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from benchmarks.graphs import read_gset
from optlang.analysis import Form
from optlang.backends.base import RunContext, Status
from optlang.backends.ising import ops as io
from optlang.backends.ising.bruteforce import BruteForce
from optlang.backends.ising.localsearch import LocalSearch
from optlang.problem import IsingProblem


def random_ising(n: int, seed: int, density: float = 0.5, field: bool = True) -> IsingProblem:
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=seed, data_rvs=lambda k: rng.normal(size=k))
    A = sp.triu(A, 1)
    J = (A + A.T).tocsr()
    h = rng.normal(size=n) if field else np.zeros(n)
    return IsingProblem(J=J, h=h, constant=float(rng.normal()))


def random_maxcut(n: int, seed: int, density: float = 0.4) -> IsingProblem:
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=seed, data_rvs=lambda k: rng.choice([-1.0, 1.0, 2.0], size=k))
    A = sp.triu(A, 1)
    return IsingProblem.from_maxcut((A + A.T).tocsr())


def naive_min(p: IsingProblem) -> float:
    return min(float(p.energy(np.array(s))) for s in itertools.product([-1.0, 1.0], repeat=p.n))


@pytest.fixture(autouse=True)
def one_thread():
    with io.torch_threads(1):
        yield


def test_brute_force_matches_naive_loop_n8():
    for seed in range(4):
        p = random_ising(8, seed)
        e, s = io.brute_force_min(p)
        assert e == pytest.approx(naive_min(p), abs=1e-9)
        assert p.energy(s) == pytest.approx(e, abs=1e-9)


def test_brute_force_splits_agree_and_n24_is_fast():
    p = random_ising(15, 3, density=0.3)  # crosses the low/high split (12 low bits)
    e, s = io.brute_force_min(p)
    assert e == pytest.approx(naive_min(p), abs=1e-9)
    big = random_ising(24, 5, density=0.2)
    e24, s24 = io.brute_force_min(big)
    assert big.energy(s24) == pytest.approx(e24, abs=1e-9)
    rng = np.random.default_rng(0)  # no random state beats the enumerated minimum
    assert np.all(big.energy(rng.choice([-1.0, 1.0], size=(2000, 24))) >= e24 - 1e-9)
    with pytest.raises(ValueError, match="24 spins"):
        io.brute_force_min(random_ising(25, 0))


def test_fields_energies_and_descent_reach_local_minima():
    p = random_ising(40, 1, density=0.2)
    Jt = io.to_torch_csr(p.J, "cpu", torch.float64)
    h = torch.as_tensor(p.h)
    S = torch.as_tensor(np.random.default_rng(1).choice([-1.0, 1.0], size=(16, 40)))
    F = io.local_fields(Jt, h, S)
    np.testing.assert_allclose(F.numpy(), (p.J @ S.numpy().T).T + p.h, atol=1e-12)
    E0 = io.energies(Jt, h, S, p.constant).numpy()
    np.testing.assert_allclose(E0, p.energy(S.numpy()), atol=1e-9)
    S2, G, rounds = io.descent_with_fields(Jt, h, S.clone())
    assert rounds > 0
    np.testing.assert_allclose(G.numpy(), 2 * (p.J @ S2.numpy().T).T + p.h, atol=1e-9)  # incremental == recomputed
    E = p.energy(S2.numpy())
    assert np.all(E <= E0 + 1e-9)
    for b in range(16):  # no single flip improves
        for i in range(40):
            t = S2[b].numpy().copy()
            t[i] = -t[i]
            assert p.energy(t) >= E[b] - 1e-9
    S3 = io.one_flip_descent(Jt, h, S.clone())
    np.testing.assert_array_equal(S3.numpy(), S2.numpy())  # deterministic


def test_gset_reader_and_cut(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("4 4\n1 2 1\n2 3 1\n3 4 -1\n1 4 1\n")
    W = read_gset(f)
    assert W.shape == (4, 4) and W.nnz == 8 and abs(W - W.T).sum() == 0
    s = np.array([1.0, -1.0, 1.0, -1.0])
    assert io.cut_value(W, s) == pytest.approx(1 + 1 - 1 + 1)
    p = IsingProblem.from_maxcut(W)
    assert -p.energy(s) == pytest.approx(io.cut_value(W, s))


def test_bruteforce_backend_is_optimal_and_refuses_large():
    p = random_maxcut(14, 2)
    r = BruteForce().solve(p, BruteForce().make_options({}), RunContext(seed=0))
    assert r.status == Status.OPTIMAL and r.bound == r.objective
    assert r.objective == pytest.approx(naive_min(p), abs=1e-9)
    assert r.info["cut"] == pytest.approx(-r.objective)
    assert r.checks["energy_recomputed"][0]
    assert "24 spins" in BruteForce().refuse(Form(kind="ising", n_spins=30))
    # n_spins is the model's spin count (problem.n); a field adds no enumerated spin, and 25 spins are
    # refused up front (they used to pass refuse() and then fail inside solve())
    assert BruteForce().refuse(Form(kind="ising", n_spins=24, has_field=True)) is None
    assert "has 25" in BruteForce().refuse(Form(kind="maxcut", n_spins=25, has_field=True))
    assert "constraints" in BruteForce().refuse(Form(kind="ising", n_spins=5, constraints=("sum(s) == 0",)))
    assert BruteForce().refuse(Form(kind="smooth")) is not None


def test_localsearch_deterministic_local_minimum():
    p = random_ising(60, 4, density=0.1)
    b = LocalSearch()
    r1 = b.solve(p, b.make_options({"batch": 16, "rounds": 3}), RunContext(seed=7))
    r2 = b.solve(p, b.make_options({"batch": 16, "rounds": 3}), RunContext(seed=7))
    np.testing.assert_array_equal(r1.values["s"], r2.values["s"])
    assert r1.status == Status.FEASIBLE and r1.iterations == 3
    assert r1.checks["energy_recomputed"][0]
    s = r1.values["s"]
    for i in range(60):
        t = s.copy()
        t[i] = -t[i]
        assert p.energy(t) >= r1.objective - 1e-6
    # patience 0 fills the limit (by default a stagnating search stops early: tests/test_stopping.py)
    r3 = b.solve(p, b.make_options({"batch": 8, "patience": 0}), RunContext(seed=7, time_limit=0.3))
    assert r3.status == Status.TIME_LIMIT and r3.iterations >= 1 and r3.info["stop"] == "time_limit"
    r4 = b.solve(p, b.make_options({"batch": 8}), RunContext(seed=7, max_iter=2))
    assert r4.status == Status.ITERATION_LIMIT and r4.iterations == 2


def test_neal_conversion_gives_identical_energies():
    pytest.importorskip("dwave.samplers")
    from optlang.backends.ising.neal import Neal, samples_to_array, to_bqm

    p = random_ising(12, 6)
    bqm = to_bqm(p)
    S = np.random.default_rng(3).choice([-1.0, 1.0], size=(50, 12))
    np.testing.assert_allclose(bqm.energies((S, list(range(12)))), p.energy(S), atol=1e-9)
    b = Neal()
    r = b.solve(p, b.make_options({"num_reads": 20, "num_sweeps": 200, "fill_time": False}), RunContext(seed=1))
    assert r.checks["energy_recomputed"][0]
    assert r.objective == pytest.approx(io.brute_force_min(p)[0], abs=1e-6)
    assert r.info["reads"] == 20 and r.status == Status.FEASIBLE
    from dwave.samplers import SimulatedAnnealingSampler

    ss = SimulatedAnnealingSampler().sample(bqm, num_reads=3, num_sweeps=10, seed=2)
    np.testing.assert_allclose(p.energy(samples_to_array(ss, 12)), ss.record.energy, atol=1e-9)
    r2 = b.solve(p, b.make_options({"num_sweeps": 100, "patience": 0}), RunContext(seed=1, time_limit=0.5))
    assert r2.status == Status.TIME_LIMIT and r2.info["reads"] >= 2 and r2.info["stop"] == "time_limit"
    assert Neal.auto is False


def test_neal_names_its_schedules_instead_of_failing_inside_dwave():
    pytest.importorskip("dwave.samplers")
    from optlang.backends.ising.neal import Neal
    from optlang.errors import OptionError

    b = Neal()
    with pytest.raises(OptionError, match="'geometric', 'linear'"):
        b.solve(random_ising(6, 1), b.make_options({"beta_schedule_type": "cubic"}), RunContext(seed=0))
