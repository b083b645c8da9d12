"""Burer–Monteiro ascent for the Max-Cut SDP: Riemannian gradient on the product of spheres.

Maximizing ¼⟨L, VVᵀ⟩ over unit rows is minimizing g(V) = ⟨W, VVᵀ⟩. The Riemannian gradient is
the Euclidean one 2WV with each row's radial part removed; a step retracts by normalizing rows.
Step sizes: Barzilai–Borwein guess, then Armijo backtracking (so g never increases).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


def _unit(V: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit norm (the hot-loop version: rows are known to be nonzero)."""
    return V / torch.linalg.vector_norm(V, dim=1, keepdim=True).clamp_min(1e-30)


def normalize_rows(V: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit norm (a zero row becomes e_1, so X stays feasible)."""
    nrm = torch.linalg.vector_norm(V, dim=1, keepdim=True)
    out = V / nrm.clamp_min(1e-30)
    zero = nrm.squeeze(1) < 1e-30
    if bool(zero.any()):
        out[zero] = 0.0
        out[zero, 0] = 1.0
    return out


def default_rank(n: int) -> int:
    """Rank k with k(k+1)/2 > n (Barvinok–Pataki), so BM has no spurious local optima generically."""
    return max(2, min(n, int(math.ceil(math.sqrt(2.0 * n))) + 1))


def random_factor(n: int, k: int, gen: torch.Generator, device: torch.device | str, dtype: torch.dtype) -> torch.Tensor:
    """A seeded random feasible factor (unit rows)."""
    V = torch.randn(n, k, generator=gen, device=gen.device, dtype=dtype)
    return normalize_rows(V.to(device))


def pad_rank(V: torch.Tensor, k: int, gen: torch.Generator, scale: float = 1e-2) -> torch.Tensor:
    """Widen V to k columns with small seeded noise (so the ascent can leave the lower-rank face)."""
    n, k0 = V.shape
    if k <= k0:
        return V
    noise = torch.randn(n, k - k0, generator=gen, device=gen.device, dtype=V.dtype).to(V.device) * scale
    return normalize_rows(torch.cat([V, noise], 1))


@dataclass
class AscentInfo:
    steps: int
    value: float  # ¼⟨L, VVᵀ⟩ at the end
    grad_norm: float
    stopped: str  # "steps" | "grad" | "callback" | "time"


def bm_ascent(
    Wd: torch.Tensor,
    V: torch.Tensor,
    steps: int,
    grad_tol: float = 1e-6,
    callback: Callable[[torch.Tensor, int, float], bool] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[torch.Tensor, AscentInfo]:
    """Run up to `steps` Riemannian gradient steps from V (unit rows); returns the new V.

    `callback(V, it, grad_rel)` is called after every step with the relative Riemannian gradient
    norm of the previous iterate (cheap; the callback decides when to pay for a certificate);
    returning True stops the ascent. `grad_tol` is relative to the total absolute weight.
    """
    dsum = float(Wd.sum())
    scale = max(float(Wd.abs().sum()), 1e-30)
    WV = Wd @ V
    g = float((V * WV).sum())
    eta = 1.0 / max(float(Wd.abs().sum(1).max()), 1e-30)  # safe first step ~ 1/‖W‖
    prev_V = prev_rg = None
    it = 0
    stopped = "steps"
    gn = math.inf
    while it < steps:
        G = 2.0 * WV
        rg = G - (G * V).sum(1, keepdim=True) * V
        gn2 = float((rg * rg).sum())
        gn = math.sqrt(gn2)
        if gn <= grad_tol * scale:
            stopped = "grad"
            break
        if prev_V is not None:  # Barzilai–Borwein step from the last two iterates
            s = V - prev_V
            yk = rg - prev_rg
            sy = float((s * yk).sum())
            if sy > 0:
                eta = min(float((s * s).sum()) / sy, 1e3 * eta)
        for _ in range(30):  # Armijo backtracking
            Vn = _unit(V - eta * rg)  # a step along a tangent direction never zeroes a unit row
            WVn = Wd @ Vn
            gnew = float((Vn * WVn).sum())
            if gnew <= g - 1e-4 * eta * gn2:
                break
            eta *= 0.5
        else:
            stopped = "stalled"
            break
        prev_V, prev_rg = V, rg
        V, WV, g = Vn, WVn, gnew
        it += 1
        if callback is not None and callback(V, it, gn / scale):
            stopped = "callback"
            break
        if should_stop is not None and should_stop():
            stopped = "time"
            break
    value = 0.25 * (dsum - g)
    return V, AscentInfo(steps=it, value=value, grad_norm=gn, stopped=stopped)
