"""Quadratic forms over stacked spin/binary variables, and each atom's Ising/QUBO lowering rule.

A subexpression is a constant, a vector of quadratics `Vec` (rows i: Σ_k w_ki (A_k z + a_k)_i
(B_k z + b_k)_i + (C z + c)_i), or a scalar quadratic `Scal` (zᵀQz + lᵀz + c), all with sparse
matrices over the stacked discrete variables z — no Python object per term, edge or entry.

The rules below are referenced by the atom table (`AtomSpec.ising` in ir/atoms.py); ir/quadratic.py
walks an expression and applies them. A rule is `rule(forms, site, *argument_values, **static)`:
`forms` is the algebra over z, `site` the Op's result shape, span and argument shapes. This module
knows nothing of IR nodes (ir/atoms.py imports it, and ir/nodes.py imports ir/atoms.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.errors import KindError
from optlang.source import Span


@dataclass
class Vec:
    """m quadratic forms in z: Σ_k w_k ∘ (A_k z + a_k) ∘ (B_k z + b_k) + (C z + c)."""

    C: sp.csr_matrix
    c: np.ndarray
    terms: list[tuple[np.ndarray, sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray]] = field(default_factory=list)
    scalar: bool = False  # shape () (m = 1)

    @property
    def m(self) -> int:
        return self.C.shape[0]

    @property
    def degree(self) -> int:
        return 2 if self.terms else (1 if self.C.nnz else 0)


@dataclass
class Scal:
    """A scalar quadratic zᵀQz + lᵀz + c."""

    Q: sp.csr_matrix
    l: np.ndarray
    c: float

    @property
    def degree(self) -> int:
        return 2 if self.Q.nnz else (1 if np.any(self.l) else 0)


@dataclass(frozen=True)
class Site:
    """Where a rule applies: the Op's result shape, its span (for errors), its arguments' shapes."""

    shape: tuple[int, ...]
    span: Span | None
    arg_shapes: tuple[tuple[int, ...], ...] = ()

    @property
    def m(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1


class Forms:
    """The algebra of constants, Vec and Scal over N stacked discrete variables."""

    def __init__(self, N: int) -> None:
        self.N = N

    def vec(self, x: Any, m: int | None = None) -> Vec:
        """Anything → Vec (constants and scalars broadcast to m rows)."""
        if isinstance(x, Vec):
            if m is not None and x.m == 1 and m != 1:
                rep = np.zeros(m, dtype=np.int64)
                return Vec(
                    x.C[rep],
                    np.repeat(x.c, m),
                    [(np.repeat(w, m), A[rep], np.repeat(a, m), B[rep], np.repeat(b, m)) for w, A, a, B, b in x.terms],
                )
            return x
        if isinstance(x, Scal):
            if x.Q.nnz:
                raise KindError(
                    "a quadratic scalar cannot be combined elementwise with a vector here",
                    None,
                    hint="reduce the vector first (sum, dot, quad)",
                    code="E402",
                )
            v = Vec(sp.csr_matrix(x.l.reshape(1, -1)), np.array([x.c]), scalar=True)
            return self.vec(v, m)
        arr = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=np.float64)
        k = m if arr.ndim == 0 and m is not None else (arr.size if arr.ndim else 1)
        return Vec(sp.csr_matrix((k, self.N)), np.broadcast_to(arr.ravel(), (k,)).copy(), scalar=arr.ndim == 0)

    def scal(self, x: Any, span: Span | None = None) -> Scal:
        """Anything of one row → Scal (a Vec of several rows is not a scalar: E303)."""
        if isinstance(x, Scal):
            return x
        if isinstance(x, Vec):
            if x.m != 1:
                raise KindError("the objective must be a scalar", span, code="E303")
            return self.sum_vec(x)
        arr = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=np.float64)
        return Scal(sp.csr_matrix((self.N, self.N)), np.zeros(self.N), float(arr.sum()))

    def sum_vec(self, v: Vec, weights: np.ndarray | None = None) -> Scal:
        """Σ_i w_i v_i as one scalar quadratic."""
        w0 = np.ones(v.m) if weights is None else weights
        Q = sp.csr_matrix((self.N, self.N))
        l = np.asarray(v.C.T @ w0).ravel()
        c = float(w0 @ v.c)
        for w, A, a, B, b in v.terms:
            ww = w * w0
            Wd = sp.diags(ww)
            Q = Q + (A.T @ Wd @ B)
            l = l + np.asarray(A.T @ (ww * b)).ravel() + np.asarray(B.T @ (ww * a)).ravel()
            c += float(np.sum(ww * a * b))
        return Scal(Q.tocsr(), l, c)

    def scale(self, x: Any, k: Any) -> Any:
        """x times a constant k (a scalar, or one factor per row)."""
        if isinstance(x, Scal):
            kk = float(k)
            return Scal((x.Q * kk).tocsr(), x.l * kk, x.c * kk)
        if isinstance(x, Vec):
            kv = np.broadcast_to(np.asarray(k, dtype=np.float64), (x.m,)) if np.ndim(k) else np.full(x.m, float(k))
            D = sp.diags(kv)
            return Vec((D @ x.C).tocsr(), kv * x.c, [(w * kv, A, a, B, b) for w, A, a, B, b in x.terms], x.scalar)
        return x * k


def is_const(x: Any) -> bool:
    """A constant value (neither a Vec nor a Scal)."""
    return not isinstance(x, (Vec, Scal))


def degree(x: Any) -> int:
    return x.degree if isinstance(x, (Vec, Scal)) else 0


def _vm(x: Any) -> int:
    return x.m if isinstance(x, Vec) else 1


def _dense(x: Any) -> Any:
    return x.toarray() if sp.issparse(x) else np.asarray(x, dtype=np.float64)


# ------------------------------------------------------------------ the rules (AtomSpec.ising)
def add(f: Forms, site: Site, a: Any, b: Any, sign: float = 1.0) -> Any:
    if (
        isinstance(a, Scal)
        or isinstance(b, Scal)
        or (site.shape == () and not is_const(a) and not is_const(b) and (_vm(a) == 1 and _vm(b) == 1))
    ):
        if site.shape == ():
            sa, sb = f.scal(a), f.scal(b)
            return Scal((sa.Q + sign * sb.Q).tocsr(), sa.l + sign * sb.l, sa.c + sign * sb.c)
    m = site.m
    va, vb = f.vec(a, m), f.vec(b, m)
    terms = list(va.terms) + [(sign * w, A, aa, B, bb) for w, A, aa, B, bb in vb.terms]
    return Vec((va.C + sign * vb.C).tocsr(), va.c + sign * vb.c, terms, scalar=not site.shape)


def sub(f: Forms, site: Site, a: Any, b: Any) -> Any:
    return add(f, site, a, b, sign=-1.0)


def neg(f: Forms, site: Site, a: Any) -> Any:
    return f.scale(a, -1.0)


def mul(f: Forms, site: Site, a: Any, b: Any) -> Any:
    if is_const(a):
        return f.scale(b, _dense(a))
    if is_const(b):
        return f.scale(a, _dense(b))
    if degree(a) + degree(b) > 2:
        raise KindError(
            "this product has degree above 2 in the spin/binary variables",
            site.span,
            hint="Ising and QUBO objectives are polynomials of degree at most 2",
            code="E401",
        )
    if isinstance(a, Scal) and a.degree == 0:
        return f.scale(b, a.c)
    if isinstance(b, Scal) and b.degree == 0:
        return f.scale(a, b.c)
    m = site.m
    va, vb = f.vec(a, m), f.vec(b, m)
    if va.terms or vb.terms:  # degree-2 × degree-0 handled above; here both affine
        raise KindError("this product has degree above 2", site.span, code="E401")
    return Vec(sp.csr_matrix((m, f.N)), np.zeros(m), [(np.ones(m), va.C, va.c, vb.C, vb.c)], scalar=not site.shape)


def div(f: Forms, site: Site, a: Any, b: Any) -> Any:
    if not is_const(b):
        raise KindError(
            "division by an expression of spin/binary variables is not a polynomial", site.span, code="E402"
        )
    return f.scale(a, 1.0 / _dense(b))


def power(f: Forms, site: Site, a: Any, b: Any) -> Any:
    if not is_const(b) or np.ndim(b) != 0 or float(b) not in (0.0, 1.0, 2.0):
        raise KindError("spin/binary expressions may only be raised to the power 0, 1 or 2", site.span, code="E401")
    k = float(b)
    if k == 0:
        return np.ones(site.shape) if site.shape else np.float64(1.0)
    if k == 1:
        return a
    if degree(a) > 1:
        raise KindError("squaring a quadratic gives degree 4", site.span, code="E401")
    return mul(f, site, a, a)


def square(f: Forms, site: Site, a: Any) -> Any:
    if degree(a) > 1:
        raise KindError("squaring a quadratic gives degree 4", site.span, code="E401")
    return mul(f, site, a, a)


def sum_(f: Forms, site: Site, a: Any, axis: int | None = None) -> Any:
    if axis is not None:
        raise KindError("sum(..., axis =) is not supported on spin/binary expressions", site.span, code="E402")
    if isinstance(a, Scal):
        return a
    return f.sum_vec(f.vec(a))


def mean(f: Forms, site: Site, a: Any, axis: int | None = None) -> Any:
    if axis is not None:
        raise KindError("mean(..., axis =) is not supported on spin/binary expressions", site.span, code="E402")
    if isinstance(a, Scal):
        return a
    v = f.vec(a)
    return f.scale(f.sum_vec(v), 1.0 / v.m)


def sumsq(f: Forms, site: Site, a: Any) -> Any:
    if degree(a) > 1:
        raise KindError("sumsq of a quadratic gives degree 4", site.span, code="E401")
    v = f.vec(a)
    return f.sum_vec(Vec(sp.csr_matrix((v.m, f.N)), np.zeros(v.m), [(np.ones(v.m), v.C, v.c, v.C, v.c)]))


def _inner(f: Forms, site: Site, a: Any, b: Any) -> Any:
    """Σ a ∘ b of two vectors (dot, and @ between two expressions)."""
    prod = mul(f, Site(site.arg_shapes[0], site.span, site.arg_shapes), a, b)
    return sum_(f, site, prod)


def dot(f: Forms, site: Site, a: Any, b: Any) -> Any:
    return _inner(f, site, a, b)


def quad(f: Forms, site: Site, x: Any, Q: Any) -> Scal:
    if not is_const(Q):
        raise KindError("quad(x, Q) needs a constant matrix Q", site.span, code="E402")
    if degree(x) > 1:
        raise KindError("quad of a quadratic gives degree 4", site.span, code="E401")
    v = f.vec(x)
    Qm = sp.csr_matrix(Q, dtype=np.float64)
    A, a = v.C, v.c
    Qz = (A.T @ Qm @ A).tocsr()
    l = np.asarray(A.T @ (Qm @ a)).ravel() + np.asarray(A.T @ (Qm.T @ a)).ravel()
    return Scal(Qz, l, float(a @ (Qm @ a)))


def cut(f: Forms, site: Site, W: Any, s: Any) -> Scal:
    Wm = sp.csr_matrix(W, dtype=np.float64)
    q = quad(f, site, s, Wm)
    total = float(Wm.sum()) / 2.0
    return Scal((q.Q * -0.25).tocsr(), q.l * -0.25, total / 2.0 - q.c / 4.0)


def matmul(f: Forms, site: Site, a: Any, b: Any) -> Any:
    if is_const(a):
        M = sp.csr_matrix(a) if np.ndim(a) == 2 or sp.issparse(a) else None
        if M is None:  # const vector @ vec → dot
            return f.sum_vec(f.scale(f.vec(b), _dense(a)))
        v = f.vec(b)
        if v.terms:
            raise KindError("a matrix times a quadratic vector is not supported", site.span, code="E402")
        return Vec((M @ v.C).tocsr(), np.asarray(M @ v.c).ravel(), scalar=len(site.shape) == 0)
    if is_const(b):
        M = sp.csr_matrix(b) if np.ndim(b) == 2 or sp.issparse(b) else None
        v = f.vec(a)
        if M is None:  # vec @ const vector → dot
            return f.sum_vec(f.scale(v, _dense(b)))
        if v.terms:
            raise KindError("a quadratic vector times a matrix is not supported", site.span, code="E402")
        Mt = M.T.tocsr()
        return Vec((Mt @ v.C).tocsr(), np.asarray(Mt @ v.c).ravel(), scalar=len(site.shape) == 0)
    return _inner(f, site, a, b)  # vec @ vec: inner product


def index(f: Forms, site: Site, a: Any, index: tuple[Any, ...] = ()) -> Vec:
    v = f.vec(a)
    shape = site.arg_shapes[0] if site.arg_shapes else (v.m,)
    rows = np.atleast_1d(np.arange(v.m).reshape(shape)[index]).ravel()  # every axis (row-major, as z is stacked)
    return Vec(
        v.C[rows],
        v.c[rows],
        [(w[rows], A[rows], aa[rows], B[rows], bb[rows]) for w, A, aa, B, bb in v.terms],
        scalar=not site.shape,
    )


def transpose(f: Forms, site: Site, a: Any) -> Any:
    if len(site.shape) > 1:
        raise KindError("transposing a matrix of spin/binary expressions is not supported", site.span, code="E402")
    return a


def array(f: Forms, site: Site, *xs: Any) -> Vec:
    """[a, b, c]: the elements' rows stacked in order (each element of the same shape)."""
    vs = [f.vec(x, int(np.prod(s)) if s else 1) for x, s in zip(xs, site.arg_shapes, strict=True)]
    total = sum(v.m for v in vs)
    terms = []
    off = 0
    for v in vs:
        before, after = off, total - off - v.m

        def rows(M: sp.csr_matrix, before: int = before, after: int = after) -> sp.csr_matrix:
            return sp.vstack([sp.csr_matrix((before, f.N)), M, sp.csr_matrix((after, f.N))]).tocsr()

        def pad(x: np.ndarray, before: int = before, after: int = after) -> np.ndarray:
            return np.concatenate([np.zeros(before), x, np.zeros(after)])

        terms += [(pad(w), rows(A), pad(a), rows(B), pad(b)) for w, A, a, B, b in v.terms]
        off += v.m
    C = sp.vstack([v.C for v in vs]).tocsr()
    return Vec(C, np.concatenate([v.c for v in vs]), terms)
