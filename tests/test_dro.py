"""Tests of the DRO backends (tcdro, erm, dro-cvxpy), their shared mathematics and optlang.backends.dro.metrics.

Problems are built by hand from seeded numpy data; exact answers come from cvxpy solving the
primal worst case over the distribution Q (or the dual over λ for Wasserstein).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import torch

from benchmarks.dro_problems import (
    linear_dro_problem,
    mlp_dro_problem,
    mlp_predict,
    random_features,
    ridge_dro_problem,
)
from optlang.analysis import Form
from optlang.backends.base import RunContext, Status
from optlang.backends.dro import metrics
from optlang.backends.dro.common import (
    adaptive_chi2,
    chi2_dual,
    kl_dual,
    make_regions,
    robust_value,
    single_region,
    wasserstein_linear_value,
)
from optlang.backends.dro.dro_cvxpy import DROCvxpy
from optlang.backends.dro.erm import ERM
from optlang.backends.dro.tcdro import TCDRO
from optlang.errors import OptionError
from optlang.problem import Ambiguity, Domain, DROProblem, TorchFunction, Variable

RTOL = 1e-5


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny tensors: one intra-op thread avoids oversubscription on a shared, loaded machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def data(n: int = 120, p: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Linear features with a right-skewed target (rare large values)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + rng.exponential(2.0, n) ** 1.5
    return X, y


def ctx64(**kw) -> RunContext:
    return RunContext(seed=0, dtype="float64", **kw)


def solve(backend, problem, **opts):
    return backend.solve(problem, backend.make_options(opts), ctx64())


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


# ----------------------------------------------------------------------------- primal references
def chi2_primal(loss: np.ndarray, radius: float) -> float:
    n = loss.size
    q = cp.Variable(n, nonneg=True)
    cons = [cp.sum(q) == 1, 0.5 * cp.sum_squares(n * q - 1) / n <= radius]
    return cp.Problem(cp.Maximize(q @ loss), cons).solve(solver="CLARABEL")


def kl_primal(loss: np.ndarray, radius: float) -> float:
    n = loss.size
    q = cp.Variable(n, nonneg=True)
    cons = [cp.sum(q) == 1, cp.sum(cp.kl_div(q, np.full(n, 1.0 / n))) <= radius]
    return cp.Problem(cp.Maximize(q @ loss), cons).solve(solver="CLARABEL")


def adaptive_primal(loss: np.ndarray, labels: np.ndarray, radii: np.ndarray) -> float:
    n = loss.size
    L = cp.Variable(n, nonneg=True)
    cons = [cp.sum(L) / n == 1]
    for k, r in enumerate(radii):
        idx = np.nonzero(labels == k)[0]
        cons.append(0.5 * cp.sum_squares(L[idx] - 1) / idx.size <= r)
    return cp.Problem(cp.Maximize(L @ loss / n), cons).solve(solver="CLARABEL")


# ----------------------------------------------------------------------------- exact duals
@pytest.mark.parametrize("n,radius", [(40, 0.5), (40, 0.01), (10, 20.0), (25, 3.0), (7, 0.2)])
def test_chi2_dual_equals_primal_worst_case(n: int, radius: float) -> None:
    loss = np.random.default_rng(n).exponential(size=n)
    d = chi2_dual(loss, radius)
    assert rel(d.value, chi2_primal(loss, radius)) <= RTOL
    assert d.weights.min() >= 0 and abs(d.weights.sum() - 1) < 1e-12
    assert rel(float(d.weights @ loss), d.value) <= 1e-10  # the weights attain the dual value
    assert 0.5 * np.mean((n * d.weights - 1) ** 2) <= radius * (1 + 1e-9)


def test_chi2_small_radius_expansion() -> None:
    loss = np.random.default_rng(3).normal(size=200)  # no clipping at a small radius
    d = chi2_dual(loss, 0.005)
    assert rel(d.value, loss.mean() + np.sqrt(2 * 0.005 * loss.var())) < 1e-10


@pytest.mark.parametrize("n,radius", [(30, 0.1), (30, 1.0), (12, 5.0)])
def test_kl_dual_equals_primal_worst_case(n: int, radius: float) -> None:
    loss = np.random.default_rng(n + 1).exponential(size=n)
    d = kl_dual(loss, radius)
    assert rel(d.value, kl_primal(loss, radius)) <= RTOL
    assert rel(float(d.weights @ loss), d.value) <= 1e-8


@pytest.mark.parametrize("radius", [0.05, 0.5, 3.0])
def test_adaptive_dual_equals_primal(radius: float) -> None:
    rng = np.random.default_rng(7)
    loss, y = rng.exponential(size=80) ** 2, rng.exponential(size=80)
    reg = make_regions(y, 4, radius, scheme="uniform")
    rv = adaptive_chi2(loss, reg)
    assert rel(rv.value, adaptive_primal(loss, reg.labels, reg.radii)) <= RTOL
    assert rel(float(rv.sample_weights @ loss), rv.value) <= 1e-8


def test_one_region_equals_global_chi2_exactly() -> None:
    loss = np.random.default_rng(1).exponential(size=50)
    glob = chi2_dual(loss, 0.7).value
    for mix in ("adaptive", "empirical", "robust"):
        assert rel(robust_value(loss, single_region(50, 0.7), "chi2", mix, 0.7).value, glob) < 1e-10
    assert rel(adaptive_chi2(loss, single_region(50, 0.7)).value, glob) < 1e-10


# ----------------------------------------------------------------------------- backends vs cvxpy
def test_tcdro_chi2_matches_primal_and_cvxpy() -> None:
    X, y = data()
    prob = linear_dro_problem(X, y, Ambiguity("chi2", 0.5))
    sol = solve(TCDRO(), prob)
    assert sol.status in (Status.CONVERGED, Status.ITERATION_LIMIT)
    losses = prob.loss.value(sol.values)
    assert rel(sol.objective, chi2_primal(losses, 0.5)) <= RTOL  # dual value = primal worst case at w
    ref = solve(DROCvxpy(), prob)
    assert ref.status == Status.OPTIMAL and all(c[0] for c in ref.checks.values())
    assert rel(sol.objective, ref.objective) <= RTOL
    assert all(c[0] for c in sol.checks.values())
    assert sol.history  # progress was reported


def test_tc_empirical_per_region_primal_and_cvxpy() -> None:
    X, y = data(seed=1)
    prob = linear_dro_problem(X, y, Ambiguity("target_conditional", 0.2, bins=4))
    sol = solve(TCDRO(), prob, region_weights="empirical", regions="uniform")
    reg = make_regions(y, 4, 0.2, scheme="uniform")
    losses = prob.loss.value(sol.values)
    primal = sum(reg.masses[k] * chi2_primal(losses[reg.labels == k], reg.radii[k]) for k in range(reg.k))
    assert rel(sol.objective, primal) <= RTOL
    ref = solve(DROCvxpy(), prob, region_weights="empirical", regions="uniform")
    assert rel(sol.objective, ref.objective) <= RTOL


@pytest.mark.parametrize(
    "opts", [{}, {"region_weights": "adaptive"}, {"radius_rule": "density", "regions": "uniform", "outer_radius": 0.1}]
)
def test_tc_default_modes_match_cvxpy(opts: dict) -> None:
    X, y = data(seed=2)
    prob = linear_dro_problem(X, y, Ambiguity("target_conditional", 0.3, bins=5))
    sol, ref = solve(TCDRO(), prob, **opts), solve(DROCvxpy(), prob, **opts)
    assert rel(sol.objective, ref.objective) <= RTOL
    assert all(c[0] for c in sol.checks.values()) and all(c[0] for c in ref.checks.values())
    if opts.get("region_weights") == "adaptive":  # check the adaptive set's primal too
        reg = make_regions(y, 5, 0.3)
        assert rel(sol.objective, adaptive_primal(prob.loss.value(sol.values), reg.labels, reg.radii)) <= RTOL


def test_kl_global_and_conditional_match_cvxpy() -> None:
    X, y = data(seed=3)
    for amb in (Ambiguity("kl", 0.3), Ambiguity("target_conditional", 0.2, bins=3, base="kl")):
        prob = linear_dro_problem(X, y, amb)
        sol, ref = solve(TCDRO(), prob), solve(DROCvxpy(), prob)
        assert rel(sol.objective, ref.objective) <= RTOL
    prob = linear_dro_problem(X, y, Ambiguity("kl", 0.3))
    assert rel(sol.objective, sol.objective) == 0
    losses = prob.loss.value(solve(TCDRO(), prob).values)
    assert rel(kl_dual(losses, 0.3).value, kl_primal(losses, 0.3)) <= RTOL


def test_one_region_target_conditional_equals_global_chi2() -> None:
    X, y = data(seed=4)
    glob = solve(TCDRO(), linear_dro_problem(X, y, Ambiguity("chi2", 0.4)))
    for mix in ("adaptive", "empirical"):
        one = solve(TCDRO(), linear_dro_problem(X, y, Ambiguity("target_conditional", 0.4, bins=1)), region_weights=mix)
        assert rel(one.objective, glob.objective) <= 1e-7
        assert np.allclose(one.values["w"], glob.values["w"], atol=1e-4)


def test_radius_zero_equals_erm() -> None:
    X, y = data(seed=5)
    A = np.c_[X, np.ones(len(y))]
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    erm = solve(ERM(), linear_dro_problem(X, y, Ambiguity("chi2", 0.3)))
    assert np.allclose(erm.values["w"], coef[:-1], atol=1e-6)
    assert rel(erm.objective, float(np.mean((A @ coef - y) ** 2))) < 1e-9
    assert erm.info["robust_objective_at_solution"] > erm.objective  # the ambiguity is reported, not used
    for amb in (Ambiguity("chi2", 0.0), Ambiguity("target_conditional", 0.0, bins=5), Ambiguity("kl", 0.0)):
        sol = solve(TCDRO(), linear_dro_problem(X, y, amb))
        assert np.allclose(sol.values["w"], coef[:-1], atol=1e-6)
        assert rel(sol.objective, erm.objective) < 1e-9


def test_weights_grow_on_rare_regions() -> None:
    pattern = np.linspace(0.0, 3.0, 10)
    sizes = (200, 50, 10)
    loss = np.concatenate([np.tile(pattern, s // 10) for s in sizes])  # same loss pattern everywhere
    y = np.concatenate([np.full(s, float(k)) for k, s in enumerate(sizes)])
    reg = make_regions(y, 3, 0.1, edges=np.array([-0.5, 0.5, 1.5, 2.5]))
    assert list(reg.counts) == list(sizes)
    assert reg.radii[0] < reg.radii[1] < reg.radii[2]  # ρ_k = ρ₀ √(N / (K n_k))
    assert np.allclose(reg.radii, 0.1 * np.sqrt(260 / (3 * np.array(sizes))))
    for mix in ("adaptive", "empirical"):
        w = robust_value(loss, reg, "chi2", mix).sample_weights * loss.size
        top = [w[reg.labels == k].max() for k in range(3)]
        spread = [w[reg.labels == k].std() for k in range(3)]
        assert top[0] < top[1] < top[2] and spread[0] < spread[1] < spread[2]
    # On skewed data, the rare top region holds the largest per-sample weight and is inflated.
    X, yy = data(n=300, seed=6)
    sol = solve(TCDRO(), linear_dro_problem(X, yy, Ambiguity("target_conditional", 0.2, bins=6)), regions="uniform")
    rows = sol.info["regions"]
    assert rows[-1]["size"] < rows[0]["size"] and rows[-1]["radius"] > rows[0]["radius"]
    assert rows[-1]["weight"] > rows[-1]["size"] / 300  # the adversary inflates the rare tail region
    summ = sol.info["sample_weights"]
    assert summ["max"] > 1.5 and abs(summ["mean"] - 1.0) < 1e-9 and summ["effective_sample_size"] < 300


def test_wasserstein_closed_form_equals_cvxpy_dual() -> None:
    X, y = data(seed=8)
    rng = np.random.default_rng(8)
    w, b, r = rng.standard_normal(X.shape[1]), 0.3, 0.25
    res = X @ w + b - y
    a = float(w @ w)
    lam = cp.Variable()  # sup over W2 ≤ r of the mean square loss = min_λ λr² + mean(res²) λ/(λ − ‖w‖²)
    m2 = float(np.mean(res**2))
    dual = cp.Problem(cp.Minimize(lam * r**2 + m2 + a * m2 * cp.inv_pos(lam - a))).solve(solver="CLARABEL")
    assert rel(wasserstein_linear_value(res, np.sqrt(a), r, 2, "square"), dual) <= RTOL
    lam1 = cp.Variable()  # abs loss: min_{λ ≥ ‖w‖} λr + mean|res|
    dual1 = cp.Problem(cp.Minimize(lam1 * r + np.mean(np.abs(res))), [lam1 >= np.sqrt(a)]).solve(solver="CLARABEL")
    assert rel(wasserstein_linear_value(res, np.sqrt(a), r, 1, "abs"), dual1) <= RTOL


@pytest.mark.parametrize("loss", ["square", "abs"])
def test_wasserstein_tcdro_matches_cvxpy(loss: str) -> None:
    X, y = data(seed=9)
    prob = linear_dro_problem(X, y, Ambiguity("wasserstein", 0.3, p=2), loss=loss)
    sol, ref = solve(TCDRO(), prob), solve(DROCvxpy(), prob)
    assert rel(sol.objective, ref.objective) <= RTOL
    assert sol.checks["worst_case_attained"][0] and ref.checks["cvxpy_value"][0]
    erm = solve(ERM(), prob)
    assert np.linalg.norm(sol.values["w"]) < np.linalg.norm(erm.values["w"])  # the norm penalty shrinks w


def test_wasserstein_p1_square_is_degenerate() -> None:
    X, y = data(seed=10)
    sol = solve(TCDRO(), linear_dro_problem(X, y, Ambiguity("wasserstein", 0.1, p=1)))
    assert sol.status == Status.OPTIMAL and np.all(sol.values["w"] == 0)
    assert rel(float(sol.values["b"]), float(y.mean())) < 1e-12 and "inf" in sol.info["note"]


# ----------------------------------------------------------------------------- training modes
@pytest.mark.parametrize(
    "amb,dual",
    [
        (Ambiguity("target_conditional", 0.2, bins=4), "closed_form"),
        (Ambiguity("chi2", 0.3), "joint"),
        (Ambiguity("kl", 0.2), "closed_form"),
    ],
)
def test_minibatch_close_to_full_batch(amb: Ambiguity, dual: str) -> None:
    X, y = data(n=2000, p=5, seed=11)
    prob = linear_dro_problem(X, y, amb)
    full = solve(TCDRO(), prob)
    mb = TCDRO().solve(prob, TCDRO().make_options({"batch_size": 200, "lr": 0.05, "dual": dual}), ctx64(max_iter=600))
    assert mb.info["solver"] == "adam-minibatch"
    assert mb.objective >= full.objective * (1 - 1e-9)  # the full-batch optimum is a lower bound
    assert rel(mb.objective, full.objective) < 0.02


def test_float32_default_dtype() -> None:
    X, y = data(seed=12)
    prob = linear_dro_problem(X, y, Ambiguity("target_conditional", 0.2, bins=4))
    s32 = TCDRO().solve(prob, TCDRO().make_options({"polish_iter": 0}), RunContext(seed=0))
    s64 = solve(TCDRO(), prob)
    assert s32.info["solver"] == "lbfgs" and rel(s32.objective, s64.objective) < 1e-4
    # Badly scaled raw features: float32 L-BFGS stalls; the float64 polish recovers full precision.
    raw = linear_dro_problem(X * np.array([1.0, 300.0, 0.01, 50.0]), y, Ambiguity("target_conditional", 0.2, bins=4))
    pol = TCDRO().solve(raw, TCDRO().make_options({}), RunContext(seed=0))
    assert pol.info["solver"] == "lbfgs+float64-polish"
    assert rel(pol.objective, solve(DROCvxpy(), raw).objective) <= RTOL


def test_box_domain_is_honoured() -> None:
    X, y = data(seed=13)
    prob = linear_dro_problem(X, y, Ambiguity("chi2", 0.3), weight_domain=Domain("box", -0.2, 0.2))
    sol = TCDRO().solve(prob, TCDRO().make_options({"lr": 0.02}), ctx64(max_iter=3000))
    assert sol.info["solver"] == "adam" and np.all(np.abs(sol.values["w"]) <= 0.2 + 1e-12)
    ref = solve(DROCvxpy(), prob)
    assert rel(sol.objective, ref.objective) < 1e-3


def nonlinear_problem(amb: Ambiguity, nan: bool = False) -> DROProblem:
    rng = np.random.default_rng(14)
    X = rng.standard_normal((150, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + rng.exponential(0.5, 150)

    def build(device, dtype):
        Xt, yt = torch.as_tensor(X, device=device, dtype=dtype), torch.as_tensor(y, device=device, dtype=dtype)

        def fn(values, batch=None):
            A, t = (Xt, yt) if batch is None else (Xt[batch], yt[batch])
            out = (torch.tanh(A @ values["W"]) @ values["v"] - t) ** 2
            return out * float("nan") if nan else out

        return fn

    f = TorchFunction(build, n_samples=150, per_sample=True)
    return DROProblem((Variable("W", (3, 8)), Variable("v", (8,))), f, amb, 150, targets=y)


def test_nonlinear_loss_and_refusals() -> None:
    prob = nonlinear_problem(Ambiguity("target_conditional", 0.2, bins=5))
    sol = TCDRO().solve(prob, TCDRO().make_options({}), ctx64(max_iter=60))
    assert sol.status.has_solution and all(c[0] for c in sol.checks.values())
    assert sol.objective >= sol.info["mean_loss"]
    form = Form(kind="dro", ambiguity="target_conditional", n_samples=150, cvxpy_ok=False, matrix_vars=True)
    assert TCDRO().refuse(form) is None
    assert "cvxpy" in DROCvxpy().refuse(form)
    wform = Form(kind="dro", ambiguity="wasserstein", n_samples=150)
    assert "linear" in TCDRO().refuse(wform) and "linear" in DROCvxpy().refuse(wform)
    cform = Form(kind="dro", ambiguity="chi2", constraints=("sum(w) <= 1",), linear_residual=True)
    assert "constraints" in TCDRO().refuse(cform) and "constraints" in ERM().refuse(cform)
    assert "smooth" in TCDRO().refuse(Form(kind="smooth"))
    assert ERM.auto is False and TCDRO.priority < DROCvxpy.priority < ERM.priority


def test_divergence_and_limits() -> None:
    sol = solve(TCDRO(), nonlinear_problem(Ambiguity("chi2", 0.2), nan=True))
    assert sol.status == Status.DIVERGED and "W" in sol.values
    X, y = data(seed=15)
    prob = linear_dro_problem(X, y, Ambiguity("chi2", 0.2))
    few = TCDRO().solve(prob, TCDRO().make_options({}), ctx64(max_iter=2))
    assert few.status == Status.ITERATION_LIMIT and few.iterations == 2
    timed = TCDRO().solve(prob, TCDRO().make_options({}), ctx64(time_limit=0.0))
    assert timed.status == Status.TIME_LIMIT and np.isfinite(timed.objective)


def test_option_validation() -> None:
    X, y = data(seed=16)
    prob = linear_dro_problem(X, y, Ambiguity("target_conditional", 0.2, base="kl"))
    with pytest.raises(OptionError):
        TCDRO().solve(prob, TCDRO().make_options({"region_weights": "bogus"}), ctx64())
    with pytest.raises(OptionError):
        TCDRO().solve(prob, TCDRO().make_options({"region_weights": "adaptive"}), ctx64())
    with pytest.raises(OptionError):
        TCDRO().make_options({"radius_rul": "count"})


# ----------------------------------------------------------------------------- metrics
def test_metrics_hand_computed() -> None:
    y = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    p = np.array([1.0, 3.0, 3.0, 2.0, 6.0])
    assert metrics.mse(y, p) == pytest.approx((0 + 1 + 0 + 4 + 16) / 5)
    assert metrics.tail_mse(y, p, q=0.8) == pytest.approx(16.0)  # only y = 10 is ≥ Q_0.8 = 5.2
    assert metrics.tail_mse(y, p, q=0.5) == pytest.approx((0 + 4 + 16) / 3)
    phi = metrics.Relevance(((2.0, 0.0), (4.0, 1.0)))
    r = phi(y)
    assert list(r[[0, 1, 3, 4]]) == [0.0, 0.0, 1.0, 1.0] and 0.0 < r[2] < 1.0
    assert metrics.sera(y, p, phi) == pytest.approx(r[2] * 0 + 1.0 * 4 + 1.0 * 16)
    assert metrics.sera_trapezoid(y, p, phi, 0.001) == pytest.approx(metrics.sera(y, p, phi), rel=1e-3)
    rows = metrics.region_breakdown(y, p, [1.0, 3.0, 10.0])
    assert [row["n"] for row in rows] == [3, 2] and rows[1]["mse"] == pytest.approx(10.0)


def test_boxplot_relevance_control_points() -> None:
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 30.0])
    # Q1 = 3, median = 5, Q3 = 7, IQR = 4: fences −3 and 13; adjacent values 1 and 8; 30 is extreme.
    phi = metrics.boxplot_relevance(y)
    assert phi.points == ((1.0, 0.0), (5.0, 0.0), (8.0, 1.0))
    vals = phi(np.array([0.0, 5.0, 6.5, 8.0, 100.0]))
    assert vals[0] == 0 and vals[1] == 0 and 0 < vals[2] < 1 and vals[3] == 1 and vals[4] == 1
    assert np.all(np.diff(phi(np.linspace(5, 8, 50))) >= 0)  # monotone between control points
    e = np.random.default_rng(0).normal(size=y.size)
    assert metrics.sera(y, y + e) == pytest.approx(float(np.sum(phi(y) * e**2)))
    flat = metrics.boxplot_relevance(np.arange(10.0))  # no extremes: φ ≡ 0
    assert np.all(flat(np.arange(10.0)) == 0)


def test_rare_and_shot_breakdowns() -> None:
    ref = np.concatenate([np.zeros(90), np.linspace(5, 10, 10)])
    y = np.array([0.0, 7.0, 10.0])
    m = metrics.rare_mask(y, ref, frac=0.1, bins=10)
    assert list(m) == [False, True, True]
    shots = metrics.shot_breakdown(np.array([0.0, 9.0]), np.array([1.0, 7.0]), ref, bins=10, many=50, few=5)
    assert shots["many"] == pytest.approx(1.0) and shots["few"] == pytest.approx(4.0)
    rep = metrics.regression_report(y, y + 1.0, ref)
    assert rep["mse"] == pytest.approx(1.0) and rep["tail_mse"] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- nonlinear model builders
@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")  # Clarabel on the χ² SOCP; checked to 1e-5
def test_random_features_ridge_matches_cvxpy() -> None:
    """The random-features model is convex in (w, b): tcdro reaches dro-cvxpy's optimum, and the
    constant decay term is carried once into the robust objective."""
    X, y = data(n=100, seed=20)
    F = random_features(X, 12, seed=3)
    assert np.array_equal(F, random_features(X, 12, seed=3)) and F.shape == (100, 12)
    for amb, opts in ((Ambiguity("target_conditional", 0.3, bins=4), {}), (Ambiguity("chi2", 0.4), {})):
        prob = ridge_dro_problem(F, y, amb, weight_decay=0.05)
        sol, ref = solve(TCDRO(), prob, **opts), solve(DROCvxpy(), prob, **opts)
        assert all(c[0] for c in sol.checks.values()) and all(c[0] for c in ref.checks.values())
        assert rel(sol.objective, ref.objective) <= RTOL
        losses = prob.loss.value(sol.values)
        decay = 0.05 * float(np.sum(sol.values["w"] ** 2))
        data_loss = (F @ sol.values["w"] + sol.values["b"] - y) ** 2
        assert np.allclose(losses, data_loss + decay, rtol=1e-12)
        if amb.kind == "chi2":
            assert rel(sol.objective, chi2_primal(data_loss, 0.4) + decay) <= RTOL
    with pytest.raises(ValueError):
        ridge_dro_problem(F, y, Ambiguity("chi2", 0.1), weight_decay=-1.0)
    wass = solve(TCDRO(), ridge_dro_problem(F, y, Ambiguity("wasserstein", 0.1, p=2)))
    assert wass.status == Status.ERROR and "linear" in wass.info["error"]  # no closed form with decay


def skewed(n: int = 240, seed: int = 21) -> tuple[np.ndarray, np.ndarray]:
    """Standardized features and a standardized, right-skewed nonlinear target."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.exp(0.9 * X[:, 0] + 0.3 * X[:, 1]) + 0.1 * rng.standard_normal(n)
    return X, (y - y.mean()) / y.std()


def test_mlp_problem_prediction_and_robust_objective() -> None:
    X, y = skewed()
    prob = mlp_dro_problem(X, y, Ambiguity("target_conditional", 0.3, bins=5), hidden=8, weight_decay=1e-3, seed=1)
    again = mlp_dro_problem(X, y, Ambiguity("chi2", 0.1), hidden=8, seed=1)
    assert np.array_equal(prob.variables[0].init, again.variables[0].init)  # seeded start, shared by all methods
    sol = TCDRO().solve(prob, TCDRO().make_options({}), ctx64(max_iter=80))
    assert sol.status.has_solution and all(c[0] for c in sol.checks.values())
    v = sol.values
    decay = 1e-3 * float(np.sum(v["W1"] ** 2) + np.sum(v["w2"] ** 2))
    pred = mlp_predict(v, X)
    assert np.allclose(prob.loss.value(v), (pred - y) ** 2 + decay, rtol=1e-12)
    rv = robust_value((pred - y) ** 2, make_regions(y, 5, 0.3), "chi2", "robust", outer_radius=0.3)
    assert rel(sol.objective, rv.value + decay) <= 1e-9  # the float64 recomputation, not the training value
    assert sol.objective >= sol.info["mean_loss"] - 1e-12
    with pytest.raises(ValueError):
        mlp_dro_problem(X, y, Ambiguity("chi2", 0.1), hidden=0)


def test_mlp_tcdro_lowers_tail_training_error() -> None:
    """With a flexible model, the target-conditional adversary moves the fit towards the rare high
    targets: TC-DRO's training tail MSE is below ERM's, from the same seeded start."""
    X, y = skewed(seed=22)
    ctx = ctx64(max_iter=150)
    fits = {}
    for label, backend, amb in (
        ("erm", ERM(), Ambiguity("chi2", 0.0)),
        ("tc", TCDRO(), Ambiguity("target_conditional", 0.5, bins=5)),
    ):
        prob = mlp_dro_problem(X, y, amb, hidden=8, weight_decay=1e-2, seed=2)
        fits[label] = mlp_predict(backend.solve(prob, backend.make_options({}), ctx).values, X)
    tail = {k: metrics.tail_mse(y, p, y, 0.9) for k, p in fits.items()}
    assert tail["tc"] < 0.9 * tail["erm"]
