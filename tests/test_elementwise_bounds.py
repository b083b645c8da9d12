"""Per-element box bounds (`var x[3] in [0, u]` with a param vector u): lowered to arrays, solved on a unit
box by the smooth and multi-objective wings, reported and checked in the user's variables."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.backends.multiobjective.batched import cannot_batch
from optlang.errors import ModelError

U = "param u = [2, 4, 6]\n"


def test_per_element_bounds_lower_to_arrays_and_equal_ones_to_a_scalar() -> None:
    m = optlang.parse(U + "var x[3] in [0, u]\nvar y[2] in [[1, 1], 3]\nminimize sumsq(x) + sumsq(y)")
    x, y = m.ir.variables["x"].domain, m.ir.variables["y"].domain
    assert x.elementwise and np.array_equal(x.upper, [2, 4, 6]) and x.lower == 0 and (x.lo, x.hi) == (0, 6)
    assert not y.elementwise and (y.lo, y.hi) == (1.0, 3.0)
    assert m.variables["x"].domain == "in [0, [2, 4, 6]]"
    assert "x" in m.latex()


def test_a_smooth_model_stays_in_each_elements_box() -> None:
    r = optlang.parse(U + "var x[3] in [0, u]\nminimize sumsq(x - 3)").solve(seed=0)
    assert r.status.value == "converged"
    np.testing.assert_allclose(r.values["x"], [2, 3, 3], atol=1e-5)
    assert all(c.passed for c in r.checks)


@pytest.mark.parametrize(
    ("domain", "expected"),
    [(">= [1, -5]", [1, 0]), ("<= [-1, 5]", [-1, 0])],
)
def test_one_sided_per_element_bounds(domain: str, expected: list[float]) -> None:
    r = optlang.parse(f"var x[2] {domain}\nminimize sumsq(x)").solve(seed=0)
    np.testing.assert_allclose(r.values["x"], expected, atol=1e-5)
    assert all(c.passed for c in r.checks)


def test_a_domain_check_catches_a_point_outside_its_element_box() -> None:
    d = optlang.parse(U + "var x[3] in [0, u]\nminimize sumsq(x)").ir.variables["x"].domain
    assert d.contains(np.array([2.0, 4.0, 6.0]))
    assert not d.contains(np.array([2.5, 0.0, 0.0]))  # inside the widest box, outside its own
    np.testing.assert_array_equal(d.project_np(np.array([3.0, -1.0, 7.0])), [2, 0, 6])


FRONT = """param u = [1, 3]
var x[2] in [0, u]
minimize {
  f1: x[0]^2 + abs(x[1] - 2)
  f2: (x[0] - 1)^2 + abs(x[1] - 2)
}
"""


def test_a_front_is_reported_in_the_users_variables_with_kinks_in_place() -> None:
    r = optlang.parse(FRONT).solve(seed=0)
    assert r.status.value == "converged"
    X = np.array([p["values"]["x"] for p in r.info["front"]])
    F = np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in r.info["front"]])
    assert len(X) > 20
    assert np.all(X >= -1e-9) and np.all(X[:, 0] <= 1 + 1e-9) and np.all(X[:, 1] <= 3 + 1e-9)
    # the Pareto set is x0 in [0, 1], x1 = 2 (the kink of |x1 - 2|, at z = 2/3 of its unit box)
    assert np.median(np.abs(X[:, 1] - 2)) < 1e-6
    again = np.stack([X[:, 0] ** 2 + np.abs(X[:, 1] - 2), (X[:, 0] - 1) ** 2 + np.abs(X[:, 1] - 2)], 1)
    np.testing.assert_allclose(F, again, atol=1e-4)


def test_a_preference_is_solved_and_reported_in_the_users_variables() -> None:
    text = FRONT.replace("abs(x[1] - 2)", "(x[1] - 2)^2") + "prefer f1 + 3 * f2\n"
    r = optlang.parse(text).solve(seed=0)
    assert r.status.value == "converged"
    np.testing.assert_allclose(r.values["x"], [0.75, 2.0], atol=1e-4)
    assert "per-element" in (cannot_batch([optlang.parse(text)], None) or "")


def test_a_minimax_model_with_per_element_bounds() -> None:
    text = "param u = [2, 4]\nvar x[2] in [0, u]\nvar y in [0, 1]\nminimize max over y: sumsq(x - 3) * y - 0.1 * y^2\n"
    r = optlang.parse(text).solve(seed=0)
    assert r.status.value == "converged" and all(c.passed for c in r.checks)
    np.testing.assert_allclose(r.values["x"], [2, 3], atol=1e-4)
    assert r.values["y"] == pytest.approx(1.0)


def test_a_simple_bilevel_model_with_per_element_bounds() -> None:
    """Least norm among the minimizers of (x0 + x1 − 2)² in the box [-1, (3, 4, 5)]: (1, 1, 0)."""
    text = (
        "param u = [3, 4, 5]\nvar x[3] in [-1, u]\nminimize 0.5 * sumsq(x)\n"
        "subject to { x in argmin 0.5 * (x[0] + x[1] - 2)^2 }\n"
    )
    r = optlang.parse(text).solve(seed=0)
    assert r.status.value == "converged" and all(c.passed for c in r.checks)
    np.testing.assert_allclose(r.values["x"], [1, 1, 0], atol=1e-3)


def test_per_element_bounds_are_refused_where_no_wing_maps_them() -> None:
    """DRO: the robust objective's linear-residual structure is read from the model as written."""
    text = (
        "param X = randn(20, 3, seed = 1)\nparam yv = randn(20, seed = 2)\nparam u = [1, 2, 3]\n"
        "var w[3] in [0, u]\nminimize robust mean((X @ w - yv)^2) within chi2(radius = 0.1)\n"
    )
    with pytest.raises(ModelError) as e:
        optlang.parse(text)
    assert e.value.code == "E516" and e.value.span.line == 4


@pytest.mark.parametrize("backend", ["convex", "slsqp"])
def test_general_constraints_with_per_element_bounds(backend: str) -> None:
    if backend == "convex":
        pytest.importorskip("cvxpy")
    text = "param u = [1, 4, 6]\nvar x[3] in [0, u]\nminimize sumsq(x - 3)\nsubject to {\n  sum(x) <= 5\n}\n"
    r = optlang.parse(text).solve(backend=backend, seed=0)
    np.testing.assert_allclose(r.values["x"], [1, 2, 2], atol=1e-5)
    assert all(c.passed for c in r.checks)


@pytest.mark.parametrize("seed", range(5))
def test_the_unit_box_map_is_exact_and_inside_every_elements_box(seed: int) -> None:
    """Random per-element boxes (some elements fixed, lo = hi): a backend point z in the unit box maps
    into each element's box, and the compiled objective at z equals the model's own at that x."""
    from optlang.ir.evaluate import evaluate_np

    rng = np.random.default_rng(seed)
    lo = rng.uniform(-5, 5, 4).round(3)
    hi = lo + rng.choice([0.0, 0.5, 3.0], 4)
    text = (
        f"param lo = [{', '.join(map(str, lo))}]\nparam hi = [{', '.join(map(str, hi))}]\n"
        "var x[4] in [lo, hi]\nminimize sum(sin(x) * x) + abs(x[0] - 1)\n"
    )
    m = optlang.parse(text)
    compiled = m.compiled
    assert compiled.rescaled == (not np.all(lo == lo[0]) or not np.all(hi == hi[0]))
    f = compiled.problem.objective  # type: ignore[union-attr]
    for _ in range(5):
        z = rng.uniform(0, 1, 4)
        x = compiled.to_user({"x": z})["x"]
        assert np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
        want = float(evaluate_np(m.ir.objective.expr, {"x": x}))
        assert float(f.value({"x": z})) == pytest.approx(want, rel=1e-12, abs=1e-12)
