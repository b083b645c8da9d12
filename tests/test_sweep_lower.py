"""Sweeps lowered once: each point's substituted model equals the model lowered at that point, and a
swept name consumed at compile time (a param, a domain, an option, bins, a seed) is lowered per point."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.batched import const_diff
from optlang.compiler import classify
from optlang.errors import OptlangError
from optlang.grammar.parser import parse_tree
from optlang.ir.evaluate import evaluate_np
from optlang.ir.lower import Lowerer
from optlang.sweep import _lower_points
from optlang.sweep_lower import Substitution

DATA = """param X = randn(40, 3, seed = 1)
param y = X @ [1, -2, 0.5] + randn(40, seed = 2) ^ 3
"""

SUBSTITUTED = {
    "ridge": (DATA + "param lam = 0.1\nvar w[3]\nminimize mean((X @ w - y)^2) + lam * sumsq(w)", "lam"),
    "folded": (
        DATA + "param lam = 1\nvar w[3]\nlet pen = 0.5 * lam * sumsq(w - lam * [1, 2, 3])\n"
        "minimize mean((X @ w - y)^2) + pen + (1 - lam) ^ 2 * sum(w)",
        "lam",
    ),
    "chi2": (
        DATA + "param r = 0.1\nvar w[3]\nvar b\nminimize robust mean((X @ w + b - y)^2) within chi2(radius = r)",
        "r",
    ),
    "tc": (
        DATA + "param r = 0.1\nvar w[3]\nvar b\n"
        "minimize robust mean((X @ w + b - y)^2) within target_conditional(chi2, radius = 2 * r, by = y, bins = 4)",
        "r",
    ),
    "prefer": (
        "var x[3] in [0, 1]\nparam w = 0.5\nminimize {\n  f1: sumsq(x)\n  f2: sumsq(x - 1)\n}\n"
        "prefer w * f1 + (1 - w) * f2",
        "w",
    ),
    "minimax": (
        "param lam = 1\nvar x[2]\nvar y[2]\nminimize max over y: 0.5 * lam * sumsq(x) + dot(x, y) - sumsq(y)",
        "lam",
    ),
    "bilevel": (
        "param lam = 1\nparam x0 = [1, 2, 3]\nvar x[3]\nminimize 0.5 * sumsq(x - lam * x0)\n"
        "subject to { x in argmin 0.5 * sumsq(x[0:2] - [1, 1]) }",
        "lam",
    ),
    "constraint": ("param c = 1\nvar x[2]\nminimize sumsq(x)\nsubject to { x[0] + x[1] >= c }", "c"),
    "ising": (
        "param t = 0.3\nparam A = randn(6, 6, seed = 7)\nspin s[6]\nminimize quad(s, (A + A.T) / 2) + t * sum(s)",
        "t",
    ),
}

PER_POINT = {  # the swept value is used at compile time: every point is lowered
    "param": (
        DATA + "param lam = 0.1\nparam mu = 2 * lam\nvar w[3]\nminimize mean((X @ w - y)^2) + mu * sumsq(w)",
        "lam",
    ),
    "domain": ("param u = 1\nvar x[2] in [0, u]\nminimize sumsq(x - 2)", "u"),
    "let in a domain": ("param u = 1\nlet v = 2 * u\nvar x[2] in [0, v]\nminimize sumsq(x - v)", "u"),
    "option": ("param a = 0.01\nvar x[2]\nminimize sumsq(x - 1)\nsolver gd { lr = a }", "a"),
    "bins": (
        DATA + "param k = 4\nvar w[3]\nvar b\n"
        "minimize robust mean((X @ w + b - y)^2) within target_conditional(chi2, radius = 0.1, by = y, bins = k)",
        "k",
    ),
    "seed": ("param s = 1\nparam X = randn(5, 2, seed = s)\nvar w[2]\nminimize sumsq(X @ w - 1)", "s"),
}


def _lowered(text: str, point: dict[str, float]):
    m = optlang.parse(text)
    src = m.ir.source
    ir = Lowerer(src, point, {}).run(parse_tree(src))
    return ir, classify(ir)


def _same_ir(a, b) -> None:
    oa, ob = a.objective, b.objective
    for x, y in [(oa.expr, ob.expr), (oa.prefer, ob.prefer), (oa.ambiguity_by, ob.ambiguity_by)]:
        assert (x is None) == (y is None)
        if x is not None:
            assert const_diff(x, y) == []  # same structure and every constant equal
    assert len(oa.entries) == len(ob.entries)
    for (na, ea), (nb, eb) in zip(oa.entries, ob.entries, strict=True):
        assert na == nb and const_diff(ea, eb) == []
    assert len(a.constraints) == len(b.constraints)
    for ca, cb in zip(a.constraints, b.constraints, strict=True):
        assert ca.sense == cb.sense and const_diff(ca.expr, cb.expr) == []
    if oa.ambiguity is not None:
        for f in ("kind", "radius", "p", "base", "bins"):
            assert getattr(oa.ambiguity, f) == getattr(ob.ambiguity, f)
    for k in b.params:
        assert np.array_equal(np.asarray(a.params[k]), np.asarray(b.params[k]))


@pytest.mark.parametrize("case", sorted(SUBSTITUTED))
def test_substituted_points_equal_relowered_points(case: str) -> None:
    text, name = SUBSTITUTED[case]
    m = optlang.parse(text)
    src = m.ir.source
    values = [0.25, 0.0, 3.0, 0.7]
    sub = Substitution.trace(src, parse_tree(src), {name: values[0]}, {}, {})
    assert sub is not None, case
    rng = np.random.default_rng(0)
    objectives = []
    for v in values:
        got = sub.model({name: v}, {}, {})
        ir, form = _lowered(text, {name: v})
        _same_ir(got.ir, ir)
        assert got.form == form
        expr = ir.objective.prefer or ir.objective.expr
        if expr is not None and got.kind not in ("ising", "maxcut"):
            vals = {n: rng.standard_normal(d.shape) for n, d in ir.variables.items()}
            sub_expr = got.ir.objective.prefer or got.ir.objective.expr
            assert np.array_equal(evaluate_np(sub_expr, vals), evaluate_np(expr, vals))
            objectives.append(float(np.sum(evaluate_np(sub_expr, vals))))
        if got.kind == "dro":
            objectives.append(got.ir.objective.ambiguity.radius)
    if objectives:  # the substitution did change the model between points
        assert len(set(objectives)) > 1


@pytest.mark.parametrize("case", sorted(PER_POINT))
def test_compile_time_uses_of_a_swept_name_are_lowered_per_point(case: str) -> None:
    text, name = PER_POINT[case]
    src = optlang.parse(text).ir.source
    assert Substitution.trace(src, parse_tree(src), {name: 2.0}, {}, {}) is None
    models = _lower_points(src, [{name: 2.0}, {name: 3.0}], {}, {})  # lowered per point: values follow
    for m, v in zip(models, (2.0, 3.0), strict=True):
        ir, _ = _lowered(text, {name: v})
        _same_ir(m.ir, ir)


def test_substituted_sweep_reports_a_bad_point_like_a_lowering() -> None:
    text, name = SUBSTITUTED["chi2"]
    m = optlang.parse(text)
    with pytest.raises(OptlangError) as e:  # a negative radius: E508, as lowering that point says
        m.sweep({name: [0.1, -0.5]})
    assert e.value.code == "E508"
    with pytest.raises(OptlangError) as e2:
        optlang.parse(text, params={name: -0.5})
    assert e2.value.code == "E508" and e2.value.message == e.value.message


def test_substituted_sweep_equals_a_relowered_sweep() -> None:
    text, name = SUBSTITUTED["folded"]
    m = optlang.parse(text)
    values = [0.01, 0.3, 2.0]
    a = m.sweep({name: values})
    singles = [optlang.parse(text, params={name: v}).solve(seed=0) for v in values]
    for r, s in zip(a.results, singles, strict=True):
        assert r.ok and r.objective == pytest.approx(s.objective, rel=1e-8)
