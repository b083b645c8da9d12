"""Grammar and lowering: the LANGUAGE.md examples parse to the right kinds, positions are carried,
line rules hold, IR text round-trips, and mutated models only ever raise OptlangError (fuzz)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import optlang
from optlang.grammar.parser import parse_tree
from optlang.ir.nodes import to_text
from optlang.source import Source

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted((ROOT / "models").glob("*.opt"))


def test_every_shipped_model_parses_and_classifies() -> None:
    kinds = {}
    for path in MODELS:
        kinds[path.name] = optlang.load(path).kind
    assert kinds["minnorm.opt"] == "bilevel"
    assert kinds["robust_game.opt"] == "minimax"
    assert kinds["zdt1_pref.opt"] == "multiobjective"
    assert kinds["ising_ring.opt"] == "ising"
    assert kinds["housing_tc.opt"] == "dro"
    assert kinds["smooth_box.opt"] == "smooth"
    counts: dict[str, int] = {}
    for k in kinds.values():
        counts[k] = counts.get(k, 0) + 1
    for kind in ("ising", "maxcut", "bilevel", "minimax", "dro", "multiobjective", "smooth"):
        assert counts.get(kind, 0) >= 2, f"need at least two models of kind {kind}"


def test_positions_on_every_node() -> None:
    tree = parse_tree(Source("param n = 3\nvar x[n]\nminimize sumsq(x) + 1\n"))
    for sub in tree.iter_subtrees():
        assert sub.meta.line >= 1 and sub.meta.column >= 1


def test_line_continuation_inside_brackets_and_semicolons() -> None:
    m = optlang.parse("param a = [1,\n 2,\n 3]; var x[3]\nminimize sumsq(\n  x - a\n)\n")
    assert m.kind == "smooth"
    np.testing.assert_array_equal(m.ir.params["a"], [1, 2, 3])


def test_objective_block_entries_separate_by_newline_semicolon_or_comma() -> None:
    """`minimize { f1: ..., f2: ... }` (the form the E501/E506 hints show) is the same model as one
    entry per line; a comma inside a call stays the call's."""
    texts = [
        "var x[2]\nminimize {\n  f1: sumsq(x)\n  f2: sumsq(x - 1)\n}",
        "var x[2]\nminimize { f1: sumsq(x); f2: sumsq(x - 1) }",
        "var x[2]\nminimize { f1: sumsq(x), f2: sumsq(x - 1), }",
        "var x[2]\nminimize {\n  f1: sumsq(x),\n  f2: sumsq(x - 1)\n}",
    ]
    shown = {to_text(optlang.parse(t).ir.objective.entries[1][1]) for t in texts}
    assert len(shown) == 1
    m = optlang.parse("var x[2]\nminimize { f1: dot(x, [1, 2]), f2: maximum(x[0], x[1]) }")
    assert m.kind == "multiobjective" and [n for n, _ in m.ir.objective.entries] == ["f1", "f2"]


def test_newline_outside_brackets_ends_the_statement() -> None:
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse("var x[2]\nminimize sumsq(x) +\n 1\n")
    assert info.value.code == "E107" and "wrap the whole expression in ( )" in (info.value.hint or "")


def test_max_over_is_a_keyword_but_max_is_a_function() -> None:
    m = optlang.parse("var x[3]\nvar y[3] in [0, 1]\nminimize max over y: dot(x, y) - sumsq(y) + max(x)^2\n")
    assert m.kind == "minimax" and m.ir.objective.over == ("y",)


def test_solver_block_separators_and_values() -> None:
    m = optlang.parse('var x\nminimize x^2\nsolver gd { method = "lbfgs", lr = 0.1; max_iter = 50\n tol = 1e-9 }\n')
    assert m.ir.solver.options == {"method": "lbfgs", "lr": 0.1, "max_iter": 50, "tol": 1e-9}


def test_solver_block_names_every_backend() -> None:
    """Backend names with a hyphen (weighted-sum, sdp-cvxpy, sdp-bm, dro-cvxpy) are written as they are
    registered; they used to be a parse error, so those baselines were out of reach of a model."""
    from optlang.backends import registry

    for name in registry.names():
        m = optlang.parse(f"var x\nminimize x^2\nsolver {name} {{ }}\n")
        assert m.ir.solver.name == name
    text = "var x[2]\nlet d = x[0]-x[1]\nminimize {\n f1: d^2\n f2: (x[1]-1)^2\n}\n"
    m = optlang.parse(text + "solver weighted-sum { points = 5 }")
    assert m.plan().chosen == "weighted-sum" and m.ir.solver.options == {"points": 5}
    with pytest.raises(optlang.OptlangError, match="did you mean 'weighted-sum'"):
        optlang.parse("var x\nminimize x^2\nsolver weighted-summ { }").plan()


def test_types_shapes_and_sample_axis() -> None:
    m = optlang.parse(
        "param X = randn(30, 4, seed = 1)\nparam y = randn(30, seed = 2)\nvar w[4]\n"
        "let r = X @ w - y\nminimize mean(r^2)\n",
    )
    r = m.ir.lets["r"]
    assert r.type.shape == (30,) and r.type.vars == {"w"}
    d = optlang.load(ROOT / "models" / "housing_tc.opt")
    loss = d.ir.objective.expr
    assert loss.type.sample == "D" and loss.type.shape == (300,)
    assert d.form.linear_residual and d.form.n_samples == 300


def test_ir_text_round_trip() -> None:
    text = "var x[3]\nvar y[3]\nminimize sumsq(x - y) + dot(x, y) * 2 + x[0]^2 - norm1(y[1:])\n"
    expr = optlang.parse(text).ir.objective.expr
    printed = to_text(expr)
    again = optlang.parse(f"var x[3]\nvar y[3]\nminimize {printed}\n").ir.objective.expr
    assert to_text(again) == printed
    vals = {"x": np.array([1.0, -2.0, 0.5]), "y": np.array([0.3, 0.1, -1.0])}
    from optlang.ir.evaluate import evaluate_np

    assert evaluate_np(expr, vals) == pytest.approx(evaluate_np(again, vals))


def test_pi_is_a_constant_that_a_declaration_shadows() -> None:
    """`pi` needs no declaration (ZDT3's sin(10 pi x), DTLZ's cos(pi/2 x)); a model's own `pi` wins."""
    from optlang.ir.evaluate import evaluate_np
    from optlang.latex import expr_latex

    m = optlang.parse("var x in [0, 1]\nminimize sin(pi * x) + pi\n")
    expr = m.ir.objective.expr
    assert evaluate_np(expr, {"x": np.array(0.5)}) == pytest.approx(1.0 + np.pi, abs=1e-15)
    assert r"\pi" in expr_latex(expr) and "pi" in to_text(expr)
    again = optlang.parse(f"var x in [0, 1]\nminimize {to_text(expr)}\n").ir.objective.expr
    assert evaluate_np(again, {"x": np.array(0.25)}) == pytest.approx(evaluate_np(expr, {"x": np.array(0.25)}))
    own = optlang.parse("param pi = 3\nvar x in [0, 1]\nminimize x * pi\n").ir.objective.expr
    assert evaluate_np(own, {"x": np.array(1.0)}) == 3.0 and r"\pi" not in expr_latex(own)
    with pytest.raises(optlang.OptlangError, match="unknown name 'p'"):
        optlang.parse("var x\nminimize x * p\n")


def test_prod_reduces_like_sum() -> None:
    """prod takes `axis =` as sum and mean do; a reduction without an axis still refuses it (E512)."""
    from optlang.ir.evaluate import evaluate_np

    m = optlang.parse("param A = [[1, 2], [3, 4]]\nvar x[2]\nminimize dot(prod(A, axis = 0), x) + prod(x)\n")
    assert evaluate_np(m.ir.objective.expr, {"x": np.array([1.0, -2.0])}) == pytest.approx(3 - 16 - 2)
    with pytest.raises(optlang.OptlangError, match="has no argument 'axis'") as info:
        optlang.parse("var x[2]\nminimize sumsq(x, axis = 0)\n")
    assert info.value.code == "E512"


def test_every_language_example_parses() -> None:
    spec = ROOT.parent / "shared" / "LANGUAGE.md"
    if not spec.exists():
        pytest.skip("LANGUAGE.md not found beside the repo")
    section = spec.read_text(encoding="utf-8").split("## 6.")[1].split("## 7.")[0]
    blocks = re.findall(r"```\n(.*?)```", section, re.S)
    assert len(blocks) == 6
    for b in blocks:
        parse_tree(Source(b))


# ------------------------------------------------------------------ fuzzing
_SOURCES = [p.read_text(encoding="utf-8") for p in MODELS if p.name != "maxcut_g1.opt"]
_TOKENS = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "\n",
    "+",
    "*",
    "@",
    "^",
    ":",
    "=",
    "in",
    "var",
    "spin",
    "minimize",
    "max over",
    "argmin",
    "1e400",
    "-1",
    "0",
    "x",
    '"',
    "#",
    "\xff",
    "robust",
    "within",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
        if op == "delete":
            end = pos + draw(st.integers(1, 8))
            text = text[:pos] + text[end:]
        elif op == "insert":
            text = text[:pos] + draw(st.sampled_from(_TOKENS)) + text[pos:]
        elif op == "replace":
            text = text[:pos] + draw(st.sampled_from(_TOKENS)) + text[pos + 1 :]
        else:
            lines = text.splitlines()
            if len(lines) > 1:
                i = draw(st.integers(0, len(lines) - 2))
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
                text = "\n".join(lines)
    return text


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(mutated())
def test_fuzz_only_optlang_errors_escape(text: str) -> None:
    import os

    os.environ["OPTLANG_MAX_BYTES"] = "50000000"
    try:
        m = optlang.parse(text, base_dir=ROOT / "models")
        m.plan()
    except optlang.OptlangError as e:
        rendered = e.render()
        assert "error[" in rendered
    finally:
        os.environ.pop("OPTLANG_MAX_BYTES", None)
