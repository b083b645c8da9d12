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
    active = [True] * B
    status: list[Status | None] = [None] * B
    iters = [0] * B
    best_val = [math.inf] * B
    best_x = {k: t.clone() for k, t in xs.items()}

    def view(c: int) -> dict[str, torch.Tensor]:
        return {k: xs[k][c] for k in names}

    t = 0
    while any(active):
        if t >= max_iter:
            for c in range(B):
                if active[c]:
                    status[c], iters[c], active[c] = Status.ITERATION_LIMIT, max_iter, False
            break
        if t > 0 and ctx.should_stop():  # the single run takes its first step whatever the clock says
            for c in range(B):
                if active[c]:
                    status[c], iters[c], active[c] = ctx.stop_status(), t, False
            break
        leaves = {k: xs[k].detach().requires_grad_(True) for k in names}
        loss = fb(leaves)
        vals = loss.detach().tolist()
        for c in range(B):  # measure: a non-finite value ends that copy diverged (the iteration counts)
            if not active[c]:
                continue
            if not math.isfinite(vals[c]):
                status[c], iters[c], active[c] = Status.DIVERGED, t + 1, False
            elif vals[c] < best_val[c]:
                best_val[c] = vals[c]
                for k in names:
                    best_x[k][c] = xs[k][c]
        if not any(active):
            break
        grads = torch.autograd.grad(loss.sum(), [leaves[k] for k in names])
        step = t + 1
        bc1, bc2 = 1 - BETA1**step, 1 - BETA2**step
        mask = torch.as_tensor(active, device=device)
        old = {k: xs[k].clone() for k in names}
        with torch.no_grad():
            for k, g in zip(names, grads, strict=True):
                shape = (B,) + (1,) * (g.dim() - 1)
                m[k].lerp_(g, 1 - BETA1)
                v[k].mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
                denom = (v[k].sqrt() / math.sqrt(bc2)).add_(EPS)
                moved = xs[k] - (lr / bc1).reshape(shape) * m[k] / denom
                xs[k] = torch.where(mask.reshape(shape), moved, xs[k])
            for c in range(B):
                if active[c]:
                    project_all_(variables, view(c))
            for c in range(B):  # check: converged when the copy stopped moving
                if not active[c]:
                    continue
                delta = max(float((xs[k][c] - old[k][c]).abs().max()) for k in names)
                scale = max(1.0, max(float(xs[k][c].abs().max()) for k in names))
                if delta <= tol * scale:
                    status[c], iters[c], active[c] = Status.CONVERGED, step, False
        t = step
    with torch.no_grad():
        final = fb({k: xs[k] for k in names}).tolist()
    out = []
    for c in range(B):
        st = status[c]
        assert st is not None
        x = {k: xs[k][c].clone() for k in names}
        value = final[c]
        if st == Status.DIVERGED:
            x, value = {k: best_x[k][c].clone() for k in names}, best_val[c]
        elif st == Status.ITERATION_LIMIT and value > best_val[c]:
            x, value = {k: best_x[k][c].clone() for k in names}, best_val[c]
        out.append(PhaseEnd(st, iters[c], float(value), x))
    return out
