"""SpecAnn: exactness on small models, determinism, time limit, eigensolver and annealing kernels."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.sparse.linalg import eigsh

from optlang.analysis import Form
from optlang.backends.base import RunContext, Status
from optlang.backends.ising import ops as io
from optlang.backends.ising.specann import SpecAnn
from optlang.backends.ising.specann.anneal import ColorBlocks, anneal, color_classes
from optlang.backends.ising.specann.eigen import degrees, lobpcg, normalized_operator, path_sweep
from optlang.errors import OptionError
from optlang.problem import IsingProblem

FAST = {"sweeps": 100, "rounds": 2, "candidates": 16, "batch": 16, "path_steps": 3}


def random_ising(n: int, seed: int, density: float = 0.5, field: bool = True) -> IsingProblem:
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=seed, data_rvs=lambda k: rng.normal(size=k))
    A = sp.triu(A, 1)
    h = rng.normal(size=n) if field else np.zeros(n)
    return IsingProblem(J=(A + A.T).tocsr(), h=h, constant=float(rng.normal()))


def random_graph(n: int, seed: int, density: float, weights=(-1.0, 1.0)) -> sp.csr_matrix:
    """Symmetric weights with about density·n²/2 distinct edges drawn from `weights`."""
    rng = np.random.default_rng(seed)
    m = max(1, int(density * n * n / 2))
    i, j = rng.integers(0, n, size=(2, m))
    keep = i < j
    A = sp.coo_matrix((rng.choice(weights, size=int(keep.sum())), (i[keep], j[keep])), shape=(n, n)).tocsr()
    A.sum_duplicates()
    A.data = np.sign(A.data) * np.abs(A.data).clip(min=0.5)
    A.eliminate_zeros()
    return (A + A.T).tocsr()


@pytest.fixture(autouse=True)
def one_thread():
    with io.torch_threads(1):
        yield


def solve(p: IsingProblem, seed: int = 0, **kw) -> object:
    b = SpecAnn()
    opts = b.make_options({**FAST, **{k: v for k, v in kw.items() if k not in ("time_limit", "max_iter")}})
    return b.solve(p, opts, RunContext(seed=seed, time_limit=kw.get("time_limit"), max_iter=kw.get("max_iter")))


@pytest.mark.parametrize("seed", range(4))
def test_equals_enumeration_ising_with_fields(seed):
    p = random_ising(12 + 2 * seed, seed)
    r = solve(p, seed)
    exact, _ = io.brute_force_min(p)
    assert r.objective == pytest.approx(exact, abs=1e-6)
    assert p.energy(r.values["s"]) == pytest.approx(r.objective, abs=1e-9)
    assert set(np.unique(r.values["s"])) <= {-1.0, 1.0} and r.values["s"].shape == (p.n,)
    assert r.checks["energy_recomputed"][0]
    assert r.status == Status.FEASIBLE and r.info["field_spin"]


@pytest.mark.parametrize("seed", range(3))
def test_equals_enumeration_maxcut_signed(seed):
    p = IsingProblem.from_maxcut(random_graph(20, 10 + seed, 0.3, weights=(-1.0, 1.0, 2.0)))
    r = solve(p, seed)
    exact, _ = io.brute_force_min(p)
    assert r.objective == pytest.approx(exact, abs=1e-6)
    assert r.info["cut"] == pytest.approx(io.cut_value(p.maxcut_weights, r.values["s"]))


def test_refine_variants_and_float64():
    p = random_ising(16, 9)
    exact, _ = io.brute_force_min(p)
    for refine in ("ils", "none"):
        r = solve(p, 1, refine=refine)
        assert r.objective >= exact - 1e-9 and r.checks["energy_recomputed"][0]
    b = SpecAnn()
    r = b.solve(p, b.make_options(FAST), RunContext(seed=2, dtype="float64"))
    assert r.objective == pytest.approx(exact, abs=1e-9)
    with pytest.raises(OptionError, match="refine"):
        solve(p, 0, refine="magic")
    with pytest.raises(OptionError, match="predictor"):
        solve(p, 0, predictor="magic")


def test_deterministic_under_seed():
    p = IsingProblem.from_maxcut(random_graph(150, 1, 0.05))
    r1, r2 = solve(p, 5), solve(p, 5)
    np.testing.assert_array_equal(r1.values["s"], r2.values["s"])
    assert [h[1] for h in r1.history] == [h[1] for h in r2.history]
    assert r1.info["sweeps"] == r2.info["sweeps"]


def test_time_limit_respected_and_history():
    p = IsingProblem.from_maxcut(random_graph(3000, 2, 0.002))
    t = time.perf_counter()
    r = solve(p, 0, time_limit=1.0, sweeps=100000, batch=32)
    elapsed = time.perf_counter() - t
    assert r.status == Status.TIME_LIMIT
    assert elapsed < 1.0 * 1.5 + 1.0  # loose: the machine is shared
    assert r.history and all(b[1] <= a[1] for a, b in zip(r.history, r.history[1:], strict=False))
    assert r.history[-1][1] == pytest.approx(r.objective)
    assert r.info["cut"] > 0 and r.checks["energy_recomputed"][0]


def test_max_iter_counts_rounds():
    p = IsingProblem.from_maxcut(random_graph(100, 3, 0.1))
    r = solve(p, 0, max_iter=1)
    assert r.status == Status.ITERATION_LIMIT and r.iterations == 1


def test_path_sweep_warm_starts_converge_to_eigsh():
    W = random_graph(120, 4, 0.08, weights=(-1.0, 1.0, 0.5))
    p = IsingProblem.from_maxcut(W)
    Jt = io.to_torch_csr(p.J, "cpu", torch.float64)
    d = np.asarray(abs(p.J).sum(axis=1)).ravel()
    d[d == 0] = 1.0
    g = torch.Generator().manual_seed(0)
    steps = list(path_sweep(Jt, 4, 4, g, first_iters=500, iters=500, tol=1e-9, predictor="inverse"))
    assert [s.t for s in steps] == pytest.approx([0, 1 / 3, 2 / 3, 1])
    for s in steps:
        Dm = sp.diags(d ** (-s.t / 2))
        ref = np.sort(eigsh(Dm @ p.J @ Dm, k=4, which="SA")[0])
        np.testing.assert_allclose(s.values.numpy(), ref, atol=1e-6)
        V = s.vectors.numpy()
        np.testing.assert_allclose(V.T @ V, np.eye(4), atol=1e-8)
    # the predictor warm start from the previous point beats a cold random start at every t > 0
    dd = degrees(Jt)
    for s in steps[1:]:
        X0 = torch.randn(p.n, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        cold = lobpcg(normalized_operator(Jt, dd.pow(-s.t / 2)), X0, 500, 1e-9, float(dd.max()) ** (1 - s.t))
        np.testing.assert_allclose(cold.values.numpy(), s.values.numpy(), atol=1e-6)
        assert s.iterations < cold.iterations


def test_lobpcg_on_known_spectrum():
    n = 200
    diag = torch.linspace(-3.0, 5.0, n, dtype=torch.float64)
    X0 = torch.randn(n, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    r = lobpcg(lambda X: diag[:, None] * X, X0, max_iter=300, tol=1e-10)
    np.testing.assert_allclose(r.values.numpy(), diag[:3].numpy(), atol=1e-8)
    Jt = io.to_torch_csr(sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]])), "cpu", torch.float64)
    op = normalized_operator(Jt, degrees(Jt).pow(-0.5))
    np.testing.assert_allclose(op(torch.eye(2, dtype=torch.float64)).numpy(), [[0, 1], [1, 0]])


def test_coloring_is_proper_and_anneal_keeps_fields_exact():
    p = random_ising(200, 5, density=0.05)
    classes = color_classes(p.J, seed=1)
    color = np.full(p.n, -1)
    for c, idx in enumerate(classes):
        color[idx] = c
    assert np.all(color >= 0)
    rows = np.repeat(np.arange(p.n), np.diff(p.J.indptr))
    assert np.all(color[rows] != color[p.J.indices])
    blocks = ColorBlocks(p.J, classes, "cpu", torch.float64)
    Jt = io.to_torch_csr(p.J, "cpu", torch.float64)
    h = torch.as_tensor(p.h)
    g = torch.Generator().manual_seed(3)
    S = torch.where(torch.rand(p.n, 8, generator=g, dtype=torch.float64) < 0.5, 1.0, -1.0).double()
    G = 2 * (Jt @ S) + h[:, None]
    best_S, best_E, sweeps = anneal(blocks, h, S, G, 3.0, 0.05, 60, g)
    assert sweeps == 60
    np.testing.assert_allclose(G.numpy(), 2 * (p.J @ S.numpy()) + p.h[:, None], atol=1e-9)
    np.testing.assert_allclose(best_E.numpy() + p.constant, p.energy(best_S.numpy().T), atol=1e-9)
    start = p.energy(np.ones(p.n))
    assert best_E.min().item() + p.constant < start  # annealing found something below a trivial state


def test_no_couplings_and_refusals():
    p = IsingProblem(J=sp.csr_matrix((5, 5)), h=np.zeros(5), constant=2.0)
    r = solve(p)
    assert r.status == Status.OPTIMAL and r.objective == pytest.approx(2.0)
    pf = IsingProblem(J=sp.csr_matrix((4, 4)), h=np.array([1.0, -2.0, 0.5, -1.0]))
    assert solve(pf).objective == pytest.approx(-4.5)
    b = SpecAnn()
    assert b.refuse(Form(kind="maxcut", n_spins=10**6)) is None
    assert "constraints" in b.refuse(Form(kind="ising", n_spins=5, constraints=("sum(s) == 0",)))
    assert b.refuse(Form(kind="bilevel")) is not None
    assert SpecAnn.priority == 10


@pytest.mark.parametrize("padded", [True, False])
def test_tabu_keeps_fields_exact_and_returns_its_best_states(padded, monkeypatch):
    from optlang.backends.ising.specann import tabu
    from optlang.backends.ising.specann.tabu import tabu_search

    if not padded:  # the CSR-row path taken when a hub makes the padded table too big
        monkeypatch.setattr(tabu, "_ell", lambda Jt: None)
    p = random_ising(60, 7, density=0.2)
    Jt = io.to_torch_csr(p.J, "cpu", torch.float64)
    h_t = torch.as_tensor(p.h, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    S = torch.where(torch.rand(4, 60, generator=gen) < 0.5, -1.0, 1.0).double()
    S, G, _ = io.descent_with_fields(Jt, h_t, S)
    E0 = (S * (G + h_t)).sum(dim=1) / 2
    seen = []
    best_S, best_E, steps = tabu_search(Jt, h_t, S, G, 300, gen, tenure=5, progress=seen.append)
    assert steps == 300
    torch.testing.assert_close(G, 2.0 * io.matvec(Jt, S) + h_t)  # fields stay exact along the walk
    exact = (best_S * (2.0 * io.matvec(Jt, best_S) + 2.0 * h_t)).sum(dim=1) / 2
    torch.testing.assert_close(best_E, exact)
    assert bool((best_E <= E0 + 1e-9).all())  # never worse than where it started
    assert all(b < a for a, b in zip(seen, seen[1:], strict=False))


@pytest.mark.parametrize("seed", range(2))
def test_tabu_polish_equals_enumeration(seed):
    p = random_ising(14 + 2 * seed, 20 + seed)
    r = solve(p, seed, tabu=0.3, tabu_steps=200)
    assert r.objective == pytest.approx(io.brute_force_min(p)[0], abs=1e-6)
    assert r.info["tabu_steps"] > 0


@pytest.mark.parametrize("tabu", [0.0, 0.3])
def test_interrupt_returns_the_best_reported_cut(tabu):
    """Anytime: every improvement is in the history with its time, and a stop at any report
    (as SIGINT sets ctx.interrupted) returns a state at least as good as the last one reported."""
    W = random_graph(2000, 4, 0.003)
    p = IsingProblem.from_maxcut(W)
    b = SpecAnn()
    rows = []
    ctx = RunContext(seed=0, time_limit=30.0)

    def on_progress(row: dict) -> None:
        rows.append(row)
        if len(rows) == 4:
            ctx.interrupted = True

    ctx._progress = on_progress
    r = b.solve(p, b.make_options({"sweeps": 100000, "batch": 4, "tabu": tabu}), ctx)
    assert r.status == Status.INTERRUPTED and r.info["stop"] == "interrupted"
    pairs = zip(r.history, r.history[1:], strict=False)
    assert len(r.history) >= 4 and all(b[0] >= a[0] and b[1] < a[1] for a, b in pairs)  # time, strictly better
    assert all("cut" in row and row["cut"] == pytest.approx(-row["objective"]) for row in rows)
    assert r.objective <= r.history[3][1] + 1e-6 * abs(r.objective)
    assert io.cut_value(W, r.values["s"]) == pytest.approx(-r.objective)


def test_tabu_table_refuses_a_hub():
    from optlang.backends.ising.specann.tabu import _ell

    n = 30_000
    star = sp.coo_matrix((np.ones(n - 1), (np.zeros(n - 1, int), np.arange(1, n))), shape=(n, n)).tocsr()
    assert _ell(io.to_torch_csr(star + star.T)) is None  # n × (n-1) padding would be ~10^9 entries
    nbr, wts = _ell(io.to_torch_csr(random_graph(50, 0, 0.2)))
    assert nbr.shape == wts.shape and nbr.shape[0] == 50


def test_large_model_anneals_once_over_the_time_left():
    """Batch 1 (max_elems caps it) with a time limit: one long round from t_start_large fills the time."""
    p = IsingProblem.from_maxcut(random_graph(2000, 5, 0.002))
    r = solve(p, 0, time_limit=1.5, max_elems=1000, batch=8, patience=0)
    assert r.info["batch"] == 1 and r.status == Status.TIME_LIMIT
    assert r.info["rounds"] == 1 and r.info["sweeps"] > 100  # FAST's 100 sweeps per round do not bound it
    sigma = r.info["t_start"] / SpecAnn.Options().t_start_large
    assert sigma > 0 and r.checks["energy_recomputed"][0]
    assert r.history[-1][1] == pytest.approx(r.objective)
    small = solve(p, 0, time_limit=1.5, batch=8, patience=0)  # batch 8: rounds of 100 sweeps, t_start
    assert small.info["rounds"] > 1 and small.info["t_start"] == pytest.approx(sigma * SpecAnn.Options().t_start)
