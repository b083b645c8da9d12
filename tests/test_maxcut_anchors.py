"""The benchmarks' optional Max-Cut anchors: simulated bifurcation (skipped when not installed) and the
torus ground-state reference of benchmarks/maxcut_scale.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from optlang.backends.ising.ops import brute_force_min
from optlang.problem import IsingProblem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def test_sb_anchor_returns_a_checked_state_or_skips():
    pytest.importorskip("simulated_bifurcation")
    from benchmarks import sb_anchor

    rng = np.random.default_rng(0)
    A = sp.triu(sp.random(14, 14, density=0.5, random_state=1, data_rvs=lambda k: rng.choice([-1.0, 1.0], k)), 1)
    p = IsingProblem(J=(A + A.T).tocsr(), h=rng.normal(size=14), constant=0.5)
    r = sb_anchor.solve(p, 1.0, seed=0)
    assert r is not None and np.all(np.abs(r["s"]) == 1)
    assert r["energy"] == pytest.approx(p.energy(r["s"]))
    assert r["energy"] >= brute_force_min(p)[0] - 1e-9
    assert sb_anchor.solve(p, 1.0, seed=0, max_dense_gb=1e-9) is None  # too large a dense copy: skipped


def test_torus_ground_state_cut():
    from benchmarks.maxcut_scale import E_INF_TORUS, ground_state_cut, torus

    W = torus(10_000, 0)
    n, total = W.shape[0], W.sum() / 2
    assert ground_state_cut(W) == pytest.approx((total - E_INF_TORUS * n) / 2)
    assert 0.69 * n < ground_state_cut(W) < 0.71 * n  # ±1 weights: W ≈ 0, cut ≈ 0.70 N
