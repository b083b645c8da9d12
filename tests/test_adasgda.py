"""Tests of the minimax backends `adasgda` and `gda` and the stationarity report, on games with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from optlang.analysis import Form, VarInfo
from optlang.backends.base import RunContext, Status
from optlang.backends.minimax.adasgda import AdaSGDA, direction, polar_factor
from optlang.backends.minimax.gda import GDA
from optlang.backends.minimax.stationarity import inner_solve, stationarity_report
from optlang.errors import OptionError
from optlang.problem import Domain, MinimaxProblem, TorchFunction, Variable

torch.set_num_threads(1)


# ----------------------------------------------------------------------------- problems
def spd(rng: np.random.Generator, k: int, lo: float, hi: float) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((k, k)))
    return q @ np.diag(np.linspace(lo, hi, k)) @ q.T


def quadratic_game(
    seed: int = 0, n: int = 6, m: int = 5, scale: float = 1.0, x_dom: Domain | None = None, y_dom: Domain | None = None
) -> tuple[MinimaxProblem, np.ndarray, np.ndarray]:
    """f = ½xᵀAx + xᵀBy − ½yᵀCy − aᵀx − bᵀy with A, C ≻ 0: the saddle point in closed form."""
    rng = np.random.default_rng(seed)
    A, C = spd(rng, n, 0.2, 1.0), spd(rng, m, 0.2, 1.0)
    B = rng.standard_normal((n, m)) / np.sqrt(m)
    a, b = rng.standard_normal(n), rng.standard_normal(m)
    Ci = np.linalg.inv(C)
    xs = np.linalg.solve(A + B @ Ci @ B.T, a + B @ Ci @ b)
    ys = Ci @ (B.T @ xs - b)
    mats = [scale * M for M in (A, B, C, a, b)]

    def build(device, dtype):
        At, Bt, Ct, at, bt = (torch.as_tensor(M, device=device, dtype=dtype) for M in mats)

        def fn(v, batch=None):
            x, y = v["x"], v["y"]
            return 0.5 * x @ At @ x + x @ Bt @ y - 0.5 * y @ Ct @ y - at @ x - bt @ y

        return fn

    p = MinimaxProblem(
        (Variable("x", (n,), x_dom or Domain()),),
        (Variable("y", (m,), y_dom or Domain()),),
        TorchFunction(build, source="quadratic game"),
    )
    return p, xs, ys


def fn_problem(fn, xvars, yvars, n_samples=None) -> MinimaxProblem:
    return MinimaxProblem(tuple(xvars), tuple(yvars), TorchFunction.from_callable(fn, n_samples=n_samples))


def solve(backend, problem, seed=0, max_iter=3000, dtype="float32", tol=None, time_limit=None, **opts):
    ctx = RunContext(seed=seed, dtype=dtype, max_iter=max_iter, tol=tol, time_limit=time_limit)
    return backend.solve(problem, backend.make_options(opts), ctx)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a) - b) / max(np.linalg.norm(b), 1e-12))


# ----------------------------------------------------------------------------- known answers
def test_scsc_quadratic_saddle_and_certificates():
    p, xs, ys = quadratic_game()
    sol = solve(AdaSGDA(), p)
    assert sol.status == Status.CONVERGED
    assert rel(sol.values["x"], xs) < 1e-3 and rel(sol.values["y"], ys) < 1e-3
    st = sol.info["stationarity"]
    assert st["grad_phi_norm"] <= sol.info["tol_absolute"]
    assert st["convex_concave"] is True
    assert st["duality_gap"] is not None and st["duality_gap"] < 1e-6
    assert all(ok for ok, _ in sol.checks.values())
    assert sol.history and len(sol.history) >= 2


@pytest.mark.parametrize("scale", [1e-2, 1e4])
def test_adasgda_defaults_are_scale_free(scale):
    """The same defaults reach the saddle with the objective scaled by 1e-2 and 1e4."""
    p, xs, ys = quadratic_game(scale=scale)
    sol = solve(AdaSGDA(), p, final_report=False)
    assert sol.status == Status.CONVERGED, sol.status
    assert rel(sol.values["x"], xs) < 1e-3 and rel(sol.values["y"], ys) < 1e-3


def test_gda_fixed_step_converges_and_large_step_diverges():
    p, xs, ys = quadratic_game(scale=1e2)
    small = solve(GDA(), p, lr_x=2e-3, lr_y=2e-3, final_report=False)
    assert small.status == Status.CONVERGED and rel(small.values["x"], xs) < 1e-3
    big = solve(GDA(), p, lr_x=0.1, lr_y=0.1, final_report=False)
    assert big.status == Status.DIVERGED
    assert all(np.all(np.isfinite(v)) for v in big.values.values())


def test_bilinear_game_with_regularized_player():
    """f = xᵀAy + aᵀx − (μ/2)‖y‖²: linear in x; saddle y* = −A⁻¹a, Aᵀx* = μy*."""
    rng = np.random.default_rng(1)
    n, mu = 5, 1.0
    A = np.eye(n) + 0.3 * rng.standard_normal((n, n))
    a = rng.standard_normal(n)
    ys = -np.linalg.solve(A, a)
    xs = np.linalg.solve(A.T, mu * ys)
    At, at = torch.as_tensor(A), torch.as_tensor(a)

    def fn(v, batch=None):
        x, y = v["x"], v["y"]
        return x @ At.to(x.dtype) @ y + at.to(x.dtype) @ x - 0.5 * mu * y @ y

    p = fn_problem(fn, [Variable("x", (n,))], [Variable("y", (n,))])
    sol = solve(AdaSGDA(), p, max_iter=4000)
    assert sol.status == Status.CONVERGED, (sol.status, sol.info["proxy"])
    assert rel(sol.values["x"], xs) < 2e-3 and rel(sol.values["y"], ys) < 2e-3
    assert sol.info["stationarity"]["convex_concave"] is True


def test_pure_bilinear_gda_diverges_returns_best_iterate():
    """Negative control: simultaneous GDA on xᵀy spirals out by (1 + η²)^(1/2) per step."""

    def fn(v, batch=None):
        return v["x"] @ v["y"]

    x0, y0 = np.array([0.3, -0.2]), np.array([0.1, 0.4])
    p = fn_problem(fn, [Variable("x", (2,), init=x0)], [Variable("y", (2,), init=y0)])
    sol = solve(GDA(), p, lr_x=0.5, lr_y=0.5, max_iter=5000, final_report=False)
    assert sol.status == Status.DIVERGED
    assert sol.iterations < 400  # (1.25)^(t/2) passes the 1e8 blow-up limit near t = 165
    np.testing.assert_allclose(sol.values["x"], x0, atol=1e-6)  # the best iterate is the start
    # the growth is exactly the predicted one for the first steps
    short = solve(GDA(), p, lr_x=0.1, lr_y=0.1, max_iter=100, final_report=False, tol=1e-30)
    assert short.status == Status.ITERATION_LIMIT


def test_alternating_updates():
    """Alternating GDA stays bounded on xᵀy where simultaneous GDA spirals out; alternating AdaSGDA(-VR) converges."""

    def fn(v, batch=None):
        return v["x"] @ v["y"]

    x0, y0 = np.array([0.3, -0.2]), np.array([0.1, 0.4])
    p = fn_problem(fn, [Variable("x", (2,), init=x0)], [Variable("y", (2,), init=y0)])
    alt = solve(GDA(), p, lr_x=0.5, lr_y=0.5, alternating=True, max_iter=400, final_report=False, tol=1e-30)
    assert alt.status == Status.ITERATION_LIMIT
    assert np.linalg.norm(np.r_[alt.values["x"], alt.values["y"]]) < 3 * np.linalg.norm(np.r_[x0, y0])
    q, xs, ys = quadratic_game(seed=5)
    for variant in ("base", "vr"):
        sol = solve(AdaSGDA(), q, variant=variant, alternating=True, final_report=False)
        assert sol.status == Status.CONVERGED and rel(sol.values["x"], xs) < 1e-3, variant
        assert sol.info["extra_evaluations"] > 0


def test_nonconvex_strongly_concave_toy_finds_stationary_point():
    """f = x⁴/4 − x²/2 + xy − y²: y*(x) = x/2, Φ = x⁴/4 − x²/4, minimizers x = ±1/√2."""

    def fn(v, batch=None):
        x, y = v["x"], v["y"]
        return x**4 / 4 - x**2 / 2 + x * y - y**2

    p = fn_problem(fn, [Variable("x", (), init=np.array(0.3))], [Variable("y", ())])
    for variant in ("base", "vr"):
        sol = solve(AdaSGDA(), p, variant=variant)
        x, y = float(sol.values["x"]), float(sol.values["y"])
        assert abs(abs(x) - 1 / math.sqrt(2)) < 1e-4, (variant, x)
        assert abs(y - x / 2) < 1e-4
        st = sol.info["stationarity"]
        assert st["grad_phi_norm"] < 1e-5
        assert st["convex_concave"] is False and st["duality_gap"] is None
        assert abs(st["phi"] - (-1 / 16)) < 1e-8


def test_robust_game_reaches_global_minimizer_zero():
    """LANGUAGE.md's robust_game (smaller): Φ(x) = ½‖tanh(Ax)‖² (or ‖·‖ − ½ outside the ball) + 0.01‖x‖² ≥ 0 = Φ(0).

    So x* = 0, y* = 0 is the global minimizer, and the only stationary point; f is nonconvex in x.
    """
    A = torch.as_tensor(np.random.default_rng(3).standard_normal((30, 10)))

    def fn(v, batch=None):
        x, y = v["x"], v["y"]
        return y @ torch.tanh(A.to(x.dtype) @ x) - 0.5 * y @ y + 0.01 * x @ x

    x0 = 0.5 * np.random.default_rng(4).standard_normal(10)
    p = fn_problem(fn, [Variable("x", (10,), init=x0)], [Variable("y", (30,), Domain("ball", radius=1.0))])
    sol = solve(AdaSGDA(), p, max_iter=3000, tol=1e-4)
    assert sol.status == Status.CONVERGED
    assert np.linalg.norm(sol.values["x"]) < 1e-2 * np.linalg.norm(x0)
    assert np.linalg.norm(sol.values["y"]) <= 1.0 + 1e-6
    st = sol.info["stationarity"]
    assert st["grad_phi_norm"] <= sol.info["tol_absolute"] and 0 <= st["phi"] < 1e-4
    assert st["convex_concave"] is False


def test_matrix_variable_game_closed_form():
    """f = ½‖W − M‖² + yᵀWv − (μ/2)‖y‖²: W* = M(I − vvᵀ/(μ + ‖v‖²)), y* = W*v/μ."""
    rng = np.random.default_rng(5)
    M, v, mu = rng.standard_normal((4, 6)), rng.standard_normal(6), 0.5
    Ws = M @ (np.eye(6) - np.outer(v, v) / (mu + v @ v))
    ys = Ws @ v / mu
    Mt, vt = torch.as_tensor(M), torch.as_tensor(v)

    def fn(val, batch=None):
        W, y = val["W"], val["y"]
        return 0.5 * ((W - Mt.to(W.dtype)) ** 2).sum() + y @ (W @ vt.to(W.dtype)) - 0.5 * mu * y @ y

    p = fn_problem(fn, [Variable("W", (4, 6))], [Variable("y", (4,))])
    for opts in ({}, {"ortho_until": 0.0}, {"orthogonalize": False}):
        sol = solve(AdaSGDA(), p, max_iter=4000, tol=1e-4 if opts.get("ortho_until") == 0.0 else None, **opts)
        assert sol.status == Status.CONVERGED, (opts, sol.status)
        tol = 1e-2 if opts.get("ortho_until") == 0.0 else 1e-3  # always-polar steps stall near the end
        assert rel(sol.values["W"], Ws) < tol and rel(sol.values["y"], ys) < tol
        assert (sol.info["orthogonalized_steps"] > 0) == opts.get("orthogonalize", True)


def test_orthogonalized_directions_precondition_a_matrix_game():
    """½‖P(W − M)‖² with ill-conditioned P and whitened M: polar directions need fewer iterations."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    P = torch.as_tensor(q @ np.diag(np.logspace(-1, 0, 8)) @ q.T)
    M = torch.as_tensor(np.linalg.qr(rng.standard_normal((32, 8)))[0].T * np.sqrt(32))
    c = torch.as_tensor(rng.standard_normal(32) / np.sqrt(32))

    def fn(v, batch=None):
        W, y = v["W"], v["y"]
        Pt, Mt, ct = (t.to(W.dtype) for t in (P, M, c))
        return 0.5 * ((Pt @ (W - Mt)) ** 2).sum() + y @ (W @ ct) - 0.5 * y @ y

    p = fn_problem(fn, [Variable("W", (8, 32))], [Variable("y", (8,))])
    its = {}
    for ortho in (True, False):
        sol = solve(AdaSGDA(), p, orthogonalize=ortho, max_iter=1000, tol=1e-2, final_report=False)
        assert sol.status == Status.CONVERGED
        its[ortho] = sol.iterations
    assert its[True] < 0.7 * its[False], its


def test_domains_respected_and_gap_certificate():
    """Box on x, ball on y: the iterates stay feasible and the saddle's duality gap closes."""
    p, xs, _ = quadratic_game(seed=2, x_dom=Domain("box", lo=-0.3, hi=0.3), y_dom=Domain("ball", radius=0.5))
    seen = []

    def rule_values_ok(sol):
        x, y = sol.values["x"], sol.values["y"]
        return np.all(np.abs(x) <= 0.3 + 1e-6) and np.linalg.norm(y) <= 0.5 + 1e-6

    sol = solve(AdaSGDA(), p, max_iter=4000)
    seen.append(rule_values_ok(sol))
    assert all(seen)
    assert np.max(np.abs(xs)) > 0.3  # the box is active at the unconstrained saddle
    st = sol.info["stationarity"]
    assert st["convex_concave"] is True
    assert st["duality_gap"] < 1e-5
    assert st["grad_phi_norm"] < 1e-4


def chi2_robust_regression_cvxpy(X: np.ndarray, y: np.ndarray, kappa: float) -> tuple[np.ndarray, float]:
    """min_w max_{p∈Δ} Σpᵢ½(xᵢᵀw − yᵢ)² − (κ/2)‖p − 1/N‖² as one convex program (an independent answer).

    Dualizing the inner max (τ for Σp = 1, ν ≥ 0 for p ≥ 0, z = ℓ − τ + ν) gives
    Φ(w) = min τ + mean(z) + ‖z‖²/(2κ) subject to ℓᵢ(w) ≤ zᵢ + τ.
    """
    import cvxpy as cp

    N, d = X.shape
    w, tau, z = cp.Variable(d), cp.Variable(), cp.Variable(N)
    prob = cp.Problem(
        cp.Minimize(tau + cp.sum(z) / N + cp.sum_squares(z) / (2 * kappa)), [0.5 * cp.square(X @ w - y) <= z + tau]
    )
    prob.solve()
    assert prob.status == "optimal"
    return np.asarray(w.value), float(prob.value)


def test_simplex_adversary_stochastic_minibatches():
    """Robust regression: min_w max_{p ∈ Δ} Σ pᵢℓᵢ(w) − (μ/2)‖p − 1/N‖², minibatch estimates of the sum."""
    rng = np.random.default_rng(6)
    N, d, mu = 64, 3, 0.5
    X = torch.as_tensor(rng.standard_normal((N, d)))
    w_true = rng.standard_normal(d)
    yv = torch.as_tensor(X.numpy() @ w_true + 0.3 * rng.standard_normal(N))

    def fn(v, batch=None):
        w, p = v["w"], v["p"]
        Xb, yb, pb = (X, yv, p) if batch is None else (X[batch], yv[batch], p[batch])
        loss = 0.5 * (Xb.to(w.dtype) @ w - yb.to(w.dtype)) ** 2
        scale = 1.0 if batch is None else N / len(batch)
        return scale * (pb * loss).sum() - 0.5 * mu * ((p - 1.0 / N) ** 2).sum()

    p = fn_problem(fn, [Variable("w", (d,))], [Variable("p", (N,), Domain("simplex"))], n_samples=N)
    w_star, phi_star = chi2_robust_regression_cvxpy(X.numpy(), yv.numpy(), mu)
    full = solve(AdaSGDA(), p, max_iter=3000, dtype="float64", tol=1e-6)
    st = full.info["stationarity"]
    assert full.status == Status.CONVERGED and st["duality_gap"] < 1e-8
    assert rel(full.values["w"], w_star) < 1e-4 and abs(st["phi"] - phi_star) < 1e-6
    for variant, iters in (("base", 500), ("vr", 300)):
        sol = solve(AdaSGDA(), p, variant=variant, batch=16, max_iter=iters, dtype="float64", final_report=False)
        assert sol.info["batch"] == 16
        assert abs(sol.values["p"].sum() - 1.0) < 1e-6 and sol.values["p"].min() >= 0
        assert rel(sol.values["w"], w_star) < 0.05, (variant, rel(sol.values["w"], w_star))
        if variant == "vr":
            assert sol.info["extra_evaluations"] > 0


# ----------------------------------------------------------------------------- machinery
def test_polar_factor_matches_svd():
    g = torch.as_tensor(np.random.default_rng(7).standard_normal((5, 8)), dtype=torch.float64)
    u, _, vh = torch.linalg.svd(g, full_matrices=False)
    q = polar_factor(g, steps=5, polish=3)
    assert torch.allclose(q, u @ vh, atol=2e-2)
    assert torch.allclose(polar_factor(g.T), (u @ vh).T, atol=5e-2)  # tall matrices via the transpose
    d = direction(g, True, 5, 2)
    assert math.isclose(float(d.norm()), float(g.norm()), rel_tol=1e-9)  # the length is kept
    assert float((d * g).sum()) > 0  # a descent direction
    vec = torch.ones(4)
    assert torch.equal(direction(vec, True, 5, 2), vec)
    assert torch.equal(polar_factor(torch.zeros(3, 3)), torch.zeros(3, 3))


def test_inner_solve_exact_on_concave_quadratic():
    C = torch.as_tensor(spd(np.random.default_rng(8), 4, 0.1, 10.0))
    b = torch.ones(4, dtype=torch.float64)

    def fn(v, batch=None):
        return b @ v["y"] - 0.5 * v["y"] @ C @ v["y"]

    res = inner_solve(fn, {}, (Variable("y", (4,)),), {"y": torch.zeros(4, dtype=torch.float64)}, maximize=True)
    assert res.converged and not res.unbounded
    np.testing.assert_allclose(res.point["y"].numpy(), np.linalg.solve(C.numpy(), b.numpy()), atol=1e-8)


def test_unbounded_inner_maximization_is_reported():
    def fn(v, batch=None):
        return v["x"] @ v["x"] + v["x"].sum() * v["y"].sum()

    p = fn_problem(fn, [Variable("x", (2,))], [Variable("y", (2,))])
    rep = stationarity_report(p, {"x": np.array([1.0, 0.5]), "y": np.zeros(2)}, convex_concave="no")
    assert rep["inner"]["unbounded"] and rep["grad_phi_norm"] is None


def test_determinism_and_seed():
    p, _, _ = quadratic_game(seed=3)
    r1 = solve(AdaSGDA(), p, max_iter=50, final_report=False, tol=1e-30)
    r2 = solve(AdaSGDA(), p, max_iter=50, final_report=False, tol=1e-30)
    r3 = solve(AdaSGDA(), p, seed=1, max_iter=50, final_report=False, tol=1e-30)
    assert r1.status == Status.ITERATION_LIMIT and r1.iterations == 50
    for k in r1.values:
        np.testing.assert_array_equal(r1.values[k], r2.values[k])
    assert not np.array_equal(r1.values["x"], r3.values["x"])


def test_time_limit_and_progress():
    p, _, _ = quadratic_game(seed=4)
    # patience 0: no stagnation stop, so the run fills its limit
    sol = solve(
        AdaSGDA(), p, max_iter=10**9, time_limit=0.3, final_report=False, tol=1e-30, report_every=10, patience=0
    )
    assert sol.status == Status.TIME_LIMIT
    assert len(sol.history) >= 2 and np.all(np.isfinite(sol.values["x"]))


def test_options_and_refusals():
    b = AdaSGDA()
    with pytest.raises(OptionError):
        b.make_options({"variantt": "vr"})
    p, _, _ = quadratic_game()
    with pytest.raises(OptionError):
        solve(b, p, variant="fancy")
    with pytest.raises(OptionError):
        solve(b, p, a=0.3, b=0.5)
    form = Form(kind="minimax", variables=(VarInfo("x", "real", (3,)), VarInfo("y", "real", (2,), role="max")))
    assert b.refuse(form) is None and GDA().refuse(form) is None
    assert "constraint" in b.refuse(Form(kind="minimax", constraints=("sum(x) <= 1",)))
    assert "real" in b.refuse(Form(kind="minimax", variables=(VarInfo("s", "spin", (3,)),)))
    assert b.refuse(Form(kind="smooth")) is not None
    assert b.priority < GDA().priority


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_run_matches_cpu_answer():
    p, xs, ys = quadratic_game()
    be = AdaSGDA()
    sol = be.solve(p, be.make_options({}), RunContext(device="cuda", max_iter=3000))
    assert sol.status == Status.CONVERGED and rel(sol.values["x"], xs) < 1e-3


def test_simplex_projection_of_large_float32_values():
    """backends/common.py's simplex projection fails on float32 entries ~1e7; ours shifts first (shift-invariant)."""
    from optlang.backends.minimax.stationarity import project

    v = torch.tensor([4.4e4, 4.0e4, 1.1e7, 1.75e7, 3.0], dtype=torch.float32)
    out = project(Domain("simplex"), v)
    assert torch.isclose(out.sum(), torch.tensor(1.0)) and out[3] == 1.0 and out.min() >= 0
    np.testing.assert_allclose(
        project(Domain("simplex"), torch.tensor([0.2, 0.5, -0.1])).numpy(),
        Domain("simplex").project_np(np.array([0.2, 0.5, -0.1])),
        atol=1e-6,
    )


def test_loop_settings_are_copied_by_name_from_both_backends_options() -> None:
    from dataclasses import fields

    from optlang.backends.minimax.loop import LoopSettings

    for backend in (AdaSGDA(), GDA()):
        o = backend.make_options({"batch": 7, "check_every": 3, "report_every": 11, "inner_iters": 13})
        s = LoopSettings.from_options(o)
        assert (s.batch, s.check_every, s.report_every, s.inner_iters) == (7, 3, 11, 13)
        assert all(getattr(s, f.name) == getattr(o, f.name) for f in fields(LoopSettings))
