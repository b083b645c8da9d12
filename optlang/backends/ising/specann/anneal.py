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


SPARSE_OVERHEAD = 50_000.0  # fixed cost of a sparse class update, in couplings of the dense addmm


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
            seen = level[nb]
            if np.any(seen == level[frontier[0]]):  # an edge inside one BFS level closes an odd cycle
                return None
            nb = np.unique(nb[seen < 0])
            level[nb] = level[frontier[0]] + 1
            frontier = nb
    color = level % 2
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    return color if np.all(color[rows] != color[A.indices]) else None


def color_classes(J: sp.csr_matrix, seed: int = 0) -> list[np.ndarray]:
    """A proper colouring of the coupling graph, as index arrays per colour (vectorized JP).

    Bipartite graphs (tori, grids) get their 2-colouring. Otherwise Jones-Plassmann: each round,
    uncoloured vertices whose random priority beats every uncoloured neighbour take the smallest
    colour unused by their coloured neighbours (O(edges leaving uncoloured vertices) per round), then
    one iterated-greedy pass over all edges.
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
    all_rows, all_cols = rows, cols
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
        # only edges leaving uncoloured vertices matter from now on (both tests above start there)
        still = color[rows] < 0
        rows, cols = rows[still], cols[still]
    # iterated greedy: move each class (an independent set, so all at once) to its smallest free colour
    rows, cols = all_rows, all_cols
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
    one sparse addmm, G += 2 J[:, c] ΔS[c], with no gathers. `rows` holds the same couplings by
    row, J[lo:hi, :] as (crow, col, val) tensors, for propagating only the flipped spins (J is
    symmetric, so row i lists the fields spin i moves); it doubles the coupling memory (nnz ×
    8 bytes with int32 indices) and is built by default on the CPU only (rows=None), where anneal
    uses it."""

    def __init__(
        self,
        J: sp.csr_matrix,
        classes: list[np.ndarray],
        device: Any,
        dtype: torch.dtype,
        index_dtype: torch.dtype | None = None,
        rows: bool | None = None,
    ) -> None:
        perm = np.concatenate(classes).astype(np.int64)
        Jr = sp.csr_matrix(J)[perm][:, perm]
        Jp = Jr.tocsc()
        self.perm = torch.as_tensor(perm, device=device)
        self.bounds: list[tuple[int, int]] = []
        self.cols: list[torch.Tensor] = []
        self.rows: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        idx = np.int32 if index_dtype == torch.int32 else np.int64
        if rows is None:
            rows = torch.device(device).type == "cpu"
        lo = 0
        for c in classes:
            hi = lo + len(c)
            self.bounds.append((lo, hi))
            self.cols.append(to_torch_csr(sp.csr_matrix(Jp[:, lo:hi]), device, dtype, index_dtype))
            if rows:
                R = sp.csr_matrix(Jr[lo:hi])
                R.sort_indices()
                self.rows.append(
                    (
                        torch.as_tensor(R.indptr.astype(idx), device=device),
                        torch.as_tensor(R.indices.astype(idx), device=device),
                        torch.as_tensor(R.data, dtype=dtype, device=device),
                    )
                )
            lo = hi
        del Jr, Jp

    def __len__(self) -> int:
        return len(self.bounds)


def flip_noise(size: int, rule: str, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Noise r per spin for the acceptance test 'flip when s·G > (T/2)·r' (ΔE = -2 s G):
    r = ln u gives Metropolis, P(flip) = P(ln u < -ΔE/T) = min(1, e^(-ΔE/T)); r = ln u - ln(1-u)
    (logistic, symmetric) gives heat bath, P(flip) = P(r < -ΔE/T) = 1 / (1 + e^(ΔE/T)). Both satisfy
    detailed balance; they differ at ΔE = 0 (a free spin flips always / half the time) and at high T."""
    u = torch.rand(size, generator=generator, device=generator.device, dtype=dtype)
    if rule == "heatbath":
        u.clamp_(min=torch.finfo(dtype).tiny)  # u = 0 would give r = -inf (a sure flip at any ΔE)
        return u.log() - torch.log1p(-u)
    return u.log_()


def propagate_flips(
    G: torch.Tensor,
    rows: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    flat: torch.Tensor,
    old: torch.Tensor,
    batch: int,
) -> None:
    """G += 2 J ΔS for the flipped spins only: `flat` are the flat indices i·B + b into the class's
    (m, B) block of the flipped entries, `old` their spins before the flip (ΔS = -2 old). Gathers
    the CSR rows of the flipped spins (J symmetric: row i = column i) and index-adds them into the
    flat (n, B) G; the work is O(flips × degree) instead of O(nnz of the class × B)."""
    crow, col, val = rows
    i = flat if batch == 1 else torch.div(flat, batch, rounding_mode="floor")
    start = crow.index_select(0, i)
    count = crow.index_select(0, i + 1) - start
    rep = torch.repeat_interleave(count)  # which flipped spin each gathered coupling belongs to
    if rep.numel() == 0:
        return
    shift = start - (torch.cumsum(count, 0) - count)  # pos = shift[rep] + running index
    pos = torch.arange(rep.numel(), device=G.device, dtype=shift.dtype) + shift.index_select(0, rep)
    w = val.index_select(0, pos) * old.index_select(0, rep)
    target = col.index_select(0, pos)
    if batch > 1:
        target = target.to(torch.int64) * batch + (flat % batch).index_select(0, rep)
    G.view(-1).index_add_(0, target, w, alpha=-4.0)


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
    rule: str = "metropolis",
    sparse_cost: float = 20.0,
    stats: dict[str, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Anneal a batch in place from t_start to t_end. Layout is spin-major: S, G are (n, B), with
    G = 2JS + h[:, None] kept up to date (both are written back at the end); h_t is (n,).

    Flip s_i when s_i G_i > (T/2)·r_i (ΔE = -2 s_i G_i): r = ln u is Metropolis, r logistic is heat
    bath (`rule`, see flip_noise). The (T/2)·r come from a pool of n·B + slack values redrawn every
    `refresh` sweeps (T held for those sweeps) and read at a random offset in between (drawing them
    was a third of a sweep's cost). A class update then propagates its flips into G one of two
    ways, with the same result (exactly for dyadic couplings such as ±1/4, else up to rounding):
    the whole column block J[:, c] in one sparse addmm (O(n + nnz_c) per column of the batch), or,
    on the CPU when `blocks` has its rows, only the flipped spins' rows (propagate_flips,
    O(flips × degree)). The next update of a class takes whichever a cost model says is cheaper
    from this update's flip count (`sparse_cost`: a gathered coupling's cost in dense couplings;
    0 turns the sparse path off). Tori keep ~9% of spins flipping at low T (free spins, ΔE = 0),
    so they stay dense; graphs of odd degree freeze and go sparse (3-regular: 3x faster sweeps).
    `progress(best energy)` is called whenever a tracked state improves; `stats`, when given, gets
    the counts of sparse and dense class updates and of flips. Returns (best states seen
    per candidate (n, B), their energies without the constant, sweeps done).
    """
    if rule not in ("metropolis", "heatbath"):
        raise ValueError(f"unknown acceptance rule {rule!r}")
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
    # per class: the dense update's work (every row of G plus the class's couplings, per column)
    # and the mean degree of its spins, for the cost model that picks the update (see below)
    dense_work = [float((n + int(Jc.values().numel())) * B) for Jc in blocks.cols]
    mean_deg = [
        int(Jc.values().numel()) / max(hi - lo, 1) for (lo, hi), Jc in zip(blocks.bounds, blocks.cols, strict=True)
    ]
    # sparse propagation needs the rows and reads the flip count on the host (a sync on a GPU); a
    # class can go sparse only when even zero flips would beat its dense update (small graphs never:
    # they do not count their flips either)
    can_sparse = [
        bool(blocks.rows) and Sp.device.type == "cpu" and sparse_cost > 0 and 2.0 * (hi - lo) * B + SPARSE_OVERHEAD < w
        for (lo, hi), w in zip(blocks.bounds, dense_work, strict=True)
    ]
    sparse_now = [False] * len(blocks)  # a random start flips many spins: the first sweep is dense
    width = max(hi - lo for lo, hi in blocks.bounds) * B
    x_buf = torch.empty(width, dtype=Sp.dtype, device=Sp.device)
    d_buf = torch.empty(width, dtype=Sp.dtype, device=Sp.device)
    m_buf = torch.empty(width, dtype=torch.bool, device=Sp.device)

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
        if k % refresh == 0:
            # n·B + slack noise values times T/2, reused at random offsets for `refresh` sweeps: the
            # temperature is held for those sweeps (a step schedule) and the threshold costs no pass
            T = t_start * math.exp(log_ratio * frac)
            pool = flip_noise(n * B + slack, rule, generator, Sp.dtype).mul_(0.5 * T)
        off = int(torch.randint(0, slack + 1, (1,), generator=cpu_gen))
        L = pool[off : off + n * B].view(n, B)
        for c, ((lo, hi), Jc) in enumerate(zip(blocks.bounds, blocks.cols, strict=True)):
            Sc = Sp[lo:hi]
            m = (hi - lo) * B
            x = torch.mul(Sc, Gp[lo:hi], out=x_buf[:m].view(hi - lo, B))
            mask = torch.gt(x, L[lo:hi], out=m_buf[:m].view(hi - lo, B))  # flip when s·G > (T/2)·r
            if sparse_now[c]:
                flat = torch.nonzero(mask.view(-1)).view(-1)
                flips = flat.numel()
                Sf = Sc.view(-1)
                old = Sf.index_select(0, flat)
                Sf.index_copy_(0, flat, old.neg())
                propagate_flips(Gp, blocks.rows[c], flat, old, B)
            else:
                d = torch.mul(Sc, mask, out=d_buf[:m].view(hi - lo, B))
                Sc.sub_(d, alpha=2.0)
                Gp.addmm_(Jc, d, alpha=-4.0)
                # a dense class counts its flips only every `refresh` sweeps (the count drifts slowly
                # with T; counting every update cost the torus ~4 % of its sweep rate)
                flips = int(mask.sum()) if can_sparse[c] and k % refresh == 0 else -1
            if stats is not None:
                key = "sparse_updates" if sparse_now[c] else "dense_updates"
                stats[key] = stats.get(key, 0) + 1
                if flips >= 0:
                    stats["flips"] = stats.get("flips", 0) + flips
            # next time, propagate sparsely when that is expected to be cheaper: a gathered coupling
            # costs about `sparse_cost` times a coupling of the dense addmm, finding the flips ~2 per
            # entry, and the sparse path's ~10 extra small ops about SPARSE_OVERHEAD couplings (measured:
            # Gset graphs at batch 8 stay dense, 10^6-spin 3-regular graphs go sparse once they cool)
            if flips >= 0:
                sparse_now[c] = can_sparse[c] and (
                    sparse_cost * flips * mean_deg[c] + 2.0 * m + SPARSE_OVERHEAD < dense_work[c]
                )
        done = k + 1
        if done % track_every == 0 or frac > 0.9:
            track()
    track()
    S[perm] = Sp
    G[perm] = Gp
    out = torch.empty_like(best_S)
    out[perm] = best_S
    return out, best_E, done
