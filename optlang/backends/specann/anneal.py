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

import numpy as np
import scipy.sparse as sp
import torch

from optlang.backends.ising_ops import apply_flips


def color_classes(J: sp.csr_matrix, seed: int = 0) -> list[np.ndarray]:
    """A proper colouring of the coupling graph, as index arrays per colour (vectorized JP).

    Jones-Plassmann: each round, uncoloured vertices whose random priority beats every uncoloured
    neighbour take the smallest colour unused by their coloured neighbours. O(nnz) per round.
    """
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


@torch.no_grad()
def anneal(
    Jt: torch.Tensor,
    h_t: torch.Tensor,
    S: torch.Tensor,
    G: torch.Tensor,
    classes: list[torch.Tensor],
    t_start: float,
    t_end: float,
    sweeps: int,
    generator: torch.Generator,
    time_budget: float = math.inf,
    stop: Callable[[], bool] | None = None,
    track_every: int = 4,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Anneal the batch S (B, n) in place from t_start to t_end; G = 2JS + h is kept up to date.

    Returns (best states seen per candidate, their energies without the constant, sweeps done).
    """
    start = time.perf_counter()
    log_ratio = math.log(t_end / t_start)
    best_S = S.clone()
    best_E = (S * (G + h_t)).sum(dim=1) / 2
    done = 0
    for k in range(sweeps):
        frac = max(k / sweeps, (time.perf_counter() - start) / time_budget)
        if frac >= 1.0 or (stop is not None and stop()):
            break
        beta = 1.0 / (t_start * math.exp(log_ratio * frac))
        for idx in classes:
            dE = -2.0 * S[:, idx] * G[:, idx]
            u = torch.rand(dE.shape, generator=generator, device=generator.device, dtype=dE.dtype)
            b, j = (u < torch.exp(-beta * dE)).nonzero(as_tuple=True)
            apply_flips(Jt, S, G, b, idx[j])
        done = k + 1
        if done % track_every == 0 or frac > 0.9:
            E = (S * (G + h_t)).sum(dim=1) / 2
            better = E < best_E
            if bool(better.any()):
                best_S[better] = S[better]
                best_E = torch.where(better, E, best_E)
    E = (S * (G + h_t)).sum(dim=1) / 2
    better = E < best_E
    best_S[better] = S[better]
    best_E = torch.where(better, E, best_E)
    return best_S, best_E, done
