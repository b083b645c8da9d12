"""Lowering of a discrete objective (spin/binary variables, degree ≤ 2) to (J sparse, h, constant).

Every subexpression becomes a constant, a vector of quadratics `Vec` (rows i: Σ_k w_ki (A_k z + a_k)_i
(B_k z + b_k)_i + (C z + c)_i), or a scalar quadratic `Scal` (zᵀQz + lᵀz + c), all with sparse
matrices over the stacked discrete variables z — no Python object per term, edge or entry.
Binary variables are rewritten to spins (x = (1 + s)/2) at the end; s_i² = 1 moves diagonals
into the constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.errors import KindError
from optlang.ir.model import VarDecl
from optlang.ir.nodes import Const, Node, Op, Var
from optlang.ir.types import BINARY
from optlang.problem import IsingProblem


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


class QuadraticLowering:
    """Builds (J, h, constant) of an IsingProblem from a typed IR expression over spin/binary vars."""

    def __init__(self, variables: list[VarDecl]) -> None:
        self.vars = variables
        self.offset: dict[str, int] = {}
        n = 0
        for v in variables:
            self.offset[v.name] = n
            n += int(np.prod(v.shape)) if v.shape else 1
        self.N = n

    # ------------------------------------------------------------------ entry
    def ising(self, node: Node, negate: bool = False) -> IsingProblem:
        """minimize ±expr as sᵀJs + hᵀs + c over the stacked spins (binaries rewritten)."""
        val = self.scal(self.lower(node), node)
        Q, l, c = val.Q, val.l, val.c
        if negate:
            Q, l, c = -Q, -l, -c
        # binary → spin: z = d ∘ s + e with d = e = ½ on binary entries, d = 1, e = 0 on spins
        d = np.ones(self.N)
        e = np.zeros(self.N)
        for v in self.vars:
            if v.kind == BINARY:
                o = self.offset[v.name]
                k = int(np.prod(v.shape)) if v.shape else 1
                d[o : o + k] = 0.5
                e[o : o + k] = 0.5
        Dm = sp.diags(d)
        Qs = (Dm @ Q @ Dm).tocsr()
        Qe = Q @ e
        QTe = Q.T @ e
        h = d * (l + Qe + QTe)
        c = c + float(e @ Qe) + float(l @ e)
        diag = Qs.diagonal()
        c += float(diag.sum())  # s_i² = 1
        off = (Qs - sp.diags(diag)).tocsr()
        J = ((off + off.T) / 2.0).tocsr()
        J.eliminate_zeros()
        return IsingProblem(J=J, h=np.asarray(h, dtype=np.float64), constant=float(c))

    def split(self, s: np.ndarray) -> dict[str, np.ndarray]:
        """Spin vector → user values (binaries as 0/1)."""
        out = {}
        for v in self.vars:
            o = self.offset[v.name]
            k = int(np.prod(v.shape)) if v.shape else 1
            part = np.asarray(s[o : o + k], dtype=np.float64)
            if v.kind == BINARY:
                part = (1.0 + part) / 2.0
            out[v.name] = part.reshape(v.shape) if v.shape else part.reshape(())
        return out

    # ------------------------------------------------------------------ recursion
    def lower(self, n: Node) -> Any:
        if isinstance(n, Const):
            v = n.value
            return v if sp.issparse(v) else np.asarray(v, dtype=np.float64)
        if isinstance(n, Var):
            o = self.offset[n.name]
            k = int(np.prod(n.type.shape)) if n.type.shape else 1
            C = sp.csr_matrix((np.ones(k), (np.arange(k), o + np.arange(k))), shape=(k, self.N))
            return Vec(C, np.zeros(k), scalar=not n.type.shape)
        assert isinstance(n, Op)
        args = [self.lower(a) for a in n.args]
        handler = getattr(self, f"_op_{n.atom}", None)
        if handler is None:
            raise KindError(
                f"'{n.atom}' is not allowed on spin/binary variables: the objective must be a "
                "polynomial of degree at most 2",
                n.span,
                code="E402",
                hint="use +, -, *, /, ^2, @, sum, mean, dot, quad, sumsq, square, cut",
            )
        return handler(n, *args, **{k: v for k, v in n.static.items() if k != "text"})

    # ------------------------------------------------------------------ conversions
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

    def scal(self, x: Any, node: Node | None = None) -> Scal:
        if isinstance(x, Scal):
            return x
        if isinstance(x, Vec):
            if x.m != 1:
                raise KindError("the objective must be a scalar", node.span if node else None, code="E303")
            return self.sum_vec(x)
        arr = np.asarray(x.toarray() if sp.issparse(x) else x, dtype=np.float64)
        return Scal(sp.csr_matrix((self.N, self.N)), np.zeros(self.N), float(arr.sum()))

    def sum_vec(self, v: Vec, weights: np.ndarray | None = None) -> Scal:
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

    @staticmethod
    def _deg(x: Any) -> int:
        return x.degree if isinstance(x, (Vec, Scal)) else 0

    # ------------------------------------------------------------------ atoms
    def _op_add(self, n: Op, a: Any, b: Any, sign: float = 1.0) -> Any:
        if (
            isinstance(a, Scal)
            or isinstance(b, Scal)
            or (n.type.shape == () and not _is_const(a) and not _is_const(b) and (_vm(a) == 1 and _vm(b) == 1))
        ):
            if n.type.shape == ():
                sa, sb = self.scal(a), self.scal(b)
                return Scal((sa.Q + sign * sb.Q).tocsr(), sa.l + sign * sb.l, sa.c + sign * sb.c)
        m = int(np.prod(n.type.shape)) if n.type.shape else 1
        va, vb = self.vec(a, m), self.vec(b, m)
        terms = list(va.terms) + [(sign * w, A, aa, B, bb) for w, A, aa, B, bb in vb.terms]
        return Vec((va.C + sign * vb.C).tocsr(), va.c + sign * vb.c, terms, scalar=not n.type.shape)

    def _op_sub(self, n: Op, a: Any, b: Any) -> Any:
        return self._op_add(n, a, b, sign=-1.0)

    def _op_neg(self, n: Op, a: Any) -> Any:
        return self._scale(a, -1.0)

    def _scale(self, x: Any, k: Any) -> Any:
        if isinstance(x, Scal):
            kk = float(k)
            return Scal((x.Q * kk).tocsr(), x.l * kk, x.c * kk)
        if isinstance(x, Vec):
            kv = np.broadcast_to(np.asarray(k, dtype=np.float64), (x.m,)) if np.ndim(k) else np.full(x.m, float(k))
            D = sp.diags(kv)
            return Vec((D @ x.C).tocsr(), kv * x.c, [(w * kv, A, a, B, b) for w, A, a, B, b in x.terms], x.scalar)
        return x * k

    def _op_mul(self, n: Op, a: Any, b: Any) -> Any:
        if _is_const(a):
            return self._scale(b, _dense(a))
        if _is_const(b):
            return self._scale(a, _dense(b))
        if self._deg(a) + self._deg(b) > 2:
            raise KindError(
                "this product has degree above 2 in the spin/binary variables",
                n.span,
                hint="Ising and QUBO objectives are polynomials of degree at most 2",
                code="E401",
            )
        if isinstance(a, Scal) and a.degree == 0:
            return self._scale(b, a.c)
        if isinstance(b, Scal) and b.degree == 0:
            return self._scale(a, b.c)
        m = int(np.prod(n.type.shape)) if n.type.shape else 1
        va, vb = self.vec(a, m), self.vec(b, m)
        if va.terms or vb.terms:  # degree-2 × degree-0 handled above; here both affine
            raise KindError("this product has degree above 2", n.span, code="E401")
        return Vec(
            sp.csr_matrix((m, self.N)), np.zeros(m), [(np.ones(m), va.C, va.c, vb.C, vb.c)], scalar=not n.type.shape
        )

    def _op_div(self, n: Op, a: Any, b: Any) -> Any:
        if not _is_const(b):
            raise KindError(
                "division by an expression of spin/binary variables is not a polynomial", n.span, code="E402"
            )
        return self._scale(a, 1.0 / _dense(b))

    def _op_pow(self, n: Op, a: Any, b: Any) -> Any:
        if not _is_const(b) or np.ndim(b) != 0 or float(b) not in (0.0, 1.0, 2.0):
            raise KindError("spin/binary expressions may only be raised to the power 0, 1 or 2", n.span, code="E401")
        k = float(b)
        if k == 0:
            return np.ones(n.type.shape) if n.type.shape else np.float64(1.0)
        if k == 1:
            return a
        if self._deg(a) > 1:
            raise KindError("squaring a quadratic gives degree 4", n.span, code="E401")
        return self._op_mul(n, a, a)

    def _op_square(self, n: Op, a: Any) -> Any:
        if self._deg(a) > 1:
            raise KindError("squaring a quadratic gives degree 4", n.span, code="E401")
        return self._op_mul(n, a, a)

    def _op_sum(self, n: Op, a: Any, axis: int | None = None) -> Any:
        if axis is not None:
            raise KindError("sum(..., axis =) is not supported on spin/binary expressions", n.span, code="E402")
        if isinstance(a, Scal):
            return a
        return self.sum_vec(self.vec(a))

    def _op_mean(self, n: Op, a: Any, axis: int | None = None) -> Any:
        if axis is not None:
            raise KindError("mean(..., axis =) is not supported on spin/binary expressions", n.span, code="E402")
        if isinstance(a, Scal):
            return a
        v = self.vec(a)
        return self._scale(self.sum_vec(v), 1.0 / v.m)

    def _op_sumsq(self, n: Op, a: Any) -> Any:
        if self._deg(a) > 1:
            raise KindError("sumsq of a quadratic gives degree 4", n.span, code="E401")
        v = self.vec(a)
        return self.sum_vec(Vec(sp.csr_matrix((v.m, self.N)), np.zeros(v.m), [(np.ones(v.m), v.C, v.c, v.C, v.c)]))

    def _op_dot(self, n: Op, a: Any, b: Any) -> Any:
        prod = self._op_mul(Op(n.span, n.args[0].type, "mul", n.args), a, b)
        return self._op_sum(n, prod)

    def _op_quad(self, n: Op, x: Any, Q: Any) -> Any:
        if not _is_const(Q):
            raise KindError("quad(x, Q) needs a constant matrix Q", n.span, code="E402")
        if self._deg(x) > 1:
            raise KindError("quad of a quadratic gives degree 4", n.span, code="E401")
        v = self.vec(x)
        Qm = sp.csr_matrix(Q, dtype=np.float64)
        A, a = v.C, v.c
        Qz = (A.T @ Qm @ A).tocsr()
        l = np.asarray(A.T @ (Qm @ a)).ravel() + np.asarray(A.T @ (Qm.T @ a)).ravel()
        return Scal(Qz, l, float(a @ (Qm @ a)))

    def _op_cut(self, n: Op, W: Any, s: Any) -> Any:
        Wm = sp.csr_matrix(W, dtype=np.float64)
        q = self._op_quad(n, s, Wm)
        total = float(Wm.sum()) / 2.0
        return Scal((q.Q * -0.25).tocsr(), q.l * -0.25, total / 2.0 - q.c / 4.0)

    def _op_matmul(self, n: Op, a: Any, b: Any) -> Any:
        if _is_const(a):
            M = sp.csr_matrix(a) if np.ndim(a) == 2 or sp.issparse(a) else None
            if M is None:  # const vector @ vec → dot
                return self.sum_vec(self._scale(self.vec(b), _dense(a)))
            v = self.vec(b)
            if v.terms:
                raise KindError("a matrix times a quadratic vector is not supported", n.span, code="E402")
            return Vec((M @ v.C).tocsr(), np.asarray(M @ v.c).ravel(), scalar=len(n.type.shape) == 0)
        if _is_const(b):
            M = sp.csr_matrix(b) if np.ndim(b) == 2 or sp.issparse(b) else None
            v = self.vec(a)
            if v.terms:
                raise KindError("a quadratic vector times a matrix is not supported", n.span, code="E402")
            if M is None:
                return self.sum_vec(self._scale(v, _dense(b)))
            Mt = M.T.tocsr()
            return Vec((Mt @ v.C).tocsr(), np.asarray(Mt @ v.c).ravel(), scalar=len(n.type.shape) == 0)
        # vec @ vec: inner product
        prod = self._op_mul(Op(n.span, n.args[0].type, "mul", n.args), a, b)
        return self._op_sum(n, prod)

    def _op_index(self, n: Op, a: Any, index: tuple[Any, ...] = ()) -> Any:
        v = self.vec(a)
        rows = np.arange(v.m)[index[0]] if index else np.arange(v.m)
        rows = np.atleast_1d(rows)
        out = Vec(
            v.C[rows],
            v.c[rows],
            [(w[rows], A[rows], aa[rows], B[rows], bb[rows]) for w, A, aa, B, bb in v.terms],
            scalar=not n.type.shape,
        )
        return out

    def _op_transpose(self, n: Op, a: Any) -> Any:
        if n.type.ndim > 1:
            raise KindError("transposing a matrix of spin/binary expressions is not supported", n.span, code="E402")
        return a


def _is_const(x: Any) -> bool:
    return not isinstance(x, (Vec, Scal))


def _vm(x: Any) -> int:
    return x.m if isinstance(x, Vec) else 1


def _dense(x: Any) -> Any:
    return x.toarray() if sp.issparse(x) else np.asarray(x, dtype=np.float64)
