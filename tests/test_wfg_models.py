"""benchmarks/mo_wfg.py's WFG models: each agrees with pymoo's WFG at random points (the battery scores
against analytic fronts, so a wrong transcription would score a different problem)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import optlang
from optlang.ir.evaluate import evaluate_np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import mo_wfg  # noqa: E402


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("p", range(1, 10))
def test_wfg_model_matches_pymoo(p: int, m: int) -> None:
    problems = pytest.importorskip("pymoo.problems")
    P = problems.get_problem(f"wfg{p}", n_var=mo_wfg.N, n_obj=m, k=mo_wfg.K)
    model = optlang.parse(mo_wfg.model(p, m))
    X = np.random.default_rng(p).random((20, mo_wfg.N)) * P.xu
    ours = np.array([[evaluate_np(e, {"x": x}) for _, e in model.ir.objective.entries] for x in X])
    np.testing.assert_allclose(ours, P.evaluate(X), atol=1e-7)


def test_wfg_fronts_hold_the_corners() -> None:
    """The concave front reaches (2, 0) and (0, 4) and lies on the ellipse (f1/2)² + (f2/4)² = 1."""
    m = 2
    R = mo_wfg.front(4, m)
    assert np.isclose(R[:, 0].max(), 2.0) and np.isclose(R[:, -1].max(), 2.0 * m)
    assert np.allclose(((R / (2.0 * np.arange(1, m + 1))) ** 2).sum(1), 1.0)
