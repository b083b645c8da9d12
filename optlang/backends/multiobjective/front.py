"""ParetoM³'s front mode: rays along reference directions, then refinement where the front has gaps.

Stage 0: K Das-Dennis directions w_k (any number of objectives) define rays from the ideal point
z in the normalized objective space ((F − z)/s, s = nadir − ideal, both re-estimated from the
archive every 10 iterations). Each ray's point is the minimizer of the smoothed Chebyshev
achievement  τ·logsumexp_i(a_i/τ) + α Σ a_i,  a_i = (F_i − z_i)/(s_i w̃_ki),  w̃ = max(w, δ),
which sits where the ray meets the front whatever its shape (convex, concave); all K run as one
projected-Adam batch (one vmapped evaluation and one backward pass per iteration). Stage 0 ends
when no achievement value moved more than `front_tol` over 10 iterations (or at `front_iters`).

Refinement (adaptation to the front's shape): the longest edges between neighbouring solutions
(sorted order for 2 objectives, the m nearest neighbours otherwise) get a new point started at the
midpoint of the two decision vectors with the ray through the midpoint of their objective vectors,
run for `refine_iters` steps, all new points as one batch. A new point that lands within a quarter
of the edge of an end (a gap of a disconnected front, or a degenerate piece) marks the edge as a gap
and is not kept as a solution, so edges across gaps are not retried. Refinement stops when every
remaining edge is shorter than `front_resolution` (normalized) — the front is then `converged` —
or when the `front_evals` budget is spent (`iteration_limit`).

Every evaluated point enters the non-dominated archive; the archive is the returned front.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.multiobjective.metrics import directions, nondominated, nondominated_mask
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class FrontRun:
    """What the front sweep produced (the archive holds the front itself)."""

    evaluations: int
    iterations: int
    stopped: str  # "converged" | "limit" | "time" | "diverged"
    directions: int
    stage0_iterations: int
    refinements: int
    solutions: int
    gaps: int
    ideal: np.ndarray = field(default_factory=lambda: np.zeros(0))
    nadir: np.ndarray = field(default_factory=lambda: np.zeros(0))


class _Batch:
    """K instances descending their Chebyshev achievement along rays, as one projected-Adam batch."""

    def __init__(
        self,
        problem: MultiObjectiveProblem,
        ev: Any,
        X: dict[str, torch.Tensor],
        W: np.ndarray,
        o: Any,
        ctx: RunContext,
        lr: float,
    ) -> None:
        from optlang.backends.multiobjective.common import ProjectedAdam, variable_scale

        self.problem, self.ev, self.o, self.ctx = problem, ev, o, ctx
        self.X = {k: v.detach().clone().requires_grad_(True) for k, v in X.items()}
        self.W = torch.as_tensor(np.maximum(W, o.front_delta), dtype=ctx.dtype, device=ctx.device)
        scales = {v.name: variable_scale(v, self.X[v.name]) for v in problem.variables}
        self.opt = ProjectedAdam(self.X, scales, lr)
        self.m = W.shape[1]

    def step(
        self, z: torch.Tensor, s: torch.Tensor, factor: float, archive: Any
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """One step; returns (F, achievement) before the step, or None when F is not finite."""
        from optlang.backends.multiobjective.common import batched_project_, nan_to_zero, safe_grads

        out = self.ev(self.X)
        F = out[:, : self.m]
        if not bool(torch.isfinite(F.detach()).all()):
            return None
        q = (F - z) / s
        if self.o.front_scalar == "pbi":  # d1 along the ray + θ · distance to it (smoothed)
            u = self.W / self.W.norm(dim=1, keepdim=True)
            d1 = (q * u).sum(1)
            d2 = torch.sqrt(((q - d1[:, None] * u) ** 2).sum(1) + self.o.front_tau**2)
            ach = d1 + self.o.front_theta * d2
        else:
            a = q / self.W
            tau = self.o.front_tau
            ach = tau * torch.logsumexp(a / tau, dim=1) + self.o.front_alpha * q.sum(1)
        archive.add(F.detach(), self.X)  # before the step: F belongs to these points
        g, _ = safe_grads(ach.sum(), self.X)
        self.opt.step(self.X, {n: nan_to_zero(t) for n, t in g.items()}, factor)
        batched_project_(self.problem.variables, self.X)
        return F.detach(), ach.detach()


def _edges(Q: np.ndarray, k: int) -> list[tuple[int, int, float]]:
    """Neighbour edges of the normalized points Q: consecutive in f1 for 2 objectives, k-nearest otherwise."""
    n = Q.shape[0]
    if n < 2:
        return []
    if Q.shape[1] == 2:
        order = np.argsort(Q[:, 0])
        return [
            (int(a), int(b), float(np.linalg.norm(Q[a] - Q[b]))) for a, b in zip(order[:-1], order[1:], strict=True)
        ]
    D = np.sqrt(((Q[:, None, :] - Q[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    out = {}
    for i in range(n):
        for j in np.argsort(D[i])[: min(k, n - 1)]:
            a, b = (i, int(j)) if i < j else (int(j), i)
            out[(a, b)] = float(D[a, b])
    return [(a, b, d) for (a, b), d in out.items()]


def sweep(problem: MultiObjectiveProblem, o: Any, ctx: RunContext, archive: Any, ev: Any) -> FrontRun:
    """Run stage 0 and the refinements; every evaluated point goes to `archive`."""
    from optlang.backends.multiobjective.common import batched_init, cosine

    m = len(problem.objectives)
    W = directions(o.front_points if o.front_points > 0 else {2: 40, 3: 36}.get(m, 70), m)
    K = W.shape[0]
    budget = o.front_evals if o.front_evals > 0 else 10**12
    iters0 = ctx.max_iter if ctx.max_iter is not None else o.front_iters
    iters0 = max(1, min(iters0, int(0.6 * budget) // K if budget < 10**12 else iters0))
    X0 = batched_init(problem.variables, K, ctx, offset=2)
    batch = _Batch(problem, ev, X0, W, o, ctx, o.front_lr)
    stopped = "limit"
    z = s = None
    prev_ach = None
    k = 0

    def normalization(Fcur: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Ideal z = the archive's minimum; nadir = the worst non-dominated current solution."""
        Fc = np.asarray(Fcur.detach().cpu().numpy() if isinstance(Fcur, torch.Tensor) else Fcur, dtype=np.float64)
        Fc = Fc[np.all(np.isfinite(Fc), axis=1)]
        lo = archive.all().min(0)
        hi = nondominated(Fc).max(0) if Fc.shape[0] else archive.all().max(0)
        hi = np.maximum(hi, lo + 1e-6 * (1 + np.abs(lo)))
        z_ = lo - 1e-3 * (hi - lo)
        return (
            torch.as_tensor(z_, dtype=ctx.dtype, device=ctx.device),
            torch.as_tensor(hi - z_, dtype=ctx.dtype, device=ctx.device),
        )

    while k < iters0:
        if ctx.should_stop():
            stopped = "time"
            break
        if z is None or s is None:  # set together, on the first iteration
            with torch.no_grad():
                F0 = ev(batch.X)[:, :m]
            archive.add(F0, batch.X)
            z, s = normalization(F0)
        res = batch.step(z, s, cosine(k, iters0, o.lr_final), archive)
        if res is None:
            stopped = "diverged"
            break
        F, ach = res
        k += 1
        if k % 10 == 0:
            z, s = normalization(F)
            if prev_ach is not None and float((ach - prev_ach).abs().max()) < o.front_tol:
                stopped = "converged"
                break
            prev_ach = ach
        if k % 25 == 0:
            ctx.report(float(ach.mean()), None, iteration=k)
    stage0 = k
    # the solutions of stage 0 (their end points) and the normalization
    with torch.no_grad():
        Fend = ev(batch.X)[:, :m]
    archive.add(Fend, batch.X)
    z, s = normalization(Fend)
    SF = Fend.detach().cpu().numpy().astype(np.float64)  # the solutions: objective vectors and points
    ok = np.all(np.isfinite(SF), axis=1)
    SF = SF[ok]
    SX = {n: t.detach().clone()[torch.as_tensor(ok, device=t.device)] for n, t in batch.X.items()}
    gaps: set[tuple[int, int]] = set()
    refinements = 0
    while stopped not in ("time", "diverged"):
        zn, sn = z.cpu().numpy().astype(np.float64), s.cpu().numpy().astype(np.float64)
        # edges join non-dominated solutions only (dominated ones, e.g. weakly Pareto points, stay in the archive)
        Q = (SF - zn) / sn
        nd = np.flatnonzero(nondominated_mask(SF))
        cand = [
            (int(nd[a]), int(nd[b]), d)
            for a, b, d in _edges(Q[nd], m)
            if d > o.front_resolution and (int(nd[a]), int(nd[b])) not in gaps
        ]
        if not cand:  # every edge between neighbouring solutions is below the resolution or a measured gap
            stopped = "converged"
            break
        left = budget - ev.count
        n_new = min(len(cand), left // (o.refine_iters + 1))
        if n_new <= 0:
            stopped = "limit"
            break
        cand.sort(key=lambda e: -e[2])
        cand = cand[:n_new]
        A_idx = torch.as_tensor([a for a, _, _ in cand], device=ctx.device)
        B_idx = torch.as_tensor([b for _, b, _ in cand], device=ctx.device)
        Xn = {n: 0.5 * (t[A_idx] + t[B_idx]) for n, t in SX.items()}
        mid = 0.5 * (Q[[a for a, _, _ in cand]] + Q[[b for _, b, _ in cand]])
        Wn = np.maximum(mid, 0.0)
        Wn = Wn / np.maximum(Wn.sum(1, keepdims=True), 1e-12)
        rb = _Batch(problem, ev, Xn, Wn, o, ctx, o.front_lr * o.refine_lr)
        bad = False
        for j in range(o.refine_iters):
            if ctx.should_stop():
                stopped = "time"
                break
            res = rb.step(z, s, cosine(j, o.refine_iters, 0.1), archive)
            if res is None:
                bad = True
                break
            k += 1
        with torch.no_grad():
            Fn = ev(rb.X)[:, :m].detach().cpu().numpy().astype(np.float64)
        if not bad:
            archive.add(torch.as_tensor(Fn), rb.X)
        refinements += 1
        Qn = (Fn - zn) / sn
        keep = []
        for i, (a, b, d) in enumerate(cand):
            near = min(np.linalg.norm(Qn[i] - Q[a]), np.linalg.norm(Qn[i] - Q[b]))
            if bad or not np.all(np.isfinite(Qn[i])) or near < 0.25 * d:
                gaps.add((a, b))
            else:
                keep.append(i)
                gaps.add((a, b))  # the edge is now split in two
        if keep:
            ki = torch.as_tensor(keep, device=ctx.device)
            SF = np.concatenate([SF, Fn[keep]])
            SX = {n: torch.cat([t, rb.X[n].detach()[ki]]) for n, t in SX.items()}
        z, s = normalization(SF)
        if bad:
            break
    return FrontRun(
        evaluations=ev.count,
        iterations=k,
        stopped=stopped,
        directions=K,
        stage0_iterations=stage0,
        refinements=refinements,
        solutions=int(SF.shape[0]),
        gaps=len(gaps),
        ideal=z.cpu().numpy().astype(np.float64),
        nadir=(z + s).cpu().numpy().astype(np.float64),
    )
