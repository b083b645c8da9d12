"""Batched tabu search with aspiration: SpecAnn's optional polish of the annealed states.

Each step flips, in every candidate at once, the spin with the largest energy decrease among the
non-tabu spins (a tabu spin is allowed when the flip beats that candidate's best energy: the
aspiration rule); the flipped spin is then tabu for a random tenure. Moves may go uphill, which is
how tabu leaves the 1-flip minimum that annealing ends in (the classical 1-flip tabu of Max-Cut
heuristics, e.g. the descent phase of Benlic & Hao's breakout local search). G = 2JS + h is kept
exactly from a padded neighbour table (one gather and one index_add_ per step), or from the CSR
rows when the degrees are too uneven for padding.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from optlang.backends.ising.ops import apply_flips, row_abs_sums
from optlang.lazy import lazy_module, no_grad

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@no_grad
def tabu_search(
    Jt: torch.Tensor,
    h_t: torch.Tensor,
    S: torch.Tensor,
    G: torch.Tensor,
    steps: int,
    generator: torch.Generator,
    tenure: int,
    time_budget: float = math.inf,
    stop: Callable[[], bool] | None = None,
    track_every: int = 16,
    progress: Callable[[float], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Tabu search on a batch S (B, n) with G = 2JS + h (both modified in place).

    The tenure of a flipped spin is `tenure` + a uniform draw in [0, tenure); ties between equal
    gains are broken by a small random jitter (below the float noise scale of the gains).
    `progress(best energy)` is called when the batch's best improves (checked every `track_every`
    steps). Returns (best state seen per candidate (B, n), their energies without the constant,
    steps done).
    """
    start = time.perf_counter()
    B, n = S.shape
    dev = S.device
    rows = torch.arange(B, device=dev)
    E = (S * (G + h_t)).sum(dim=1) / 2
    best_E = E.clone()
    best_S = S.clone()
    eps = 1e-5 * row_abs_sums(Jt, h_t) + 1e-12  # (n,) float noise scale of each gain
    tol = float(eps.max())
    # a fixed random order among equal gains, below the noise scale (drawn once, not per step)
    jitter = torch.rand(B, n, generator=generator, device=dev, dtype=S.dtype) * eps
    table = _ell(Jt)  # (n, d) padded neighbour table: one gather + one index_add_ per step
    flat = (rows * n)[:, None]
    until = torch.zeros(B, n, dtype=torch.int64, device=dev)
    reported = float(best_E.min())
    done = 0
    draws = torch.empty(0, B, dtype=torch.int64, device=dev)
    for k in range(steps):
        if k % 64 == 0:
            if (time.perf_counter() - start) >= time_budget or (stop is not None and stop()):
                break
            draws = k + tenure + torch.randint(0, max(tenure, 1), (64, B), generator=generator, device=dev)
        gain = 2.0 * S * G + jitter  # energy decrease of flipping each spin (jittered)
        g_all, i_all = gain.max(dim=1)
        i_free = gain.masked_fill(until > k, -math.inf).argmax(dim=1)
        # aspiration: a tabu move is taken when it beats the candidate's best energy
        i = torch.where(g_all > E - best_E + tol, i_all, i_free)
        s_i = S[rows, i]
        E -= 2.0 * s_i * G[rows, i]
        S[rows, i] = -s_i
        if table is None:
            S[rows, i] = s_i  # apply_flips flips it back and updates G from the CSR rows
            apply_flips(Jt, S, G, rows, i)
        else:
            nbr, wts = table
            G.view(-1).index_add_(0, (flat + nbr[i]).view(-1), (wts[i] * (-4.0 * s_i)[:, None]).view(-1))
        until[rows, i] = draws[k % 64]
        better = E < best_E - tol
        if bool(better.any()):
            best_S[better] = S[better]
            best_E = torch.where(better, E, best_E)
        done = k + 1
        if progress is not None and done % track_every == 0 and float(best_E.min()) < reported - tol:
            reported = float(best_E.min())
            progress(reported)
    if progress is not None and float(best_E.min()) < reported - tol:
        progress(float(best_E.min()))
    return best_S, best_E, done


def _ell(Jt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The CSR couplings as a padded (n, max degree) neighbour table and weights (padding: the
    spin itself with weight 0), or None when padding would more than quadruple the storage (a hub,
    such as the field spin of a model with fields: then the CSR rows are gathered per step)."""
    crow, col, val = Jt.crow_indices(), Jt.col_indices(), Jt.values()
    n = Jt.shape[0]
    deg = crow[1:] - crow[:-1]
    d = max(int(deg.max()), 1) if n else 1
    if n * d > max(4 * col.numel(), 1 << 16):
        return None
    rows = torch.repeat_interleave(torch.arange(n, device=crow.device), deg)
    slot = torch.arange(col.numel(), device=crow.device) - crow[rows]
    nbr = torch.arange(n, device=crow.device)[:, None].repeat(1, d)
    wts = torch.zeros(n, d, dtype=val.dtype, device=val.device)
    nbr[rows, slot] = col.to(nbr.dtype)
    wts[rows, slot] = val
    return nbr, wts
