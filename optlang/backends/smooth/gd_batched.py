"""gd's projected Adam phase for several step sizes at once: one batched problem, not a loop of fits.

What `lr = auto` needs (backends/autotune.py): the candidates differ only in Adam's step size, so
their runs are B stacked copies of the variables (a leading batch dimension) with a per-candidate
lr tensor; one `torch.func.vmap` of the objective gives every candidate's value and, through one
backward, every candidate's gradient (the copies are independent). Each copy follows exactly the
single run's rules (gd.py `_FirstOrderStep` under `run_loop`): Adam (β = 0.9, 0.999, ε = 1e-8),
projection onto the domains, keep-best on the value measured before each move, converged when the
copy stops moving (max |Δx| ≤ tol · max(1, max |x|)) — a converged or diverged copy is frozen,
the others go on — the iteration limit with the best iterate restored when the last one is worse.
So each copy ends where its own single fit ends, up to float rounding (tested in test_autotune.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import RunContext, Status
from optlang.backends.common import project_all_
from optlang.lazy import lazy_module
from optlang.problem import Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8  # torch.optim.Adam's defaults, as the single run uses them


@dataclass
class PhaseEnd:
    """One copy's end: status, iterations, value reached (the single run's `_first_order` triple) and iterate."""

    status: Status
    iterations: int
    value: float
    x: dict[str, torch.Tensor]


def vmappable(f: Callable[..., Any], x0: dict[str, torch.Tensor]) -> bool:
    """Whether `torch.func.vmap` runs the objective over two stacked copies of x0 (an atom that reads a
    value back to Python, e.g. `.item()`, cannot be batched: the caller then fits one candidate at a time)."""
    stacked = {k: t.detach().unsqueeze(0).repeat(2, *([1] * t.dim())) for k, t in x0.items()}
    try:
        with torch.no_grad():
            torch.func.vmap(lambda vals: f(vals))(stacked)
    except RuntimeError:
        return False
    return True


def adam_phase(
    f: Callable[..., Any],
    x0: dict[str, torch.Tensor],
    variables: Sequence[Variable],
    lrs: Sequence[float],
    max_iter: int,
    tol: float,
    ctx: RunContext,
) -> list[PhaseEnd]:
    """Projected Adam from x0 for every step size in `lrs` as one batched run (module docstring)."""
    B = len(lrs)
    names = list(x0)
    xs = {k: x0[k].detach().unsqueeze(0).repeat(B, *([1] * x0[k].dim())).clone() for k in names}
    m = {k: torch.zeros_like(t) for k, t in xs.items()}
    v = {k: torch.zeros_like(t) for k, t in xs.items()}
    dtype, device = next(iter(xs.values())).dtype, next(iter(xs.values())).device
    lr = torch.as_tensor(list(lrs), dtype=dtype, device=device)
    fb = torch.func.vmap(lambda vals: f(vals))
    boxes = [u for u in variables if u.domain.kind == "box"]  # clamped elementwise: the whole stack at once
    others = [u for u in variables if u.domain.kind not in ("free", "box")]  # per copy (ball, simplex, ...)
    active = torch.ones(B, dtype=torch.bool, device=device)
    status: list[Status | None] = [None] * B
    iters = [0] * B
    best_val = torch.full((B,), math.inf, dtype=dtype, device=device)
    best_x = {k: t.clone() for k, t in xs.items()}

    def shaped(mask: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return mask.reshape((B,) + (1,) * (t.dim() - 1))

    def end(mask: torch.Tensor, st: Status, it: int) -> None:
        for c in mask.nonzero().flatten().tolist():
            status[c], iters[c] = st, it
        active.logical_and_(~mask)

    t = 0
    while bool(active.any()):
        if t >= max_iter:
            end(active.clone(), Status.ITERATION_LIMIT, max_iter)
            break
        if t > 0 and ctx.should_stop():  # the single run takes its first step whatever the clock says
            end(active.clone(), ctx.stop_status(), t)
            break
        leaves = {k: xs[k].detach().requires_grad_(True) for k in names}
        loss = fb(leaves)
        val = loss.detach()
        # measure: a non-finite value ends that copy diverged (the iteration counts); else keep-best
        end(active & ~torch.isfinite(val), Status.DIVERGED, t + 1)
        better = active & (val < best_val)
        best_val = torch.where(better, val, best_val)
        for k in names:
            best_x[k] = torch.where(shaped(better, xs[k]), xs[k], best_x[k])
        if not bool(active.any()):
            break
        grads = torch.autograd.grad(loss.sum(), [leaves[k] for k in names])
        step = t + 1
        bc1, bc2 = 1 - BETA1**step, 1 - BETA2**step
        old = {k: xs[k].clone() for k in names}
        with torch.no_grad():
            for k, g in zip(names, grads, strict=True):
                m[k].lerp_(g, 1 - BETA1)
                v[k].mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
                denom = (v[k].sqrt() / math.sqrt(bc2)).add_(EPS)
                moved = xs[k] - (lr / bc1).reshape((B,) + (1,) * (g.dim() - 1)) * m[k] / denom
                xs[k] = torch.where(shaped(active, moved), moved, xs[k])
            project_all_(boxes, xs)
            if others:
                for c in active.nonzero().flatten().tolist():
                    project_all_(others, {k: xs[k][c] for k in names})
            # check: converged when the copy stopped moving (max |Δx| ≤ tol · max(1, max |x|))
            delta = torch.stack([(xs[k] - old[k]).abs().reshape(B, -1).amax(1) for k in names]).amax(0)
            scale = torch.stack([xs[k].abs().reshape(B, -1).amax(1) for k in names]).amax(0).clamp(min=1.0)
            end(active & (delta <= tol * scale), Status.CONVERGED, step)
        t = step
    with torch.no_grad():
        final = fb({k: xs[k] for k in names}).tolist()
    bests = best_val.tolist()
    out = []
    for c in range(B):
        st = status[c]
        assert st is not None
        x = {k: xs[k][c].clone() for k in names}
        value = final[c]
        if st == Status.DIVERGED:
            x, value = {k: best_x[k][c].clone() for k in names}, bests[c]
        elif st == Status.ITERATION_LIMIT and value > bests[c]:
            x, value = {k: best_x[k][c].clone() for k in names}, bests[c]
        out.append(PhaseEnd(st, iters[c], float(value), x))
    return out
