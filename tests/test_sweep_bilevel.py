"""Batched sweeps of simple bilevel models (backends/bilevel/batched.py, batched_bilevel.py): every
point equal to its single sdbpg solve and to the known answer, verified like one; fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.cli import main

MINNORM = """param A = randn(4, 12, seed = 1)
param b = randn(4, seed = 2)
param x0 = randn(12, seed = 3)
param lam = 1
param s = 1
var x[12]
minimize 0.5 * sumsq(x - lam * x0)
subject to { x in argmin 0.5 * sumsq(A @ x - s * b) }
"""


def closed_form(m: optlang.Model, lam: float, s: float) -> np.ndarray:
    """x* = x₀' + A⁺(s·b − A x₀') with x₀' = lam·x₀: the projection of x₀' onto {A x = s·b}."""
    A, b, x0 = (np.asarray(m.params[k], dtype=np.float64) for k in ("A", "b", "x0"))
    z = lam * x0
    return z + np.linalg.pinv(A) @ (s * b - A @ z)


def test_upper_param_sweep_equals_single_solves_and_the_closed_form() -> None:
    m = optlang.parse(MINNORM)
    lams = [0.1, 0.3, 0.6]
    sw = m.sweep({"lam": lams})
    assert sw.batched and "one bilevel problem" in sw.plan and "batched SDBPG" in sw.plan
    for lam, r in zip(lams, sw.results, strict=True):
        assert r.ok and r.status.value == "converged" and r.backend == "batched-sdbpg"
        assert {c.name for c in r.checks} >= {"lower_stationary", "kkt", "finite"}
        single = optlang.parse(MINNORM, params={"lam": lam}).solve(seed=0, dtype="float64")
        assert single.ok and r.iterations == single.iterations  # the same loop, row by row
        assert np.allclose(r.values["x"], single.values["x"], atol=1e-8)
        assert r.objective == pytest.approx(single.objective, rel=1e-9)
        assert np.allclose(r.values["x"], closed_form(m, lam, 1.0), atol=5e-3)


BOX_ACTIVE = """param p = 0
var x[3] in [-1, 0.5]
minimize (x[0] - 2)^2 + x[1]^2 + x[2]^2
subject to { x in argmin (x[0] + x[1] - p)^2 }
"""


def test_box_sweep_with_an_active_bound_equals_single_solves_and_the_answer() -> None:
    """x₀ held at its bound 0.5 on x₀ + x₁ = p: x = (0.5, p − 0.5, 0); the batched rows take λ from the
    coordinates that move, as the single solve does, and converge to it."""
    ps = [0.0, 0.4]
    sw = optlang.parse(BOX_ACTIVE).sweep({"p": ps})
    assert sw.batched
    for p, r in zip(ps, sw.results, strict=True):
        assert r.status.value == "converged" and all(c.passed for c in r.checks)
        single = optlang.parse(BOX_ACTIVE, params={"p": p}).solve(seed=0, dtype="float64")
        assert single.status.value == "converged" and r.iterations == single.iterations
        assert np.allclose(r.values["x"], single.values["x"], atol=1e-8)
        assert np.allclose(r.values["x"], [0.5, p - 0.5, 0.0], atol=1e-3)


def test_lower_param_sweep_with_domains_equals_single_solves_at_the_same_budget() -> None:
    text = MINNORM.replace("var x[12]", "var x[12] in [-1.5, 1.5]")
    m = optlang.parse(text)
    sw = m.sweep({"s": [0.5, 2.0]}, max_iter=200)
    assert sw.batched
    for pt, r in zip(sw.points, sw.results, strict=True):
        single = optlang.parse(text, params=pt).solve(seed=0, dtype="float64", max_iter=200)
        assert r.status == single.status and r.iterations == single.iterations == 200
        assert np.allclose(r.values["x"], single.values["x"], atol=1e-8)
        assert np.all(np.abs(r.values["x"]) <= 1.5 + 1e-12)


def test_named_baseline_runs_point_by_point() -> None:
    sw = optlang.parse(MINNORM).sweep({"lam": [0.2, 0.4]}, backend="penalty", max_iter=50)
    assert not sw.batched and "penalty" in sw.plan and len(sw.results) == 2


def test_minibatch_levels_are_not_batched() -> None:
    from optlang.backends.bilevel.batched import why_not
    from optlang.backends.bilevel.sdbpg import SDBPG

    p = optlang.parse(MINNORM).compiled.problem
    assert why_not([p], SDBPG().make_options({})) is None
    assert "phi = gap" in (why_not([p], SDBPG().make_options({"phi": "gap"})) or "")


def test_cli_bilevel_sweep(tmp_path, capsys) -> None:
    path = tmp_path / "b.opt"
    path.write_text(MINNORM)
    assert main(["sweep", str(path), "-p", "lam=[0.2, 0.5]", "--json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    assert doc["batched"] and len(doc["records"]) == 2 and all(r["ok"] for r in doc["records"])
