"""Every shipped model is checked, planned and solved (small budgets), with the known answers
where they are known: enumeration, pinv, closed-form saddles, cvxpy, the 1-D Pareto optimum."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import optlang

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
BUDGET = {"maxcut_g1.opt": 5.0}


def _load(name: str, **kw) -> optlang.Model:
    return optlang.load(MODELS / name, **kw)


def _enumerate_min(m: optlang.Model) -> float:
    p = m.compiled.problem
    n = p.n
    S = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    return float(m.compiled.sign * p.energy(S).min()) if m.compiled.sign > 0 else float(-p.energy(S).min())


@pytest.mark.parametrize("path", sorted(MODELS.glob("*.opt")), ids=lambda p: p.name)
def test_model_checks_plans_and_solves(path: Path) -> None:
    m = _load(path.name)
    plan = m.plan()
    assert plan.chosen
    r = m.solve(time_limit=BUDGET.get(path.name, 8.0), seed=0)
    assert r.status.has_solution, r.summary()
    assert r.objective is not None or m.kind == "multiobjective"
    failed = [c for c in r.checks if not c.passed and c.name not in ("kkt", "lower_stationary", "stationarity")]
    assert not failed, failed
    again = optlang.Result.from_json(r.to_json())
    assert again.to_dict() == r.to_dict()


def test_smooth_box_optimum_on_the_boundary() -> None:
    r = _load("smooth_box.opt").solve(seed=0)
    np.testing.assert_allclose(r.values["x"], [0.5, 0.25], atol=1e-4)
    assert r.objective == pytest.approx(0.25, abs=1e-6)


@pytest.mark.parametrize("name", ["sk_glass.opt", "qubo_small.opt"])
def test_small_ising_models_equal_enumeration(name: str) -> None:
    m = _load(name)
    r = m.solve(time_limit=5, seed=0)
    best = _enumerate_min(m)
    assert r.objective == pytest.approx(best, abs=1e-9)


def test_ising_ring_ground_state() -> None:
    r = _load("ising_ring.opt").solve(time_limit=5, seed=0)
    assert r.objective == pytest.approx(-99.1, abs=1e-9)


def test_petersen_max_cut_is_12() -> None:
    r = _load("maxcut_petersen.opt").solve(time_limit=3, seed=0)
    assert r.objective == pytest.approx(12.0)


def test_minnorm_matches_pinv() -> None:
    m = _load("minnorm.opt", params={})
    r = m.solve(time_limit=30, seed=0)
    A, b = m.ir.params["A"], m.ir.params["b"]
    x_star = np.linalg.pinv(A) @ b
    rel = np.linalg.norm(r.values["x"] - x_star) / np.linalg.norm(x_star)
    assert rel < 1e-2, rel


def test_quadratic_game_closed_form_saddle() -> None:
    m = _load("quadratic_game.opt")
    r = m.solve(time_limit=20, seed=0)
    B, a, c = (m.ir.params[k] for k in ("B", "a", "c"))
    x = np.linalg.solve(np.eye(10) + B @ B.T / 2, -a - B @ c / 2)
    y = (B.T @ x + c) / 2
    assert np.linalg.norm(r.values["x"] - x) / np.linalg.norm(x) < 1e-3
    assert np.linalg.norm(r.values["y"] - y) / np.linalg.norm(y) < 1e-3


def test_chi2_dro_matches_cvxpy() -> None:
    m = _load("chi2_regression.opt")
    exact = m.solve(backend="dro-cvxpy", seed=0)
    ours = m.solve(time_limit=20, seed=0)
    assert ours.objective == pytest.approx(exact.objective, rel=1e-4)


def test_zdt1_preference_matches_the_1d_optimum() -> None:
    m = _load("zdt1_pref.opt")
    r = m.solve(time_limit=20, seed=0)
    best = minimize_scalar(
        lambda f1: (f1 - 0.3) ** 2 + (1 - np.sqrt(f1) - 0.3) ** 2,
        bounds=(0, 1),
        method="bounded",
        options={"xatol": 1e-12},
    ).fun
    assert r.objective == pytest.approx(best, abs=1e-3)


def test_constr_preference_matches_the_1d_optimum() -> None:
    """The preferred point under general constraints: on CONSTR's first part, f2 = 7/x − 9."""
    r = _load("constr_pref.opt").solve(seed=0)
    best = minimize_scalar(
        lambda x: (x - 0.5) ** 2 + (7 / x - 11) ** 2, bounds=(7 / 18, 2 / 3), method="bounded", options={"xatol": 1e-13}
    )
    assert r.status.value == "converged"
    assert float(r.values["x"]) == pytest.approx(best.x, abs=1e-7)
    assert r.objective == pytest.approx(best.fun, abs=1e-10)


def test_portfolio_matches_cvxpy() -> None:
    import cvxpy as cp

    m = _load("portfolio.opt")
    F, mu = m.ir.params["F"], m.ir.params["mu"]
    w = cp.Variable(12)
    prob = cp.Problem(
        cp.Minimize(cp.sum_squares(F.T @ w) + 0.01 * cp.sum_squares(w) - mu @ w), [w >= 0, cp.sum(w) == 1]
    )
    prob.solve()
    r = m.solve(seed=0)
    assert r.objective == pytest.approx(prob.value, abs=1e-5)


def test_portfolio_front_matches_the_efficient_frontier() -> None:
    """models/portfolio_front.opt: the mean–variance front on the simplex against cvxpy (risk − λ μᵀw at 400
    trade-offs λ, log-spaced: the problem is convex, so they trace the whole efficient frontier, and the
    highest-return vertex). Both ends are reached — that vertex (loss −max μ), which no ray aims at, and the
    least variance — and the front covers 0.99 of the exact hypervolume (0.68 before the rays' Adam steps
    were scaled per instance on the simplex and the ends solved)."""
    cp = pytest.importorskip("cvxpy")
    from optlang.backends.multiobjective.metrics import hypervolume, nondominated

    m = _load("portfolio_front.opt")
    F, mu = m.ir.params["F"], m.ir.params["mu"]
    r = m.solve(seed=0)
    assert r.status.value == "converged"
    P = np.array([[p["objectives"]["risk"], p["objectives"]["loss"]] for p in r.info["front"]])
    w, lam = cp.Variable(12), cp.Parameter(nonneg=True)
    risk = cp.sum_squares(F.T @ w) + 0.01 * cp.sum_squares(w)
    prob = cp.Problem(cp.Minimize(risk - lam * (mu @ w)), [w >= 0, cp.sum(w) == 1])
    top = np.eye(12)[int(np.argmax(mu))]
    E = [[float(np.sum((F.T @ top) ** 2) + 0.01), -float(mu.max())]]
    for value in np.r_[0.0, np.logspace(-3, 4, 399)]:
        lam.value = value
        prob.solve()
        x = np.clip(w.value, 0, None) / np.clip(w.value, 0, None).sum()
        E.append([float(np.sum((F.T @ x) ** 2) + 0.01 * np.sum(x**2)), -float(mu @ x)])
    E = nondominated(np.array(E))
    lo, hi = E.min(0), E.max(0)
    ref = hi + 0.1 * (hi - lo)
    assert hypervolume(P[np.all(P < ref, 1)], ref) > 0.99 * hypervolume(E, ref)
    assert P[:, 1].min() == pytest.approx(-mu.max(), abs=1e-6)
    assert P[:, 0].min() == pytest.approx(E[:, 0].min(), abs=1e-4 * (hi[0] - lo[0]))


def test_box_projection_is_accurate_to_float64() -> None:
    r = optlang.parse("var x[3] in [0, 1]\nminimize sumsq(x - [2, -1, 0.5])\n").solve(seed=0)
    np.testing.assert_allclose(r.values["x"], [1.0, 0.0, 0.5], atol=1e-6)
    assert r.status.value == "converged"


def test_zdt4_front_reaches_the_global_front() -> None:
    """models/zdt4_front.opt (30 000 evaluations set in its solver block): the rays' front is a local
    one and the population beats it; the returned front's hypervolume, re-derived against the analytic
    front f2 = 1 − √f1 (reference 1.1, 1.1), is within 2 % of the exact one (measured 0.997)."""
    from optlang.backends.multiobjective.metrics import hypervolume

    r = _load("zdt4_front.opt").solve(seed=0)
    assert r.status.value == "converged"
    assert r.info["local_front"] and r.info["evaluations"] <= 30000
    F = np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in r.info["front"]])
    t = np.linspace(0.0, 1.0, 20001)
    ref = np.array([1.1, 1.1])
    exact = hypervolume(np.stack([t, 1 - np.sqrt(t)], 1), ref)
    assert hypervolume(F[np.all(F < ref, axis=1)], ref) / exact > 0.98


def test_zdt2_front_converges_on_the_whole_concave_front() -> None:
    """models/zdt2_front.opt with defaults ends `converged` (it ended `iteration_limit`: the finishing steps
    moved 19 solutions near the ends of the concave front onto the ends themselves, a worse achievement on
    their own rays, and the mesh had holes again when the budget was spent). Every point re-derived from its
    x; the hypervolume against the analytic front f2 = 1 − f1² (reference (1.1, 1.1)) is within 1 %."""
    from optlang.backends.multiobjective.metrics import hypervolume

    r = _load("zdt2_front.opt").solve(seed=0)
    assert r.status.value == "converged", r.info.get("stopped")
    F = np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in r.info["front"]])
    X = np.array([p["values"]["x"] for p in r.info["front"]])
    g = 1 + 9 * X[:, 1:].mean(1)
    np.testing.assert_allclose(np.stack([X[:, 0], g * (1 - (X[:, 0] / g) ** 2)], 1), F, atol=1e-5)
    t = np.linspace(0.0, 1.0, 20001)
    ref = np.array([1.1, 1.1])
    exact = hypervolume(np.stack([t, 1 - t**2], 1), ref)
    assert hypervolume(F[np.all(F < ref, axis=1)], ref) / exact > 0.99


def test_kursawe_front_lands_on_its_cusps() -> None:
    """models/kursawe_front.opt: the isolated end of the front is (−20, 0) at x = 0, a cusp of every
    |x_i|^0.8; front mode tries the kinks, so it is returned exactly. Every returned point re-derived
    from its x; the hypervolume beats that of a 101³ grid's non-dominated points (measured 1.027)."""
    from optlang.backends.multiobjective.metrics import hypervolume, nondominated

    def kursawe(X: np.ndarray) -> np.ndarray:
        f1 = sum(-10 * np.exp(-0.2 * np.sqrt(X[:, i] ** 2 + X[:, i + 1] ** 2)) for i in range(2))
        return np.stack([f1, (np.abs(X) ** 0.8 + 5 * np.sin(X**3)).sum(1)], 1)

    r = _load("kursawe_front.opt").solve(seed=0)
    assert r.status.value == "converged"
    F = np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in r.info["front"]])
    X = np.array([p["values"]["x"] for p in r.info["front"]])
    np.testing.assert_allclose(kursawe(X), F, atol=1e-4)
    end = np.argmin(F[:, 0])
    assert F[end, 0] == pytest.approx(-20.0, abs=1e-9) and F[end, 1] == pytest.approx(0.0, abs=1e-9)
    ax = np.linspace(-5.0, 5.0, 101)
    R = nondominated(kursawe(np.stack(np.meshgrid(ax, ax, ax, indexing="ij"), -1).reshape(-1, 3)))
    ref = R.max(0) + 0.1 * (R.max(0) - R.min(0))
    assert hypervolume(F[np.all(F < ref, axis=1)], ref) / hypervolume(R, ref) > 1.0


def test_wfg7_front_with_per_element_bounds() -> None:
    """models/wfg7_front.opt declares x_i in [0, 2i] as WFG does. Every front point lies in its own
    element's box, its objectives re-derived from x by a separate numpy WFG7 match, and the hypervolume
    against the exact quarter ellipse (reference (2.2, 4.4): 2.2·4.4 − 2π) is within 2 % (measured 0.992)."""
    import math

    from optlang.backends.multiobjective.metrics import hypervolume

    def wfg7(X: np.ndarray) -> np.ndarray:
        ub = 2.0 * np.arange(1, 25)
        y = X / ub
        a = 0.98 / 49.98
        u = np.stack([y[:, i + 1 :].mean(1) for i in range(4)], 1)
        expo = 0.02 + 49.98 * (a - (1 - 2 * u) * np.abs(np.floor(0.5 - u) + a))
        t = (y[:, :4] ** expo).mean(1)
        d = np.abs(y[:, 4:] - 0.35) / np.abs(np.floor(0.35 - y[:, 4:]) + 0.35)
        g = d.mean(1)
        return np.stack([g + 2 * np.sin(np.pi / 2 * t), g + 4 * np.cos(np.pi / 2 * t)], 1)

    r = _load("wfg7_front.opt").solve(seed=0)
    assert r.status.value == "converged"
    F = np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in r.info["front"]])
    X = np.array([p["values"]["x"] for p in r.info["front"]])
    assert np.all(X >= 0) and np.all(X <= 2.0 * np.arange(1, 25) + 1e-9) and X[:, 0].max() <= 2 + 1e-9
    np.testing.assert_allclose(wfg7(X), F, atol=1e-4)
    ref = np.array([2.2, 4.4])
    assert hypervolume(F[np.all(F < ref, axis=1)], ref) / (2.2 * 4.4 - 2 * math.pi) > 0.98
