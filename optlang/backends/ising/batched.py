"""Batched Ising/Max-Cut for parameter sweeps: B instances over one shared coupling pattern, solved together.

`stack` turns B lowered problems (a sweep's points) into one `IsingBatch`: the union CSR pattern of
the couplings, their values (B, nnz), the fields (B, n) and the constants (B,). It refuses, with the
reason, when the points differ in size or do not share one pattern (a random graph's seed, say).

`brute_force_batch` enumerates every state of every instance (n ≤ 24) with the low/high split of
`ops.brute_force_min`, the spin tables built once for all instances: each instance's exact minimum.

`anneal_path` is the heuristic: the instances become one block-diagonal problem (instance b's spins
at rows b·n … b·n + n − 1), so `ops.descent_with_fields` descends every instance's candidates in one
call, and one Metropolis sweep over a colouring of the shared pattern steps every instance's chains
at once, each instance at its own temperature (its own energy scale). Warm starts along the path:
after the random restarts and after every round each instance also descends its path neighbours'
best states, kept when better. The kept states' energies are recomputed in float64.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from optlang.backends.ising.ops import BRUTE_FORCE_MAX_N, descent_with_fields, to_torch_csr
from optlang.backends.ising.specann.anneal import color_classes
from optlang.lazy import lazy_module, no_grad
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

# the union of the points' coupling patterns may have this share more entries than the largest point's
# (couplings that vanish at some points, e.g. a coupling scale swept through 0); beyond it the patterns
# differ and the points are not one batch
PATTERN_SLACK = 0.25


# ----------------------------------------------------------------------------- the stack
@dataclass(frozen=True)
class IsingBatch:
    """B Ising problems E_b(s) = sᵀJ_b s + h_bᵀs + c_b whose J_b share one CSR pattern (explicit zeros allowed)."""

    indptr: np.ndarray  # (n + 1,) the shared pattern's row pointers
    indices: np.ndarray  # (nnz,) its columns (sorted within rows)
    values: np.ndarray  # (B, nnz) float64: J_b on the pattern
    h: np.ndarray  # (B, n) float64
    constant: np.ndarray  # (B,) float64

    @property
    def size(self) -> int:
        return int(self.values.shape[0])

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.indices)

    def pattern(self) -> sp.csr_matrix:
        """The shared pattern as a 0/1 matrix (n, n)."""
        return sp.csr_matrix((np.ones(self.nnz), self.indices, self.indptr), shape=(self.n, self.n))

    def dense(self) -> np.ndarray:
        """Every J_b as a dense (B, n, n) array (for enumeration: n ≤ 24)."""
        rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        out = np.zeros((self.size, self.n, self.n))
        out[:, rows, self.indices] = self.values
        return out

    @cached_property
    def block_diagonal(self) -> sp.csr_matrix:
        """diag(J_1, …, J_B) as one (B·n, B·n) CSR matrix: instance b's spins are rows b·n … b·n + n − 1."""
        B, n, nnz = self.size, self.n, self.nnz
        indptr = np.concatenate([[0], (self.indptr[1:][None, :] + nnz * np.arange(B)[:, None]).ravel()])
        indices = (self.indices[None, :] + n * np.arange(B)[:, None]).ravel()
        return sp.csr_matrix((self.values.ravel(), indices, indptr), shape=(B * n, B * n))

    def energies(self, S: np.ndarray) -> np.ndarray:
        """E[b, r] = s_brᵀ J_b s_br + h_bᵀ s_br + c_b for states S (B, R, n), in float64."""
        S = np.asarray(S, dtype=np.float64)
        B, R, n = S.shape
        X = S.transpose(0, 2, 1).reshape(B * n, R)
        JX = np.asarray(self.block_diagonal @ X).reshape(B, n, R)
        return np.einsum("brn,bnr->br", S, JX) + np.einsum("brn,bn->br", S, self.h) + self.constant[:, None]


def stack(problems: Sequence[IsingProblem]) -> IsingBatch | str:
    """The problems as one IsingBatch over the union of their coupling patterns, or the reason they are not one."""
    sizes = {p.n for p in problems}
    if len(sizes) > 1:
        return f"the points have different numbers of spins ({min(sizes)} to {max(sizes)})"
    n = sizes.pop()
    keys, data = [], []
    for p in problems:
        J = sp.csr_matrix(p.J, dtype=np.float64, copy=True)
        J.sum_duplicates()
        J.sort_indices()
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(J.indptr))
        keys.append(rows * n + J.indices.astype(np.int64))
        data.append(np.asarray(J.data, dtype=np.float64))
    union = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    most = max(len(k) for k in keys)
    if len(union) > most * (1.0 + PATTERN_SLACK):
        return (
            f"the coupling patterns differ between points ({len(union)} distinct couplings over all points, at "
            f"most {most} in one): only fields and couplings over one shared pattern are batched"
        )
    values = np.zeros((len(problems), len(union)))
    for b, (k, d) in enumerate(zip(keys, data, strict=True)):
        values[b, np.searchsorted(union, k)] = d
    rows, cols = np.divmod(union, n)
    indptr = np.searchsorted(rows, np.arange(n + 1)).astype(np.int64)
    h = np.stack([np.asarray(p.h, dtype=np.float64) for p in problems])
    constant = np.array([float(p.constant) for p in problems])
    return IsingBatch(indptr, cols.astype(np.int64), values, h, constant)


# ----------------------------------------------------------------------------- exact enumeration
def spin_table(k: int) -> np.ndarray:
    """Every ±1 vector of length k as a (2^k, k) float64 array, in the enumeration order of ops.brute_force_min."""
    codes = np.arange(2**k, dtype=np.int64)[:, None]
    return (((codes >> np.arange(k)) & 1) * 2 - 1).astype(np.float64)


def brute_force_batch(batch: IsingBatch, max_elems: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """Exact minimum energies (B,) and minimizers (B, n) of every instance, by enumeration in float64.

    The energy of a state (high half, low half) is e_high + e_low + 2 s_highᵀ J_hl s_low (as in
    ops.brute_force_min); the low/high spin tables are built once and every instance's chunk of
    high configurations is one batched matmul. Memory stays below ~max_elems floats per step.
    """
    n, B = batch.n, batch.size
    if n > BRUTE_FORCE_MAX_N:
        raise ValueError(f"exact enumeration is limited to {BRUTE_FORCE_MAX_N} spins; this batch has {n}")
    if n == 0:
        return batch.constant.copy(), np.zeros((B, 0))
    lo = min(n, 12)
    hi = n - lo
    SL, SH = spin_table(lo), spin_table(hi)  # SH is (1, 0) when hi = 0: one empty high configuration
    best_E = np.full(B, np.inf)
    best_s = np.zeros((B, n))
    # instances per group: the group's cross terms C (g, 2^hi, lo) stay within max_elems
    group = max(1, min(B, max_elems // max(SH.shape[0] * lo + SL.shape[0], 1)))
    dense = batch.dense()
    for g0 in range(0, B, group):
        J = dense[g0 : g0 + group]
        h = batch.h[g0 : g0 + group]
        g = J.shape[0]
        eL = ((SL[None] @ J[:, :lo, :lo]) * SL[None]).sum(-1) + h[:, :lo] @ SL.T  # (g, 2^lo)
        eH = ((SH[None] @ J[:, lo:, lo:]) * SH[None]).sum(-1) + h[:, lo:] @ SH.T  # (g, 2^hi)
        C = 2.0 * (SH[None] @ J[:, lo:, :lo])  # (g, 2^hi, lo)
        chunk = max(1, max_elems // (g * SL.shape[0]))
        gb = np.full(g, np.inf)
        g_hi = np.zeros(g, dtype=np.int64)
        g_lo = np.zeros(g, dtype=np.int64)
        rows = np.arange(g)
        for start in range(0, SH.shape[0], chunk):
            tot = C[:, start : start + chunk] @ SL.T
            tot += eH[:, start : start + chunk, None]
            tot += eL[:, None, :]
            flat = tot.reshape(g, -1)
            k = flat.argmin(axis=1)
            val = flat[rows, k]
            better = val < gb
            gb = np.where(better, val, gb)
            g_hi = np.where(better, start + k // SL.shape[0], g_hi)
            g_lo = np.where(better, k % SL.shape[0], g_lo)
        best_E[g0 : g0 + g] = gb
        best_s[g0 : g0 + g, :lo] = SL[g_lo]
        best_s[g0 : g0 + g, lo:] = SH[g_hi]
    return best_E + batch.constant, best_s


# ----------------------------------------------------------------------------- the annealing path
@dataclass
class PathOptions:
    """The batched heuristic's options (per point unless said otherwise)."""

    chains: int = 16  # annealed chains per point (capped by max_elems / (points × spins))
    fill: int = 1 << 16  # small batches get more chains (up to 4×), up to this many chain-spins in all
    restarts: int = 16  # random starts per point, each descended to a 1-flip minimum, before the first round
    sweeps: int = 500  # Metropolis sweeps per round (a round also ends when its time share is spent)
    rounds: int = 3  # rounds when no time limit is given (max_iter overrides)
    t_start: float = 1.0  # first round's start temperature, × σ_b (mean |ΔE| of a flip at a random state)
    t_end: float = 1.0  # final temperature, × δ_b / ln 100 (δ_b the smallest nonzero |ΔE| unit)
    reheat: float = 0.5  # later rounds start at t_start × reheat, from the best states and the neighbours'
    neighbours: int = 2  # warm starts: the best states of the points up to this far along the path
    patience: int = 2  # with a time limit: stop after this many rounds that improve no point
    max_elems: int = 1 << 22  # cap on points × chains × spins


@dataclass
class PathOutcome:
    """Each instance's best state and its float64 energy, and how the path run went."""

    energies: np.ndarray  # (B,) float64, constants included
    states: np.ndarray  # (B, n) ±1
    rounds: int
    sweeps: int
    chains: int
    warm: np.ndarray  # (B,) bool: the point's best state came from a neighbour's (a warm start)
    stop: str  # finished | stagnated | time_limit | interrupted


def temperature_scales(batch: IsingBatch) -> tuple[np.ndarray, np.ndarray]:
    """(σ_b, δ_b) per instance, as SpecAnn defines them: σ the mean |ΔE| of one flip at a random state,
    δ the smallest nonzero |ΔE| unit (4 |J_ij|, 2 |h_i|)."""
    rows = np.repeat(np.arange(batch.n), np.diff(batch.indptr))
    sq = np.zeros((batch.size, batch.n))
    np.add.at(sq.T, rows, (batch.values**2).T)
    sigma = np.mean(4.0 * np.sqrt(sq) + 2.0 * np.abs(batch.h), axis=1)
    sigma = np.where(sigma > 0, sigma, 1.0)
    big = np.inf
    dJ = np.where(batch.values != 0, 4.0 * np.abs(batch.values), big).min(axis=1, initial=big)
    dh = np.where(batch.h != 0, 2.0 * np.abs(batch.h), big).min(axis=1, initial=big)
    delta = np.minimum(dJ, dh)
    return sigma, np.where(np.isfinite(delta), delta, 1.0)


class _Best:
    """Per instance: the best state so far and its float64 energy."""

    def __init__(self, batch: IsingBatch) -> None:
        self.batch = batch
        self.E = np.full(batch.size, np.inf)
        self.S = np.ones((batch.size, batch.n))
        self.warm = np.zeros(batch.size, dtype=bool)

    def offer(self, S: torch.Tensor, warm: bool = False) -> int:
        """Candidates S (R, B·n) in the block layout; returns how many instances improved."""
        B, n = self.batch.size, self.batch.n
        X = S.detach().to("cpu", torch.float64).numpy().reshape(-1, B, n).transpose(1, 0, 2)  # (B, R, n)
        E = self.batch.energies(X)
        k = E.argmin(axis=1)
        e = E[np.arange(B), k]
        finite = np.isfinite(self.E)
        margin = np.where(finite, 1e-12 * np.maximum(1.0, np.abs(np.where(finite, self.E, 0.0))), 0.0)
        better = e < np.where(finite, self.E - margin, np.inf)
        self.E = np.where(better, e, self.E)
        self.S[better] = X[better, k[better]]
        self.warm = np.where(better, warm, self.warm)
        return int(better.sum())

    def tiled(self, idx: np.ndarray, device: Any, dtype: torch.dtype) -> torch.Tensor:
        """States (len(idx), B·n): row j holds, for every instance b, the best state of instance idx[j, b]."""
        return torch.as_tensor(self.S[idx].reshape(idx.shape[0], -1), dtype=dtype, device=device)


class _Sweeper:
    """Metropolis sweeps over a colouring of the shared pattern, for every instance's chains at once.

    Spins are renumbered so that colour class c of every instance is one contiguous slice; a class
    update is a comparison and one sparse addmm, G += -4 J[:, c] d (d the flipped spins' old values),
    as in SpecAnn's anneal, with a per-row (per-instance) temperature. Layout: spin-major (B·n, R).
    """

    def __init__(self, batch: IsingBatch, device: Any, dtype: torch.dtype, seed: int) -> None:
        B, n = batch.size, batch.n
        classes = color_classes(batch.pattern(), seed=seed)
        perm = np.concatenate([(n * np.arange(B)[:, None] + c[None, :]).ravel() for c in classes]).astype(np.int64)
        Jp = batch.block_diagonal[perm][:, perm].tocsc()
        self.perm = torch.as_tensor(perm, device=device)
        self.inst = torch.as_tensor(perm // n, device=device)
        self.bounds: list[tuple[int, int]] = []
        self.cols: list[torch.Tensor] = []
        lo = 0
        for c in classes:
            hi = lo + B * len(c)
            self.bounds.append((lo, hi))
            self.cols.append(to_torch_csr(sp.csr_matrix(Jp[:, lo:hi]), device, dtype))
            lo = hi
        self.B = B

    def run(
        self,
        Jt: torch.Tensor,
        h_t: torch.Tensor,
        S: torch.Tensor,
        T0: np.ndarray,
        T1: np.ndarray,
        sweeps: int,
        generator: torch.Generator,
        time_budget: float = math.inf,
        stop: Callable[[], bool] | None = None,
        track_every: int = 8,
        refresh: int = 8,
    ) -> tuple[torch.Tensor, int]:
        """Anneal the chains S (R, B·n) from T0 to T1 (per instance, geometric); returns the best state
        each chain visited (R, B·n) and the sweeps done."""
        start = time.perf_counter()
        perm, inst = self.perm, self.inst
        dev, dt = S.device, S.dtype
        Sp = S.T[perm].contiguous()  # (B n, R)
        Gp = (2.0 * (Jt @ S.T.contiguous()) + h_t[:, None])[perm].contiguous()
        hp = h_t[perm][:, None]
        rows, R = Sp.shape
        lt0 = torch.as_tensor(np.log(T0), dtype=dt, device=dev)[inst][:, None]
        lratio = torch.as_tensor(np.log(T1 / T0), dtype=dt, device=dev)[inst][:, None]

        def energies() -> torch.Tensor:
            return torch.zeros(self.B, R, dtype=dt, device=dev).index_add_(0, inst, Sp * (Gp + hp)) / 2

        best_S = Sp.clone()
        best_E = energies()
        slack = min(rows * R, 1 << 16)
        seed = int(torch.randint(0, 2**31, (1,), generator=generator, device=generator.device))
        cpu_gen = torch.Generator().manual_seed(seed)
        pool = torch.empty(0)
        thr, dbuf = torch.empty_like(Sp), torch.empty_like(Sp)
        mbuf = torch.empty(Sp.shape, dtype=torch.bool, device=dev)
        done = 0

        def track() -> None:
            nonlocal best_E
            E = energies()
            better = E < best_E  # (B, R)
            if bool(better.any()):
                rowmask = better[inst]  # (B n, R)
                best_S.copy_(torch.where(rowmask, Sp, best_S))
                best_E = torch.where(better, E, best_E)

        for k in range(sweeps):
            frac = max(k / sweeps, (time.perf_counter() - start) / time_budget)
            if frac >= 1.0 or (stop is not None and stop()):
                break
            half_T = 0.5 * torch.exp(lt0 + lratio * frac)  # (B n, 1)
            if k % refresh == 0:  # ln u for rows·R + slack uniforms, reused at random offsets in between
                pool = torch.rand(rows * R + slack, generator=generator, device=dev, dtype=dt).log_()
            off = int(torch.randint(0, slack + 1, (1,), generator=cpu_gen))
            # accept when ΔE = -2 s G < -T ln u  ⇔  s G > (T/2) ln u (thresholds for every class at once)
            torch.mul(pool[off : off + rows * R].view(rows, R), half_T, out=thr)
            for (lo, hi), Jc in zip(self.bounds, self.cols, strict=True):
                Sc, d, m = Sp[lo:hi], dbuf[lo:hi], mbuf[lo:hi]
                torch.mul(Sc, Gp[lo:hi], out=d)
                torch.gt(d, thr[lo:hi], out=m)
                torch.mul(Sc, m, out=d)
                Sc.sub_(d, alpha=2.0)
                Gp.addmm_(Jc, d, alpha=-4.0)
            done = k + 1
            if frac > 0.5 and done % track_every == 0:
                track()
        track()
        out = torch.empty_like(best_S)
        out[perm] = best_S
        return out.T.contiguous(), done


@no_grad
def anneal_path(
    batch: IsingBatch,
    options: PathOptions,
    seed: int = 0,
    device: Any = "cpu",
    dtype: torch.dtype | None = None,
    max_rounds: int | None = None,
    time_limit: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> PathOutcome:
    """The batched heuristic over a path of instances (neighbours in batch order are neighbours on the path).

    1. `restarts` random states per instance, descended to 1-flip minima (one call for all instances);
    2. warm starts: every instance descends the best states of its path neighbours (repeated while
       any instance improves, so a good state travels along the path);
    3. rounds of annealing (`chains` per instance; the first from the descended restarts, hot; later
       ones reheated from the instance's best state, its neighbours' and the previous round's chains),
       each followed by a 1-flip descent of the chains' best states and step 2.
    Without a time limit it runs `max_rounds` (else options.rounds) rounds; with one, rounds share the
    time left and stop after `patience` rounds that improve no instance.
    """
    t_start = time.perf_counter()
    dt = torch.float32 if dtype is None else dtype
    B, n = batch.size, batch.n
    gen = torch.Generator(device=str(device)).manual_seed(int(seed))
    Jt = to_torch_csr(batch.block_diagonal, device, dt)
    h_t = torch.as_tensor(batch.h.ravel(), dtype=dt, device=device)
    best = _Best(batch)
    per = max(B * n, 1)
    R = int(max(1, min(max(options.chains, min(options.fill // per, 4 * options.chains)), options.max_elems // per)))
    K = max(0, min(options.neighbours, B - 1))

    def elapsed() -> float:
        return time.perf_counter() - t_start

    def halt() -> bool:
        return (stop is not None and stop()) or (time_limit is not None and elapsed() >= time_limit)

    def descend(S: torch.Tensor) -> torch.Tensor:
        return descent_with_fields(Jt, h_t, S, stop=halt)[0]

    offsets = np.array([d for k in range(1, K + 1) for d in (-k, k)], dtype=np.int64)
    neighbour_idx = np.clip(np.arange(B)[None, :] + offsets[:, None], 0, B - 1) if K else np.zeros((0, B), int)

    def exchange() -> None:
        # a state travels one neighbourhood per pass; stop when no instance improved
        for _ in range(B):
            if (
                not len(neighbour_idx)
                or halt()
                or best.offer(descend(best.tiled(neighbour_idx, device, dt)), True) == 0
            ):
                break

    # 1-2: random restarts, descended; warm starts along the path
    m = int(max(1, min(options.restarts, options.max_elems // per)))
    S0 = torch.where(torch.rand(m, B * n, generator=gen, device=device) < 0.5, 1.0, -1.0).to(dt)
    S0 = descend(S0)
    best.offer(S0)
    exchange()
    # 3: annealing rounds
    sigma, delta = temperature_scales(batch)
    T_end = options.t_end * delta / math.log(100.0)
    sweeper = _Sweeper(batch, device, dt, seed)
    chains = S0[:R] if S0.shape[0] >= R else S0.repeat((R + S0.shape[0] - 1) // S0.shape[0], 1)[:R]
    rounds = sweeps = idle = 0
    limit_rounds = max_rounds if max_rounds is not None else (None if time_limit is not None else options.rounds)
    stop_reason = "finished"
    while limit_rounds is None or rounds < limit_rounds:
        if halt():
            stop_reason = "interrupted" if stop is not None and stop() else "time_limit"
            break
        if time_limit is not None and limit_rounds is None and idle >= options.patience:
            stop_reason = "stagnated"
            break
        hot = 1.0 if rounds == 0 else options.reheat
        T0 = np.maximum(options.t_start * sigma * hot, 1.01 * T_end)
        if rounds > 0:  # the instance's best, its neighbours' best, then the previous round's chains
            lead = np.concatenate([np.arange(B)[None, :], neighbour_idx])[:R]
            chains = torch.cat([best.tiled(lead, device, dt), chains[: R - lead.shape[0]]])
        budget = math.inf
        if time_limit is not None:
            left = max(time_limit - elapsed(), 0.0)
            budget = left if limit_rounds is None else left / max(limit_rounds - rounds, 1)
        chains, done = sweeper.run(Jt, h_t, chains, T0, T_end, options.sweeps, gen, budget, stop)
        sweeps += done
        chains = descend(chains)
        improved = best.offer(chains)
        before = best.E.copy()
        exchange()
        improved += int(np.sum(best.E < before))
        idle = 0 if improved else idle + 1
        rounds += 1
    if stop_reason == "finished" and time_limit is not None and elapsed() >= time_limit:
        stop_reason = "time_limit"  # the last round was cut short by the limit
    return PathOutcome(best.E.copy(), best.S.copy(), rounds, sweeps, R, best.warm.copy(), stop_reason)
