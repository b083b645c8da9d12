"""Sweeps: the grid, the batched L-BFGS, the batched DRO duals, and every swept point equal to its
single solve (and to a known answer: ridge's closed form, dro-cvxpy's optimum)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import optlang
from optlang.backends.dro.auto import BatchDuals, Member
from optlang.backends.dro.common import make_regions, robust_value, single_region
from optlang.batched import lbfgs, value_and_grad
from optlang.cli import main
from optlang.errors import OptionError
from optlang.sweep import grid, parse_values

RIDGE = """param X = randn(120, 6, seed = 1)
param y = X @ randn(6, seed = 3) + randn(120, seed = 2)
param lam = 0.1
var w[6]
minimize mean((X @ w - y)^2) + lam * sumsq(w)
"""

DRO = """param X = randn(150, 3, seed = 1)
param y = X @ [1, -2, 0.5] + randn(150, seed = 2) ^ 3
param r = 0.1
var w[3]
var b
minimize robust mean((X @ w + b - y)^2) within {AMB}
"""


def test_parse_values() -> None:
    assert parse_values("logspace(-1, 1, 3)") == pytest.approx([0.1, 1.0, 10.0])
    assert parse_values("linspace(0, 1, 5)") == pytest.approx([0, 0.25, 0.5, 0.75, 1])
    assert parse_values("[0.1, 2, 3e-2]") == [0.1, 2.0, 0.03]
    assert parse_values("4") == [4.0]
    for bad in ("__import__('os')", "logspace(1, 2)", "[a, b]", ""):
        with pytest.raises(OptionError):
            parse_values(bad)


def test_grid_product_and_zip() -> None:
    pts = grid({"a": [1, 2], "b": [3, 4, 5]})
    assert len(pts) == 6 and pts[0] == {"a": 1, "b": 3} and pts[-1] == {"a": 2, "b": 5}
    assert grid({"a": [1, 2], "b": [3, 4]}, "zip") == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    with pytest.raises(OptionError):
        grid({"a": [1, 2], "b": [3]}, "zip")


def test_batched_lbfgs_rows_are_independent() -> None:
    # B quadratics ½ zᵀA_b z − c_bᵀz with very different conditioning: each row reaches its own minimizer
    rng = np.random.default_rng(0)
    B, d = 5, 4
    A = []
    for b in range(B):
        Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
        A.append(Q @ np.diag(np.logspace(0, b, d)) @ Q.T)
    At = torch.tensor(np.stack(A))
    c = torch.tensor(rng.standard_normal((B, d)))

    def f(z: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return 0.5 * torch.einsum("bi,bij,bj->b", z, At[rows], z) - (c[rows] * z).sum(1)

    out = lbfgs(value_and_grad(f), torch.zeros(B, d, dtype=torch.float64), max_iter=500)
    for b in range(B):
        assert np.allclose(out.z[b].numpy(), np.linalg.solve(A[b], c[b].numpy()), atol=1e-6)
    assert out.converged.all()


def test_batch_duals_equal_robust_value() -> None:
    rng = np.random.default_rng(1)
    n = 200
    y = rng.standard_normal(n) ** 3
    L = rng.standard_normal((5, n)) ** 2
    idx = np.sort(rng.permutation(n)[:150])
    members = [
        Member(None, single_region(n, 0.3), "chi2", "robust", 0.3),
        Member(None, make_regions(y, 10, 0.1), "chi2", "robust", 0.1),
        Member(idx, make_regions(y[idx], 10, 0.3), "chi2", "robust", 0.5),
        Member(idx, make_regions(y[idx], 5, 0.2), "chi2", "empirical", 0.0),
        Member(None, make_regions(y, 7, 1.0), "chi2", "balanced", 0.0),
    ]
    rows = np.array([4, 0, 2])  # a subset, out of order
    W = BatchDuals(members, n).weights(L[rows], rows)
    for i, b in enumerate(rows):
        m = members[b]
        row = L[b] if m.idx is None else L[b, m.idx]
        rv = robust_value(row, m.regions, m.base, m.mix, m.outer)
        w = np.zeros(n)
        w[np.arange(n) if m.idx is None else m.idx] = rv.sample_weights
        assert np.allclose(W[i], w, atol=1e-14)
        assert W[i] @ L[b] == pytest.approx(rv.value, rel=1e-12)


def test_ridge_sweep_is_batched_and_equals_single_solves_and_closed_form() -> None:
    lams = [0.001, 0.03, 1.0, 10.0]
    m = optlang.parse(RIDGE)
    sw = m.sweep({"lam": lams})
    assert sw.batched and sw.plan.startswith("batched")
    X = m.ir.params["X"]
    y = m.ir.params["y"]
    N = len(y)
    for lam, r in zip(lams, sw.results, strict=True):
        assert r.ok
        single = optlang.parse(RIDGE, params={"lam": lam}).solve(seed=0)
        assert r.objective == pytest.approx(single.objective, rel=1e-8)
        w = np.linalg.solve(X.T @ X / N + lam * np.eye(X.shape[1]), X.T @ y / N)
        assert np.allclose(r.values["w"], w, atol=1e-6)


@pytest.mark.parametrize(
    "amb", ["chi2(radius = r)", "kl(radius = r)", "target_conditional(chi2, radius = r, by = y, bins = 5)"]
)
def test_dro_sweep_points_equal_single_solves_and_cvxpy(amb: str) -> None:
    text = DRO.replace("{AMB}", amb)
    radii = [0.0, 0.05, 0.3]
    sw = optlang.parse(text).sweep({"r": radii})
    assert sw.batched
    for r, res in zip(radii, sw.results, strict=True):
        assert res.ok, [c for c in res.checks if not c.passed]
        single = optlang.parse(text, params={"r": r}).solve(seed=0)
        exact = optlang.parse(text, params={"r": r}).solve(backend="dro-cvxpy")
        assert res.objective == pytest.approx(single.objective, rel=1e-5)
        assert res.objective == pytest.approx(exact.objective, rel=1e-6)


def test_sweep_of_a_shape_param_runs_point_by_point() -> None:
    text = "param n = 3\nvar x[n]\nminimize sumsq(x - 1)\n"
    sw = optlang.parse(text).sweep({"n": [2, 4]})
    assert not sw.batched and "structure" in sw.plan
    assert [r.objective for r in sw.results] == pytest.approx([0.0, 0.0], abs=1e-8)
    assert sw.results[1].values["x"].shape == (4,)


def test_domains_run_point_by_point_with_the_reason() -> None:
    text = "param c = 2\nvar x[3] in [0, 1]\nminimize sumsq(x - c)\n"
    sw = optlang.parse(text).sweep({"c": [0.5, 2.0]})
    assert not sw.batched and "domains" in sw.plan
    assert sw.results[1].values["x"] == pytest.approx([1, 1, 1], abs=1e-6)


def test_zip_records_and_outputs(tmp_path) -> None:
    text = "param a = 1\nparam b = 1\nvar x\nminimize (x - a)^2 + b * x^2\n"
    sw = optlang.parse(text).sweep({"a": [1.0, 2.0], "b": [1.0, 3.0]}, mode="zip")
    recs = sw.records()
    assert [(r["a"], r["b"]) for r in recs] == [(1.0, 1.0), (2.0, 3.0)]
    assert recs[1]["x"] == pytest.approx(2.0 / 4.0, abs=1e-7)  # argmin (x−a)² + b x² = a / (1 + b)
    d = json.loads(sw.to_json())
    assert d["batched"] and len(d["results"]) == 2
    assert sw.to_csv().splitlines()[0].startswith("a,b,status,objective,ok,x")
    assert "a" in sw.table() and "<svg" in sw.html()
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(OptionError):
            sw.to_pandas()
    else:
        assert list(sw.to_pandas()["a"]) == [1.0, 2.0]


def test_cli_sweep(tmp_path, capsys) -> None:
    path = tmp_path / "ridge.opt"
    path.write_text(RIDGE)
    csv_path = tmp_path / "s.csv"
    report = tmp_path / "s.html"
    rc = main(["sweep", str(path), "-p", "lam=logspace(-2, 0, 3)", "--csv", str(csv_path), "--report", str(report)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "3 points, batched" in out
    assert len(csv_path.read_text().splitlines()) == 4
    assert "<svg" in report.read_text()
    rc = main(["sweep", str(path), "-p", "lam=[0.1, 1]", "--json"])
    assert rc == 0
    assert len(json.loads(capsys.readouterr().out)["records"]) == 2
    assert main(["sweep", str(path), "-p", "lam=oops(1)"]) != 0


def test_unbounded_point_is_diverged_and_the_others_unaffected() -> None:
    text = "param lam = 0.1\nvar x[3]\nminimize sumsq(x - 1) + lam * sumsq(x)\n"
    sw = optlang.parse(text).sweep({"lam": [-2.0, 0.1]})
    assert sw.results[0].status.value == "diverged"
    assert sw.results[1].ok and sw.results[1].values["x"] == pytest.approx([1 / 1.1] * 3, abs=1e-8)


def test_maximize_sweep_keeps_the_user_sense() -> None:
    text = "param lam = 0.1\nvar x\nmaximize -(x - 1)^2 - lam * x^2\n"
    sw = optlang.parse(text).sweep({"lam": [1.0, 3.0]})
    assert [r.values["x"] for r in sw.results] == pytest.approx([0.5, 0.25], abs=1e-8)
    assert [r.objective for r in sw.results] == pytest.approx([-0.5, -0.75], abs=1e-10)


def test_params_that_use_a_swept_name_are_evaluated_at_every_point() -> None:
    """Sweep-independent params are computed once and reused; a param built from the swept name is not."""
    text = """param X = randn(50, 3, seed = 1)
param s = 1
param y = s * (X @ [1, 2, 3])
var w[3]
minimize mean((X @ w - y)^2) + 0.01 * sumsq(w)
"""
    import optlang
    from optlang.grammar.parser import parse_tree
    from optlang.sweep import point_free_params

    m = optlang.parse(text)
    points = [{"s": 1.0}, {"s": 2.0}]
    reuse = point_free_params(m.ir.source, parse_tree(m.ir.source), points, {}, {})
    assert set(reuse) == {"X"}
    sw = m.sweep({"s": [1.0, 2.0, 3.0]})
    for v, r in zip([1.0, 2.0, 3.0], sw.results, strict=True):
        single = optlang.parse(text, params={"s": v}).solve(seed=0)
        assert r.values["w"] == pytest.approx(single.values["w"], rel=1e-4, abs=1e-6)
        assert r.values["w"] == pytest.approx([v, 2 * v, 3 * v], rel=5e-2)


def test_batch_duals_of_global_balls_equal_robust_value() -> None:
    # every member one region of all samples (the χ² radius sweep): the direct path, no scatter
    rng = np.random.default_rng(2)
    n = 300
    L = rng.standard_normal((4, n)) ** 2
    L[3] = 1.0  # ties everywhere: the point mass case
    radii = [0.0, 0.05, 3.0, 0.5]
    members = [Member(None, single_region(n, r), "chi2", "robust", r) for r in radii]
    duals = BatchDuals(members, n)
    assert duals.plain
    rows = np.array([2, 0, 3, 1])
    W = duals.weights(L[rows], rows)
    for i, b in enumerate(rows):
        rv = robust_value(L[b], members[b].regions, "chi2", "robust", radii[b])
        assert np.allclose(W[i], rv.sample_weights, atol=1e-14)
        assert W[i] @ L[b] == pytest.approx(rv.value, rel=1e-12)


def test_batch_robust_values_equal_robust_value() -> None:
    # the batched sweep's report takes its robust values from the batched duals: equal to robust_value
    rng = np.random.default_rng(3)
    n = 240
    y = rng.standard_normal(n) ** 3
    L = rng.standard_normal((4, n)) ** 2
    members = [
        Member(None, make_regions(y, 8, 0.2), "chi2", "robust", 0.2),
        Member(None, make_regions(y, 8, 2.5), "chi2", "robust", 2.5),
        Member(None, make_regions(y, 5, 0.3), "chi2", "empirical", 0.0),
        Member(None, single_region(n, 0.4), "chi2", "robust", 0.4),
    ]
    rows = np.array([3, 1, 0, 2])
    got = BatchDuals(members, n).robust_values(L[rows], rows, members)
    for i, b in enumerate(rows):
        m = members[b]
        rv = robust_value(L[b], m.regions, m.base, m.mix, m.outer)
        assert got[i].value == pytest.approx(rv.value, rel=1e-12)
        assert np.allclose(got[i].region_values, rv.region_values, rtol=1e-12, atol=0)
        assert np.allclose(got[i].region_weights, rv.region_weights, atol=1e-14)
        assert np.allclose(got[i].sample_weights, rv.sample_weights, atol=1e-14)


def test_dro_sweep_closed_form_linear_losses_equal_the_autograd_path(monkeypatch) -> None:
    # ℓ = (X w + b − y)²: losses and gradient in closed form; the same points as through the model's
    # own (vmapped, autograd) function
    import optlang.batched_solve as bs

    text = DRO.replace("{AMB}", "target_conditional(chi2, radius = r, by = y, bins = 5)")
    radii = [0.0, 0.1, 0.5, 2.0]
    fast = optlang.parse(text).sweep({"r": radii})
    assert "linear residuals in closed form" in fast.plan
    monkeypatch.setattr(bs, "_linear_losses", lambda *a: None)
    slow = optlang.parse(text).sweep({"r": radii})
    assert "closed form" not in slow.plan
    for a, b in zip(fast.results, slow.results, strict=True):
        assert a.ok and b.ok
        assert a.objective == pytest.approx(b.objective, rel=1e-7)


def test_dro_sweep_of_a_nonlinear_loss_uses_the_model_function() -> None:
    text = DRO.replace("(X @ w + b - y)^2", "log(1 + (X @ w + b - y)^2)").replace("{AMB}", "chi2(radius = r)")
    radii = [0.05, 0.4]
    sw = optlang.parse(text).sweep({"r": radii})
    assert sw.batched and "closed form" not in sw.plan
    for r, res in zip(radii, sw.results, strict=True):
        single = optlang.parse(text, params={"r": r}).solve(seed=0)
        assert res.ok and res.objective == pytest.approx(single.objective, rel=1e-5)


def test_closed_form_losses_that_disagree_with_the_model_are_not_used(monkeypatch) -> None:
    import optlang.batched_solve as bs

    orig = bs._LinearLosses.__call__

    def off(self, z):  # a closed form off by 1e-9: the probe against the model's function refuses it
        L, dL = orig(self, z)
        return L * (1 + 1e-9), dL

    monkeypatch.setattr(bs._LinearLosses, "__call__", off)
    sw = optlang.parse(DRO.replace("{AMB}", "chi2(radius = r)")).sweep({"r": [0.1, 0.3]})
    assert sw.batched and "closed form" not in sw.plan


def test_long_ridge_path_warm_started_with_curvature_equals_closed_form() -> None:
    # ≥ 16 points: anchors first, then every row from its anchor's solution and curvature pairs
    lams = np.logspace(-3, 1, 20)
    m = optlang.parse(RIDGE)
    sw = m.sweep({"lam": lams})
    assert sw.batched
    X, y = m.ir.params["X"], m.ir.params["y"]
    N = len(y)
    for lam, r in zip(lams, sw.results, strict=True):
        assert r.ok and r.status.value == "converged"
        w = np.linalg.solve(X.T @ X / N + lam * np.eye(X.shape[1]), X.T @ y / N)
        assert np.allclose(r.values["w"], w, atol=1e-7)
