"""The refinement half of SpecAnn: batched annealed flips over a proper graph colouring.

Spins of one colour class share no coupling, so a Metropolis update of a whole class in every
candidate at once is exact (the flip gains add up). G = 2Js + h is kept per candidate and updated
from the rows of the flipped spins only. The temperature follows a geometric schedule driven by
max(sweep fraction, time fraction), so a round always ends cold when its time budget runs out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from optlang.backends.ising.ops import to_torch_csr
from optlang.lazy import lazy_module, no_grad

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


def two_coloring(J: sp.csr_matrix, max_levels: int = 20_000) -> np.ndarray | None:
    """The 2-colouring of a bipartite coupling graph by frontier BFS parity, or None when the graph
    is not bipartite (or the BFS would take more than max_levels frontier steps)."""
    A = sp.csr_matrix(J)
    n = A.shape[0]
    level = np.full(n, -1, dtype=np.int64)
    steps = 0
    for root in range(n):
        if level[root] >= 0:
            continue
        level[root] = 0
        frontier = np.array([root])
        while frontier.size:
            steps += 1
            if steps > max_levels:
                return None
            nb = A[frontier].indices
            nb = np.unique(nb[level[nb] < 0])
            level[nb] = level[frontier[0]] + 1
            frontier = nb
    color = level % 2
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    return color if np.all(color[rows] != color[A.indices]) else None


def color_classes(J: sp.csr_matrix, seed: int = 0) -> list[np.ndarray]:
    """A proper colouring of the coupling graph, as index arrays per colour (vectorized JP).

    Bipartite graphs (tori, grids) get their 2-colouring. Otherwise Jones-Plassmann: each round,
    uncoloured vertices whose random priority beats every uncoloured neighbour take the smallest
    colour unused by their coloured neighbours (O(nnz) per round), then one iterated-greedy pass.
    """
    two = two_coloring(J)
    if two is not None:
        return [c for c in (np.flatnonzero(two == 0), np.flatnonzero(two == 1)) if len(c)]
    A = sp.csr_matrix(J)
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    cols = A.indices
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    prio = np.random.default_rng(seed).permutation(n)
    color = np.full(n, -1, dtype=np.int64)
    while True:
        unc = color < 0
        if not unc.any():
            break
        # an uncoloured vertex is a local winner when no uncoloured neighbour has a higher priority
        e = unc[rows] & unc[cols] & (prio[cols] > prio[rows])
        beaten = np.zeros(n, dtype=bool)
        beaten[rows[e]] = True
        win = unc & ~beaten
        # smallest colour not used by coloured neighbours
        e2 = win[rows] & (color[cols] >= 0)
        r2, c2 = rows[e2], color[cols[e2]]
        ncol = int(color.max()) + 2
        wi = np.flatnonzero(win)
        pos = np.full(n, -1, dtype=np.int64)
        pos[wi] = np.arange(len(wi))
        used = np.zeros((len(wi), ncol), dtype=bool)
        used[pos[r2], c2] = True
        color[wi] = np.argmin(used, axis=1)
    # iterated greedy: move each class (an independent set, so all at once) to its smallest free colour
    for c in range(int(color.max()), 0, -1):
        vc = np.flatnonzero(color == c)
        e3 = (color[rows] == c) & (color[cols] < c)
        pos = np.full(n, -1, dtype=np.int64)
        pos[vc] = np.arange(len(vc))
        used = np.zeros((len(vc), c + 1), dtype=bool)
        used[pos[rows[e3]], color[cols[e3]]] = True
        color[vc] = np.argmin(used, axis=1)
    order = np.argsort(color, kind="stable")
    bounds = np.flatnonzero(np.diff(color[order])) + 1
    return [c for c in np.split(order, bounds) if len(c)]


def temperature_scale(J: sp.csr_matrix, h: np.ndarray) -> tuple[float, float]:
    """(σ, δ): σ the mean |ΔE| of a single flip at a random state, δ the smallest nonzero |ΔE| unit."""
    sq = np.asarray(J.multiply(J).sum(axis=1)).ravel()
    sigma = float(np.mean(4.0 * np.sqrt(sq) + 2.0 * np.abs(h))) or 1.0
    nz = np.abs(J.data[J.data != 0])
    cand = [4.0 * nz.min()] if nz.size else []
    hz = np.abs(h[h != 0])
    if hz.size:
        cand.append(2.0 * hz.min())
    delta = min(cand) if cand else 1.0
    return sigma, delta


class ColorBlocks:
    """Spins renumbered so that each colour class is a contiguous slice [lo, hi), and for each
    class the columns J[:, lo:hi] as torch CSR: one class update is then a view, a comparison and
    one sparse addmm, G += 2 J[:, c] ΔS[c], with no gathers."""

    def __init__(
        self,
        J: sp.csr_matrix,
        classes: list[np.ndarray],
        device: Any,
        dtype: torch.dtype,
        index_dtype: torch.dtype | None = None,
    ) -> None:
        perm = np.concatenate(classes).astype(np.int64)
        Jp = sp.csr_matrix(J)[perm][:, perm].tocsc()
        self.perm = torch.as_tensor(perm, device=device)
        self.bounds: list[tuple[int, int]] = []
        self.cols: list[torch.Tensor] = []
        lo = 0
        for c in classes:
            hi = lo + len(c)
            self.bounds.append((lo, hi))
            self.cols.append(to_torch_csr(sp.csr_matrix(Jp[:, lo:hi]), device, dtype, index_dtype))
            lo = hi

    def __len__(self) -> int:
        return len(self.bounds)


@no_grad
def anneal(
    blocks: ColorBlocks,
    h_t: torch.Tensor,
    S: torch.Tensor,
    G: torch.Tensor,
    t_start: float,
    t_end: float,
    sweeps: int,
    generator: torch.Generator,
    time_budget: float = math.inf,
    stop: Callable[[], bool] | None = None,
    track_every: int = 4,
    refresh: int = 4,
    progress: Callable[[float], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Anneal a batch in place from t_start to t_end. Layout is spin-major: S, G are (n, B), with
    G = 2JS + h[:, None] kept up to date (both are written back at the end); h_t is (n,).

    Metropolis: flip s_i when ΔE_i = -2 s_i G_i < T·(-ln u), u uniform. The ln u come from a pool
    of n·B + slack values redrawn every `refresh` sweeps and read at a random offset in between
    (drawing uniforms was a third of a sweep's cost). `progress(best energy)` is called whenever a
    tracked state improves. Returns (best states seen per candidate (n, B), their energies without
    the constant, sweeps done).
    """
    start = time.perf_counter()
    log_ratio = math.log(t_end / t_start)
    perm = blocks.perm
    Sp, Gp = S[perm].contiguous(), G[perm].contiguous()
    hcol = h_t[perm][:, None]
    n, B = Sp.shape
    slack = min(n * B, 1 << 16)
    seed = int(torch.randint(0, 2**31, (1,), generator=generator, device=generator.device))
    cpu_gen = torch.Generator().manual_seed(seed)  # offsets into the pool are drawn on the host
    pool = torch.empty(0)
    best_S = Sp.clone()
    best_E = (Sp * (Gp + hcol)).sum(dim=0) / 2
    done = 0

    def track() -> None:
        nonlocal best_E
        E = (Sp * (Gp + hcol)).sum(dim=0) / 2
        better = E < best_E
        if bool(better.any()):
            best_S[:, better] = Sp[:, better]
            best_E = torch.where(better, E, best_E)
            if progress is not None:
                progress(float(best_E.min()))

    for k in range(sweeps):
        frac = max(k / sweeps, (time.perf_counter() - start) / time_budget)
        if frac >= 1.0 or (stop is not None and stop()):
            break
        T = t_start * math.exp(log_ratio * frac)
        if k % refresh == 0:  # ln u for n·B + slack uniforms, reused at random offsets in between
            pool = torch.rand(n * B + slack, generator=generator, device=generator.device, dtype=Sp.dtype).log_()
        off = int(torch.randint(0, slack + 1, (1,), generator=cpu_gen))
        L = pool[off : off + n * B].view(n, B)
        half_T = 0.5 * T
        for (lo, hi), Jc in zip(blocks.bounds, blocks.cols, strict=True):
            Sc = Sp[lo:hi]
            # accept when ΔE = -2 s G < -T ln u  ⇔  s G > (T/2) ln u
            d = Sc * torch.gt(Sc * Gp[lo:hi], L[lo:hi] * half_T)
            Sc.sub_(d, alpha=2.0)
            Gp.addmm_(Jc, d, alpha=-4.0)
        done = k + 1
        if done % track_every == 0 or frac > 0.9:
            track()
    track()
    S[perm] = Sp
    G[perm] = Gp
    out = torch.empty_like(best_S)
    out[perm] = best_S
    return out, best_E, done
