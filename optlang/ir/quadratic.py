"""Lowering of a discrete objective (spin/binary variables, degree ≤ 2) to (J sparse, h, constant).

Every subexpression becomes a constant, a `Vec` or a `Scal` of ir/quadforms.py, through the rule in
its atom's entry (`AtomSpec.ising`, ir/atoms.py); an atom without one is refused with E402.
Binary variables are rewritten to spins (x = (1 + s)/2) at the end; s_i² = 1 moves diagonals
into the constant.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.errors import KindError
from optlang.ir.atoms import ATOMS, ising_atoms
from optlang.ir.model import VarDecl
from optlang.ir.nodes import Const, Node, Op, Var
from optlang.ir.quadforms import Forms, Site, Vec
from optlang.ir.types import BINARY
from optlang.problem import IsingProblem


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
        self.forms = Forms(n)

    # ------------------------------------------------------------------ entry
    def ising(self, node: Node, negate: bool = False) -> IsingProblem:
        """minimize ±expr as sᵀJs + hᵀs + c over the stacked spins (binaries rewritten)."""
        val = self.forms.scal(self.lower(node), node.span)
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
        rule = ATOMS[n.atom].ising
        if rule is None:
            raise KindError(
                f"'{n.atom}' is not allowed on spin/binary variables: the objective must be a "
                "polynomial of degree at most 2",
                n.span,
                code="E402",
                hint=f"use {ising_atoms()}",
            )
        site = Site(n.type.shape, n.span, tuple(a.type.shape for a in n.args))
        return rule(self.forms, site, *args, **n.static)
