"""The spectral half of SpecAnn: a block eigensolver (LOBPCG) for the lowest eigenvectors of
M(t) = D^(-t/2) J D^(-t/2), and the normalization path sweep t = 0 → 1 with the O(n) diagonal
predictor warm start. Sparse matvecs only; nothing here is O(n²) in time or memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optlang.lazy import lazy_module, no_grad

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


MatMul = Callable[["torch.Tensor"], "torch.Tensor"]


@dataclass
class EigResult:
    """Ritz values (ascending), Ritz vectors (n, k) with orthonormal columns, iterations, residual."""

    values: torch.Tensor
    vectors: torch.Tensor
    iterations: int
    residual: float


def _orth(X: torch.Tensor) -> torch.Tensor:
    """Orthonormal basis of the columns of X (Householder QR, stable when X is rank deficient)."""
    return torch.linalg.qr(X, mode="reduced").Q


class Breakdown(RuntimeError):
    """The small eigenproblem or the orthonormalization failed (NaN/inf, no convergence)."""


def _rayleigh_ritz(Q: torch.Tensor, AQ: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k lowest Ritz pairs of the basis Q (small eigenproblem solved in float64)."""
    T = (Q.T @ AQ).double()
    T = (T + T.T) / 2
    if not bool(torch.isfinite(T).all()):
        raise Breakdown("non-finite Rayleigh quotient matrix")
    try:
        w, C = torch.linalg.eigh(T)
    except RuntimeError as e:  # torch.linalg.LinAlgError: eigh did not converge
        raise Breakdown(str(e)) from None
    return w[:k], C[:, :k].to(Q.dtype)


@no_grad
def lobpcg(
    A: MatMul,
    X0: torch.Tensor,
    max_iter: int = 100,
    tol: float = 1e-4,
    scale: float = 1.0,
    stop: Callable[[], bool] | None = None,
) -> EigResult:
    """Lowest k eigenpairs of the symmetric operator A, starting from the block X0 (n, k).

    Plain LOBPCG: Rayleigh-Ritz on span[X, R, P] with a QR-orthonormalized basis. Converged when
    every residual ‖A x − θ x‖ ≤ tol · scale (scale ≈ ‖A‖, e.g. the largest absolute row sum).
    """
    k = X0.shape[1]
    X = _orth(X0)
    AX = A(X)
    try:
        w, C = _rayleigh_ritz(X, AX, k)
    except Breakdown:  # keep the start block: its Rayleigh quotients stand in for Ritz values
        w = (X * AX).sum(dim=0).double().nan_to_num()
        return EigResult(w, X, 0, float("inf"))
    X, AX = X @ C, AX @ C
    P: torch.Tensor | None = None
    res = float("inf")
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - reported
        R = AX - X * w.to(X.dtype)
        res = float(torch.linalg.vector_norm(R, dim=0).max())
        if res <= tol * scale or (stop is not None and stop()):
            return EigResult(w, X, it - 1, res)
        blocks = [X, R] if P is None else [X, R, P]
        try:
            Q = _orth(torch.cat(blocks, dim=1))
            AQ = A(Q)
            w_new, C = _rayleigh_ritz(Q, AQ, k)
        except (Breakdown, RuntimeError):  # a numerical breakdown: the last good block is the answer
            return EigResult(w, X, it - 1, res)
        w = w_new
        Xn = Q @ C
        AXn = AQ @ C
        # the search direction: the new iterate's component outside the old X block
        P = Q[:, k:] @ C[k:]
        X, AX = Xn, AXn
    R = AX - X * w.to(X.dtype)
    res = float(torch.linalg.vector_norm(R, dim=0).max())
    return EigResult(w, X, it, res)


def normalized_operator(Jt: torch.Tensor, dscale: torch.Tensor) -> MatMul:
    """X ↦ diag(dscale) J diag(dscale) X for X of shape (n, k)."""
    ds = dscale[:, None]

    def op(X: torch.Tensor) -> torch.Tensor:
        return ds * (Jt @ (ds * X).contiguous())

    return op


def degrees(Jt: torch.Tensor) -> torch.Tensor:
    """D_ii = Σ_j |J_ij|, with isolated spins set to 1 (so D^(-t/2) stays finite)."""
    crow = Jt.crow_indices()
    n = Jt.shape[0]
    rows = torch.repeat_interleave(torch.arange(n, device=crow.device), crow[1:] - crow[:-1])
    d = torch.zeros(n, dtype=Jt.dtype, device=crow.device).index_add_(0, rows, Jt.values().abs())
    return torch.where(d > 0, d, torch.ones_like(d))


@dataclass
class PathStep:
    """One point t of the normalization path: its eigenpairs and the solver work spent on it."""

    t: float
    values: torch.Tensor
    vectors: torch.Tensor  # orthonormal eigenvectors of M(t) (n, k)
    iterations: int
    residual: float


def path_sweep(
    Jt: torch.Tensor,
    k: int,
    steps: int,
    generator: torch.Generator,
    first_iters: int = 60,
    iters: int = 20,
    tol: float = 1e-3,
    predictor: str = "inverse",
    stop: Callable[[], bool] | None = None,
    first_stop: Callable[[], bool] | None = None,
) -> Iterator[PathStep]:
    """Yield the k lowest eigenpairs of M(t) for t = 0, 1/(steps-1), ..., 1.

    Each solve is warm-started from the previous one after the diagonal predictor:
    "inverse" v ← D^(-Δt/2) v (METHODS.md), "forward" v ← D^(+Δt/2) v (keeps D^(-t/2) v, the
    vector in the original coordinates, fixed), or "none". `first_stop` (default `stop`) ends the
    first, cold solve early, so a big model gets its first rounded cut soon.
    """
    n = Jt.shape[0]
    k = max(1, min(k, n))
    d = degrees(Jt)
    scale = float(torch.max(d))  # ‖M(t)‖ ≤ max row sum of |M(t)| ≤ max D (t = 0) and ≤ 1 (t = 1)
    ts = [0.0] if steps <= 1 else [i / (steps - 1) for i in range(steps)]
    X = torch.randn(n, k, generator=generator, device=generator.device).to(Jt.dtype)
    prev_t = None
    for t in ts:
        if prev_t is not None and predictor != "none":
            sign = -1.0 if predictor == "inverse" else 1.0
            X = X * d[:, None].pow(sign * (t - prev_t) / 2)
        op = normalized_operator(Jt, d.pow(-t / 2))
        sc = scale ** (1 - t)
        halt = first_stop if prev_t is None and first_stop is not None else stop
        r = lobpcg(op, X, max_iter=first_iters if prev_t is None else iters, tol=tol, scale=sc, stop=halt)
        X = r.vectors
        prev_t = t
        yield PathStep(t, r.values, r.vectors, r.iterations, r.residual)


def round_eigenspace(
    vectors: torch.Tensor, n_candidates: int, generator: torch.Generator, start: int = 0
) -> torch.Tensor:
    """±1 candidates (B, n) from an eigenspace: the sign of each eigenvector, then the signs of
    random Gaussian combinations within the span (hyperplane rounding of the spectral embedding).

    `start` > 0 gives candidates start, start+1, ... of that sequence (the eigenvector signs are the
    first k), so a big model can be rounded and descended a batch at a time (memory n·B, not n·32)."""
    n, k = vectors.shape
    count = max(n_candidates, 1)
    cols = []
    if start < k:
        cols.append(vectors[:, start : start + count].T)
    extra = count - sum(c.shape[0] for c in cols)
    if extra > 0:
        g = torch.randn(k, extra, generator=generator, device=generator.device).to(vectors.dtype)
        cols.append((vectors @ g).T)
    V = torch.cat(cols, dim=0)
    return torch.where(V >= 0, 1.0, -1.0).to(vectors.dtype)
