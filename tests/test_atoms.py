"""Every atom in ir/atoms.py agrees across its numpy, torch and cvxpy implementations.

The test walks ATOMS itself: an atom whose shape rule is a generic one (same, elementwise, reduce_,
reduce_axis) is sampled automatically; others get a sampler below; an atom that cannot be sampled is
listed in UNSAMPLED with its reason. A new atom that fits none of these fails `test_every_atom_is_covered`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import optlang
from optlang.errors import ShapeError
from optlang.ir import atoms
from optlang.ir.atoms import ATOMS
from optlang.ir.types import REAL, Type
from optlang.source import Span

SPAN = Span(1, 1, 1, 2)

RTOL = 1e-12
ATOL = 1e-12

# atoms whose domain is the positive reals (sampled from [0.5, 2])
POSITIVE = {"log", "log1p", "sqrt", "pow", "div"}

# atoms that cannot be sampled, with the reason
UNSAMPLED: dict[str, str] = {}

Case = tuple[tuple[Any, ...], dict[str, Any]]


def _vec(rng: np.random.Generator, n: int, positive: bool) -> np.ndarray:
    return rng.uniform(0.5, 2.0, n) if positive else rng.standard_normal(n)


def _mat(rng: np.random.Generator, shape: tuple[int, int], positive: bool) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)


def _cut_case(rng: np.random.Generator) -> list[Case]:
    W = np.triu(rng.uniform(0.0, 1.0, (6, 6)), 1)
    W = W + W.T
    s = rng.choice([-1.0, 1.0], 6)
    return [((W, s), {})]


def _quad_case(rng: np.random.Generator) -> list[Case]:
    A = rng.standard_normal((5, 5))
    return [((rng.standard_normal(5), A @ A.T + np.eye(5)), {})]


def _pow_case(rng: np.random.Generator) -> list[Case]:
    x = _vec(rng, 7, True)
    repeated = rng.choice([0.5, 2.0, 3.0, -1.0], size=(3, 4))  # an array exponent with repeated values
    return [
        ((x, 2.0), {}),
        ((x, 3.0), {}),
        ((x, 0.5), {}),
        ((x, _vec(rng, 7, True)), {}),
        ((_mat(rng, (3, 4), True), repeated), {}),
        ((1.5, _vec(rng, 7, True)), {}),  # a scalar base with an array exponent
        ((x, np.full(7, 3.0)), {}),
    ]


def _unit_case(rng: np.random.Generator) -> list[Case]:
    """Inside (−1, 1), the domain of asin and acos."""
    return [((rng.uniform(-0.95, 0.95, 7),), {}), ((rng.uniform(-0.95, 0.95, (3, 4)),), {})]


# samplers for atoms whose shape rule is specific to them (or whose domain is)
SAMPLERS: dict[str, Callable[[np.random.Generator], list[Case]]] = {
    "asin": _unit_case,
    "acos": _unit_case,
    "matmul": lambda r: [
        ((r.standard_normal((4, 3)), r.standard_normal(3)), {}),
        ((r.standard_normal((4, 3)), r.standard_normal((3, 2))), {}),
    ],
    "transpose": lambda r: [((r.standard_normal((4, 3)),), {})],
    "index": lambda r: [
        ((r.standard_normal((4, 3)),), {"index": (1, slice(None))}),
        ((r.standard_normal((4, 3)),), {"index": (slice(None), 2)}),
        ((r.standard_normal(6),), {"index": (slice(1, 4),)}),
    ],
    "array": lambda r: [((r.standard_normal(), r.standard_normal(), r.standard_normal()), {})],
    "dot": lambda r: [((r.standard_normal(5), r.standard_normal(5)), {})],
    "quad": _quad_case,
    "cut": _cut_case,
    "pow": _pow_case,
}


def _infers(spec: atoms.AtomSpec, shapes: list[tuple[int, ...]], static: dict[str, Any] | None = None) -> Any:
    """The result shape the atom's shape rule gives for arguments of these shapes (None if it refuses)."""
    try:
        return spec.infer([Type(REAL, s) for s in shapes], dict(static or {}), SPAN).shape
    except ShapeError:
        return None


def _generic(name: str) -> Callable[[np.random.Generator], list[Case]] | None:
    """A sampler from the atom's shape rule, or None when the rule is specific to the atom."""
    spec = ATOMS[name]
    pos = name in POSITIVE
    if spec.infer is atoms.same:
        return lambda r: [((_vec(r, 7, pos),), {}), ((_mat(r, (3, 4), pos),), {})]
    if spec.infer is atoms.reduce_:
        return lambda r: [((_vec(r, 7, pos),), {}), ((_mat(r, (3, 4), pos),), {})]
    if spec.infer is atoms.reduce_axis:
        return lambda r: [
            ((_mat(r, (3, 4), pos),), {}),
            ((_mat(r, (3, 4), pos),), {"axis": 0}),
            ((_mat(r, (3, 4), pos),), {"axis": 1}),
        ]
    if spec.nargs == (2, 2) and _infers(spec, [(7,), (7,)]) == (7,) and _infers(spec, [(7,), ()]) == (7,):
        # operators and binary functions whose shape rule is elementwise (with its own symbol)
        return lambda r: [
            ((_vec(r, 7, pos), _vec(r, 7, pos)), {}),
            ((_vec(r, 7, pos), 1.7), {}),
            ((_mat(r, (3, 4), pos), _mat(r, (3, 4), pos)), {}),
        ]
    return None


def _sampler(name: str) -> Callable[[np.random.Generator], list[Case]] | None:
    return SAMPLERS.get(name) or _generic(name)


def test_every_atom_is_covered() -> None:
    """A new atom must be sampled (generic rule or SAMPLERS) or listed in UNSAMPLED with a reason."""
    missing = [n for n in ATOMS if n not in UNSAMPLED and _sampler(n) is None]
    assert not missing, f"atoms with no sampler and no reason in UNSAMPLED: {missing}"
    assert all(n in ATOMS for n in SAMPLERS), "SAMPLERS names an atom that no longer exists"


def _torch_arg(x: Any) -> Any:
    """As ir/evaluate.py hands constants to torch atoms: every value a float64 tensor."""
    return torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=torch.float64)


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().numpy()
    return np.asarray(x, dtype=np.float64)


@pytest.mark.parametrize("name", [n for n in ATOMS if n not in UNSAMPLED])
def test_numpy_torch_agree(name: str) -> None:
    spec = ATOMS[name]
    rng = np.random.default_rng(17)
    sampler = _sampler(name)
    assert sampler is not None
    for args, kw in sampler(rng):
        ref = _as_array(spec.np(*args, **kw))
        got = _as_array(spec.torch(*[_torch_arg(a) for a in args], **kw))
        assert got.shape == ref.shape, (name, args, kw)
        assert _infers(spec, [np.shape(a) for a in args], kw) == ref.shape, (name, "shape rule disagrees", kw)
        assert np.all(np.isfinite(ref)), (name, "sample outside the atom's domain: add it to POSITIVE")
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{name} {kw}")


HAS_CVXPY = importlib.util.find_spec("cvxpy") is not None


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
@pytest.mark.parametrize("name", [n for n, s in ATOMS.items() if s.cvx is not None and n not in UNSAMPLED])
def test_numpy_cvxpy_agree(name: str) -> None:
    import cvxpy as cp

    spec = ATOMS[name]
    assert spec.cvx is not None
    rng = np.random.default_rng(17)
    sampler = _sampler(name)
    assert sampler is not None
    for args, kw in sampler(rng):
        ref = _as_array(spec.np(*args, **kw))
        # the first argument stands in for an expression; the rest are constants, as ir/evaluate.py passes them
        first = cp.Constant(args[0]) if isinstance(args[0], np.ndarray) else args[0]
        expr = spec.cvx(first, *args[1:], **kw)
        assert expr is not None, name
        got = _as_array(expr.value)
        np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=1e-9, atol=1e-9, err_msg=f"{name} {kw}")
        assert got.size == ref.size, (name, kw)


def _torch_sparse(m: Any) -> Any:
    """A scipy matrix as ir/evaluate.py hands it to torch: float64 sparse CSR."""
    coo = m.tocoo()
    idx = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.long)
    return torch.sparse_coo_tensor(idx, torch.as_tensor(coo.data), coo.shape).coalesce().to_sparse_csr()


@pytest.mark.parametrize("name", ["matmul", "quad", "cut"])
def test_sparse_matrix_arguments(name: str) -> None:
    """The atoms that take a graph or a sparse data matrix give the dense answer in numpy and torch."""
    import scipy.sparse as sp

    spec = ATOMS[name]
    rng = np.random.default_rng(5)
    dense = np.triu(rng.uniform(0.0, 1.0, (6, 6)) * (rng.uniform(size=(6, 6)) < 0.4), 1)
    dense = dense + dense.T
    v = rng.choice([-1.0, 1.0], 6) if name == "cut" else rng.standard_normal(6)
    order = (lambda m, x: (m, x)) if name == "matmul" or name == "cut" else (lambda m, x: (x, m))
    ref = _as_array(spec.np(*order(dense, v)))
    np.testing.assert_allclose(_as_array(_dense_of(spec.np(*order(sp.csr_matrix(dense), v)))), ref, rtol=RTOL)
    got = spec.torch(*order(_torch_sparse(sp.csr_matrix(dense)), torch.as_tensor(v)))
    np.testing.assert_allclose(_as_array(got), ref, rtol=RTOL, atol=ATOL)


def _dense_of(x: Any) -> Any:
    return x.toarray() if hasattr(x, "toarray") else x


def test_cut_of_a_relaxed_vector_solves_in_torch() -> None:
    """cut(G, x) with x real reaches the torch atom with G as sparse CSR (it used to fail on torch.sparse.sum)."""
    import optlang

    m = optlang.parse(
        'graph G = torus(3, 4, weights = "unit")\nvar x[G.n] in [-1, 1]\n'
        "maximize cut(G, x)\nsolver gd { max_iter = 50 }\n"
    )
    r = m.solve(seed=0)
    assert r.status != "error", r
    assert r.objective is not None and r.objective > 0
    if r.backend_objective is not None:  # the torch value agrees with the float64 re-evaluation
        assert r.backend_objective == pytest.approx(r.objective, rel=1e-5)


@pytest.mark.parametrize("name", list(ATOMS))
def test_latex_template_and_degree_rule(name: str) -> None:
    """Each entry's LaTeX template fills from its arguments, and its degree rule calls a constant constant."""
    from optlang.ir.nodes import Op, Var
    from optlang.latex import expr_latex

    spec = ATOMS[name]
    k = spec.nargs[0] if spec.nargs[0] == spec.nargs[1] else 3
    args = tuple(Var(SPAN, Type(), f"x{i}") for i in range(k))
    node = Op(SPAN, Type(), name, args, {"index": (1, slice(None, 2))} if name == "index" else {})
    tex = expr_latex(node)
    assert all(f"x{i}" in tex for i in range(k)), tex
    assert spec.degree([0.0] * k, [2.0] * k) == 0, name
    if name == "index":
        assert tex == "x0_{1, :2}", tex


LEVELS = (atoms.SUM, atoms.PRODUCT, atoms.UNARY, atoms.POWER, atoms.POSTFIX, atoms.PRIMARY)


def _polynomial(spec: atoms.AtomSpec) -> bool:
    """Whether the degree rule calls the atom a polynomial of linear arguments (the first one, or all)."""
    k = spec.nargs[0]
    first = spec.degree([1.0] + [0.0] * (k - 1), [None] + [2.0] * (k - 1))
    every = spec.degree([1.0] * k, [None] * k)
    return first < float("inf") or every < float("inf")


@pytest.mark.parametrize("name", list(ATOMS))
def test_every_entry_is_complete(name: str) -> None:
    """Each entry carries everything the pipeline reads: adding an atom is one entry in ir/atoms.py.

    Shape rule, numpy and torch forms, doc, degree rule, precedence, operator text, LaTeX (the test
    above); a cvxpy form unless `no_cvxpy` says why not; an Ising/QUBO rule exactly when the degree rule
    calls it a polynomial (ir/quadratic.py has no other way to lower it).
    """
    from optlang.ir.nodes import Op, Var, to_text

    spec = ATOMS[name]
    assert spec.name == name and 1 <= spec.nargs[0] <= spec.nargs[1], name
    assert callable(spec.infer) and callable(spec.np) and callable(spec.torch) and callable(spec.degree), name
    assert spec.doc.strip(), f"{name}: no doc (it is the hint of an arity error)"
    assert (spec.cvx is None) == bool(spec.no_cvxpy), f"{name}: a cvxpy form, or the reason in no_cvxpy"
    assert spec.prec in LEVELS, name
    if spec.infix:
        assert not spec.user and spec.nargs[0] == spec.nargs[1] == len(spec.operand_prec), name
        assert all(p in LEVELS for p in spec.operand_prec) and spec.text, name
    assert (spec.prec == atoms.PRIMARY) == (not spec.text), f"{name}: an operator's text, or a call's"
    assert (spec.ising is not None) == _polynomial(spec), f"{name}: its Ising rule and degree rule disagree"
    k = spec.nargs[0]
    static = {"index": (0, slice(1, None))} if name == "index" else {}
    text = to_text(Op(SPAN, Type(), name, tuple(Var(SPAN, Type(), f"x{i}") for i in range(k)), static))
    assert all(f"x{i}" in text for i in range(k)) and "$" not in text, text
    assert spec.infix in text and (name in text) == (spec.prec == atoms.PRIMARY), text
    if name == "index":
        assert text == "x0[0, 1:]", text


def test_the_ising_hint_lists_the_table() -> None:
    """The E402 hint is built from the entries with an Ising rule (no hand-kept list)."""
    hint = atoms.ising_atoms()
    for spec in ATOMS.values():
        if spec.ising is not None and (spec.infix or spec.user):
            assert (spec.infix or spec.name) in hint.split(", ")
    assert "abs" not in hint.split(", ") and "^" in hint.split(", ")


@pytest.mark.skipif(not HAS_CVXPY, reason="cvxpy is not installed")
def test_an_array_exponent_solves_in_cvxpy() -> None:
    """x ^ p with p an array reaches cvxpy as a DCP expression (convex here) and solves to the known optimum."""
    import cvxpy as cp

    import optlang
    from optlang.ir.evaluate import cvxpy_expr

    m = optlang.parse("param p = [1, 2, 3, 2]\nvar x[4] in [0.5, 2]\nminimize sum(x ^ p)\n")
    x = cp.Variable(4)
    expr = cvxpy_expr(m.ir.objective.expr, {"x": x})
    assert expr.is_dcp() and expr.is_convex()
    prob = cp.Problem(cp.Minimize(expr), [x >= 0.5, x <= 2])
    prob.solve()
    assert prob.value == pytest.approx(0.5 + 0.25 + 0.125 + 0.25, abs=1e-6)
    np.testing.assert_allclose(x.value, 0.5, atol=1e-5)


@pytest.mark.parametrize("other", sorted({n for s in ATOMS.values() for n in s.elsewhere}))
def test_other_tools_names_get_the_optlang_spelling(other: str) -> None:
    """A function named as in CVXPY/numpy (pos, sum_squares, power, ...) is refused with E205 and a
    hint that says how optlang writes it; such a name never shadows a function of the language."""
    from optlang.ir.atoms import user_functions

    assert other not in user_functions()
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse(f"var x[3]\nminimize sum({other}(x, x))\n")
    e = info.value
    assert e.code == "E205" and e.hint is not None and f"'{other}' is written" in e.hint, e.hint
