"""SpecAnn's annealing kernel: sparse (flipped-spins-only) propagation equals the dense update, the
acceptance rules sample Boltzmann, and the backend's anytime history survives the sparse path."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from optlang.backends.base import RunContext
from optlang.backends.ising import ops as io
from optlang.backends.ising.specann import SpecAnn
from optlang.backends.ising.specann import anneal as anneal_module
from optlang.backends.ising.specann.anneal import ColorBlocks, anneal, color_classes, flip_noise, propagate_flips
from optlang.data import random_regular
from optlang.problem import IsingProblem


@pytest.fixture(autouse=True)
def one_thread():
    with io.torch_threads(1):
        yield


@pytest.fixture
def no_overhead(monkeypatch):
    """Let the cost model pick the sparse path on graphs this small (its fixed cost set to 0)."""
    monkeypatch.setattr(anneal_module, "SPARSE_OVERHEAD", 0.0)


def signed_graph(n: int, seed: int, density: float, real: bool) -> sp.csr_matrix:
    """Symmetric couplings, ±1/4 (dyadic: sums are exact in float32) or normal reals."""
    rng = np.random.default_rng(seed)
    A = sp.triu(sp.random(n, n, density=density, random_state=seed), 1).tocsr()
    A.data = rng.normal(size=A.nnz) if real else rng.choice([-0.25, 0.25], size=A.nnz)
    return (A + A.T).tocsr()


def permuted_fields(J: sp.csr_matrix, blocks: ColorBlocks, S: torch.Tensor, h: np.ndarray) -> torch.Tensor:
    """2 J S + h in the blocks' spin order, in float64 (the reference)."""
    perm = blocks.perm.numpy()
    Jp = J[perm][:, perm]
    return torch.as_tensor(2.0 * (Jp @ S.double().numpy()) + h[perm][:, None])


@pytest.mark.parametrize(("real", "B"), [(False, 1), (False, 5), (True, 1), (True, 3)])
def test_sparse_propagation_equals_the_dense_update(real, B):
    J = signed_graph(300, 3 + B, 0.03, real)
    blocks = ColorBlocks(J, color_classes(J, seed=1), "cpu", torch.float32, torch.int32, rows=True)
    assert len(blocks.rows) == len(blocks) > 2
    g = torch.Generator().manual_seed(B)
    S = (torch.randint(0, 2, (J.shape[0], B), generator=g) * 2 - 1).float()
    G0 = permuted_fields(J, blocks, S, np.zeros(J.shape[0])).float()
    for c, ((lo, hi), Jc) in enumerate(zip(blocks.bounds, blocks.cols, strict=True)):
        mask = torch.rand(hi - lo, B, generator=g) < 0.3
        d = S[lo:hi] * mask
        dense = G0.clone().addmm_(Jc, d, alpha=-4.0)
        sparse = G0.clone()
        flat = torch.nonzero(mask.view(-1)).view(-1)
        propagate_flips(sparse, blocks.rows[c], flat, S[lo:hi].reshape(-1)[flat], B)
        if real:
            torch.testing.assert_close(sparse, dense, rtol=0, atol=1e-5)
        else:
            assert torch.equal(sparse, dense)  # dyadic couplings: both sums are exact
    # no flips: nothing moves
    G1 = G0.clone()
    propagate_flips(G1, blocks.rows[0], torch.zeros(0, dtype=torch.int64), torch.zeros(0), B)
    assert torch.equal(G1, G0)


@pytest.mark.parametrize("rule", ["metropolis", "heatbath"])
def test_sparse_and_dense_anneals_follow_the_same_trajectory(rule, no_overhead):
    """±1/4 couplings: both updates give bit-identical fields, so the same seed gives the same run,
    and G stays equal to 2JS + h (checked in float64) whichever path each class took."""
    J = sp.csr_matrix(random_regular(400, 3, 7, "signed", None).W) / 4.0
    h = np.zeros(400)
    blocks = ColorBlocks(J, color_classes(J, seed=0), "cpu", torch.float32, torch.int32)
    assert blocks.rows  # built by default on the CPU
    out = []
    for cost in (0.0, 1e-9, 20.0):  # dense only, sparse whenever possible, the cost model
        g = torch.Generator().manual_seed(5)
        S = (torch.randint(0, 2, (400, 2), generator=g) * 2 - 1).float()
        G = permuted_fields(J, blocks, S[blocks.perm], h).float()[torch.argsort(blocks.perm)]
        stats: dict[str, int] = {}
        best_S, best_E, sweeps = anneal(
            blocks, torch.zeros(400), S, G, 2.0, 0.05, 80, g, rule=rule, sparse_cost=cost, stats=stats
        )
        ref = torch.as_tensor(2.0 * (J @ S.double().numpy()))
        torch.testing.assert_close(G.double(), ref, rtol=0, atol=1e-6)
        assert sweeps == 80
        assert stats.get("sparse_updates", 0) > 0 if cost > 0 else stats.get("sparse_updates", 0) == 0
        out.append((S.clone(), best_S, best_E))
    for S2, b2, e2 in out[1:]:
        assert torch.equal(S2, out[0][0]) and torch.equal(b2, out[0][1]) and torch.equal(e2, out[0][2])


def boltzmann(J: sp.csr_matrix, h: np.ndarray, T: float) -> dict[tuple[int, ...], float]:
    n = J.shape[0]
    states = [tuple(2 * ((k >> i) & 1) - 1 for i in range(n)) for k in range(1 << n)]
    w = {s: math.exp(-(np.array(s) @ (J @ np.array(s)) + h @ np.array(s)) / T) for s in states}
    Z = sum(w.values())
    return {s: v / Z for s, v in w.items()}


@pytest.mark.parametrize("rule", ["metropolis", "heatbath"])
@pytest.mark.parametrize("cost", [0.0, 1e-9])
def test_acceptance_samples_boltzmann(rule, cost, no_overhead):
    """A 3-spin path with fields, B = 20000 independent chains at a fixed T: after 30 sweeps the
    states' frequencies match the Boltzmann distribution (chi-square style bound, 5 σ per state),
    for both acceptance rules and both update paths. The field is absorbed as in the backend:
    h enters G and the energy, and the anneal never flips a spin of an empty class."""
    J = sp.csr_matrix(np.array([[0.0, 0.5, 0.0], [0.5, 0.0, -0.25], [0.0, -0.25, 0.0]]))
    h = np.array([0.3, -0.2, 0.1])
    T, B = 0.8, 20_000
    blocks = ColorBlocks(J, color_classes(J, seed=0), "cpu", torch.float32, rows=True)
    g = torch.Generator().manual_seed(11)
    S = (torch.randint(0, 2, (3, B), generator=g) * 2 - 1).float()
    G = torch.as_tensor(2.0 * (J @ S.double().numpy()) + h[:, None]).float()
    anneal(blocks, torch.as_tensor(h, dtype=torch.float32), S, G, T, T, 30, g, rule=rule, sparse_cost=cost)
    p = boltzmann(J, h, T)
    keys, counts = np.unique(S.numpy().T.astype(int), axis=0, return_counts=True)
    seen = {tuple(k): c for k, c in zip(keys, counts, strict=True)}
    for s, ps in p.items():
        sd = math.sqrt(B * ps * (1 - ps))
        assert abs(seen.get(s, 0) - B * ps) < 5 * sd + 1, (s, seen.get(s, 0), B * ps)


@pytest.mark.parametrize("rule", ["metropolis", "heatbath"])
def test_flip_noise_acceptance_probabilities(rule):
    """P(s·G > (T/2)·r) for the pool's noise r equals min(1, e^(-ΔE/T)) (Metropolis) or
    1/(1 + e^(ΔE/T)) (heat bath), ΔE = -2 s·G, at several ΔE including 0."""
    g = torch.Generator().manual_seed(3)
    N, T = 400_000, 0.7
    r = flip_noise(N, rule, g, torch.float32).double()
    for dE in (-1.0, -0.3, 0.0, 0.2, 0.7, 1.5):
        x = -dE / 2
        emp = float((x > 0.5 * T * r).double().mean())
        want = min(1.0, math.exp(-dE / T)) if rule == "metropolis" else 1.0 / (1.0 + math.exp(dE / T))
        assert emp == pytest.approx(want, abs=5 * math.sqrt(want * (1 - want) / N) + 1e-4), dE
    with pytest.raises(ValueError, match="acceptance rule"):
        J = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
        b = ColorBlocks(J, color_classes(J), "cpu", torch.float32)
        anneal(b, torch.zeros(2), torch.ones(2, 1), torch.ones(2, 1), 1.0, 0.1, 1, g, rule="glauber")


def test_large_model_on_the_sparse_path_keeps_its_anytime_history(no_overhead):
    """A 3-regular ±1 graph big enough for the one-long-anneal schedule (batch 1): the refinement
    takes the sparse path once the spins freeze, every improvement is in the history with its time,
    and the reported cut is the verified one."""
    W = sp.csr_matrix(random_regular(20_000, 3, 2, "signed", None).W)
    p = IsingProblem.from_maxcut(W)
    b = SpecAnn()
    ctx = RunContext(seed=0, time_limit=3.0)
    r = b.solve(p, b.make_options({"patience": 0, "max_elems": 20_000}), ctx)  # batch 1
    assert r.info["batch"] == 1 and r.info["sweeps"] > 0
    assert r.info["anneal_updates"]["sparse"] > 0
    assert len(r.history) >= 3
    pairs = zip(r.history, r.history[1:], strict=False)
    assert all(b[0] >= a[0] and b[1] < a[1] for a, b in pairs)  # time, strictly better energy
    assert r.history[-1][0] <= 3.0 + 1.0
    assert r.history[-1][1] == pytest.approx(r.objective)
    assert r.info["cut"] == pytest.approx(io.cut_value(W, r.values["s"])) == pytest.approx(-r.objective)


def test_small_graphs_stay_on_the_dense_path():
    """With the measured fixed cost, a Gset-sized graph at batch 8 never pays for counting flips."""
    J = signed_graph(800, 1, 0.02, False)
    blocks = ColorBlocks(J, color_classes(J), "cpu", torch.float32, torch.int32)
    g = torch.Generator().manual_seed(0)
    S = (torch.randint(0, 2, (800, 8), generator=g) * 2 - 1).float()
    G = torch.as_tensor(2.0 * (J @ S.double().numpy())).float()
    stats: dict[str, int] = {}
    anneal(blocks, torch.zeros(800), S, G, 2.0, 0.05, 20, g, stats=stats)
    assert stats == {"dense_updates": 20 * len(blocks)}
