"""General bilevel structure: a level's follower-only quadratic part precomputed as c + bᵀy + ½yᵀQy
(exact values, gradients and Hessian-vector products; the answer unchanged), and the kkt baseline
through cvxpy when the single-level reformulation is a convex program (refusals otherwise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import optlang
from optlang.backends.base import RunContext
from optlang.backends.general_bilevel.levels import Levels

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def test_quadratic_split_finds_the_follower_only_quadratic_summands() -> None:
    prob = optlang.load(MODELS / "feature_reg.opt").compiled.problem
    assert prob.upper_split is not None and prob.upper_split.rest is None  # F = ½ mean((Xv w − yv)²)
    assert prob.lower_split is not None and prob.lower_split.rest is not None  # + ½ Σ exp(t) w² stays
    assert prob.lower_split.data_size >= 200 * 20
    wide = optlang.load(MODELS / "overparam_bilevel.opt").compiled.problem
    assert wide.lower_split is None  # ½‖A y − B x‖² involves the leader
    assert wide.lower_degree == 2
    ridge = optlang.load(MODELS / "ridge_hyper.opt").compiled.problem
    assert ridge.lower_degree == np.inf


def test_quadratic_form_matches_the_expression_in_values_gradients_and_hvps() -> None:
    prob = optlang.load(MODELS / "feature_reg.opt").compiled.problem
    ctx = RunContext(seed=0, dtype="float64")
    fast = Levels(prob, ctx, torch.float64)
    plain = Levels(prob, ctx, torch.float64, quadratic="off")
    assert fast.quadratic == ["upper", "lower"] and plain.quadratic == []
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(20, generator=gen, dtype=torch.float64) * 4 - 2
    y = torch.randn(20, generator=gen, dtype=torch.float64)
    v = torch.randn(20, generator=gen, dtype=torch.float64)
    assert fast.F(x, y) == pytest.approx(plain.F(x, y), rel=1e-12)
    ga, gb = fast.grad_g_y(x, y), plain.grad_g_y(x, y)
    assert ga[0] == pytest.approx(gb[0], rel=1e-12)
    torch.testing.assert_close(ga[1], gb[1], rtol=1e-11, atol=1e-13)
    for a, b in zip(fast.grad_F(x, y)[1:], plain.grad_F(x, y)[1:], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-13)
    oa, ob = fast.hessian_ops(x, y), plain.hessian_ops(x, y)
    torch.testing.assert_close(oa.yy(v), ob.yy(v), rtol=1e-11, atol=1e-13)
    torch.testing.assert_close(oa.xy(v), ob.xy(v), rtol=1e-11, atol=1e-13)
    torch.testing.assert_close(fast.hvp_F_yy(x, y, v), plain.hvp_F_yy(x, y, v), rtol=1e-11, atol=1e-13)


def test_quadratic_form_leaves_the_answer_unchanged() -> None:
    m = optlang.load(MODELS / "feature_reg.opt", params={"n": 60, "p": 6})
    a = m.solve(backend="hgms", seed=0)
    b = m.solve(backend="hgms", seed=0, options={"quadratic": "off"})
    assert a.info["quadratic_form"] == "upper,lower" and b.info["quadratic_form"] == "none"
    assert a.status == b.status == optlang.Status.CONVERGED
    assert a.objective == pytest.approx(b.objective, rel=1e-8)
    with pytest.raises(optlang.OptlangError, match="'auto', 'off'"):
        m.solve(backend="hgms", seed=0, options={"quadratic": "on"})


def _wide_reference(m: optlang.Model) -> float:
    A, B, c, x0 = (np.asarray(m.ir.params[k], dtype=np.float64) for k in ("A", "B", "c", "x0"))
    P = np.linalg.pinv(A)
    M = P @ B
    x = np.linalg.solve(M.T @ M + np.eye(B.shape[1]), M.T @ (P @ A @ c) + x0)
    y = M @ x + (np.eye(A.shape[1]) - P @ A) @ c
    return 0.5 * float(np.sum((y - c) ** 2) + np.sum((x - x0) ** 2))


def test_kkt_through_cvxpy_is_exact_on_a_singular_convex_lower_level() -> None:
    pytest.importorskip("cvxpy")
    m = optlang.load(MODELS / "overparam_bilevel.opt")
    r = m.solve(backend="kkt", seed=0, options={"solver": "cvxpy"})
    assert r.status == optlang.Status.OPTIMAL
    assert r.objective == pytest.approx(_wide_reference(m), rel=1e-6)
    assert all(c.passed for c in r.checks), [c for c in r.checks if not c.passed]


BOX_LEADER = """
param A = randn(8, 5, seed = 3)
param B = randn(8, 2, seed = 4)
var x[2] in [-0.2, 0.2]
var y[5]
minimize sumsq(y - 1) + sumsq(x)
subject to { y in argmin over y: sumsq(A @ y - B @ x) + 0.1 * sumsq(y) }
"""


def test_kkt_through_cvxpy_agrees_with_trust_constr_and_hgms_on_a_box_leader() -> None:
    pytest.importorskip("cvxpy")
    m = optlang.parse(BOX_LEADER)
    c = m.solve(backend="kkt", seed=0, options={"solver": "cvxpy"})
    h = m.solve(backend="hgms", seed=0)
    assert c.status == optlang.Status.OPTIMAL
    assert c.objective == pytest.approx(h.objective, rel=1e-6)
    assert c.objective <= h.objective + 1e-7  # a global optimum: nothing is better


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("ridge_hyper.opt", "not a polynomial of degree ≤ 2"),
        ("stackelberg.opt", "not DCP"),
    ],
)
def test_kkt_through_cvxpy_refuses_with_a_sentence(model: str, why: str) -> None:
    pytest.importorskip("cvxpy")
    m = optlang.load(MODELS / model)
    with pytest.raises(optlang.OptlangError, match=why) as info:
        m.solve(backend="kkt", seed=0, options={"solver": "cvxpy"})
    assert "solver = trust-constr" in info.value.message


def test_kkt_through_cvxpy_refuses_a_nonconvex_lower_level() -> None:
    pytest.importorskip("cvxpy")
    src = "var x\nvar y[2]\nminimize sumsq(y) + x^2\nsubject to { y in argmin over y: y[0]^2 - y[1]^2 + x * y[0] }\n"
    m = optlang.parse(src)
    with pytest.raises(optlang.OptlangError, match="negative eigenvalue"):
        m.solve(backend="kkt", seed=0, options={"solver": "cvxpy"})


def test_kkt_solver_option_is_checked() -> None:
    m = optlang.load(MODELS / "overparam_bilevel.opt")
    with pytest.raises(optlang.OptlangError, match="'trust-constr', 'cvxpy'"):
        m.solve(backend="kkt", seed=0, options={"solver": "gurobi"})
