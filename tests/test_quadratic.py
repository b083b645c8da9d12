"""The Ising lowering (J, h, constant) agrees with direct float64 evaluation of the model, for
spin and binary variables, maximize and minimize, and every quadratic atom."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import optlang

MODELS = {
    "quad_field": """
param J = randn(6, 6, seed = 1)
param h = randn(6, seed = 2)
spin s[6]
minimize quad(s, J) + dot(h, s) + 3
""",
    "qubo_binary": """
param Q = randn(5, 5, seed = 3)
binary x[5]
minimize quad(x, Q) - 2 * sum(x) + x[0] * x[4]
""",
    "maximize_products": """
spin s[5]
spin t[3]
maximize s[0] * s[1] - 2 * s[1] * t[2] + sum(s * s) + (s[3] - t[0])^2 + 0.5 * sum(t)
""",
    "matmul_forms": """
param A = randn(4, 5, seed = 4)
param b = randn(4, seed = 5)
spin s[5]
minimize sumsq(A @ s - b) + mean(square(s - 1)) + s @ A.T @ b
""",
    "graph_cut": """
graph G = erdos_renyi(7, 0.6, seed = 3, weights = "signed")
spin s[7]
maximize cut(G, s) - 0.2 * sum(s)
""",
    "matrix_index": """
spin s[2, 3]
binary x[2, 2]
minimize s[1, 2] * s[0, 0] + 0.5 * s[1, 0] - sum(s[0, 1:3]) + s[:, 1] @ [1, -2] + x[1, 0] * s[1, 1] - x[0, 1]
""",
    "array_literal": """
spin s[4]
binary x[2]
minimize [s[0], s[1] * s[2], 1, x[0] * s[3]] @ [1, 2, -1, 3] + sumsq([x[1], s[0]] - [1, 0.5])
""",
    "ring": """
param n = 9
graph R = torus(1, n)
spin s[n]
minimize quad(s, adjacency(R)) / 2 + 0.1 * sum(s)
""",
}


def _all_points(model: optlang.Model) -> list[dict[str, np.ndarray]]:
    vars_ = [v for v in model.ir.variables.values()]
    sizes = [int(np.prod(v.shape)) for v in vars_]
    total = sum(sizes)
    out = []
    for bits in itertools.product([0, 1], repeat=total):
        vals, o = {}, 0
        for v, k in zip(vars_, sizes, strict=True):
            b = np.array(bits[o : o + k], dtype=float).reshape(v.shape)
            vals[v.name] = b if v.kind == "binary" else 2 * b - 1
            o += k
        out.append(vals)
    return out


@pytest.mark.parametrize("name", sorted(MODELS))
def test_lowered_energy_equals_model(name: str) -> None:
    from optlang.ir.evaluate import evaluate_np

    m = optlang.parse(MODELS[name])
    assert m.kind == "ising"
    comp = m.compiled
    problem = comp.problem
    expr = m.ir.objective.expr
    q_vars = [v for v in m.ir.variables.values()]
    for vals in _all_points(m)[:: max(1, len(_all_points(m)) // 64)]:
        direct = evaluate_np(expr, vals)
        s = np.concatenate([((2 * vals[v.name] - 1) if v.kind == "binary" else vals[v.name]).ravel() for v in q_vars])
        lowered = comp.sign * problem.energy(s)
        assert lowered == pytest.approx(direct, rel=1e-10, abs=1e-9)
        back = comp.to_user({"s": s})
        for k in vals:
            np.testing.assert_allclose(back[k], vals[k])


def test_lowering_keeps_j_symmetric_with_zero_diagonal() -> None:
    m = optlang.parse(MODELS["quad_field"])
    J = m.compiled.problem.J
    assert abs(J - J.T).max() < 1e-12
    assert np.all(J.diagonal() == 0)
    assert m.form.has_field


def test_maxcut_is_lowered_from_the_graph() -> None:
    m = optlang.parse("graph G = erdos_renyi(30, 0.2, seed = 1)\nmaxcut G\n")
    p = m.compiled.problem
    rng = np.random.default_rng(0)
    W = m.ir.graphs["G"].W
    for _ in range(5):
        s = rng.choice([-1.0, 1.0], size=30)
        i, j = W.nonzero()
        cut = 0.5 * np.sum(W.data * (1 - s[i] * s[j])) / 2
        assert -p.energy(s) == pytest.approx(cut)
