"""Helpers shared across problem kinds: variable tensors and domain projections (torch), option choices and
ranges with an automatic value, and the variables as one flat float64 vector (SLSQP-based solvers)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext, check_ranges
from optlang.errors import OptionError
from optlang.lazy import lazy_module, no_grad
from optlang.problem import Domain, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


def init_tensors(variables: Iterable[Variable], ctx: RunContext, requires_grad: bool = True) -> dict[str, torch.Tensor]:
    """Feasible seeded starting tensors for the variables, on ctx.device in ctx.dtype."""
    rng = ctx.generator()
    out = {}
    for v in variables:
        t = torch.as_tensor(v.initial(rng), dtype=ctx.dtype, device=ctx.device).reshape(v.shape).clone()
        out[v.name] = t.requires_grad_(requires_grad)
    return out


def project(domain: Domain, x: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of x onto the domain (differentiable where the projection is)."""
    if domain.kind == "box":
        lo = None if np.isinf(domain.lo) else domain.lo
        hi = None if np.isinf(domain.hi) else domain.hi
        return torch.clamp(x, min=lo, max=hi)
    if domain.kind == "ball":
        nrm = torch.linalg.vector_norm(x)
        scale = torch.clamp(domain.radius / torch.clamp(nrm, min=1e-30), max=1.0)
        return x * scale
    if domain.kind == "simplex":
        shift = x.detach().max()  # projection is shift-invariant; shifting keeps float32 cumsums exact
        flat = x.reshape(-1) - shift
        u, _ = torch.sort(flat, descending=True)
        css = torch.cumsum(u, 0) - 1.0
        idx = torch.arange(1, flat.numel() + 1, device=x.device, dtype=x.dtype)
        cond = (u - css / idx) > 0
        rho = int(torch.nonzero(cond).max())
        theta = css[rho] / (rho + 1.0)
        return torch.clamp(flat - theta, min=0.0).reshape(x.shape)
    return x


@no_grad
def project_all_(variables: Iterable[Variable], tensors: dict[str, torch.Tensor]) -> None:
    """Project every tensor onto its variable's domain, in place."""
    for v in variables:
        if v.domain.kind != "free":
            tensors[v.name].copy_(project(v.domain, tensors[v.name]))


def to_numpy(tensors: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Detached float64 numpy copies (what RawSolution.values holds)."""
    return {k: t.detach().to("cpu", torch.float64).numpy().copy() for k, t in tensors.items()}


def finite(*xs: torch.Tensor | float) -> bool:
    """True when every value is finite (the divergence test every loop runs)."""
    for x in xs:
        if isinstance(x, torch.Tensor):
            if not bool(torch.isfinite(x).all()):
                return False
        elif not np.isfinite(x):
            return False
    return True


def check_range_or_auto(
    backend: str,
    options: Any,
    key: str,
    rule: str,
    auto: Mapping[str, tuple[float, ...]] | None = None,
    sentinel: float = -1.0,
) -> None:
    """Refuse (E700) option `key` unless it is `sentinel`, its documented automatic value, or within `rule`
    (one of base.check_ranges' rules), the candidates of an `auto` option included: what a table of
    Backend.option_ranges cannot say for an option such as `momentum` in [0, 1), or -1."""
    for value in (getattr(options, key), *(auto or {}).get(key, ())):
        if value is None or value == sentinel:
            continue
        try:
            check_ranges(SimpleNamespace(**{key: value}), {key: rule}, backend)
        except OptionError as exc:
            message = exc.message.replace(", got", f" (or {sentinel:g}: automatic), got", 1)
            raise OptionError(key, message) from None


class KeepBest:
    """The best iterate seen so far (lowest value) as a detached copy of the tensors, restorable in place.

    What every first-order loop keeps so that a diverging or stopped run returns its best point.
    """

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        self.tensors = tensors
        self.value = math.inf
        self.state = {k: t.detach().clone() for k, t in tensors.items()}

    def offer(self, value: float) -> None:
        """Record the tensors as they are now when `value` beats the best so far."""
        if value < self.value:
            self.value = value
            self.state = {k: t.detach().clone() for k, t in self.tensors.items()}

    def take(self, value: float) -> None:
        """Record the tensors as they are now whatever `value` is (a verified point replaces the best)."""
        self.value = value
        self.state = {k: t.detach().clone() for k, t in self.tensors.items()}

    @no_grad
    def restore(self) -> None:
        """Copy the best iterate back into the tensors."""
        for k, t in self.tensors.items():
            t.copy_(self.state[k])


class FlatVariables:
    """Maps a flat float64 vector to the problem's variables, with their box / simplex / ball structure."""

    def __init__(self, variables: tuple[Variable, ...]) -> None:
        self.vars = variables
        self.sizes = [int(np.prod(v.shape)) if v.shape else 1 for v in self.vars]
        self.lo = np.concatenate(
            [
                np.full(s, v.domain.lo if v.domain.kind == "box" else -np.inf)
                for v, s in zip(self.vars, self.sizes, strict=True)
            ]
        )
        self.hi = np.concatenate(
            [
                np.full(s, v.domain.hi if v.domain.kind == "box" else np.inf)
                for v, s in zip(self.vars, self.sizes, strict=True)
            ]
        )

        # simplex variables: each is one group with Σ = 1 (its coordinates also lie in [0, 1])
        self.grp = np.concatenate(
            [
                np.full(s, gi if v.domain.kind == "simplex" else -1)
                for gi, (v, s) in enumerate(zip(self.vars, self.sizes, strict=True))
            ]
        )
        kinds = [v.domain.kind for v in self.vars]
        self.groups = [gi for gi, k in enumerate(kinds) if k == "simplex"]
        self.lo = np.where(self.grp >= 0, 0.0, self.lo)
        self.hi = np.where(self.grp >= 0, 1.0, self.hi)
        # ball variables: ‖x‖ ≤ r, one group each
        self.bgrp = np.concatenate(
            [
                np.full(s, gi if v.domain.kind == "ball" else -1)
                for gi, (v, s) in enumerate(zip(self.vars, self.sizes, strict=True))
            ]
        )
        self.balls = [(gi, float(v.domain.radius)) for gi, v in enumerate(self.vars) if v.domain.kind == "ball"]

    def split(self, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """A flat vector (…, dim) → each variable's values (…, *shape): one point, or a batch of rows."""
        out, i = {}, 0
        for v, s in zip(self.vars, self.sizes, strict=True):
            out[v.name] = z[..., i : i + s].reshape(tuple(z.shape[:-1]) + tuple(v.shape))
            i += s
        return out

    def flat(self, values: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([np.asarray(values[v.name], dtype=np.float64).ravel() for v in self.vars])


def scalar_count(variables: Iterable[Variable]) -> int:
    """How many scalars the variables hold (the flat vector's length)."""
    return sum(int(np.prod(v.shape)) if v.shape else 1 for v in variables)


def cvx_variable(v: Variable) -> Any:
    """A cvxpy Variable of v's shape and name (cvxpy imported here: only convex backends call this)."""
    import cvxpy as cp

    return cp.Variable(v.shape, name=v.name)


def cvx_domain_constraints(v: Variable, x: Any) -> list[Any]:
    """v's domain as cvxpy constraints on its cvxpy variable x."""
    import cvxpy as cp

    d = v.domain
    if d.kind == "box":
        out = []
        if np.isfinite(d.lo):
            out.append(x >= d.lower)
        if np.isfinite(d.hi):
            out.append(x <= d.upper)
        return out
    if d.kind == "ball":
        return [cp.norm(cp.vec(x, order="C"), 2) <= d.radius]
    if d.kind == "simplex":
        return [x >= 0, cp.sum(x) == 1]
    return []


def cvx_solve(prob: Any, solver: str, backend: str, opts: dict[str, Any]) -> str | None:
    """prob.solve in cvxpy's two steps (get_problem_data, solve_via_data + unpack_results) with `solver`:
    a solver that is not installed or does not take these cones is the option's error (OptionError); a
    failure while solving returns its message, else None."""
    import cvxpy as cp

    try:
        data, chain, inverse = prob.get_problem_data(solver, solver_opts=opts)
    except cp.error.SolverError as exc:
        raise OptionError("solver", f"option 'solver' of '{backend}': {exc}", hint="CLARABEL or SCS") from exc
    try:
        prob.unpack_results(chain.solve_via_data(prob, data, solver_opts=opts), chain, inverse)
    except cp.error.SolverError as exc:
        return f"cvxpy solver failed: {exc}"
    return None
