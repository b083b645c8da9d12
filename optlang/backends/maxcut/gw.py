"""Goemans–Williamson rounding of a factor V (many random hyperplanes at once) + 1-flip local search.

Candidates t_b = sign(V r_b) for B Gaussian r_b, refined together by the shared batched 1-flip
descent of `ising_ops` on the Ising form E = tᵀ(W/4)t (minimal E ⇔ maximal cut), then scored in
float64 from W.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from optlang.backends.ising.ops import descent_with_fields, to_torch_csr
from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


def cuts_of(W: sp.csr_matrix, S: np.ndarray) -> np.ndarray:
    """Cut values of a batch of ±1 rows S (B, n), float64."""
    S = np.asarray(S, dtype=np.float64)
    return (float(W.sum()) - np.einsum("bi,bi->b", S, (W @ S.T).T)) / 4.0


def gw_round(
    W: sp.csr_matrix,
    V: torch.Tensor,
    n_planes: int,
    gen: torch.Generator,
    local_search: bool = True,
    polish: int = 16,
    chunk: int = 256,
    Jt: torch.Tensor | None = None,
    stop: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, float]:
    """The best cut over `n_planes` hyperplane roundings of V (rows of V are vertices).

    All roundings are scored (one batched product); the `polish` best are then refined together
    by 1-flip descent (the descent costs far more than rounding, and the best roundings usually
    descend to the best cuts; `stop()`, polled between descent rounds, ends it early with valid
    spins). Returns (t, cut): a ±1 vector (numpy float64), its float64 cut.
    """
    n, k = V.shape
    if n == 0:
        return np.zeros(0), 0.0
    device, dtype = V.device, V.dtype
    Wt = to_torch_csr(W.tocsr(), device=device, dtype=dtype)
    cands, scores = [], []
    done = 0
    while done < max(1, n_planes):
        b = min(chunk, max(1, n_planes) - done)
        R = torch.randn(k, b, generator=gen, device=gen.device, dtype=dtype).to(device)
        S = torch.sign(V @ R).T.contiguous()
        S[S == 0] = 1.0
        scores.append(-(S * (Wt @ S.T).T).sum(1))  # cut = (ΣW − sᵀWs)/4: rank by −sᵀWs
        cands.append(S)
        done += b
    S = torch.cat(cands)
    order = torch.argsort(torch.cat(scores), descending=True)
    S = S[order[: max(1, polish)]].contiguous() if local_search else S[order[:1]]
    if local_search:
        if Jt is None:
            Jt = to_torch_csr((W / 4.0).tocsr(), device=device, dtype=dtype)
        h = torch.zeros(n, device=device, dtype=dtype)
        S = descent_with_fields(Jt, h, S, stop=stop)[0]
    Sn = S.detach().to("cpu", torch.float64).numpy()
    cuts = cuts_of(W, Sn)
    j = int(np.argmax(cuts))
    return Sn[j].copy(), float(cuts[j])
