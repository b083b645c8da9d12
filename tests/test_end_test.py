"""The two-objective end test (end_test.py): a kink or degenerate minimum of one objective at the end of
the Pareto set, where the polish cannot certify the preferred point."""

from __future__ import annotations

import numpy as np

import optlang
from optlang.backends.multiobjective.end_test import certify_end, end_applies

KINK = """var x[2] in [-3, 3]
minimize {
  f1: norm2(x - [-0.51, 1.74])
  f2: sumsq(x - [-1.69, 1.02])
}
prefer sumsq(x - [%s])
"""
A = np.array([-0.51, 1.74])  # f1's kink: one end of the Pareto set (the segment to [-1.69, 1.02])


def _problem(target: str) -> optlang.Model:
    return optlang.parse(KINK % target)


def test_a_kink_at_the_preferred_end_is_certified_converged() -> None:
    """φ = ‖x − (1.01, −0.42)‖² is least over the segment at its end a, the kink of f1 = ‖x − a‖: the loop
    lands on a but the polish has no smooth system there (before: `iteration_limit`, 5 s); the end test
    certifies it."""
    res = _problem("1.01, -0.42").solve(seed=15)
    x = np.asarray(res.values["x"], dtype=np.float64)
    assert res.status.value == "converged" and np.linalg.norm(x - A) < 1e-8
    assert res.info["returned"].startswith("certified by the end test")
    assert "an end of the Pareto set: f1 at a sampled local minimum" in res.info["certificate"]
    assert all(c.passed for c in res.checks)


def test_the_end_test_refuses_an_end_where_phi_falls_along_the_front() -> None:
    """The same end a, with a target at the segment's midpoint: φ falls along the front from a."""
    model = _problem("-1.10, 1.38")
    problem = model.compiled.problem
    assert end_applies(problem, 200)
    c = certify_end(problem, {"x": A.copy()})
    assert c is not None and not c.passed and "lowers φ" in c.detail
    assert certify_end(problem, {"x": np.array([-1.1, 1.38])}) is None  # mid-segment: not an end


def test_a_degenerate_end_is_certified() -> None:
    """f1 = (weighted squared distance)² has a degenerate minimum at its centre, the preferred end."""
    src = (
        "var x[2] in [-3, 3]\nminimize {\n  f1: (sum([1.22, 2.60] * (x - [0.26, 0.64])^2))^2\n"
        "  f2: log(1 + sum([0.37, 0.61] * (x - [-0.50, 1.28])^2))\n}\nprefer sumsq(x - [1.07, 0.05])\n"
    )
    res = optlang.parse(src).solve(seed=16)
    x = np.asarray(res.values["x"], dtype=np.float64)
    assert res.status.value == "converged" and np.linalg.norm(x - [0.26, 0.64]) < 1e-6
    assert res.info["returned"].startswith("certified by the end test")
