"""The `slsqp` and `convex` backends: smooth models with general constraints, on answers derived
independently (closed-form KKT points, cvxpy on the convex ones, the published Hock–Schittkowski optimum).
Convex models are planned to `convex` when cvxpy is installed; these tests name `slsqp` where they test it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import optlang
from optlang.errors import PlanError

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_torch_thread")


HAS_CVXPY = importlib.util.find_spec("cvxpy") is not None


def solve(text: str, **kw) -> optlang.Result:
    return optlang.parse(text).solve(seed=kw.pop("seed", 0), backend=kw.pop("backend", "slsqp"), **kw)


def test_a_halfplane_quadratic_has_its_kkt_point() -> None:
    """min x² + y² s.t. x + y ≥ 1: KKT gives 2x = 2y = μ, x + y = 1, so (½, ½) and f = ½."""
    r = solve("var x\nvar y\nminimize x^2 + y^2\nsubject to { x + y >= 1 }\n")
    assert r.backend == "slsqp" and r.status.value == "converged"
    assert r.objective == pytest.approx(0.5, abs=1e-9)
    np.testing.assert_allclose([r.values["x"], r.values["y"]], [0.5, 0.5], atol=1e-7)
    assert all(c.passed for c in r.checks)


def test_hock_schittkowski_71_reaches_the_published_optimum() -> None:
    """HS71 (models/hs71.opt): f* = 17.0140173 at (1, 4.7429994, 3.8211503, 1.3794082) (Hock and
    Schittkowski, 1981). The restarts make every seed find it (seed 1's first start ends at 27.15)."""
    for seed in (0, 1):
        r = optlang.load(ROOT / "models" / "hs71.opt").solve(seed=seed)
        assert r.status.value == "converged"
        assert r.objective == pytest.approx(17.0140173, abs=1e-6)
        np.testing.assert_allclose(r.values["x"], [1.0, 4.7429994, 3.8211503, 1.3794082], atol=1e-5)


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
def test_a_target_return_portfolio_equals_cvxpy() -> None:
    """models/portfolio_target.opt is a convex QP: the simplex domain and a return constraint."""
    import cvxpy as cp

    m = optlang.load(ROOT / "models" / "portfolio_target.opt")
    r = m.solve(seed=0, backend="slsqp")
    F, mu = m.params["F"], m.params["mu"]
    w = cp.Variable(mu.size)
    obj = cp.sum_squares(F.T @ w) + 0.01 * cp.sum_squares(w)
    best = cp.Problem(cp.Minimize(obj), [w >= 0, cp.sum(w) == 1, mu @ w >= 0.06]).solve()
    assert r.status.value == "converged" and r.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    assert float(mu @ r.values["w"]) >= 0.06 - 1e-9 and abs(r.values["w"].sum() - 1) < 1e-9


def test_simplex_and_ball_domains_with_a_constraint() -> None:
    """Simplex: min ‖x − (½, 0.4, 0.1)‖² with x₀ ≤ 0.3 → x₀ = 0.3 and x₁ − 0.4 = x₂ − 0.1 on x₁ + x₂ = 0.7,
    so (0.3, 0.5, 0.2), f = 0.06. Ball: min −x₀ − x₁ on ‖x‖ ≤ 1 with x₀ ≤ ½ → (½, √¾)."""
    r = solve("var x[3] in simplex\nminimize sumsq(x - [0.5, 0.4, 0.1])\nsubject to { x[0] <= 0.3 }\n")
    assert r.status.value == "converged" and r.objective == pytest.approx(0.06, abs=1e-9)
    np.testing.assert_allclose(r.values["x"], [0.3, 0.5, 0.2], atol=1e-7)
    r = solve("var x[2] in ball(1)\nminimize -x[0] - x[1]\nsubject to { x[0] <= 0.5 }\n")
    assert r.status.value == "converged"
    np.testing.assert_allclose(r.values["x"], [0.5, np.sqrt(0.75)], atol=1e-7)


def test_no_feasible_point_is_an_error_that_claims_no_proof() -> None:
    r = solve("var x\nminimize x^2\nsubject to {\n  x >= 2\n  x <= 1\n}\n")
    assert r.status.value == "error" and not r.values
    assert "not a proof" in r.info["error"]


def test_a_nan_constraint_ends_diverged_at_a_finite_point() -> None:
    """sqrt(1 − x) is NaN past x = 1, where SLSQP's first step lands (f = −x pushes right)."""
    r = solve("var x\nminimize -x\nsubject to { sqrt(1 - x) >= 0 }\n")
    assert r.status.value in ("diverged", "converged")
    assert np.isfinite(r.values["x"]) and r.values["x"] <= 1.0
    if r.status.value == "converged":
        assert r.values["x"] == pytest.approx(1.0, abs=1e-6)


def test_a_huge_gradient_on_an_active_bound_does_not_hide_a_residual_elsewhere() -> None:
    """√x₀ has a gradient of ~10⁷ at its bound x₀ ≈ 0; SLSQP gave up there (\"inequality constraints
    incompatible\") with x₁ = 0.41, where the gradient in x₁ is −0.18, not 0. Measured against ‖∇f‖ the KKT
    residual was 7e-9 and the status `converged`; measured against ∇f off the active bounds it is 0.15, and
    the status says no more than `feasible` (or the run reaches the true minimum x₁ = ½)."""
    r = solve("var x[2] in [0, 1]\nminimize sqrt(x[0]) + (x[1] - 0.5)^2 + x[0]\nsubject to { x[0] + x[1] <= 2 }\n")
    x = np.asarray(r.values["x"])
    if r.status.value == "converged":
        assert x[0] == pytest.approx(0.0, abs=1e-9) and x[1] == pytest.approx(0.5, abs=1e-6)
    else:
        assert r.status.value == "feasible" and r.info["kkt_residual"] > 0.1


def test_the_time_limit_returns_what_was_found() -> None:
    r = solve("var x\nvar y\nminimize x^2 + y^2\nsubject to { x + y >= 1 }\n", time_limit=1e-9)
    assert r.status.value == "time_limit"


def test_options_reach_it_from_a_solver_block_and_it_refuses_what_gd_solves() -> None:
    text = "var x[4] in [1, 5]\nminimize x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]\nsubject to {\n"
    text += "  x[0] * x[1] * x[2] * x[3] >= 25\n  sumsq(x) == 40\n}\nsolver slsqp { restarts = 1 }\n"
    r = optlang.parse(text).solve(seed=1)  # one start: seed 1's ends at the other KKT point (not DCP: slsqp)
    assert r.backend == "slsqp"
    assert r.info["starts"] == 1 and r.objective == pytest.approx(27.1464282, abs=1e-5)
    with pytest.raises(optlang.OptlangError, match="must be"):
        optlang.parse(text.replace("restarts = 1", "restarts = 0")).solve()
    with pytest.raises(PlanError, match="gd solves the others"):
        optlang.parse("var x\nminimize x^2\nsolver slsqp { }\n").plan()


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
def test_a_dcp_model_is_planned_to_convex_and_proven_optimal() -> None:
    """The half-plane QP and the target-return portfolio are DCP: `convex` answers them `optimal` (the
    conic solver's certificate) with the values slsqp's KKT points have; a maximize of a concave
    objective too (max log x + log y on x + 2y ≤ 4: x = 2, y = 1, value log 2)."""
    r = optlang.parse("var x\nvar y\nminimize x^2 + y^2\nsubject to { x + y >= 1 }\n").solve(seed=0)
    assert r.backend == "convex" and r.status.value == "optimal"
    assert r.objective == pytest.approx(0.5, abs=1e-8) and all(c.passed for c in r.checks)
    m = optlang.load(ROOT / "models" / "portfolio_target.opt")
    a, b = m.solve(seed=0), m.solve(seed=0, backend="slsqp")
    assert a.backend == "convex" and a.status.value == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-7)
    r = optlang.parse("var x >= 0\nvar y >= 0\nmaximize log(x) + log(y)\nsubject to { x + 2 * y <= 4 }\n").solve()
    assert r.backend == "convex" and r.objective == pytest.approx(np.log(2.0), abs=1e-8)
    # the certificate bounds the objective's gap (1e-10); the point is known to about its square root
    np.testing.assert_allclose([r.values["x"], r.values["y"]], [2.0, 1.0], atol=1e-4)


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
def test_convex_proves_infeasibility_and_refuses_what_is_not_dcp() -> None:
    r = optlang.parse("var x\nminimize x^2\nsubject to {\n  x >= 2\n  x <= 1\n}\n").solve()
    assert r.backend == "convex" and r.status.value == "infeasible"
    hs71 = optlang.load(ROOT / "models" / "hs71.opt")
    assert not hs71.form.dcp and hs71.plan().chosen == "slsqp"
    with pytest.raises(PlanError, match="not a disciplined convex program"):
        hs71.plan("convex")
    concave = optlang.parse("var x >= 0\nvar y >= 0\nmaximize x * y\nsubject to { x + y <= 2 }\n")
    assert not concave.form.dcp and concave.plan().chosen == "slsqp"
