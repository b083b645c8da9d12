"""Shared subexpressions are evaluated once per call (ir/evaluate.py `_closures`), and the objectives of a
multi-objective model evaluate together (`MultiObjectiveProblem.joint`): same values and gradients as the
expressions written out, nothing kept from one call to the next, and one objective's gradient never runs
through another's graph."""

from __future__ import annotations

import numpy as np
import torch

import optlang
from optlang.ir import evaluate
from optlang.ir.evaluate import _shared_ops, evaluate_np, torch_function

SHARED = """
var x[3] in [0.1, 2]
let u = exp(x) / sum(exp(x))
let t = sum(u * log(u)) + sum(sin(3 * x))
minimize {
  f1: t + sum(u^2)
  f2: t^2 - prod(u)
}
"""

INLINE = """
var x[3] in [0.1, 2]
minimize {
  f1: sum(exp(x) / sum(exp(x)) * log(exp(x) / sum(exp(x)))) + sum(sin(3 * x)) + sum((exp(x) / sum(exp(x)))^2)
  f2: (sum(exp(x) / sum(exp(x)) * log(exp(x) / sum(exp(x)))) + sum(sin(3 * x)))^2 - prod(exp(x) / sum(exp(x)))
}
"""


def _problem(text: str) -> object:
    return optlang.parse(text).compiled.problem


def _value_grad(fn: object, x: np.ndarray) -> tuple[float, np.ndarray]:
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    out = fn({"x": xt})  # type: ignore[operator]
    (g,) = torch.autograd.grad(out, xt)
    return float(out.detach()), g.numpy()


def test_a_let_used_twice_is_one_shared_node() -> None:
    ir = optlang.parse(SHARED).ir
    f1 = ir.objective.entries[0][1]
    tree = sum(1 for _ in f1.walk())
    distinct = len({id(n) for n in f1.walk()})
    assert distinct < tree  # the model's lets are shared nodes, which the tree walk repeats
    assert _shared_ops([f1])  # and the compiled closure evaluates them once


def test_shared_evaluation_matches_the_written_out_expressions_and_numpy() -> None:
    shared, inline = _problem(SHARED), _problem(INLINE)
    rng = np.random.default_rng(0)
    ir = optlang.parse(SHARED).ir
    for _ in range(5):
        x = rng.uniform(0.1, 2.0, 3)
        for k in range(2):
            fs = shared.objectives[k][1].compile("cpu", torch.float64)  # type: ignore[attr-defined]
            fi = inline.objectives[k][1].compile("cpu", torch.float64)  # type: ignore[attr-defined]
            vs, gs = _value_grad(fs, x)
            vi, gi = _value_grad(fi, x)
            assert abs(vs - vi) <= 1e-12 * (1 + abs(vi))
            np.testing.assert_allclose(gs, gi, rtol=1e-10, atol=1e-12)
            ref = evaluate_np(ir.objective.entries[k][1], {"x": x})
            assert abs(vs - float(ref)) <= 1e-12 * (1 + abs(float(ref)))


def test_nothing_is_kept_from_one_call_to_the_next() -> None:
    fn = _problem(SHARED).objectives[0][1].compile("cpu", torch.float64)  # type: ignore[attr-defined]
    ir = optlang.parse(SHARED).ir
    for x in (np.array([0.2, 0.5, 1.9]), np.array([1.5, 0.3, 0.7]), np.array([0.2, 0.5, 1.9])):
        got = float(fn({"x": torch.as_tensor(x)}))
        assert abs(got - float(evaluate_np(ir.objective.entries[0][1], {"x": x}))) <= 1e-12


def test_the_objectives_evaluate_together_with_each_ones_gradient() -> None:
    problem = _problem(SHARED)
    joint = problem.joint.compile("cpu", torch.float64)  # type: ignore[attr-defined]
    x = np.array([0.3, 1.1, 1.7])
    xt = torch.tensor(x, requires_grad=True)
    Fs = joint({"x": xt})
    assert len(Fs) == 2 and all(f.shape == () for f in Fs)
    for k in range(2):
        (g,) = torch.autograd.grad(Fs[k], xt, retain_graph=True)
        v, g_one = _value_grad(problem.objectives[k][1].compile("cpu", torch.float64), x)  # type: ignore[attr-defined]
        assert abs(float(Fs[k].detach()) - v) <= 1e-12 * (1 + abs(v))
        np.testing.assert_allclose(g.numpy(), g_one, rtol=1e-10, atol=1e-12)


def test_one_objectives_gradient_does_not_run_through_an_infinite_slope_of_another() -> None:
    # f2 = sqrt(x0) has an infinite slope at x0 = 0; ∇f1 there must stay finite (a stacked vector's row
    # would send a zero upstream gradient through sqrt's backward: 0 · ∞ = NaN)
    problem = _problem("var x[2] in [0, 1]\nlet s = sum(x^2)\nminimize {\n  f1: s\n  f2: sqrt(x[0]) + s\n}\n")
    joint = problem.joint.compile("cpu", torch.float64)  # type: ignore[attr-defined]
    xt = torch.tensor([0.0, 0.5], dtype=torch.float64, requires_grad=True)
    Fs = joint({"x": xt})
    (g,) = torch.autograd.grad(Fs[0], xt)
    assert torch.isfinite(g).all() and torch.allclose(g, torch.tensor([0.0, 1.0], dtype=torch.float64))


def test_a_problem_built_without_the_compiler_evaluates_its_objectives_in_turn() -> None:
    from optlang.problem import MultiObjectiveProblem, TorchFunction, Variable

    f1 = TorchFunction.from_callable(lambda v, batch=None: (v["x"] ** 2).sum())
    f2 = TorchFunction.from_callable(lambda v, batch=None: ((v["x"] - 1) ** 2).sum())
    problem = MultiObjectiveProblem((Variable("x", (2,)),), (("f1", f1), ("f2", f2)))
    Fs = problem.joint.compile("cpu", torch.float64)({"x": torch.tensor([0.5, 2.0], dtype=torch.float64)})
    assert [float(f.detach()) for f in Fs] == [4.25, 1.25]


def test_a_plain_expression_without_shared_nodes_needs_no_memo() -> None:
    ir = optlang.parse("var x in [0, 1]\nminimize x^2 + 3 * x\n").ir
    node = ir.objective.expr
    assert not _shared_ops([node])
    fn = torch_function(node).compile("cpu", torch.float64)
    assert float(fn({"x": torch.tensor(0.5, dtype=torch.float64)})) == 1.75
    assert evaluate.sample_size(node) is None


def _random_model(rng: np.random.Generator) -> str:
    """A model whose lets reuse earlier lets several times, two objectives over them."""
    names = ["x"]
    lines = ["var x[3] in [-1, 1]"]
    unary = ["sin({})", "cos({})", "exp(-({})^2)", "({})^2", "0.5 * {}"]
    for k in range(int(rng.integers(2, 6))):
        a, b = (names[int(i)] for i in rng.integers(0, len(names), 2))
        u = unary[int(rng.integers(0, len(unary)))]
        op = ["+", "-", "*"][int(rng.integers(0, 3))]
        lines.append(f"let t{k} = {u.format(a)} {op} {b}")
        names.append(f"t{k}")
    last = names[-1]
    mid = names[len(names) // 2]
    lines.append("minimize {")
    lines.append(f"  f1: sum({last}) + sum({mid}^2)")
    lines.append(f"  f2: prod(cos({last})) - mean({mid})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_random_models_with_shared_lets_match_numpy_and_finite_differences() -> None:
    rng = np.random.default_rng(11)
    sharing = 0
    for _ in range(25):
        text = _random_model(rng)
        model = optlang.parse(text)
        problem = model.compiled.problem
        sharing += bool(_shared_ops([e for _, e in model.ir.objective.entries]))
        joint = problem.joint.compile("cpu", torch.float64)  # type: ignore[attr-defined]
        x = rng.uniform(-1, 1, 3)
        xt = torch.tensor(x, requires_grad=True)
        Fs = joint({"x": xt})
        for k, (_, expr) in enumerate(model.ir.objective.entries):
            ref = float(evaluate_np(expr, {"x": x}))
            assert abs(float(Fs[k].detach()) - ref) <= 1e-12 * (1 + abs(ref)), text
            (g,) = torch.autograd.grad(Fs[k], xt, retain_graph=True)
            h = 1e-6
            fd = [
                (float(evaluate_np(expr, {"x": x + h * e})) - float(evaluate_np(expr, {"x": x - h * e}))) / (2 * h)
                for e in np.eye(3)
            ]
            np.testing.assert_allclose(g.numpy(), fd, rtol=1e-5, atol=1e-6, err_msg=text)
    assert sharing >= 20  # most draws share nodes across the objectives (the case under test)


def test_one_compiled_function_called_from_two_threads_keeps_each_calls_values() -> None:
    # a compiled function is shared by every solve of its model; the per-call values of its shared nodes
    # are per thread, so two threads evaluating different points never read each other's
    from concurrent.futures import ThreadPoolExecutor

    fn = _problem(SHARED).objectives[1][1].compile("cpu", torch.float64)  # type: ignore[attr-defined]
    expr = optlang.parse(SHARED).ir.objective.entries[1][1]
    rng = np.random.default_rng(5)
    points = [rng.uniform(0.1, 2.0, 3) for _ in range(200)]

    def value(x: np.ndarray) -> float:
        return float(fn({"x": torch.as_tensor(x)}))

    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(value, points))
    for x, v in zip(points, got, strict=True):
        ref = float(evaluate_np(expr, {"x": x}))
        assert abs(v - ref) <= 1e-12 * (1 + abs(ref))
