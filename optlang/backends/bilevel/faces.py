"""The face of the domain a projected step stays on, for the simple bilevel backends.

A projected step x⁺ = Π(y − ηd) moves only along the tangent directions of the face y sits on: a box
coordinate on a bound that −d pushes against is held, a ball's radial part is removed on its sphere
when −d points out, and a simplex removes the mean of the free coordinates (Σx = 1 always binds) and
holds the zeros −d pushes negative. `Faces.tangent(y, d)` is that linear map for one point (n,) or
rows (B, n). sdbpg sets its multiplier from the tangent parts of ∇f and ∇g (what the held parts ask for,
the projection takes away), and the KKT certificate fits its multipliers on them (`oracle.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from optlang.lazy import lazy_module
from optlang.problem import Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

ON_SPHERE = 1e-6  # a ball's point is on its sphere within this relative distance (projection rounding)
SIMPLEX_ROUNDS = 3  # rounds of the simplex's held set (zeros the step pushes below the free mean)


class Flat(Protocol):
    """The flat variable vector's layout (oracle.FlatVars): each variable's slice, and the length."""

    @property
    def slices(self) -> Sequence[tuple[Variable, int, int]]: ...

    @property
    def size(self) -> int: ...


@dataclass
class Tangent:
    """The tangent map at one point (or rows) for one step direction; `key` identifies the face."""

    apply: Callable[[torch.Tensor], torch.Tensor]
    key: torch.Tensor

    def same_face(self, other: Tangent) -> bool:
        return bool(torch.equal(self.key, other.key))


class Faces:
    """Box, ball and simplex coordinates of the flat variable vector, for `tangent`."""

    def __init__(self, flat: Flat, dtype: torch.dtype, device: Any) -> None:
        lo = np.full(flat.size, -np.inf)
        hi = np.full(flat.size, np.inf)
        self.balls: list[tuple[int, int, float]] = []
        self.simplices: list[tuple[int, int]] = []
        for v, a, b in flat.slices:
            kind = v.domain.kind
            if kind == "box":
                lo[a:b], hi[a:b] = v.domain.lo, v.domain.hi
            elif kind == "ball":
                self.balls.append((a, b, float(v.domain.radius)))
            elif kind == "simplex":
                self.simplices.append((a, b))
        self.has_box = bool(np.isfinite(lo).any() or np.isfinite(hi).any())
        self.lo = torch.as_tensor(lo, dtype=dtype, device=device)
        self.hi = torch.as_tensor(hi, dtype=dtype, device=device)

    @property
    def any(self) -> bool:
        """Whether any coordinate can sit on a face (else every tangent map is the identity)."""
        return self.has_box or bool(self.balls) or bool(self.simplices)

    def tangent(self, y: torch.Tensor, d: torch.Tensor) -> Tangent:
        """The tangent map at y (projected) for a step along −d, on one point (n,) or rows (B, n)."""
        held = torch.zeros_like(y, dtype=torch.bool)
        if self.has_box:
            held |= ((y <= self.lo) & (d > 0)) | ((y >= self.hi) & (d < 0))
        radial: list[tuple[int, int, torch.Tensor, torch.Tensor]] = []
        for a, b, r in self.balls:
            ys, ds = y[..., a:b], d[..., a:b]
            norm = torch.linalg.vector_norm(ys, dim=-1, keepdim=True)
            out = (norm >= r * (1.0 - ON_SPHERE)) & ((ds * ys).sum(-1, keepdim=True) < 0)
            held[..., a:b] |= out  # the key marks the ball's coordinates; the map removes the radial part only
            radial.append((a, b, ys / torch.clamp(norm, min=1e-30), out))
        means: list[tuple[int, int, torch.Tensor]] = []
        for a, b in self.simplices:
            ys, ds = y[..., a:b], d[..., a:b]
            free = torch.ones_like(ys, dtype=torch.bool)
            for _ in range(SIMPLEX_ROUNDS):
                mean = (ds * free).sum(-1, keepdim=True) / torch.clamp(free.sum(-1, keepdim=True), min=1)
                new = ~((ys <= 0) & (ds > mean))
                if torch.equal(new, free):
                    break
                free = new
            held[..., a:b] = ~free
            means.append((a, b, free))
        keep = ~held
        for a, b, _, _ in radial:
            keep[..., a:b] = True  # a ball's coordinates move along the sphere

        def apply(v: torch.Tensor) -> torch.Tensor:
            out = v * keep
            for a, b, u, on in radial:
                vs = out[..., a:b]
                out[..., a:b] = torch.where(on, vs - (vs * u).sum(-1, keepdim=True) * u, vs)
            for a, b, free in means:
                vs = out[..., a:b] * free
                mean = vs.sum(-1, keepdim=True) / torch.clamp(free.sum(-1, keepdim=True), min=1)
                out[..., a:b] = (vs - mean) * free
            return out

        return Tangent(apply, held)
