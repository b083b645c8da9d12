"""Ising ↔ Max-Cut: the weights W and the constant that make energy = constant − cut.

For E(s) = sᵀJs + c with symmetric zero-diagonal J (a field is first absorbed into one extra spin
by `IsingProblem.with_field_spin`), cut_W(s) = Σ_{i<j} w_ij (1 − s_i s_j)/2 with W = 4J gives
cut_W(s) = 2Σ_{i<j} J_ij − sᵀJs, hence E(s) = offset − cut_W(s) with offset = c + Σ_{i<j} w_ij / 2.
Minimizing the energy is maximizing the cut of W = 4J (not −4J: the sign is tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from optlang.problem import IsingProblem


@dataclass(frozen=True)
class MaxCutForm:
    """A Max-Cut instance equivalent to an Ising problem: energy(s) = offset − cut_W(t)."""

    W: sp.csr_matrix  # symmetric, zero diagonal, float64
    offset: float
    n_orig: int  # spins of the original problem
    field_spin: bool  # True when t has one extra spin (index n_orig) absorbing the field

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    def spins(self, t: np.ndarray) -> np.ndarray:
        """Map a cut vector t (±1, length n) back to the original spins s."""
        t = np.where(np.asarray(t, dtype=np.float64) >= 0, 1.0, -1.0)
        if self.field_spin:
            return t[: self.n_orig] * t[self.n_orig]
        return t

    def cut(self, t: np.ndarray) -> float:
        """Cut value of one ±1 vector, float64."""
        t = np.asarray(t, dtype=np.float64)
        return float((self.W.sum() - t @ (self.W @ t)) / 4.0)

    def energy(self, cut: float) -> float:
        return self.offset - float(cut)


def to_maxcut(problem: IsingProblem) -> MaxCutForm:
    """The Max-Cut form of an Ising problem (uses `maxcut_weights` directly when present)."""
    if problem.maxcut_weights is not None and not problem.has_field and _consistent(problem):
        W = sp.csr_matrix(problem.maxcut_weights, dtype=np.float64)
        W = (W - sp.diags(W.diagonal())).tocsr()
        W.eliminate_zeros()
        # offset recomputed from J and c so that it is right even if `constant` was changed
        offset = problem.constant + float(W.sum()) / 4.0
        return MaxCutForm(W=W, offset=offset, n_orig=problem.n, field_spin=False)
    reduced = problem.with_field_spin()
    J = sp.csr_matrix(reduced.J, dtype=np.float64)
    J = ((J + J.T) / 2.0).tocsr()  # symmetric by contract; averaging guards rounding
    J = (J - sp.diags(J.diagonal())).tocsr()
    diag_const = float(np.asarray(reduced.J.diagonal()).sum())  # s_i² = 1: a diagonal is a constant
    W = (4.0 * J).tocsr()
    W.eliminate_zeros()
    offset = reduced.constant + diag_const + float(W.sum()) / 4.0
    return MaxCutForm(W=W, offset=offset, n_orig=problem.n, field_spin=problem.has_field)


def _consistent(problem: IsingProblem) -> bool:
    """True when J is W/4 for the stored Max-Cut weights (a rewrite may have changed J since)."""
    W = sp.csr_matrix(problem.maxcut_weights, dtype=np.float64)
    W = W - sp.diags(W.diagonal())
    diff = abs(sp.csr_matrix(problem.J, dtype=np.float64) - W / 4.0)
    scale = max(1.0, float(abs(W).max()) if W.nnz else 1.0)
    return diff.nnz == 0 or float(diff.max()) <= 1e-12 * scale
