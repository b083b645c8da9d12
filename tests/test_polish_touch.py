"""The polish where the Pareto-critical set touches a box bound (polish.py): UF1's x_j = sin(6π x₀ + jπ/n)
reach ±1 every 1/180 of x₀. SLSQP held the touched bound as active and stopped at the touch point next to
its start; on an upper bound the critical set with that coordinate held is one point, so the stationarity
read 0 there (a false certificate of a point 0.11 off the preferred one in x₀). Now an upper bound's
breakpoint is measured like a lower one's, and a polish that ends on a touched bound, not stationary, runs
again with the box coordinates unbounded (kept when it ends inside the box and is more stationary)."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.backends.multiobjective.polish import polish

PI = "3.141592653589793"

ONE = f"""var x0 in [0, 1]
var x1 in [-1, 1]
let y = x1 - sin(6 * {PI} * x0)
minimize {{
  f1: x0 + y^2
  f2: 1 - sqrt(x0) + y^2
}}
prefer f1 + 1.6 * f2
"""

# UF1 with five distance variables: a coordinate touches a bound every 1/60 of x0
FIVE = f"""param j = [2, 3, 4, 5, 6]
var x0 in [0, 1]
var x[5] in [-1, 1]
let y = x - sin(6 * {PI} * x0 + j * {PI} / 6)
minimize {{
  f1: x0 + sum(y^2)
  f2: 1 - sqrt(x0) + sum(y^2)
}}
prefer f1 + 1.632 * f2
"""


@pytest.mark.parametrize("start", [0.76, 0.9, 0.55, 0.45])
def test_the_polish_passes_the_points_where_the_critical_set_touches_a_bound(start: float) -> None:
    # from 0.76 and 0.9 the polish stopped at x0 = 0.75 (x1 = sin(4.5π) = 1) with stationarity 0; from
    # 0.55 and 0.45 at 0.5833 (x1 = −1) with 0.04; the preferred point is x0 = (1.6 / 2)² = 0.64
    problem = optlang.parse(ONE).compiled.problem
    r = polish(problem, {"x0": np.array(start), "x1": np.array(np.sin(6 * np.pi * start))}, 200, 100)
    assert r is not None
    assert abs(float(r.values["x0"]) - 0.64) <= 1e-8
    assert r.stationarity <= 1e-7 and r.residual <= 1e-7


def test_uf1_with_five_distance_variables_polishes_to_its_preferred_point() -> None:
    problem = optlang.parse(FIVE).compiled.problem
    js = np.arange(2, 7)
    for start in (0.69, 0.62):
        x = np.sin(6 * np.pi * start + js * np.pi / 6)
        r = polish(problem, {"x0": np.array(start), "x": x}, 200, 100)
        assert r is not None
        assert abs(float(r.values["x0"]) - 0.816**2) <= 1e-8
        assert r.stationarity <= 1e-7


def test_the_solve_of_the_touching_model_is_exact_and_converged() -> None:
    res = optlang.parse(ONE).solve(seed=0)
    assert res.status.value == "converged"
    assert abs(float(res.values["x0"]) - 0.64) <= 1e-6
