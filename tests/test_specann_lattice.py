"""SpecAnn's bit-packed ±J torus annealer (lattice.py): detection, layout, Metropolis rule, randomness, solve."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import optlang
from optlang import data
from optlang.backends.base import RunContext
from optlang.backends.ising.specann import SpecAnn
from optlang.backends.ising.specann.lattice import (
    MaskedTorus,
    PackedTorus,
    RandomWords,
    anneal_torus,
    detect_torus,
    pack_torus,
    popcount,
    torus_colors,
)
from optlang.errors import OptionError
from optlang.problem import IsingProblem

SHAPES = [(4, 6), (6, 8), (64, 6), (66, 4), (70, 10), (128, 4), (130, 12), (192, 4)]
ODD_SHAPES = [(3, 3), (3, 5), (5, 8), (6, 7), (7, 7), (65, 3), (129, 9)]


def torus_problem(rows: int, cols: int, seed: int = 3, weights: str = "signed") -> IsingProblem:
    return IsingProblem.from_maxcut(data.torus(rows, cols, seed, weights, None).W)


def test_detects_signed_and_unit_tori_row_by_row() -> None:
    for rows, cols in SHAPES + ODD_SHAPES:
        sh = detect_torus(torus_problem(rows, cols).J, np.zeros(rows * cols))
        assert sh is not None and (sh.rows, sh.cols, sh.magnitude) == (rows, cols, 0.25)
    assert detect_torus(torus_problem(6, 8, weights="unit").J, np.zeros(48)) is not None


def test_refuses_what_is_not_a_pm_j_torus() -> None:
    P = torus_problem(6, 8)
    assert detect_torus(P.J, np.ones(48)) is None  # a field
    for rows, cols in [(2, 8), (8, 2), (1, 16)]:  # too thin: repeated or missing bonds
        assert detect_torus(torus_problem(rows, cols).J, np.zeros(rows * cols)) is None
    J = P.J.copy()
    J.data[0] *= 2.0  # two magnitudes
    J = ((J + J.T) / 2).tocsr()
    assert detect_torus(J, np.zeros(48)) is None
    perm = np.random.default_rng(0).permutation(48)  # the same graph, numbered otherwise
    assert detect_torus(sp.csr_matrix(P.J[perm][:, perm]), np.zeros(48)) is None
    ring = sp.diags([np.ones(47), np.ones(47)], [1, -1], format="lil")
    ring[0, 47] = ring[47, 0] = 1.0
    assert detect_torus(sp.csr_matrix(ring), np.zeros(48)) is None


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_pack_energy_and_metropolis_rule_match_the_couplings(rows: int, cols: int) -> None:
    """Round trip, sᵀJs, and a half sweep with all-zero / all-one acceptance masks against numpy."""
    P = torus_problem(rows, cols)
    shape = detect_torus(P.J, P.h)
    assert shape is not None
    pk = PackedTorus(shape, "cpu")
    rng = np.random.default_rng(rows * 1000 + cols)
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    for _ in range(2):
        s = rng.choice([-1.0, 1.0], rows * cols)
        X = pk.pack(torch.as_tensor(s))
        assert np.array_equal(pk.unpack(X, torch.float64).numpy(), s)
        assert pk.energy(X) == pytest.approx(float(s @ (P.J @ s)), abs=1e-9)
        dE = -4.0 * s * (P.J @ s)  # the change of sᵀJs when s_i flips
        none, every = torch.zeros_like(X[0]), torch.full_like(X[0], -1)
        for c in (0, 1):
            mine = ((i + j) % 2 == c).ravel()
            for one, zero, allowed in ((none, none, dE <= 0), (every, none, dE <= 2.0 + 1e-9), (every, every, dE < 9)):
                Y = X.clone()
                pk.half_sweep(Y, c, one, zero)
                assert np.array_equal(pk.unpack(Y, torch.float64).numpy(), np.where(mine & allowed, -s, s))


@pytest.mark.parametrize("rows,cols", ODD_SHAPES + [(6, 8)])
def test_masked_layout_any_sides_matches_the_couplings(rows: int, cols: int) -> None:
    """The plain layout with a graph colouring (odd sides: no checkerboard): round trip, sᵀJs, and each
    colour's update against numpy, for all-zero / all-one acceptance masks."""
    P = torus_problem(rows, cols)
    shape = detect_torus(P.J, P.h)
    assert shape is not None
    col = torus_colors(rows, cols)
    A = P.J.tocoo()
    assert np.all(col[A.row] != col[A.col]) and col.max() == 2  # a proper 3-colouring
    pk = MaskedTorus(shape, col, "cpu")
    assert isinstance(pack_torus(shape, "cpu"), MaskedTorus if rows % 2 or cols % 2 else PackedTorus)
    rng = np.random.default_rng(rows * 1000 + cols)
    for _ in range(2):
        s = rng.choice([-1.0, 1.0], rows * cols)
        w = pk.pack(torch.as_tensor(s))
        assert np.array_equal(pk.unpack(w, torch.float64).numpy(), s)
        assert pk.energy(w) == pytest.approx(float(s @ (P.J @ s)), abs=1e-9)
        dE = -4.0 * s * (P.J @ s)
        none, every = torch.zeros_like(w), torch.full_like(w, -1)
        for c in range(pk.n_colors):
            for one, zero, allowed in ((none, none, dE <= 0), (every, none, dE <= 2.0 + 1e-9), (every, every, dE < 9)):
                v = w.clone()
                pk.half_sweep(v, c, one, zero)
                assert np.array_equal(pk.unpack(v, torch.float64).numpy(), np.where((col == c) & allowed, -s, s))


@pytest.mark.parametrize("p", [0.0, 1e-3, 4e-3, 0.05, 0.3, 1.0])
def test_random_words_have_bernoulli_bits(p: float) -> None:
    """Set-bit frequency within 5 σ of p (the digit method rounds p to 3 significant binary digits)."""
    words = 50_000
    gen = torch.Generator().manual_seed(1)
    rw = RandomWords(words, gen, "cpu")
    out = torch.empty(words, dtype=torch.int64)
    freq = popcount(rw.bernoulli(p, out)) / (64 * words)
    if p in (0.0, 1.0):
        assert freq == p
        return
    digits = math.ceil(-math.log2(p)) + 3
    target = p if 6400 * p < 8 * digits else round(p * 2**digits) / 2**digits
    assert abs(target - p) <= p / 8
    assert abs(freq - target) <= 5 * math.sqrt(target * (1 - target) / (64 * words))


def test_anneal_torus_descends_reports_and_stops() -> None:
    P = torus_problem(16, 16)
    shape = detect_torus(P.J, P.h)
    assert shape is not None
    pk = PackedTorus(shape, "cpu")
    gen = torch.Generator().manual_seed(0)
    s = torch.as_tensor(np.random.default_rng(0).choice([-1.0, 1.0], 256))
    seen: list[float] = []
    best, E, sweeps = anneal_torus(pk, s, 0.6, 0.2, 400, gen, progress=seen.append, track_every=8)
    assert sweeps == 400
    b = best.numpy()
    assert E == pytest.approx(float(b @ (P.J @ b)))
    assert E < float(s.numpy() @ (P.J @ s.numpy())) and seen and seen == sorted(seen, reverse=True)
    assert seen[-1] == E
    same, E0, none = anneal_torus(pk, s, 0.6, 0.2, 400, gen, stop=lambda: True)
    assert none == 0 and torch.equal(same, s)


def test_specann_uses_the_lattice_on_a_torus_and_checks_its_answer() -> None:
    P = torus_problem(16, 16, seed=5)
    W_total = float(P.maxcut_weights.sum()) / 2
    for lattice, expect in (("on", "torus 16x16, bit-packed"), ("off", None), ("auto", None)):
        b = SpecAnn()
        r = b.solve(P, b.make_options({"lattice": lattice, "sweeps": 300, "rounds": 2}), RunContext(seed=0))
        assert r.info["lattice"] == expect
        t_end = b.Options().lattice_t_end if expect else b.Options().t_end  # the packed anneal ends colder
        assert r.info["t_end"] == pytest.approx(t_end * 1.0 / math.log(100.0))  # δ = 4 · 1/4
        assert r.checks["energy_recomputed"][0]
        assert -r.objective >= 0.95 * (W_total + 1.4015 * 256) / 2  # within 5 % of the ground-state estimate
    b = SpecAnn()  # auto: one chain per round (batch 1) is where the packed annealer takes over
    r = b.solve(P, b.make_options({"max_elems": 256, "sweeps": 300, "rounds": 2}), RunContext(seed=0))
    assert r.info["batch"] == 1 and r.info["lattice"] == "torus 16x16, bit-packed"


def test_specann_anneals_an_odd_torus_packed() -> None:
    P = torus_problem(15, 15, seed=6)
    b = SpecAnn()
    r = b.solve(P, b.make_options({"lattice": "on", "sweeps": 300, "rounds": 2}), RunContext(seed=0))
    assert r.info["lattice"] == "torus 15x15, bit-packed" and r.info["colors"] == 3
    assert r.checks["energy_recomputed"][0]
    assert -r.objective >= 0.95 * (float(P.maxcut_weights.sum()) / 2 + 1.4015 * 225) / 2


def test_lattice_option_errors() -> None:
    b = SpecAnn()
    not_torus = IsingProblem.from_maxcut(data.random_regular(40, 4, 1, "signed", None).W)
    with pytest.raises(OptionError, match="lattice = 'on' needs a ±J torus"):
        b.solve(not_torus, b.make_options({"lattice": "on", "sweeps": 10}), RunContext(seed=0))
    with pytest.raises(OptionError, match="lattice"):
        b.solve(torus_problem(6, 8), b.make_options({"lattice": "yes"}), RunContext(seed=0))
    for key in ("lattice_t_end", "t_end", "t_start"):
        with pytest.raises(OptionError, match=f"'{key}' of 'specann' must be > 0"):
            b.solve(torus_problem(6, 8), b.make_options({key: 0.0}), RunContext(seed=0))


def test_lattice_from_a_model_file() -> None:
    """A user reaches it from .opt: the torus generator, the solver block's option, Result.info."""
    m = optlang.parse(
        'graph T = torus(8, 10, weights = "signed", seed = 2)\nmaxcut T\n'
        'solver specann { lattice = "on", sweeps = 200, rounds = 2 }\n'
    )
    r = m.solve(seed=0)
    assert r.info["lattice"] == "torus 8x10, bit-packed"
    assert r.ok


def test_detection_fuzz_random_four_regular_graphs_and_perturbed_tori() -> None:
    """Random 4-regular ±1 graphs are never taken for tori; a torus with one edge rewired is not either,
    and every detected torus packs to the energy of its couplings."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.choice([16, 36, 64, 100]))
        W = data.random_regular(n, 4, int(rng.integers(1 << 30)), "signed", None).W
        assert detect_torus(IsingProblem.from_maxcut(W).J, np.zeros(n)) is None
    for _ in range(10):
        rows, cols = (int(x) for x in rng.choice([4, 6, 8, 10], size=2))
        W = sp.lil_matrix(data.torus(rows, cols, int(rng.integers(1 << 30)), "signed", None).W)
        P = IsingProblem.from_maxcut(sp.csr_matrix(W))
        shape = detect_torus(P.J, P.h)
        assert shape is not None
        s = rng.choice([-1.0, 1.0], rows * cols)
        pk = PackedTorus(shape, "cpu")
        assert pk.energy(pk.pack(torch.as_tensor(s))) == pytest.approx(float(s @ (P.J @ s)))
        a, b = 0, 1  # swap the edge 0–1 for 0–(cols + 1): degrees change, and so must the answer
        W[a, b] = W[b, a] = 0
        W[a, cols + 1] = W[cols + 1, a] = 1
        W = sp.csr_matrix(W)
        W.eliminate_zeros()
        assert detect_torus(IsingProblem.from_maxcut(W).J, np.zeros(rows * cols)) is None
