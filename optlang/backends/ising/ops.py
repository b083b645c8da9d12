"""Shared torch kernels for Ising/Max-Cut backends: sparse couplings, local fields, energies,
batched 1-flip descent, exact enumeration, cut values and the refusals the Ising backends share.

Conventions: E(s) = sᵀJs + hᵀs + c with J symmetric, zero diagonal (each pair counted twice).
A batch of candidates is a dense (B, n) tensor of ±1 in the working dtype. Flipping spin i changes
the energy by ΔE_i = -2 s_i (2 (Js)_i + h_i); the kernels keep G = 2 J s + h per candidate and
update it incrementally from the rows of the flipped spins (never anything dense in n × n).
Used by specann, localsearch and the GNN-SDP backend; nothing here prints or reads options.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from optlang.lazy import lazy_module, no_grad
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

BRUTE_FORCE_MAX_N = 24


# ----------------------------------------------------------------------------- sparse couplings
def to_torch_csr(
    J: sp.csr_matrix, device: Any = "cpu", dtype: torch.dtype | None = None, index_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """scipy CSR (n, n) → torch sparse CSR tensor on `device` in `dtype` (default float32) with
    `index_dtype` indices (default int64; int32 halves the index memory of a big graph, and is
    refused when nnz does not fit)."""
    dtype = torch.float32 if dtype is None else dtype
    idx = np.int32 if index_dtype == torch.int32 else np.int64
    J = sp.csr_matrix(J)
    if idx == np.int32 and J.nnz >= 2**31:
        raise ValueError(f"int32 indices cannot address {J.nnz} nonzeros")
    J.sort_indices()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
        return torch.sparse_csr_tensor(
            torch.as_tensor(J.indptr.astype(idx, copy=False)),
            torch.as_tensor(J.indices.astype(idx, copy=False)),
            torch.as_tensor(J.data, dtype=dtype),
            size=J.shape,
            dtype=dtype,
            device=device,
            check_invariants=False,
        )


def matvec(Jt: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """J s_b for every row of S (B, n) → (B, n); J symmetric so (J Sᵀ)ᵀ = S J."""
    return (Jt @ S.T.contiguous()).T.contiguous()


def local_fields(Jt: torch.Tensor, h_t: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """F[b] = J s_b + h for a batch S (B, n) of ±1 spins."""
    return matvec(Jt, S) + h_t


def energies(Jt: torch.Tensor, h_t: torch.Tensor, S: torch.Tensor, constant: float = 0.0) -> torch.Tensor:
    """E[b] = s_bᵀ J s_b + hᵀ s_b + constant, shape (B,), in S's dtype."""
    return (S * (matvec(Jt, S) + h_t)).sum(dim=1) + constant


def row_abs_sums(Jt: torch.Tensor, h_t: torch.Tensor) -> torch.Tensor:
    """2 Σ_j |J_ij| + |h_i|: the magnitude bound of G_i, used as the float noise scale."""
    crow = Jt.crow_indices()
    n = Jt.shape[0]
    rows = torch.repeat_interleave(torch.arange(n, device=crow.device), crow[1:] - crow[:-1])
    out = torch.zeros(n, dtype=Jt.dtype, device=crow.device)
    out.index_add_(0, rows, Jt.values().abs())
    return 2 * out + h_t.abs()


def gather_rows(Jt: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The nonzeros of the given rows of a CSR tensor: (owner k-index, column, value) flattened."""
    crow, col, val = Jt.crow_indices(), Jt.col_indices(), Jt.values()
    starts = crow[rows]
    lens = crow[rows + 1] - starts
    total = int(lens.sum())
    owner = torch.repeat_interleave(torch.arange(rows.numel(), device=rows.device), lens, output_size=total)
    offs = torch.cumsum(lens, 0) - lens
    pos = torch.arange(total, device=rows.device) - offs[owner] + starts[owner]
    return owner, col[pos], val[pos]


def apply_flips(Jt: torch.Tensor, S: torch.Tensor, G: torch.Tensor, b: torch.Tensor, i: torch.Tensor) -> None:
    """Flip spins S[b, i] in place and update G = 2 J s + h incrementally (pairs must be distinct)."""
    if b.numel() == 0:
        return
    n = S.shape[1]
    ds = -2.0 * S[b, i]
    S[b, i] = -S[b, i]
    owner, nbr, val = gather_rows(Jt, i)
    G.view(-1).index_add_(0, b[owner] * n + nbr, 2.0 * val * ds[owner])


def _priority(n: int, device: Any) -> torch.Tensor:
    """A fixed pseudo-random total order on spins (Knuth hash), to break ties between equal gains."""
    return (torch.arange(n, device=device, dtype=torch.int64) * 2654435761) % 4294967296


# ----------------------------------------------------------------------------- local search
@no_grad
def descent_with_fields(
    Jt: torch.Tensor,
    h_t: torch.Tensor,
    S: torch.Tensor,
    G: torch.Tensor | None = None,
    max_sweeps: int = 10_000,
    stop: Callable[[], bool] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Batched greedy 1-flip descent; returns (S, G = 2JS + h, rounds). S is modified in place.

    Each round flips, in every candidate, all improving spins whose gain beats every neighbour's
    (ties broken by a fixed order): an independent set, so the gains add up exactly, and the best
    spin of each candidate always flips, so every round strictly descends. Stops at a 1-flip local
    minimum (no flip lowers E by more than float noise), after `max_sweeps` rounds, or when
    `stop()` turns true (checked between rounds; S stays a valid ±1 batch).
    """
    n = S.shape[1]
    if G is None:
        G = 2.0 * matvec(Jt, S) + h_t
    eps = 1e-5 * row_abs_sums(Jt, h_t) + 1e-12
    prio = _priority(n, S.device)
    rounds = 0
    for rounds in range(1, max_sweeps + 1):  # noqa: B007 - rounds is reported
        gain = 2.0 * S * G  # energy decrease of flipping each spin
        imp = gain > eps
        b, i = imp.nonzero(as_tuple=True)
        if b.numel() == 0 or (stop is not None and stop()):
            return S, G, rounds - 1
        owner, nbr, val = gather_rows(Jt, i)
        own = gain[b, i]
        nb = gain[b[owner], nbr]
        mine = own[owner]
        beaten = (nb > mine) | ((nb == mine) & (prio[nbr] > prio[i[owner]]))
        blocked = torch.zeros(b.numel(), dtype=torch.bool, device=S.device)
        blocked[owner[beaten]] = True
        keep = ~blocked
        ds = -2.0 * S[b, i]
        S[b[keep], i[keep]] = -S[b[keep], i[keep]]
        sel = keep[owner]
        G.view(-1).index_add_(0, b[owner[sel]] * n + nbr[sel], 2.0 * val[sel] * ds[owner[sel]])
    return S, G, rounds


def one_flip_descent(Jt: torch.Tensor, h_t: torch.Tensor, S: torch.Tensor, max_sweeps: int = 10_000) -> torch.Tensor:
    """Batched 1-flip local search on S (B, n) ±1 until no improving flip; returns S (modified in place).

    Flip gain of spin i for E = sᵀJs + hᵀs: ΔE_i = -4 s_i (Js)_i - 2 h_i s_i. See descent_with_fields.
    """
    return descent_with_fields(Jt, h_t, S, max_sweeps=max_sweeps)[0]


# ----------------------------------------------------------------------------- exact enumeration
def _all_spins(k: int) -> np.ndarray:
    """Every ±1 vector of length k, as a (2^k, k) float64 array."""
    codes = np.arange(2**k, dtype=np.int64)[:, None]
    return (((codes >> np.arange(k)) & 1) * 2 - 1).astype(np.float64)


def brute_force_min(problem: IsingProblem) -> tuple[float, np.ndarray]:
    """Exact minimum energy and a minimizer, by enumeration in float64 (n ≤ 24).

    Splits the spins into a low and a high half: the energy of (high, low) is
    e_high + e_low + 2 s_highᵀ J_hl s_low, one small matmul per chunk of high configurations.
    """
    n = problem.n
    if n > BRUTE_FORCE_MAX_N:
        raise ValueError(f"exact enumeration is limited to {BRUTE_FORCE_MAX_N} spins; this problem has {n}")
    if n == 0:
        return float(problem.constant), np.zeros(0)
    J = problem.J.toarray().astype(np.float64)
    h = np.asarray(problem.h, dtype=np.float64)
    lo = min(n, 12)
    L, H = np.arange(lo), np.arange(lo, n)
    SL = _all_spins(lo)
    eL = np.einsum("ai,ij,aj->a", SL, J[np.ix_(L, L)], SL) + SL @ h[L]
    SH = _all_spins(len(H))
    eH = np.einsum("ai,ij,aj->a", SH, J[np.ix_(H, H)], SH) + SH @ h[H] if len(H) else np.zeros(1)
    C = 2.0 * SH @ J[np.ix_(H, L)] if len(H) else np.zeros((1, lo))
    best, best_hi, best_lo = np.inf, 0, 0
    chunk = max(1, (1 << 22) // SL.shape[0])
    for start in range(0, SH.shape[0], chunk):
        tot = C[start : start + chunk] @ SL.T
        tot += eH[start : start + chunk, None]
        tot += eL[None, :]
        k = int(np.argmin(tot))
        r, c = divmod(k, tot.shape[1])
        if tot[r, c] < best:
            best, best_hi, best_lo = float(tot[r, c]), start + r, c
    s = np.empty(n)
    s[L] = SL[best_lo]
    if len(H):
        s[H] = SH[best_hi]
    return best + float(problem.constant), s


def cut_value(W: sp.csr_matrix, s: np.ndarray) -> float:
    """Σ_{i<j} w_ij [s_i ≠ s_j] for a ±1 vector, in float64."""
    s = np.asarray(s, dtype=np.float64)
    return float((W.sum() - s @ (W @ s)) / 4.0)


# ----------------------------------------------------------------------------- backend helpers
def ising_refusal(form: Any, kinds: frozenset[str], max_spins: int | None = None) -> str | None:
    """The refusal sentence shared by the Ising backends (wrong kind, constraints, too many spins)."""
    if form.kind not in kinds:
        return f"solves {', '.join(sorted(kinds))} problems, not {form.kind}"
    if form.constraints:
        return (
            f"cannot honour general constraints on spins ({'; '.join(form.constraints)}); "
            "it only minimizes an unconstrained quadratic energy"
        )
    if max_spins is not None and form.n_spins > max_spins:
        return f"enumerates at most {max_spins} spins exactly, and this model has {form.n_spins}"
    return None


def energy_check(problem: IsingProblem, s: np.ndarray, claimed: float) -> tuple[float, tuple[bool, str]]:
    """Recompute E(s) in float64 from the problem data; compare with the solver's own value."""
    exact = float(problem.energy(np.asarray(s, dtype=np.float64)))
    scale = float(abs(problem.J).sum() + np.abs(problem.h).sum() + abs(problem.constant))
    tol = 1e-5 * scale + 1e-6
    ok = bool(np.all(np.abs(s) == 1)) and abs(exact - claimed) <= tol
    detail = f"float64 energy {exact:.10g} vs solver {claimed:.10g} (tolerance {tol:.2g})"
    return exact, (ok, detail)


def ising_info(problem: IsingProblem, energy: float) -> dict[str, Any]:
    """JSON-able extras: the cut when the problem came from a Max-Cut."""
    return {"cut": -energy} if problem.maxcut_weights is not None else {}


@contextmanager
def torch_threads(k: int) -> Iterator[None]:
    """Run with k torch CPU threads (k ≤ 0: unchanged), restoring the previous setting after.

    One thread is the default of the Ising backends: their kernels are many small sparse ops, and
    on a shared machine OpenMP teams waiting for a descheduled thread made them ~10x slower.
    """
    old = torch.get_num_threads()
    if k > 0 and k != old:
        torch.set_num_threads(k)
    try:
        yield
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)
