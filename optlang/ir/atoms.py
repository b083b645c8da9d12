"""The table of atoms: every operator and built-in function, one AtomSpec each.

An AtomSpec says how many arguments an atom takes, its shape rule (argument types → result type,
raising ShapeError with both shapes), its numpy, torch and (where one exists) cvxpy implementations,
its polynomial degree rule (read by compiler.degree), its Ising/QUBO lowering rule (read by
ir/quadratic.py; the rules are in ir/quadforms.py), its precedence and operator text (read by
ir/nodes.to_text, fmt and latex), and its LaTeX template (read by latex.expr_latex). Adding a function
means adding one entry here (see docs/architecture.md); tests/test_atoms.py walks the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.errors import ShapeError
from optlang.ir import quadforms as qf
from optlang.ir.types import REAL, Type, broadcast, join_sample
from optlang.source import Span

Infer = Callable[[Sequence[Type], dict[str, Any], Span], Type]
# (the arguments' degrees, the arguments' values where they are constant nodes, else None) -> the atom's
# polynomial degree in the decision variables (values, not nodes: ir/nodes.py imports this module)
Degree = Callable[[Sequence[float], Sequence[Any]], float]
# (the algebra, the Op's site, the arguments' lowered values, **static) -> the lowered value (ir/quadforms.py)
IsingRule = Callable[..., Any]

# precedence levels of expressions, as the grammar nests them (higher binds tighter): an operand whose
# atom's level is below what its place needs is parenthesized (fmt, ir/nodes.to_text, latex)
SUM, PRODUCT, UNARY, POWER, POSTFIX, PRIMARY = 1, 2, 3, 4, 5, 6


# ------------------------------------------------------------------ degree rules
def deg_nonpolynomial(ds: Sequence[float], consts: Sequence[Any]) -> float:
    """The default: constant when every argument is, otherwise not a polynomial."""
    return 0 if max(ds, default=0) == 0 else math.inf


def deg_max(ds: Sequence[float], consts: Sequence[Any]) -> float:
    """Linear in its arguments (sums, indexing, reductions that add)."""
    return max(ds)


def deg_sum(ds: Sequence[float], consts: Sequence[Any]) -> float:
    """A product of its arguments."""
    return sum(ds)


def deg_square_first(ds: Sequence[float], consts: Sequence[Any]) -> float:
    """Quadratic in its first argument (square, sumsq, quad with a constant matrix)."""
    return 2 * ds[0]


def _deg_div(ds: Sequence[float], consts: Sequence[Any]) -> float:
    return ds[0] if ds[1] == 0 else math.inf


def _deg_cut(ds: Sequence[float], consts: Sequence[Any]) -> float:
    return 2 * ds[1]


def _deg_pow(ds: Sequence[float], consts: Sequence[Any]) -> float:
    exp = consts[1]
    if exp is not None and np.ndim(exp) == 0 and float(exp).is_integer() and exp >= 0:
        return ds[0] * float(exp)
    return math.inf if ds[0] else 0


@dataclass(frozen=True)
class AtomSpec:
    """One atom: everything the pipeline knows about it, from shape to LaTeX."""

    name: str
    nargs: tuple[int, int]
    infer: Infer
    np: Callable[..., Any]
    torch: Callable[..., Any]
    doc: str
    cvx: Callable[..., Any] | None  # None: no cvxpy form (the cvxpy backends refuse expressions using it)
    infix: str  # operator symbol when the atom is an operator ("" for functions)
    user: bool  # callable by name from the language (operators are not)
    degree: Degree
    ising: IsingRule | None  # its Ising/QUBO lowering (ir/quadforms.py); None: refused on spins (E402)
    prec: int  # its precedence level (PRIMARY for calls)
    operand_prec: tuple[int, ...]  # operators: the level each operand needs in source text (fmt)
    # string.Templates. latex: ${a0} ${a1} the arguments' LaTeX, ${p0} ${p1} the same parenthesized when a
    # sum, ${args} all of them comma-separated, ${text} its static text; "" = \operatorname{name}(args).
    # text (ir/nodes.to_text): ${p0} ${p1} the arguments' text, parenthesized when an operator of level
    # PRODUCT or below, ${text} its static text; "" = name(args, key = value)
    latex: str
    text: str
    static_text: Callable[[dict[str, Any]], str] | None  # the ${text} of its static values (an index's "i, j:k")
    no_cvxpy: str  # why it has no cvxpy form (cvx is None); "" when it has one
    sparse_args: bool  # its numpy form takes scipy sparse arguments as they are (else it densifies them)
    elsewhere: tuple[str, ...] = ()  # what other tools (CVXPY, numpy) call it: the hint of an unknown name


ATOMS: dict[str, AtomSpec] = {}


def _atom(
    name: str,
    nargs: tuple[int, int],
    infer: Infer,
    np_fn: Callable[..., Any],
    torch_fn: Callable[..., Any],
    doc: str,
    *,
    ising: IsingRule | None,
    cvx: Callable[..., Any] | None = None,
    infix: str = "",
    user: bool = True,
    degree: Degree = deg_nonpolynomial,
    latex: str = "",
    prec: int = PRIMARY,
    operand_prec: tuple[int, ...] = (),
    text: str = "",
    static_text: Callable[[dict[str, Any]], str] | None = None,
    no_cvxpy: str = "",
    sparse_args: bool = False,
    elsewhere: tuple[str, ...] = (),
) -> None:
    """Register an atom; an operator's text defaults to its symbol between (or before) its operands."""
    if infix and not text:
        text = f"{infix}${{p0}}" if nargs == (1, 1) else f"${{p0}} {infix} ${{p1}}"
    ATOMS[name] = AtomSpec(
        name,
        nargs,
        infer,
        np_fn,
        torch_fn,
        doc,
        cvx,
        infix,
        user,
        degree,
        ising,
        prec,
        operand_prec,
        latex,
        text,
        static_text,
        no_cvxpy,
        sparse_args,
        elsewhere,
    )


def written_elsewhere(name: str) -> str | None:
    """How a function that other tools call `name` is written here (the hint of E205), or None."""
    for spec in ATOMS.values():
        if name in spec.elsewhere:
            how = f"with the {spec.infix} operator" if spec.infix else f"{spec.name}(...)"
            return f"'{name}' is written {how} in optlang: {spec.doc}"
    return None


def ising_atoms() -> str:
    """The operators and functions an Ising/QUBO objective may use (for E402 hints), from the table."""
    names = [s.infix or s.name for s in ATOMS.values() if s.ising is not None and (s.infix or s.user)]
    return ", ".join(dict.fromkeys(names))


def index_text(static: dict[str, Any]) -> str:
    """An index as written: "1, 2:5, :" (0-based; a slice's step is never set by the language)."""
    parts = []
    for ix in static.get("index", ()):
        if isinstance(ix, slice):
            parts.append(f"{'' if ix.start is None else ix.start}:{'' if ix.stop is None else ix.stop}")
        else:
            parts.append(str(ix))
    return ", ".join(parts)


def _vars(types: Sequence[Type]) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for t in types:
        out |= t.vars
    return out


def _sample(types: Sequence[Type], span: Span) -> str | None:
    s: str | None = None
    for t in types:
        j = join_sample(s, t.sample)
        if j is False:
            raise ShapeError(
                f"samples of '{s}' and '{t.sample}' cannot be combined elementwise",
                span,
                hint="each expression may range over the rows of one data table",
            )
        s = j  # type: ignore[assignment]  # j is str | None: False was refused above
    return s


def _dense(x: Any) -> Any:
    return x.toarray() if sp.issparse(x) else x


def _torch() -> Any:
    import torch

    return torch


# ------------------------------------------------------------------ shape rules
def elementwise(types: Sequence[Type], static: dict[str, Any], span: Span, op: str = "") -> Type:
    shape: tuple[int, ...] | None = ()
    for t in types:
        shape = broadcast(shape, t.shape) if shape is not None else None
        if shape is None:
            break
    if shape is None:
        a, b = types[0], types[1]
        raise ShapeError(
            f"shapes do not match for '{op or 'elementwise operation'}': {a.describe()} and {b.describe()}",
            span,
            hint="operands must have equal shapes, or one must be a scalar",
        )
    sparse = all(t.sparse for t in types) or (op in ("*", "/") and types[0].sparse and not types[1].shape)
    return Type(REAL, shape, _sample(types, span), sparse, _vars(types))


def same(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    t = types[0]
    return Type(REAL, t.shape, t.sample, False, t.vars)


def reduce_(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    return Type(REAL, (), None, False, _vars(types))


def reduce_axis(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    axis = static.get("axis")
    t = types[0]
    if axis is None:
        return Type(REAL, (), None, False, t.vars)
    if t.ndim == 0:
        raise ShapeError(
            "axis = applies to a vector or a matrix; this is a scalar",
            span,
            hint="drop axis =, or reduce an array",
            code="E305",
        )
    if not isinstance(axis, int) or not -t.ndim <= axis < t.ndim:
        raise ShapeError(
            f"axis {axis} is out of range for {t.describe()}",
            span,
            hint=f"axes run from 0 to {t.ndim - 1} (or -{t.ndim} to -1)",
            code="E305",
        )
    axis %= t.ndim
    shape = tuple(d for i, d in enumerate(t.shape) if i != axis)
    return Type(REAL, shape, t.sample if axis != 0 else None, False, t.vars)


def matmul_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    a, b = types
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"'@' needs vectors or matrices, got {a.describe()} and {b.describe()}",
            span,
            hint="use '*' to multiply by a scalar",
        )
    k1 = a.shape[-1]
    k2 = b.shape[0]
    if k1 != k2:
        raise ShapeError(
            f"inner dimensions of '@' differ: {a.describe()} @ {b.describe()} ({k1} vs {k2})",
            span,
            hint="the left operand's columns must equal the right operand's rows",
        )
    shape = a.shape[:-1] + b.shape[1:]
    if b.sample and a.ndim == 2:
        raise ShapeError("a sample axis can only be on the left of '@'", span)
    sample = a.sample if a.ndim == 2 else None
    return Type(REAL, shape, sample, False, _vars(types))


def transpose_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    t = types[0]
    if t.sample and t.ndim == 2:
        raise ShapeError("transposing a sample table moves its sample axis; use mean or sum over it first", span)
    return Type(t.kind, tuple(reversed(t.shape)), t.sample, t.sparse, t.vars)


def dot_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    a, b = types
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ShapeError(f"dot needs two vectors of equal length, got {a.describe()} and {b.describe()}", span)
    return Type(REAL, (), None, False, _vars(types))


def quad_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    x, Q = types
    n = x.shape[0] if x.ndim == 1 else None
    if n is None or Q.shape != (n, n):
        raise ShapeError(
            f"quad(x, Q) needs a vector x[n] and a matrix Q[n, n], got {x.describe()} and {Q.describe()}", span
        )
    return Type(REAL, (), None, False, _vars(types))


def cut_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    W, s = types
    n = W.shape[0]
    if s.shape != (n,):
        raise ShapeError(f"cut(G, s) needs s of length G.n = {n}, got {s.describe()}", span)
    return Type(REAL, (), None, False, _vars(types))


def stack_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    first = types[0].shape
    for t in types[1:]:
        if t.shape != first:
            raise ShapeError(f"array elements differ in shape: {types[0].describe()} and {t.describe()}", span)
    return Type(REAL, (len(types),) + first, None, False, _vars(types))


def index_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    t = types[0]
    idx = static["index"]
    if len(idx) > t.ndim:
        raise ShapeError(f"too many indices ({len(idx)}) for {t.describe()}", span)
    shape: list[int] = []
    for axis, ix in enumerate(idx):
        n = t.shape[axis]
        if isinstance(ix, slice):
            shape.append(len(range(*ix.indices(n))))
        elif not -n <= ix < n:
            raise ShapeError(
                f"index {ix} is out of range for axis {axis} of length {n}",
                span,
                hint=f"indices run from 0 to {n - 1} (or -{n} to -1)",
            )
    shape.extend(t.shape[len(idx) :])
    sample = t.sample
    if sample and (not isinstance(idx[0], slice) or idx[0] != slice(None)):
        raise ShapeError(f"the rows of data table '{sample}' can only be reduced (mean, sum), not indexed", span)
    return Type(t.kind, tuple(shape), sample, False, t.vars)


def power_rule(types: Sequence[Type], static: dict[str, Any], span: Span) -> Type:
    return elementwise(types, static, span, "^")


# ------------------------------------------------------------------ numpy/torch helpers
def _np_index(x: Any, index: tuple[Any, ...] = ()) -> Any:
    if sp.issparse(x):
        x = x.tocsr()[index] if len(index) == 2 else x.tocsr()[index[0]]
        return x
    return np.asarray(x)[index]


def _t_matmul(a: Any, b: Any) -> Any:
    torch = _torch()
    if a.layout != torch.strided and b.dim() == 1:
        return (a @ b.unsqueeze(-1)).squeeze(-1)
    return a @ b


def _np_quad(x: Any, Q: Any) -> Any:
    return float(x @ (Q @ x))


def _t_quad(x: Any, Q: Any) -> Any:
    return x @ _t_matmul(Q, x)


def _np_cut(W: Any, s: Any) -> Any:
    total = float(W.sum()) / 2.0
    return (total - float(s @ (W @ s)) / 2.0) / 2.0


def _t_cut(W: Any, s: Any) -> Any:
    torch = _torch()
    # ir/evaluate.py hands a graph over as sparse CSR, which torch.sparse.sum refuses; .sum() takes it
    total = torch.sparse.sum(W) / 2.0 if W.layout == torch.sparse_coo else W.sum() / 2.0
    return (total - s @ _t_matmul(W, s) / 2.0) / 2.0


def _softplus_np(x: Any) -> Any:
    return np.logaddexp(0.0, x)


def _logsumexp_np(x: Any) -> Any:
    from scipy.special import logsumexp

    return logsumexp(x)


def _reduce(np_fn: Callable[..., Any], t_name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    def n(x: Any, axis: int | None = None) -> Any:
        return np_fn(_dense(x), axis=axis) if axis is not None else np_fn(_dense(x))

    def t(x: Any, axis: int | None = None) -> Any:
        torch = _torch()
        f = getattr(torch, t_name)
        return f(x, dim=axis) if axis is not None else f(x)

    return n, t


# ------------------------------------------------------------------ cvxpy helpers
def _cp() -> Any:
    import cvxpy as cp

    return cp


def _flat(a: Any) -> Any:
    """A cvxpy expression as a vector, in an explicit order (norms do not depend on it; cvxpy warns
    when the order of vec is left to its changing default)."""
    return _cp().reshape(a, (int(a.size),), order="C")


def _cvx_mul(a: Any, b: Any) -> Any:
    return _cp().multiply(a, b)  # DCP rejects non-affine products when the problem is built


# ------------------------------------------------------------------ operators
_atom(
    "add",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "+"),
    lambda a, b: _sum2(a, b),
    lambda a, b: a + b,
    "a + b, elementwise with broadcasting of scalars",
    cvx=lambda a, b: a + b,
    infix="+",
    user=False,
    degree=deg_max,
    latex=r"${a0} + ${a1}",
    ising=qf.add,
    prec=SUM,
    operand_prec=(SUM, PRODUCT),
)
_atom(
    "sub",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "-"),
    lambda a, b: _sum2(a, -b),
    lambda a, b: a - b,
    "a - b",
    cvx=lambda a, b: a - b,
    infix="-",
    user=False,
    degree=deg_max,
    latex=r"${a0} - ${p1}",
    ising=qf.sub,
    prec=SUM,
    operand_prec=(SUM, PRODUCT),
)
_atom(
    "mul",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "*"),
    lambda a, b: _mul2(a, b),
    lambda a, b: a * b,
    "a * b, elementwise",
    cvx=_cvx_mul,
    infix="*",
    user=False,
    degree=deg_sum,
    latex=r"${p0} \cdot ${p1}",
    ising=qf.mul,
    prec=PRODUCT,
    operand_prec=(PRODUCT, UNARY),
    elsewhere=("multiply",),
)
_atom(
    "div",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "/"),
    lambda a, b: _div2(a, b),
    lambda a, b: a / b,
    "a / b, elementwise",
    cvx=lambda a, b: a / b,
    infix="/",
    user=False,
    degree=_deg_div,
    latex=r"\frac{${a0}}{${a1}}",
    ising=qf.div,
    prec=PRODUCT,
    operand_prec=(PRODUCT, UNARY),
)
_atom(
    "pow",
    (2, 2),
    power_rule,
    lambda a, b: np.power(np.asarray(_dense(a), dtype=np.float64), _dense(b)),
    lambda a, b: a**b,
    "a ^ b, elementwise power",
    cvx=lambda a, b: _cvx_pow(a, b),
    infix="^",
    user=False,
    degree=_deg_pow,
    latex=r"${p0}^{${a1}}",
    ising=qf.power,
    prec=POWER,
    operand_prec=(POSTFIX, UNARY),
    elsewhere=("power",),
)
_atom(
    "neg",
    (1, 1),
    same,
    lambda a: -a,
    lambda a: -a,
    "-a",
    cvx=lambda a: -a,
    infix="-",
    user=False,
    degree=deg_max,
    latex="-${p0}",
    ising=qf.neg,
    prec=UNARY,
    operand_prec=(UNARY,),
)
_atom(
    "matmul",
    (2, 2),
    matmul_rule,
    lambda a, b: _np_matmul(a, b),
    _t_matmul,
    "A @ B, matrix product",
    cvx=lambda a, b: a @ b,
    infix="@",
    user=False,
    degree=deg_sum,
    latex=r"${p0} ${p1}",
    ising=qf.matmul,
    prec=PRODUCT,
    operand_prec=(PRODUCT, UNARY),
    sparse_args=True,
    elsewhere=("matmul",),
)
_atom(
    "transpose",
    (1, 1),
    transpose_rule,
    lambda a: a.T if sp.issparse(a) else np.transpose(np.asarray(a)),
    lambda a: a.T if a.dim() == 2 else a,
    "A.T, transpose",
    cvx=lambda a: a.T,
    user=False,
    degree=deg_max,
    latex=r"${p0}^\top",
    ising=qf.transpose,
    prec=POSTFIX,
    operand_prec=(POSTFIX,),
    text="${p0}.T",
)
_atom(
    "index",
    (1, 1),
    index_rule,
    lambda a, index=(): _np_index(a, index),
    lambda a, index=(): a[index],
    "x[i], x[i:j], A[:, j]: numpy-style indexing (0-based)",
    cvx=lambda a, index=(): a[index],
    user=False,
    degree=deg_max,
    latex=r"${a0}_{${text}}",
    ising=qf.index,
    prec=POSTFIX,
    operand_prec=(POSTFIX,),
    text="${p0}[${text}]",
    static_text=index_text,
    sparse_args=True,
)
_atom(
    "array",
    (1, 10**9),
    stack_rule,
    lambda *xs: np.stack([np.asarray(_dense(x), dtype=float) for x in xs]),
    lambda *xs: _torch().stack(list(xs)),
    "[a, b, c]: an array literal",
    cvx=lambda *xs: _cp().hstack(xs),
    user=False,
    degree=deg_max,
    ising=qf.array,
)


def _sum2(a: Any, b: Any) -> Any:
    if sp.issparse(a) and sp.issparse(b):
        return (a + b).tocsr()
    return _dense(a) + _dense(b)


def _scalar(x: Any) -> bool:
    return not sp.issparse(x) and np.ndim(x) == 0  # np.ndim of a scipy matrix is 0 too


def _mul2(a: Any, b: Any) -> Any:
    if sp.issparse(a) and sp.issparse(b):
        return sp.csr_matrix(a.multiply(b))  # elementwise (csr `*` would be a matrix product)
    if sp.issparse(a) and _scalar(b):
        return (a * b).tocsr()
    if sp.issparse(b) and _scalar(a):
        return (b * a).tocsr()
    return _dense(a) * _dense(b)


def _div2(a: Any, b: Any) -> Any:
    if sp.issparse(a) and _scalar(b):
        return (a / b).tocsr()
    return np.asarray(_dense(a), dtype=np.float64) / np.asarray(_dense(b), dtype=np.float64)


def _np_matmul(a: Any, b: Any) -> Any:
    out = a @ b
    return np.asarray(out) if not sp.issparse(out) else out


def _cvx_pow(a: Any, b: Any) -> Any:
    """a ^ b in cvxpy. cvxpy.power takes a scalar exponent: an array exponent is applied per distinct
    value (one cvxpy atom each, over the elements that have it) and the pieces put back in place."""
    cp = _cp()
    if np.ndim(b) == 0 and not sp.issparse(b):
        if float(b) == 2.0:
            return cp.square(a)
        return cp.power(a, b)
    exps = np.asarray(_dense(b), dtype=np.float64)
    if not isinstance(a, cp.Expression):
        a = cp.Constant(np.asarray(a, dtype=np.float64))
    shape = np.broadcast_shapes(a.shape, exps.shape)
    if a.shape != shape:
        a = a + np.zeros(shape)  # a scalar base, broadcast to the exponent's shape
    flat_e = np.broadcast_to(exps, shape).ravel()
    values = np.unique(flat_e)
    if values.size == 1:
        return _cvx_pow(a, float(values[0]))
    flat_a = _flat(a)
    where = [np.flatnonzero(flat_e == v) for v in values]
    pieces = cp.hstack([_cvx_pow(flat_a[idx], float(v)) for v, idx in zip(values, where, strict=True)])
    perm = np.concatenate(where)  # element perm[k] is piece entry k
    n = perm.size
    P = sp.csr_matrix((np.ones(n), (perm, np.arange(n))), shape=(n, n))
    return cp.reshape(P @ pieces, shape, order="C")


# ------------------------------------------------------------------ elementwise functions
NO_DCP = "neither convex nor concave: no DCP form"


def _unary(
    name: str,
    np_fn: Callable[..., Any],
    t_fn: Callable[..., Any],
    doc: str,
    cvx: Callable[..., Any] | None = None,
    degree: Degree = deg_nonpolynomial,
    latex: str = "",
    ising: IsingRule | None = None,
    no_cvxpy: str = "",
    elsewhere: tuple[str, ...] = (),
) -> None:
    _atom(
        name,
        (1, 1),
        same,
        lambda a: np_fn(_dense(a)),
        t_fn,
        doc,
        cvx=cvx,
        degree=degree,
        latex=latex,
        ising=ising,
        no_cvxpy=no_cvxpy,
        elsewhere=elsewhere,
    )


_unary("abs", np.abs, lambda a: a.abs(), "absolute value, elementwise", cvx=lambda a: _cp().abs(a))
_unary(
    "sqrt", np.sqrt, lambda a: a.sqrt(), "square root, elementwise", cvx=lambda a: _cp().sqrt(a), latex=r"\sqrt{${a0}}"
)
_unary(
    "exp",
    np.exp,
    lambda a: a.exp(),
    "exponential, elementwise",
    cvx=lambda a: _cp().exp(a),
    latex=r"\exp\left(${args}\right)",
)
_unary(
    "log",
    np.log,
    lambda a: a.log(),
    "natural logarithm, elementwise",
    cvx=lambda a: _cp().log(a),
    latex=r"\log\left(${args}\right)",
)
_unary("log1p", np.log1p, lambda a: a.log1p(), "log(1 + x), elementwise", cvx=lambda a: _cp().log1p(a))
_unary(
    "square",
    np.square,
    lambda a: a * a,
    "x², elementwise",
    cvx=lambda a: _cp().square(a),
    degree=deg_square_first,
    ising=qf.square,
)
# the trigonometric and hyperbolic functions: no DCP form; (name, numpy, torch method, doc, LaTeX, other names)
_TRIG: tuple[tuple[str, Callable[..., Any], str, str, str, tuple[str, ...]], ...] = (
    ("sin", np.sin, "sin", "sine, elementwise (radians)", r"\sin", ()),
    ("cos", np.cos, "cos", "cosine, elementwise (radians)", r"\cos", ()),
    ("tan", np.tan, "tan", "tangent, elementwise (radians)", r"\tan", ()),
    ("asin", np.arcsin, "asin", "arcsine, elementwise (radians; NaN outside [-1, 1])", r"\arcsin", ("arcsin",)),
    ("acos", np.arccos, "acos", "arccosine, elementwise (radians; NaN outside [-1, 1])", r"\arccos", ("arccos",)),
    ("atan", np.arctan, "atan", "arctangent, elementwise (radians)", r"\arctan", ("arctan",)),
    ("sinh", np.sinh, "sinh", "hyperbolic sine, elementwise", r"\sinh", ()),
    ("cosh", np.cosh, "cosh", "hyperbolic cosine, elementwise", r"\cosh", ()),
)
for _name, _np_fn, _method, _doc, _tex, _other in _TRIG:
    _unary(
        _name,
        _np_fn,
        lambda a, method=_method: getattr(a, method)(),
        _doc,
        latex=_tex + r"\left(${args}\right)",
        no_cvxpy=NO_DCP,
        elsewhere=_other,
    )
_unary(
    "tanh",
    np.tanh,
    lambda a: a.tanh(),
    "hyperbolic tangent, elementwise",
    latex=r"\tanh\left(${args}\right)",
    no_cvxpy=NO_DCP,
)
_unary(
    "relu",
    lambda a: np.maximum(a, 0.0),
    lambda a: a.clamp(min=0.0),
    "max(x, 0), elementwise",
    cvx=lambda a: _cp().pos(a),
    elsewhere=("pos",),
)
_unary(
    "softplus",
    _softplus_np,
    lambda a: _torch().nn.functional.softplus(a),
    "log(1 + eˣ), elementwise",
    cvx=lambda a: _cp().logistic(a),
)
_unary(
    "sigmoid", lambda a: 1.0 / (1.0 + np.exp(-a)), lambda a: a.sigmoid(), "1 / (1 + e⁻ˣ), elementwise", no_cvxpy=NO_DCP
)

_atom(
    "maximum",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "maximum"),
    lambda a, b: np.maximum(_dense(a), _dense(b)),
    lambda a, b: _torch().maximum(*_tpair(a, b)),
    "elementwise maximum of two arrays",
    cvx=lambda a, b: _cp().maximum(a, b),
    ising=None,
)
_atom(
    "atan2",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "atan2"),
    lambda y, x: np.arctan2(_dense(y), _dense(x)),
    lambda y, x: _torch().atan2(*_tpair(y, x)),
    "atan2(y, x): the angle of the point (x, y) in (−π, π], elementwise",
    ising=None,
    no_cvxpy=NO_DCP,
    elsewhere=("arctan2",),
)
_atom(
    "minimum",
    (2, 2),
    lambda t, s, sp_: elementwise(t, s, sp_, "minimum"),
    lambda a, b: np.minimum(_dense(a), _dense(b)),
    lambda a, b: _torch().minimum(*_tpair(a, b)),
    "elementwise minimum of two arrays",
    cvx=lambda a, b: _cp().minimum(a, b),
    ising=None,
)


def _tpair(a: Any, b: Any) -> tuple[Any, Any]:
    torch = _torch()
    if not isinstance(a, torch.Tensor):
        a = torch.as_tensor(a, dtype=b.dtype, device=b.device)
    if not isinstance(b, torch.Tensor):
        b = torch.as_tensor(b, dtype=a.dtype, device=a.device)
    return a, b


# ------------------------------------------------------------------ reductions
_n, _t = _reduce(np.sum, "sum")
_atom(
    "sum",
    (1, 1),
    reduce_axis,
    _n,
    _t,
    "sum of all elements (axis = k: along one axis)",
    cvx=lambda a, axis=None: _cp().sum(a, axis=axis),
    degree=deg_max,
    latex=r"\textstyle\sum\left(${args}\right)",
    ising=qf.sum_,
)
_n, _t = _reduce(np.mean, "mean")
_atom(
    "mean",
    (1, 1),
    reduce_axis,
    _n,
    _t,
    "mean of all elements; over a data table's rows it is an expectation (minibatched by stochastic backends)",
    cvx=lambda a, axis=None: _cp().sum(a, axis=axis) / (a.size if axis is None else a.shape[axis]),
    degree=deg_max,
    ising=qf.mean,
)
_n, _t = _reduce(np.prod, "prod")
_atom(
    "prod",
    (1, 1),
    reduce_axis,
    _n,
    _t,
    "product of all elements (axis = k: along one axis)",
    latex=r"\textstyle\prod\left(${args}\right)",
    ising=None,
    no_cvxpy="a product of variables is neither convex nor concave: no DCP form",
)
_atom(
    "sumsq",
    (1, 1),
    reduce_,
    lambda a: float(np.sum(np.square(_dense(a)))),
    lambda a: (a * a).sum(),
    "sum of squares",
    cvx=lambda a: _cp().sum_squares(a),
    degree=deg_square_first,
    latex=r"\lVert ${a0} \rVert_2^2",
    ising=qf.sumsq,
    elsewhere=("sum_squares",),
)
_atom(
    "norm1",
    (1, 1),
    reduce_,
    lambda a: float(np.sum(np.abs(_dense(a)))),
    lambda a: a.abs().sum(),
    "ℓ1 norm",
    cvx=lambda a: _cp().norm1(_flat(a)),
    latex=r"\lVert ${a0} \rVert_1",
    ising=None,
)
_atom(
    "norm2",
    (1, 1),
    reduce_,
    lambda a: float(np.linalg.norm(np.ravel(_dense(a)))),
    lambda a: _torch().linalg.vector_norm(a),
    "ℓ2 (Frobenius) norm",
    cvx=lambda a: _cp().norm(_flat(a), 2),
    latex=r"\lVert ${a0} \rVert_2",
    ising=None,
)
_atom(
    "norminf",
    (1, 1),
    reduce_,
    lambda a: float(np.max(np.abs(_dense(a)))),
    lambda a: a.abs().max(),
    "ℓ∞ norm",
    cvx=lambda a: _cp().norm_inf(_flat(a)),
    ising=None,
)
_atom(
    "logsumexp",
    (1, 1),
    reduce_,
    lambda a: float(_logsumexp_np(_dense(a))),
    lambda a: _torch().logsumexp(a.reshape(-1), 0),
    "log Σ exp(xᵢ)",
    cvx=lambda a: _cp().log_sum_exp(a),
    ising=None,
    elsewhere=("log_sum_exp",),
)
_atom(
    "max",
    (1, 1),
    reduce_,
    lambda a: float(np.max(_dense(a))),
    lambda a: a.max(),
    "largest element of one argument; for the elementwise maximum of two, write maximum(a, b)",
    cvx=lambda a: _cp().max(a),
    ising=None,
)
_atom(
    "min",
    (1, 1),
    reduce_,
    lambda a: float(np.min(_dense(a))),
    lambda a: a.min(),
    "smallest element of one argument; for the elementwise minimum of two, write minimum(a, b)",
    cvx=lambda a: _cp().min(a),
    ising=None,
)
_atom(
    "dot",
    (2, 2),
    dot_rule,
    lambda a, b: float(np.dot(_dense(a), _dense(b))),
    lambda a, b: (a * b).sum(),
    "inner product of two vectors",
    cvx=lambda a, b: _cvx_dot(a, b),
    degree=deg_sum,
    latex=r"\langle ${a0}, ${a1} \rangle",
    ising=qf.dot,
)
_atom(
    "quad",
    (2, 2),
    quad_rule,
    _np_quad,
    _t_quad,
    "quad(x, Q) = xᵀ Q x",
    cvx=lambda x, Q: _cp().quad_form(x, Q) if not isinstance(Q, _cp().Expression) else None,
    degree=deg_square_first,
    latex=r"${a0}^\top ${a1} ${a0}",
    ising=qf.quad,
    sparse_args=True,
    elsewhere=("quad_form",),
)
_atom(
    "cut",
    (2, 2),
    cut_rule,
    _np_cut,
    _t_cut,
    "cut(G, s) = Σ over edges w_ij (1 − s_i s_j) / 2, s a ±1 vector of length G.n",
    degree=_deg_cut,
    ising=qf.cut,
    no_cvxpy="an indefinite quadratic form of the graph in s: no DCP form",
    sparse_args=True,
)


def _cvx_dot(a: Any, b: Any) -> Any:
    cp = _cp()
    return cp.sum(cp.multiply(a, b))


# ------------------------------------------------------------------ names users may call
# Generators and graph functions are resolved in ir/lower.py (they need compile-time values).
GENERATORS = {
    "zeros": "zeros(d1[, d2]): an array of zeros",
    "ones": "ones(d1[, d2]): an array of ones",
    "eye": "eye(n): the identity matrix",
    "randn": "randn(d1[, d2], seed = k): standard normal samples",
    "rand": "rand(d1[, d2], seed = k): uniform samples in [0, 1)",
    "erdos_renyi": 'erdos_renyi(n, p, seed = k, weights = "unit" | "signed"): a G(n, p) random graph',
    "random_regular": "random_regular(n, d, seed = k, weights = ...): a random d-regular graph",
    "torus": "torus(rows, cols, weights = ..., seed = k): a 2-D periodic grid (torus(1, n) is a ring)",
    "load": "load(path, key =, target =): read .npy .npz .csv .mtx .json or a Gset/edge-list graph",
    "adjacency": "adjacency(G): the weighted adjacency matrix of a graph (sparse)",
    "laplacian": "laplacian(G): the graph Laplacian Diag(W·1) − W (sparse)",
}
AMBIGUITY_FUNCS = ("chi2", "kl", "wasserstein", "target_conditional")

# Named constants a model may use without declaring them: name -> (value, LaTeX). A declaration of the
# same name (param, var, let, ...) shadows the constant in that model.
CONSTANTS: dict[str, tuple[float, str]] = {"pi": (math.pi, r"\pi")}


def user_functions() -> list[str]:
    return sorted([n for n, s in ATOMS.items() if s.user] + list(GENERATORS))
