"""The two levels of a general bilevel problem on flat tensors x (leader) and y (follower).

`Levels` compiles F and g once for a device/dtype, packs each side's variables into one flat
tensor, draws seeded minibatches when a level is a `mean` over a long sample axis, and counts
every gradient and Hessian-vector product (the benchmark's cost measure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.common import init_tensors, project
from optlang.backends.general_bilevel import quadform
from optlang.lazy import lazy_module, no_grad
from optlang.problem import GeneralBilevelProblem, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

AUTO_FULL_BATCH = 16384  # batch 0 (auto): full batch up to this many samples, else max(256, n/100)


class Block:
    """One side's variables packed into a flat tensor, with views, projection and numpy export."""

    def __init__(self, variables: tuple[Variable, ...]) -> None:
        self.variables = variables
        self.slices: list[tuple[Variable, int, int]] = []
        off = 0
        for v in variables:
            self.slices.append((v, off, off + v.size))
            off += v.size
        self.size = off
        self.constrained = any(v.domain.kind != "free" for v in variables)

    def unpack(self, z: torch.Tensor) -> dict[str, torch.Tensor]:
        return {v.name: z[a:b].reshape(v.shape) for v, a, b in self.slices}

    def initial(self, ctx: RunContext, dtype: Any) -> torch.Tensor:
        ts = init_tensors(self.variables, ctx, requires_grad=False)
        if not ts:
            return torch.zeros(0, dtype=dtype, device=ctx.device)
        return torch.cat([ts[v.name].reshape(-1) for v in self.variables]).to(dtype).clone()

    @no_grad
    def project(self, z: torch.Tensor) -> torch.Tensor:
        """The Euclidean projection onto the product of the domains (a new tensor)."""
        if not self.constrained:
            return z
        out = z.clone()
        for v, a, b in self.slices:
            if v.domain.kind != "free":
                out[a:b] = project(v.domain, z[a:b].reshape(v.shape)).reshape(-1)
        return out

    def to_numpy(self, z: torch.Tensor) -> dict[str, np.ndarray]:
        zn = z.detach().to("cpu", torch.float64).numpy()
        return {v.name: zn[a:b].reshape(v.shape).copy() for v, a, b in self.slices}

    def from_numpy(self, values: dict[str, np.ndarray], dtype: Any, device: Any) -> torch.Tensor:
        if not self.variables:
            return torch.zeros(0, dtype=dtype, device=device)
        parts = [np.asarray(values[v.name], dtype=np.float64).reshape(-1) for v in self.variables]
        return torch.as_tensor(np.concatenate(parts), dtype=dtype, device=device)


def batch_size(n: int | None, batch: int) -> int | None:
    """Minibatch size for a sample axis of length n (None: full batch). 0 auto, −1 full, k > 0 size k."""
    if n is None or batch < 0:
        return None
    if batch == 0:
        if n <= AUTO_FULL_BATCH:
            return None
        batch = max(256, n // 100)
    return None if batch >= n else int(batch)


class HessianOps:
    """∇ᵧg at (x, y) with its graph kept, so that ∇²ᵧᵧg·v and ∇²ₓᵧg·v cost one backward pass each."""

    def __init__(self, levels: Levels, x: torch.Tensor, y: torch.Tensor, batch: torch.Tensor | None) -> None:
        self.levels = levels
        self.x = x.detach().requires_grad_(True)
        self.y = y.detach().requires_grad_(True)
        with torch.enable_grad():
            val = levels.g_fn(levels.values(self.x, self.y), batch)
            (gy,) = torch.autograd.grad(val, self.y, create_graph=True, allow_unused=True)
        self.value = val.detach()
        self.gy = gy if gy is not None else torch.zeros_like(self.y)
        levels.grads += 1

    def yy(self, v: torch.Tensor) -> torch.Tensor:
        """∇²ᵧᵧg · v."""
        self.levels.hvps += 1
        if not self.gy.requires_grad:
            return torch.zeros_like(v)
        with torch.enable_grad():
            (hv,) = torch.autograd.grad(self.gy, self.y, grad_outputs=v, retain_graph=True, allow_unused=True)
        return hv.detach() if hv is not None else torch.zeros_like(v)

    def xy(self, v: torch.Tensor) -> torch.Tensor:
        """∇²ₓᵧg · v = ∇ₓ⟨∇ᵧg, v⟩ (a vector the size of x)."""
        self.levels.hvps += 1
        if not self.gy.requires_grad or self.x.numel() == 0:
            return torch.zeros_like(self.x)
        with torch.enable_grad():
            (cv,) = torch.autograd.grad(self.gy, self.x, grad_outputs=v, retain_graph=True, allow_unused=True)
        return cv.detach() if cv is not None else torch.zeros_like(self.x)


class Levels:
    """F and g of a GeneralBilevelProblem compiled for one device/dtype, with seeded minibatches."""

    def __init__(
        self,
        problem: GeneralBilevelProblem,
        ctx: RunContext,
        dtype: Any,
        batch_upper: int = 0,
        batch_lower: int = 0,
        quadratic: str = "auto",
    ) -> None:
        self.problem = problem
        self.device = ctx.device
        self.dtype = dtype
        self.xb = Block(problem.upper_vars)
        self.yb = Block(problem.lower_vars)
        self.F_fn: Callable[..., Any] = problem.upper.compile(ctx.device, dtype)
        self.g_fn: Callable[..., Any] = problem.lower.compile(ctx.device, dtype)
        self.nF, self.ng = problem.upper.n_samples, problem.lower.n_samples
        # a follower-only quadratic summand over data rows becomes c + bᵀy + ½yᵀQy (quadform.py)
        self.quadratic: list[str] = []
        auto = quadratic == "auto"
        if auto and quadform.applies(problem.upper_split, self.yb.size, batch_upper):
            sp = problem.upper_split
            assert sp is not None
            self.F_fn = quadform.level_function(sp, problem.lower_vars, ctx.device, dtype)
            self.nF = sp.rest.n_samples if sp.rest is not None else None
            self.quadratic.append("upper")
        if auto and quadform.applies(problem.lower_split, self.yb.size, batch_lower):
            sp = problem.lower_split
            assert sp is not None
            self.g_fn = quadform.level_function(sp, problem.lower_vars, ctx.device, dtype)
            self.ng = sp.rest.n_samples if sp.rest is not None else None
            self.quadratic.append("lower")
        self.bF = batch_size(self.nF, batch_upper)
        self.bg = batch_size(self.ng, batch_lower)
        self.gen = torch.Generator(device=ctx.device)
        self.gen.manual_seed(ctx.seed * 1_000_003 + 77)
        self.grads = 0  # gradient evaluations (either level)
        self.hvps = 0  # Hessian-vector and cross products

    @property
    def stochastic(self) -> bool:
        return self.bF is not None or self.bg is not None

    def values(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        return {**self.xb.unpack(x), **self.yb.unpack(y)}

    def draw(self, upper: bool) -> torch.Tensor | None:
        n, b = (self.nF, self.bF) if upper else (self.ng, self.bg)
        if b is None or n is None:
            return None
        return torch.randint(0, n, (b,), generator=self.gen, device=self.device)

    @no_grad
    def F(self, x: torch.Tensor, y: torch.Tensor, batch: torch.Tensor | None = None) -> float:
        return float(self.F_fn(self.values(x, y), batch))

    @no_grad
    def g(self, x: torch.Tensor, y: torch.Tensor, batch: torch.Tensor | None = None) -> float:
        return float(self.g_fn(self.values(x, y), batch))

    def grad_g_y(
        self, x: torch.Tensor, y: torch.Tensor, batch: torch.Tensor | None = None
    ) -> tuple[float, torch.Tensor]:
        """(g, ∇ᵧg) at (x, y)."""
        self.grads += 1
        yr = y.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.g_fn(self.values(x.detach(), yr), batch)
            gr = torch.autograd.grad(val, yr, allow_unused=True)[0] if val.requires_grad else None
        return float(val.detach()), (gr.detach() if gr is not None else torch.zeros_like(yr))

    def grad_F(
        self, x: torch.Tensor, y: torch.Tensor, batch: torch.Tensor | None = None
    ) -> tuple[float, torch.Tensor, torch.Tensor]:
        """(F, ∇ₓF, ∇ᵧF) at (x, y)."""
        self.grads += 1
        xr = x.detach().requires_grad_(True)
        yr = y.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.F_fn(self.values(xr, yr), batch)
            grads = torch.autograd.grad(val, (xr, yr), allow_unused=True) if val.requires_grad else (None, None)
        gx, gy = (g.detach() if g is not None else torch.zeros_like(t) for g, t in zip(grads, (xr, yr), strict=True))
        return float(val.detach()), gx, gy

    def hvp_F_yy(
        self, x: torch.Tensor, y: torch.Tensor, v: torch.Tensor, batch: torch.Tensor | None = None
    ) -> torch.Tensor:
        """∇²ᵧᵧF · v (the curvature of the upper level along a selection direction)."""
        self.hvps += 1
        yr = y.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.F_fn(self.values(x.detach(), yr), batch)
            if not val.requires_grad:
                return torch.zeros_like(v)
            (gy,) = torch.autograd.grad(val, yr, create_graph=True, allow_unused=True)
            if gy is None or not gy.requires_grad:
                return torch.zeros_like(v)
            (hv,) = torch.autograd.grad(gy, yr, grad_outputs=v, allow_unused=True)
        return hv.detach() if hv is not None else torch.zeros_like(v)

    def hessian_ops(self, x: torch.Tensor, y: torch.Tensor, batch: torch.Tensor | None = None) -> HessianOps:
        return HessianOps(self, x, y, batch)

    def counters(self) -> dict[str, int]:
        return {"gradients": self.grads, "hvps": self.hvps}
