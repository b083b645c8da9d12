"""The neighbours test (neighbours.py): a preferred point inside the Pareto set where φ has a kink (the
Chebyshev achievement of the reference-point method) is certified by its Pareto neighbours."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import optlang
from optlang.backends.multiobjective.end_test import certify_end
from optlang.backends.multiobjective.neighbours import certify_neighbours

CHEB = """var x[4] in [0, 1]
let g = 1 + 9 * mean(x[1:])
minimize {
  f1: x[0]
  f2: g * (1 - sqrt(x[0] / g))
}
prefer maximum(f1 - 0.2, f2 - 0.3)
"""


def _cheb_answer() -> float:
    """On ZDT1's front f2 = 1 − √f1 the two pieces meet where f1 − 0.2 = 1 − √f1 − 0.3."""
    return brentq(lambda t: (t - 0.2) - (1 - math.sqrt(t) - 0.3), 0.0, 1.0, xtol=1e-15)


def test_chebyshev_preference_is_certified_by_its_neighbours() -> None:
    res = optlang.parse(CHEB).solve(seed=0)
    assert res.status.value == "converged"
    assert "neighbours test" in res.info["returned"] and res.info["certificate"].startswith("inside the Pareto set")
    np.testing.assert_allclose(res.values["x"], [_cheb_answer(), 0, 0, 0], atol=1e-9)
    off = optlang.parse(CHEB).solve(seed=0, options={"neighbour_test": False})
    assert off.status.value != "converged"  # the polish alone cannot balance at the kink
    np.testing.assert_allclose(off.values["x"][0], _cheb_answer(), atol=1e-6)


def test_neighbours_refuse_a_point_beside_the_kink_and_a_dominated_one() -> None:
    problem = optlang.parse(CHEB).compiled.problem
    t = _cheb_answer()
    ok = certify_neighbours(problem, {"x": np.array([t, 0.0, 0.0, 0.0])})
    assert ok is not None and ok.passed
    beside = certify_neighbours(problem, {"x": np.array([t + 1e-5, 0.0, 0.0, 0.0])})
    assert beside is not None and not beside.passed and "lowers φ" in beside.detail
    dominated = certify_neighbours(problem, {"x": np.array([t, 0.0, 1e-3, 0.0])})
    assert dominated is not None and not dominated.passed and "dominates" in dominated.detail


def test_constrained_chebyshev_and_the_end_test_on_a_boundary() -> None:
    """CONSTR with a Chebyshev preference: the answer lies on y + 9x = 6, inside the Pareto set. The end
    test's feasible samples are a thin cone there (decreasing x needs y up by 9×) and once took the point
    for f1's minimum; SLSQP now says it is not, and the neighbours test certifies it."""
    src = (
        "var x in [0.1, 1]\nvar y in [0, 5]\nminimize {\n  f1: x\n  f2: (1 + y) / x\n}\n"
        "subject to {\n  y + 9 * x >= 6\n  -y + 9 * x >= 1\n}\nprefer maximum(f1 - 0.5, f2 - 2)\n"
    )
    x_star = (-10.5 + math.sqrt(10.5**2 + 28)) / 2  # x − 0.5 = 7/x − 11
    res = optlang.parse(src).solve(seed=0)
    assert res.status.value == "converged" and "neighbours test" in res.info["returned"]
    assert abs(float(res.values["x"]) - x_star) < 1e-8
    from optlang.backends.multiobjective import constrained_pref as cp

    problem = optlang.parse(src).compiled.problem
    model = cp.Flat64(problem, problem.preference, None)
    point = {"x": np.array(x_star), "y": np.array(6 - 9 * x_star)}
    end = certify_end(problem, point, 0, feasible=model.feasible_rows, constraints=model.slsqp_constraints())
    assert end is None  # not an end of the Pareto set: nothing to say


def test_a_dominated_point_in_a_thin_cone_is_refused_by_bensons_problem() -> None:
    """Three objectives around collinear centres: a point 0.15 off their segment is dominated only along
    a thin cone toward it, which none of the sampled steps hit; the neighbours test once certified it
    (φ 0.68 below the true optimum). Benson's problem finds the dominating point."""
    src = (
        "var x[3] in [-3, 3]\nminimize {\n  f1: log(1 + sumsq(x - [1.92, 0.52, 0.80]))\n"
        "  f2: (sumsq(x - [-0.20, 0.08, -1.88]))^2\n  f3: sumsq(x - [0.33, 0.19, -1.21])\n}\n"
        "prefer sumsq(x - [-1.72, -1.69, 1.67])\n"
    )
    problem = optlang.parse(src).compiled.problem
    off = {"x": np.array([1.1050935983657837, 0.290735125541687, -0.03187582641839981])}
    c = certify_neighbours(problem, off, seed=10)
    assert c is not None and not c.passed and "Benson" in c.detail


def test_a_neighbour_that_dominates_the_point_refutes_it(monkeypatch) -> None:
    """x* off the Pareto set, nearer a target in the dominated region than any Pareto point: its Pareto
    neighbours all have a higher φ, but they dominate it. With the sampled steps and Benson's problem
    silenced (on WFG7 both missed: 24 variables, kinks) the neighbours alone must refute it."""
    import optlang.backends.multiobjective.neighbours as nb
    import optlang.backends.multiobjective.pareto_local as pl

    src = (
        "var x[2] in [0, 1]\nminimize {\n  f1: x[0]^2 + x[1]^2\n  f2: (x[0] - 1)^2 + x[1]^2\n}\n"
        "prefer (f1 - 0.5)^2 + (f2 - 0.5)^2\n"
    )
    problem = optlang.parse(src).compiled.problem
    real_start = nb.sampled_start

    def no_steps(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real_start(*args, **kwargs)
        return (*out[:8], out[8][:0], out[9])

    monkeypatch.setattr(nb, "sampled_start", no_steps)
    monkeypatch.setattr(pl, "pareto_test", lambda model, z, seed: (True, 0.0, None))
    off = certify_neighbours(problem, {"x": np.array([0.5, 0.3])})  # F = (0.34, 0.34), φ 0.0512 < 0.125
    assert off is not None and not off.passed and "dominates the point" in off.detail
    on = certify_neighbours(problem, {"x": np.array([0.5, 0.0])})  # the answer
    assert on is not None and on.passed


def test_a_point_next_to_a_norms_centre_is_rounded_onto_it() -> None:
    """Lis's f1 = (x² + y²)^⅛ is 0.003 at |(x, y)| = 8e-11, and every step closer refutes such a point in
    Benson's problem: `snapped` tries the coordinates within 1e-6 of the width from 0 (or a bound) there,
    kept when no objective gets worse; a point that a rounding would make worse stays."""
    from optlang.backends.multiobjective.pareto_local import Flat64, snapped

    text = (
        "var x in [-5, 10]\nvar y in [-5, 10]\nminimize {\n  f1: (x^2 + y^2)^0.125\n"
        "  f2: ((x - 0.5)^2 + (y - 0.5)^2)^0.25\n}\nprefer (f1 + 0.36)^2 + (f2 + 0.15)^2\n"
    )
    problem = optlang.parse(text).compiled.problem
    model = Flat64(problem, problem.preference, None)
    near = np.array([-7.8e-11, -9.2e-12])
    assert np.array_equal(snapped(model, near), np.zeros(2))
    inside = np.array([0.3, 0.2])
    assert snapped(model, inside) is inside
    # rounding y = 1e-6 to 0 raises f2 ((x − ½)² + (y − ½)² grows): kept as it is
    worse = np.array([0.5, 1e-6])
    assert snapped(model, worse) is worse


def test_a_sampled_test_runs_once_per_point(monkeypatch) -> None:
    """The polish often hands its start back unchanged, and the end and neighbours tests are deterministic:
    each runs once per point of a solve (DTLZ2 with three objectives and a weighted sum whose loop ends at
    a corner: the neighbours test ran twice on each of ten points, 20 of 39 s). The answer is the corner
    of least weight, f2's."""
    import optlang.backends.multiobjective.paretom3 as pm

    seen: dict[str, list[bytes]] = {"end": [], "neighbours": []}

    def counting(name: str, fn):
        def wrapped(problem, values, *a, **k):
            seen[name].append(b"".join(np.asarray(values[n], dtype=np.float64).tobytes() for n in sorted(values)))
            return fn(problem, values, *a, **k)

        return wrapped

    monkeypatch.setattr(pm, "certify_end", counting("end", pm.certify_end))
    monkeypatch.setattr(pm, "certify_neighbours", counting("neighbours", pm.certify_neighbours))
    pi = "3.141592653589793"
    text = (
        f"var x[3] in [0, 1]\nlet g = sumsq(x[2:] - 0.5)\nminimize {{\n"
        f"  f1: (1 + g) * cos({pi} / 2 * x[0]) * cos({pi} / 2 * x[1])\n"
        f"  f2: (1 + g) * cos({pi} / 2 * x[0]) * sin({pi} / 2 * x[1])\n  f3: (1 + g) * sin({pi} / 2 * x[0])\n}}\n"
        "prefer 1.0 * f1 + 0.7 * f2 + 1.3 * f3\n"
    )
    res = optlang.parse(text).solve(seed=0)
    assert res.objective == pytest.approx(0.7, abs=1e-9)
    for name, keys in seen.items():
        assert len(keys) == len(set(keys)), name
