"""General bilevel (`y in argmin over y: g(x, y)`): classification, the Krylov solvers, hgms on known
answers (ridge hyperparameter by 1-D search, the wide linear lower level in closed form, a Stackelberg
game by a float64 QP), the three baselines, minibatch levels, refusals, and the float64 checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.optimize import minimize, minimize_scalar

import optlang
from optlang.backends.general_bilevel import krylov
from optlang.backends.general_bilevel.checks import general_bilevel_checks

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def _checks_pass(r: optlang.Result, names: tuple[str, ...] = ("lower_level_gap", "optimistic_selection")) -> None:
    got = {c.name: c for c in r.checks}
    for n in names:
        assert got[n].passed, got[n]


# ----------------------------------------------------------------------------- language
def test_classified_and_planned_to_hgms() -> None:
    m = optlang.load(MODELS / "ridge_hyper.opt")
    assert m.kind == "general_bilevel"
    roles = {v.name: v.role for v in m.form.variables}
    assert roles == {"t": "min", "w": "lower"}
    plan = m.plan()
    assert plan.chosen == "hgms"
    text = plan.explain()
    for name in ("aid", "itd", "kkt"):
        assert name in text


def test_argmin_names_must_be_lower_variables() -> None:
    src = "var x\nvar y\nminimize (x - 1)^2 + y^2\nsubject to { x in argmin over y: (y - x)^2 }\n"
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse(src)
    assert info.value.code == "E513"
    assert info.value.line == 4


def test_every_variable_lower_is_an_error() -> None:
    src = "var y[2]\nminimize sumsq(y)\nsubject to { y in argmin over y: sumsq(y - 1) }\n"
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse(src)
    assert info.value.code == "E513"
    assert "nothing is left to the upper level" in info.value.message


def test_lower_level_domain_is_refused_with_a_sentence() -> None:
    src = "var x\nvar y >= 0\nminimize (y - 1)^2 + x^2\nsubject to { y in argmin over y: (y - x)^2 }\n"
    m = optlang.parse(src)
    with pytest.raises(optlang.OptlangError) as info:
        m.plan()
    assert info.value.code == "E802"
    assert "domain of the lower-level variable 'y'" in info.value.message
    with pytest.raises(optlang.OptlangError) as info:
        m.plan("kkt")
    assert info.value.code == "E804"


def test_general_constraints_are_refused() -> None:
    src = "var x\nvar y\nminimize (y - 1)^2 + x^2\nsubject to { y in argmin over y: (y - x)^2; x <= 3 }\n"
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse(src).plan("hgms")
    assert "cannot enforce" in info.value.message


def test_unknown_krylov_option_is_an_error() -> None:
    with pytest.raises(optlang.OptlangError):
        optlang.load(MODELS / "ridge_hyper.opt").solve(options={"krylov": "gmres"})


# ----------------------------------------------------------------------------- Krylov
def _singular(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(8, 20, generator=g, dtype=torch.float64)
    return A.T @ A, torch.randn(20, generator=g, dtype=torch.float64)


def test_minres_gives_the_minimum_norm_solution_of_a_consistent_singular_system() -> None:
    H, z = _singular()
    b = H @ z
    r = krylov.minres(lambda v: H @ v, b, None, 200, 1e-12)
    np.testing.assert_allclose(r.x.numpy(), (torch.linalg.pinv(H) @ b).numpy(), atol=1e-8)


def test_minres_residual_is_the_part_of_b_outside_the_range() -> None:
    H, z = _singular(1)
    b = H @ z + torch.randn(20, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    r = krylov.minres(lambda v: H @ v, b, None, 200, 1e-10)
    P = torch.linalg.pinv(H)
    np.testing.assert_allclose(r.residual.numpy(), (b - H @ P @ b).numpy(), atol=1e-6)
    assert "least-squares" in r.reason


def test_cg_normal_gives_the_minimum_norm_least_squares_solution() -> None:
    H, z = _singular(2)
    b = H @ z + torch.randn(20, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    r = krylov.cg_normal(lambda v: H @ v, b, None, 500, 1e-12)
    np.testing.assert_allclose(r.x.numpy(), (torch.linalg.pinv(H) @ b).numpy(), atol=1e-6)


def test_lanczos_clipped_inverse_raises_small_eigenvalues() -> None:
    g = torch.Generator().manual_seed(3)
    Qm, _ = torch.linalg.qr(torch.randn(12, 12, generator=g, dtype=torch.float64))
    evals = torch.tensor([-1.0, 1e-8, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=torch.float64)
    H = Qm @ torch.diag(evals) @ Qm.T
    b = torch.randn(12, generator=g, dtype=torch.float64)
    delta = 0.1
    r = krylov.lanczos_clipped(lambda v: H @ v, b, delta, 12, 1e-12)
    expect = Qm @ ((Qm.T @ b) / torch.clamp(evals, min=delta))
    np.testing.assert_allclose(r.x.numpy(), expect.numpy(), atol=1e-8)


def test_cg_stops_on_negative_curvature() -> None:
    H = torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))
    r = krylov.cg(lambda v: H @ v, torch.tensor([1.0, 1.0], dtype=torch.float64), None, 10, 1e-12)
    assert not r.converged and "curvature" in r.reason


# ----------------------------------------------------------------------------- known answers
def _ridge_reference(m: optlang.Model) -> float:
    p = m.ir.params
    Xt, yt, Xv, yv = (np.asarray(p[k], dtype=np.float64) for k in ("Xt", "yt", "Xv", "yv"))
    n, d = Xt.shape

    def phi(t: float) -> float:
        w = np.linalg.solve(Xt.T @ Xt / n + np.exp(t) * np.eye(d), Xt.T @ yt / n)
        return 0.5 * float(np.mean((Xv @ w - yv) ** 2))

    r = minimize_scalar(phi, bounds=(-10, 5), method="bounded", options={"xatol": 1e-10})
    return float(r.fun)


def test_hgms_ridge_hyperparameter_matches_the_1d_search() -> None:
    m = optlang.load(MODELS / "ridge_hyper.opt")
    r = m.solve(seed=0)
    best = _ridge_reference(m)
    assert r.status == optlang.Status.CONVERGED
    assert r.objective == pytest.approx(best, rel=1e-6)
    _checks_pass(r, ("lower_level_gap", "optimistic_selection", "hypergradient_fd"))


def _wide_reference(m: optlang.Model) -> tuple[np.ndarray, np.ndarray, float]:
    p = m.ir.params
    A, B, c, x0 = (np.asarray(p[k], dtype=np.float64) for k in ("A", "B", "c", "x0"))
    P = np.linalg.pinv(A)
    M = P @ B
    x = np.linalg.solve(M.T @ M + np.eye(B.shape[1]), M.T @ (P @ A @ c) + x0)
    y = M @ x + (np.eye(A.shape[1]) - P @ A) @ c
    return x, y, 0.5 * float(np.sum((y - c) ** 2) + np.sum((x - x0) ** 2))


def test_hgms_reaches_the_optimistic_solution_of_a_singular_lower_level() -> None:
    m = optlang.load(MODELS / "overparam_bilevel.opt")
    x, y, phi = _wide_reference(m)
    r = m.solve(seed=0)
    assert r.status == optlang.Status.CONVERGED
    assert r.objective == pytest.approx(phi, rel=1e-7)
    np.testing.assert_allclose(r.values["x"], x, atol=1e-5)
    np.testing.assert_allclose(r.values["y"], y, atol=1e-5)
    _checks_pass(r, ("lower_level_gap", "optimistic_selection", "hypergradient_fd"))


@pytest.mark.parametrize("backend", ["aid", "itd"])
def test_baselines_miss_the_optimistic_solution_of_a_singular_lower_level(backend: str) -> None:
    m = optlang.load(MODELS / "overparam_bilevel.opt")
    _, _, phi = _wide_reference(m)
    r = m.solve(backend=backend, seed=0, options={"outer_iters": 50, "polish": 20})
    assert r.objective is not None and r.objective > phi * 1.01  # a non-optimistic point (or a stall)
    assert not {c.name: c for c in r.checks}["optimistic_selection"].passed


def _stackelberg_reference(m: optlang.Model) -> float:
    p = m.ir.params
    Q, C, d, E, f = (np.asarray(p[k], dtype=np.float64) for k in ("Q", "C", "d", "E", "f"))
    Qi = np.linalg.inv(Q)

    def phi(x: np.ndarray) -> tuple[float, np.ndarray]:
        y = Qi @ (d - C @ x)
        dy = -Qi @ C  # dy/dx
        val = 0.5 * x @ x + x @ E @ y + f @ x + 0.5 * np.sum((y - d) ** 2)
        grad = x + E @ y + dy.T @ (E.T @ x) + f + dy.T @ (y - d)
        return float(val), grad

    r = minimize(phi, np.zeros(4), jac=True, method="L-BFGS-B", bounds=[(-1, 1)] * 4, options={"gtol": 1e-12})
    return float(r.fun)


@pytest.mark.parametrize("backend", ["hgms", "aid", "itd", "kkt"])
def test_every_backend_solves_the_stackelberg_game(backend: str) -> None:
    m = optlang.load(MODELS / "stackelberg.opt")
    best = _stackelberg_reference(m)
    r = m.solve(backend=backend, seed=0)
    # trust-constr's interior-point stop leaves the active bounds at 1 − 3e-7 (kkt: 1.4e-6 relative)
    assert r.objective == pytest.approx(best, rel=1e-5 if backend == "kkt" else 1e-7, abs=1e-8)
    _checks_pass(r)
    assert r.info["lower_gap"] <= 1e-8


def test_clipped_krylov_agrees_on_a_strongly_convex_lower_level() -> None:
    m = optlang.load(MODELS / "stackelberg.opt")
    r = m.solve(seed=0, options={"krylov": "clip", "krylov_iters": 10})
    assert r.objective == pytest.approx(_stackelberg_reference(m), rel=1e-6)


def test_cgnr_reaches_the_optimistic_solution() -> None:
    m = optlang.load(MODELS / "overparam_bilevel.opt")
    r = m.solve(seed=0, options={"krylov": "cgnr"})
    assert r.objective == pytest.approx(_wide_reference(m)[2], rel=1e-6)


def test_simplex_upper_domain_is_respected() -> None:
    r = optlang.load(MODELS / "source_reweight.opt").solve(seed=0)
    assert r.values["a"].sum() == pytest.approx(1.0, abs=1e-9)
    assert np.all(r.values["a"] >= -1e-12)
    _checks_pass(r, ("a_in_domain", "lower_level_gap", "optimistic_selection"))


# ----------------------------------------------------------------------------- minibatches
STOCHASTIC = """
data D = load("train.csv", target = "y")
var t in [-5, 5]
var w[D.p]
minimize 0.5 * mean((D.X @ w - D.y)^2) / 100 + 0.5 * sumsq(w - 1)
subject to { w in argmin over w: 0.5 * mean((D.X @ w - D.y)^2) + 0.5 * exp(t) * sumsq(w) }
"""


def test_minibatch_levels_then_polish_match_the_full_batch_answer() -> None:
    m = optlang.parse(STOCHASTIC, base_dir=MODELS)
    full = m.solve(seed=0)
    opts = {"batch_upper": 64, "batch_lower": 64, "stochastic_iters": 40}
    rough = m.solve(seed=0, options={**opts, "polish": 0})
    assert rough.info["stages"][0]["stage"] == "minibatch"
    assert rough.objective == pytest.approx(full.objective, rel=0.2)
    polished = m.solve(seed=0, options=opts)
    assert polished.objective == pytest.approx(full.objective, rel=1e-6)
    _checks_pass(polished)


# ----------------------------------------------------------------------------- checks
def test_gap_and_selection_checks_fail_on_a_wrong_point() -> None:
    m = optlang.load(MODELS / "overparam_bilevel.opt")
    x, y, _ = _wide_reference(m)
    prob = m.compiled.problem
    checks, info = general_bilevel_checks(prob, {"x": x, "y": y})
    assert all(ok for _, ok, _ in checks)
    checks, info = general_bilevel_checks(prob, {"x": x, "y": y + 0.1})
    assert not dict((n, ok) for n, ok, _ in checks)["lower_level_gap"]
    A = np.asarray(m.ir.params["A"], dtype=np.float64)
    null = np.eye(A.shape[1]) - np.linalg.pinv(A) @ A  # move along the solution set: gap 0, selection wrong
    checks, info = general_bilevel_checks(prob, {"x": x, "y": y + null @ np.ones(A.shape[1])})
    d = dict((n, ok) for n, ok, _ in checks)
    assert d["lower_level_gap"] and not d["optimistic_selection"]


NONQUADRATIC = """
param X = randn(40, 5, seed = 1)
param z = randn(40, seed = 2)
var t
var w[5]
minimize 0.5 * sumsq(w - 1) + 0.1 * t^2
subject to { w in argmin over w: mean(softplus(X @ w) - z * (X @ w)) + 0.5 * exp(t) * sumsq(w) + 0.1 * sum(w^4) }
"""


def test_all_backends_agree_on_a_non_quadratic_follower() -> None:
    m = optlang.parse(NONQUADRATIC)
    vals = {}
    for b in ("hgms", "aid", "itd", "kkt"):
        r = m.solve(backend=b, seed=0)
        _checks_pass(r, ("lower_level_gap", "optimistic_selection", "hypergradient_fd"))
        vals[b] = r.objective
    for b in ("aid", "itd", "kkt"):
        assert vals[b] == pytest.approx(vals["hgms"], rel=1e-8)


def test_spg_upper_loop_reaches_the_same_answer() -> None:
    m = optlang.load(MODELS / "stackelberg.opt")
    r = m.solve(seed=0, options={"outer": "spg"})
    assert r.objective == pytest.approx(_stackelberg_reference(m), rel=1e-7)
    with pytest.raises(optlang.OptlangError):
        m.solve(options={"outer": "newton"})


def test_rank_one_follower_under_the_automatic_plan() -> None:
    """g = ½(aᵀy − x)²: S(x) is a hyperplane; the optimistic y is a·x/‖a‖², so Φ(x) = x²/(2‖a‖²) + ½(x − 2)²."""
    src = """
param a = [1, 2, -1, 0.5, 0]
var x
var y[5]
minimize 0.5 * sumsq(y) + 0.5 * (x - 2)^2
subject to { y in argmin over y: 0.5 * (dot(a, y) - x)^2 }
"""
    a = np.array([1.0, 2.0, -1.0, 0.5, 0.0])
    na2 = float(a @ a)
    x = 2.0 / (1.0 + 1.0 / na2)
    r = optlang.parse(src).solve(seed=0)
    assert r.backend == "hgms" and r.status == optlang.Status.CONVERGED
    assert r.objective == pytest.approx(x**2 / (2 * na2) + 0.5 * (x - 2) ** 2, rel=1e-9)
    np.testing.assert_allclose(r.values["y"], a * x / na2, atol=1e-7)


def test_argmin_without_over_on_other_variables_is_general_bilevel() -> None:
    m = optlang.parse("var x\nvar y\nminimize (y - 1)^2 + 0.1 * x^2\nsubject to { y in argmin (y - x)^2 }\n")
    assert m.kind == "general_bilevel"
    r = m.solve(seed=0)
    assert r.objective == pytest.approx(1 - 1 / 1.1, rel=1e-9)
