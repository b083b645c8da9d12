"""ParetoM³'s front mode: rays along reference directions, then continuation over a mesh of the front.

Stage 0: K Das-Dennis directions w_k (any number of objectives) define rays from the ideal point z
in the normalized objective space ((F − z)/s, s = nadir − ideal, both re-estimated from the archive
every 10 iterations). Each ray's point is the minimizer of the smoothed Chebyshev achievement
τ·logsumexp_i(a_i/τ) + α Σ a_i, a_i = (F_i − z_i)/(s_i w̃_ki), w̃ = max(w, δ), which sits where the
ray meets the front whatever its shape (convex, concave); all K run as one projected-Adam batch (one
vmapped evaluation and one backward pass per iteration). Stage 0 ends when no achievement value
moved more than `front_tol` over 10 iterations (or at `front_iters`, at most `front_stage0` of the
budget; or, when exploring is on, once one objective's value is the same over every non-dominated point
seen: `_collapsed`). Every 10 iterations from the 20th (`front_exchange`) a ray that an archived point of its own
sector beats on its achievement by more than `front_exchange_tol` plus what the ray gained over its
last 10 iterations restarts from that point (no evaluation), so that rays caught in a local basin
take a better one that another ray's path crossed. With `front_solver="slsqp"` (box and free
variables) the rays run one at a time instead: SLSQP on the augmented Pascoletti-Serafini problem
(see `_rays_slsqp`), 10 directions for 3 objectives and (`front_ray_split`) the midpoints of
neighbouring ones, each converged to the front (~330 evaluations in all on DTLZ2), so that the
predictors interpolated between them are on the front too; at most `front_ray_share` of the budget.

Refinement (continuation along the front, adapted to its shape): the edges between neighbouring
solutions — consecutive in f1 for 2 objectives, the Delaunay mesh of the solutions projected along
(1, ..., 1) otherwise — are split at their midpoints, longest first, one midpoint per place (the two
diagonals of a quadrilateral share one). Predictor: the midpoint of the two decision vectors, one
evaluation. Corrector: `refine_iters` achievement steps along the ray through the midpoint of the two
objective vectors, for the predictors that a current solution dominates (off the front: a gap or a
curved Pareto set) and for a sample of the others (`front_verify`); when no sampled correction gains
more than `front_predict_tol` the other predictors are kept as they are, so on a Pareto set that is
flat between neighbours a new front point costs one evaluation. A corrected point that lands within
a quarter of the edge of an end marks the edge as a gap (a disconnected front, or a degenerate
piece) and is not kept. Refinement stops when every remaining edge is shorter than
`front_resolution` (normalized) — the front is then `converged` — or when the `front_evals` budget is
spent (`iteration_limit`). A resolved mesh first takes its finishing steps (`_finish`); with at least
10 K evaluations left it is then explored (`explore.py`: an NSGA-II population grown from the archive)
and the archived points found far from every solution join the mesh, whose refinement goes on from
them; the finishing steps of a mesh that exploring grew take at most half the budget left. One NSGA-II
population (`explore.Explorer`) lives across the explorations. When its offspring beat a solution of the
mesh by the resolution, the mesh was a local front (a multimodal g): explorations may then spend
`front_explore_local` of the budget left, and the front's ends (`_extremes`) and rays (`_reray`) are
solved again on the better front; with a large budget and no general constraints a short exploration
probes the rays' front before it is meshed (`front_probe`). Where the model has coordinate kinks
(|x_i − c| and the like, `ir/kinks.py`), the ends of the rays, correctors and finishing steps try the
kinks their elements circle or creep toward and keep them where the achievement is no worse
(`_Batch.snap`, `kink_snap.py`): gradient steps only circle a kink.

Every evaluated point enters the non-dominated archive; the archive is the returned front.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.multiobjective.explore import Explorer
from optlang.backends.multiobjective.kink_snap import KinkWatch, onto_moving_kinks
from optlang.backends.multiobjective.metrics import (
    compare_matrices,
    directions,
    nondominated_append,
    nondominated_mask,
    weakly_dominated,
    weakly_dominates,
)
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem, TorchFunction

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


# the axis rays (the nadir estimate's ends) join the exchanges in the second half of stage 0 only: before,
# the nadir is still moving, and an end ray restarted in a sector of a wrong normalization does not get
# back to its end (ZDT1's f2 end, test_front_mode_zdt1)
_EXCHANGE_AXES_FROM = 0.5
_EXPLORE_PATIENCE = 2  # an exploration ends after this many generations that left no archived point far from the mesh
_EXPLORE_IDLE_SHARE = 0.05  # ... or as many as this fraction of the budget left pays for, if more
_LOCAL_IDLE_SHARE = 0.25  # ... and this fraction once the mesh was beaten (a multimodal g improves in rare jumps)
_PROBE_GENS = 5  # generations of the probe (unless its offspring beat the mesh: then the exploration goes on)
_PROBE_FROM = 2.5  # the probe runs when front_evals is at least this many stage 0s (K × front_iters)
_GROW = 2.0  # `_monotone`: a step's growth while its slope keeps its sign (the acceptance test bounds it)
_GAP_LONG = 5.0  # `front_gap_retest` retests edges longer than this many resolutions only
_GAP_PATIENCE = 4  # ... and stops after this many in a row found nothing inside their edge
_RHO0 = 100.0  # the exact penalty's starting weight: an axis ray's achievement slope is up to 1/δ = 100


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
    predicted: int = 0
    exchanged: int = 0  # stage-0 rays restarted from a better archived point (front_exchange)
    corrected: int = 0
    ideal: np.ndarray = field(default_factory=lambda: np.zeros(0))
    nadir: np.ndarray = field(default_factory=lambda: np.zeros(0))
    solution_F: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the rays' and refinements' end points
    explored: int = 0  # solutions added from the explorations' offspring (front_explore)
    local_front: bool = False  # an exploration's offspring dominated solutions of the mesh (`Explorer.beaten`)
    gap_retests: int = 0  # edges measured as gaps that an SLSQP ray retested (`front_gap_retest`)
    gaps_filled: int = 0  # ... and that it found a new solution inside
    restarts: int = 0  # stage 0 run again from new starts after a collapsed front (`_RESTARTS`)


def _step_unit(v: Any, X: torch.Tensor, fallback: Callable[[Any, torch.Tensor], float]) -> float:
    """A batch's step unit for variable `v` (rows of X): `fallback` (the box width, the radius, or max(1,
    |x|∞) for a free variable), except that for a free variable it is at most max(1, the rows' spread) (the
    largest range over its coordinates): the front's extent in decision space, not the size of its values,
    should bound the steps. With max(1, |x|∞) a front at x ≈ 1000 got steps of 20 per correction, every
    correction overshot and looked like a gap, and the front "resolved" with 7 points (HV/exact 0.898 →
    0.9995). (The spread alone, below 1, moved fronts near 0 by −1e-3 … +5e-3, chaotic in the factor.)"""
    unit = fallback(v, X)
    if v.domain.kind != "free" or X.shape[0] < 2:
        return unit
    flat = X.detach().reshape(X.shape[0], -1)
    return min(unit, max(1.0, float((flat.amax(0) - flat.amin(0)).max())))


def _starts_between_ends(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    budget: int,
    W: np.ndarray,
    X0: dict[str, torch.Tensor],
) -> dict[str, torch.Tensor]:
    """Stage 0's starts for a model with variables that have no finite box: each objective's end first (SLSQP
    from the first start, as `_extremes` solves them; archived and counted), then ray k starts at
    Σ_i (1 − w_ki) / (m − 1) · end_i — the end of the objectives it weighs least, where its achievement pulls
    it. The Adam unit of such a variable is ~1 at the starts near 0 (max(1, |x|∞, spread)), and a front 2–3
    away took all 60 cosine-decayed steps of 0.08 to approach: the rays stopped 0.3 short of it, and their
    ends, non-dominated among themselves, made most refinement edges false gaps (two squared distances to
    (3, 0) and (0, 3) with `var x[2]`: HV/exact 0.985–0.987, `converged`). Between the ends the starts lie
    on the Pareto set where it is the segment or simplex they span (convex quadratics), near it elsewhere,
    and spread over it, so the unit follows the spread. X0 unchanged when an end fails, there are general
    constraints, or the model is larger than `polish_max_dim` scalars."""
    from optlang.backends import registry
    from optlang.backends.common import scalar_count
    from optlang.backends.multiobjective.common import archive_feasible

    m = len(problem.objectives)
    if problem.constraints or scalar_count(problem.variables) > o.polish_max_dim:
        return X0
    if any(v.domain.kind not in ("box", "free") for v in problem.variables):
        return X0
    first = {n: t[:1] for n, t in X0.items()}
    with torch.no_grad():
        out = ev(first)
    archive_feasible(archive, ev, out, first, o.constraint_tol)
    F0 = out[0, :m].detach().cpu().numpy().astype(np.float64)
    if not np.all(np.isfinite(F0)):
        return X0
    unit = 1.0 + np.abs(F0)  # the objectives' units, as far as one point tells
    backend = registry.get("slsqp")
    point = {n: t[0].detach().cpu().numpy().astype(np.float64) for n, t in X0.items()}
    ends: list[dict[str, np.ndarray]] = []
    for i in range(m):
        cap = min(2 * o.front_extreme_iters, (budget - ev.count) // (4 * (m - i)))
        if cap < 10 or ctx.should_stop():
            return X0
        weights = _EXTREME_EPS * unit[i] / unit
        weights[i] = 1.0
        solved = _solve_end(problem, o, ctx, archive, ev, backend, weights, point, int(cap))
        if solved is None or not solved[2] or not bool(torch.isfinite(solved[1][:, :m]).all()):
            return X0
        ends.append({n: t[0].detach().cpu().numpy().astype(np.float64) for n, t in solved[0].items()})
    w = np.asarray(W, dtype=np.float64)
    w = w / np.maximum(w.sum(1, keepdims=True), 1e-300)
    C = (1.0 - w) / (m - 1)  # (K, m): the weight of each end in each ray's start
    out_X: dict[str, torch.Tensor] = {}
    for v in problem.variables:
        E = np.stack([np.asarray(e[v.name], dtype=np.float64).reshape(-1) for e in ends])  # (m, size)
        rows = (C @ E).reshape(w.shape[0], *X0[v.name].shape[1:])
        out_X[v.name] = torch.as_tensor(rows, dtype=X0[v.name].dtype, device=X0[v.name].device).contiguous()
    if not all(bool(torch.isfinite(t).all()) for t in out_X.values()):
        return X0
    return out_X


def _spread_unbounded(
    problem: MultiObjectiveProblem, X0: dict[str, torch.Tensor], ctx: RunContext, restart: int
) -> dict[str, torch.Tensor]:
    """A run again after a collapsed front: the unbounded variables' starts spread by N(0, 4^(restart − 1))
    (seeded), then projected onto their domains. Their starts near 0 (0.01 N(0, 1)) and the ends solved
    from there can all sit in one basin: Kursawe with `var x[3]` has local minima of both objectives at
    x = 0 (|x|^0.8), every ray ended there, and the front was that one point."""
    from optlang.backends.multiobjective.common import batched_project_

    rng = np.random.default_rng([ctx.seed, 8111 + restart])
    out = {n: t.clone() for n, t in X0.items()}
    for v in problem.variables:
        if _unbounded(v):
            noise = rng.standard_normal(tuple(out[v.name].shape)) * 4.0 ** (restart - 1)
            out[v.name] += torch.as_tensor(noise, dtype=out[v.name].dtype, device=out[v.name].device)
    batched_project_(problem.variables, out)
    return out


def _unbounded(v: Any) -> bool:
    """A variable whose step unit is not its domain's size: free, or a box open on a side."""
    d = v.domain
    return d.kind == "free" or (d.kind == "box" and not (np.isfinite(d.lo) and np.isfinite(d.hi)))


def _watches(problem: MultiObjectiveProblem, o: Any) -> bool:
    """Whether the batches watch kinks (and their ends take one more evaluation to try them)."""
    return bool(problem.kinks or problem.moving_kinks) and o.front_kink_snap > 0


def achievement(q: torch.Tensor, W: torch.Tensor, o: Any) -> torch.Tensor:
    """The ray scalarization of normalized objectives q (B, m) along directions W (B, m), or of every
    row of q along every row of W when q is (n, 1, m) and W (1, K, m): `front_scalar`'s smoothed,
    augmented Chebyshev achievement or PBI."""
    if o.front_scalar == "pbi":  # d1 along the ray + θ · distance to it (smoothed)
        u = W / W.norm(dim=-1, keepdim=True)
        d1 = (q * u).sum(-1)
        d2 = torch.sqrt(((q - d1[..., None] * u) ** 2).sum(-1) + o.front_tau**2)
        return d1 + o.front_theta * d2
    tau = o.front_tau
    return tau * torch.logsumexp(q / W / tau, dim=-1) + o.front_alpha * q.sum(-1)


def _archive(
    batch: Any, archive: Any, out: torch.Tensor, X: dict[str, torch.Tensor], V: torch.Tensor | None = None
) -> torch.Tensor:
    """`common.archive_feasible` for a batch: the mask of the rows that keep the general constraints is
    also recorded in `batch.feasible`."""
    from optlang.backends.multiobjective.common import archive_feasible

    batch.feasible = archive_feasible(archive, batch.ev, out, X, batch.o.constraint_tol, V)
    return batch.feasible


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
        rho0: float = _RHO0,
    ) -> None:
        from optlang.backends.multiobjective.common import ProjectedAdam, coupled_domains, variable_scale

        self.problem, self.ev, self.o, self.ctx = problem, ev, o, ctx
        self.X = {k: v.detach().clone().requires_grad_(True) for k, v in X.items()}
        self.W = torch.as_tensor(np.maximum(W, o.front_delta), dtype=ctx.dtype, device=ctx.device)
        scales = {v.name: _step_unit(v, self.X[v.name], variable_scale) for v in problem.variables}
        self.opt = ProjectedAdam(
            self.X, scales, lr, betas=(o.front_beta1, o.front_beta2), coupled=coupled_domains(problem.variables)
        )
        self.m = W.shape[1]
        B = W.shape[0]
        # general constraints: each row's exact-penalty weight, and what its last evaluation found
        self.rho = torch.full((B,), float(rho0), dtype=ctx.dtype, device=ctx.device)
        self.pen = torch.zeros(B, dtype=ctx.dtype, device=ctx.device)
        self.feasible = torch.ones(B, dtype=torch.bool, device=ctx.device)
        self.active: torch.Tensor | None = None  # (B, c): constraints held as equalities by `_restore`
        # which elements keep crossing one of their kinks (`descend` updates it): candidates for `snap`
        self.kinks = KinkWatch(problem, self.X) if _watches(problem, o) else None
        # the points and their evaluation (`ev`'s columns) when F was last finite everywhere (`_repaired`)
        self.good: tuple[dict[str, torch.Tensor], torch.Tensor] | None = None

    def evaluate(self, z: torch.Tensor, s: torch.Tensor, archive: Any) -> tuple[torch.Tensor, torch.Tensor] | None:
        """F and the achievement at the current points (graph kept; B counted evaluations, archived);
        rows whose F is not finite are taken back first (`_repaired`); None when no row ever was finite."""
        # the graph holds copies of the points, so that `_repaired` can move rows of X in place
        out = self._repaired(self.ev({k: t.clone() for k, t in self.X.items()}))
        if out is None:
            return None
        self.good = ({k: t.detach().clone() for k, t in self.X.items()}, out.detach().clone())
        F = out[:, : self.m]
        ach = achievement((F - z) / s, self.W, self.o)
        V = None
        if self.ev.constrained:  # the exact penalty ρ Σ (scaled violations); only feasible points are archived
            V = self.ev.finite_violations(out)
            self.pen = V.sum(1).detach()
            self.active = V.detach() > self.o.constraint_tol  # the constraints this evaluation found broken
            ach = ach + self.rho * V.sum(1)
            V = V.detach()
        _archive(self, archive, out, self.X, V)  # before the step: F belongs to these points
        return F, ach

    def settle(self) -> torch.Tensor | None:
        """The evaluation of the current points without a graph (B counted evaluations), rows whose F is not
        finite taken back as `evaluate` does; None when no row has a finite point to go to."""
        with torch.no_grad():
            return self._repaired(self.ev(self.X))

    def _repaired(self, out: torch.Tensor) -> torch.Tensor | None:
        """Rows whose F is +∞ or NaN — a step onto a pole (a stress 1/x₁ at the bound x₁ = 0) or into a
        region where the model is undefined — back to their last finite point (`common.repaired`: no
        evaluation spent); None at −∞. Before, one such row ended the whole front `diverged`."""
        from optlang.backends.multiobjective.common import repaired

        return repaired(self.X, out, self.ev, self.good, [self.opt.m])

    def grow_penalty(self) -> None:
        """Double ρ of the rows whose last point was infeasible (at most 1e6): the exact penalty holds a
        ray on the feasible side only once ρ exceeds the constraint's multiplier, unknown beforehand."""
        self.rho = torch.where(self.feasible, self.rho, (2 * self.rho).clamp(max=1e6))

    def descend(self, ach: torch.Tensor, factor: float) -> None:
        """One projected-Adam step on the achievements of the last `evaluate` (no evaluation)."""
        from optlang.backends.multiobjective.common import batched_project_, nan_to_zero, safe_grads

        g, _ = safe_grads(ach.sum(), self.X)
        self.opt.step(self.X, {n: nan_to_zero(t) for n, t in g.items()}, factor)
        batched_project_(self.problem.variables, self.X)
        if self.kinks is not None:
            self.kinks.update(self.X)

    def exchange(
        self, z: torch.Tensor, s: torch.Tensor, ach: torch.Tensor, archive: Any, tol: torch.Tensor, axes: bool
    ) -> int:
        """Restart each ray from the archived point of its own sector that beats its achievement `ach` by
        more than `tol` (per ray: the caller adds what the ray gained by itself over its last 10
        iterations, so that a ray still travelling is not pulled into a local piece it would have passed,
        as ZDT3's f2-end rays past the fourth piece), its Adam moments cleared. No evaluation: the archive
        holds F and the points. A point's sector is its nearest ray by perpendicular distance in the
        normalized space (NSGA-III's association): a ray only takes points it would aim at anyway, and the
        rays keep their spread (points taken from anywhere pull every ray to one end, the nadir estimate
        with them). A ray caught in a local basin (Kursawe's sin(x³), ZDT6's humps) so takes a better
        basin that another ray's path crossed, as MOEA/D's neighbours replace one another. `axes`: the
        axis rays (a direction component ≥ 0.999) may be restarted too. Returns how many restarted."""
        F, AX = archive.front()
        if AX is None or F.shape[0] == 0:
            return 0
        Q = (torch.as_tensor(F, dtype=ach.dtype, device=ach.device) - z) / s
        U = self.W / self.W.norm(dim=1, keepdim=True)
        K = U.shape[0]
        best = torch.full((K,), math.inf, dtype=ach.dtype, device=ach.device)
        arg = torch.zeros(K, dtype=torch.long, device=ach.device)
        for i0 in range(0, Q.shape[0], 4096):  # (4096, K) at a time
            q = Q[i0 : i0 + 4096]
            d2 = (q * q).sum(1, keepdim=True) - (q @ U.T) ** 2  # squared distances to each ray
            own = torch.nn.functional.one_hot(d2.argmin(1), K).bool()
            A = achievement(q[:, None, :], self.W[None], self.o).masked_fill(~own, math.inf)
            b, j = A.min(0)
            better = b < best
            best, arg = torch.where(better, b, best), torch.where(better, j + i0, arg)
        ok = best < ach.detach() - tol
        if not axes:
            ok &= (self.W < 0.999).all(1)
        rows = torch.nonzero(ok).flatten()
        if rows.numel() == 0:
            return 0
        src = arg[rows].cpu().numpy()
        self.restart(rows, {k: torch.as_tensor(AX[k][src]) for k in self.X})
        return int(rows.numel())

    def restart(self, rows: torch.Tensor, points: dict[str, torch.Tensor]) -> None:
        """Put the rows `rows` at `points` (one per row) with their Adam moments cleared."""
        with torch.no_grad():
            for k, t in self.X.items():
                t[rows] = points[k].to(dtype=t.dtype, device=t.device)
                self.opt.m[k][rows] = 0
                self.opt.v[k][rows] = 0

    def step(
        self, z: torch.Tensor, s: torch.Tensor, factor: float, archive: Any
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """One step; returns (F, achievement) before the step, or None when F is not finite."""
        res = self.evaluate(z, s, archive)
        if res is None:
            return None
        self.descend(res[1], factor)
        return res[0].detach(), res[1].detach()

    def snap(
        self,
        z: torch.Tensor,
        s: torch.Tensor,
        archive: Any,
        out: torch.Tensor,
        room: int,
        everything: bool = False,
        rank: int | None = None,
    ) -> torch.Tensor:
        """Try the rows on the coordinate kinks near them (`kink_snap.snapped`, at most `room` rows, one
        evaluation each, archived); a row moves there when the snapped point is feasible and its
        achievement (with the exact penalty) is no worse. `out`: the rows' evaluation at their current
        points, returned with the moved rows' evaluations in place. `everything`: each row tries all of
        its kinks at once, however far (with `rank`: each element's rank-th kink by value)."""
        from optlang.backends.multiobjective.common import archive_feasible

        if self.kinks is None or room <= 0:
            return out
        Xs, moved = self.kinks.snapped(self.X, self.o.front_kink_snap, everything, rank)
        rows = torch.nonzero(moved).flatten()[:room]
        if rows.numel() == 0:
            return out
        Xr = {n: t[rows] for n, t in Xs.items()}
        with torch.no_grad():
            out_r = self.ev(Xr)
        ok = archive_feasible(archive, self.ev, out_r, Xr, self.o.constraint_tol)
        ok &= torch.isfinite(out_r[:, : self.m]).all(1)

        def merit(o_: torch.Tensor) -> torch.Tensor:
            a = achievement((o_[:, : self.m] - z) / s, self.W[rows], self.o)
            if self.ev.constrained:
                a = a + self.rho[rows] * self.ev.finite_violations(o_).sum(1)
            return a

        with torch.no_grad():
            take = ok & (merit(out_r) <= merit(out[rows].detach()))
        if not bool(take.any()):
            return out
        r = rows[take]
        with torch.no_grad():
            for n, t in self.X.items():
                t[r] = Xr[n][take].to(t.dtype)
            out = out.detach().clone()
            out[r] = out_r[take].to(out.dtype)
        self.feasible = self.feasible.clone()
        self.feasible[r] = True
        return out

    def subset(self, idx: np.ndarray) -> _Batch:
        """The rows `idx` as a batch of their own, their Adam state included."""
        sub = _Batch.__new__(_Batch)
        sub.problem, sub.ev, sub.o, sub.ctx, sub.m = self.problem, self.ev, self.o, self.ctx, self.m
        ti = torch.as_tensor(idx, dtype=torch.long, device=self.W.device)
        sub.X = {k: v.detach()[ti].clone().requires_grad_(True) for k, v in self.X.items()}
        sub.W = self.W[ti]
        sub.rho, sub.pen, sub.feasible = self.rho[ti], self.pen[ti], self.feasible[ti]
        sub.active = self.active[ti] if self.active is not None else None
        sub.opt = copy.copy(self.opt)
        sub.opt.m = {k: v[ti].clone() for k, v in self.opt.m.items()}
        sub.opt.v = {k: v[ti].clone() for k, v in self.opt.v.items()}
        sub.kinks = self.kinks.subset(ti) if self.kinks is not None else None
        sub.good = ({k: v[ti] for k, v in self.good[0].items()}, self.good[1][ti]) if self.good is not None else None
        return sub


def _edges(Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour edges of the non-dominated normalized points Q (n, m): their ends (e, 2) and lengths (e,).

    Two objectives: consecutive in f1. More: the edges of the Delaunay triangulation of Q projected
    along (1, ..., 1) — one-to-one on a non-dominated set (two points differing by a multiple of the
    ones vector dominate one another), so the triangulation is a mesh of the front; the k nearest
    neighbours when the projection is degenerate (all points on a lower-dimensional piece).
    """
    n, m = Q.shape
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0)
    if m == 2:
        order = np.argsort(Q[:, 0])
        P = np.stack([order[:-1], order[1:]], 1).astype(np.int64)
        return P, np.linalg.norm(Q[P[:, 0]] - Q[P[:, 1]], axis=1)
    from scipy.spatial import Delaunay, QhullError, cKDTree

    basis = _plane(m)
    try:  # each vertex's neighbours in the mesh (scipy lists them from the simplices, in C)
        indptr, nb = Delaunay(Q @ basis).vertex_neighbor_vertices
        a, b = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr)), nb.astype(np.int64)
    except (QhullError, ValueError):  # too few or degenerate points: nearest neighbours instead
        _, J = cKDTree(Q).query(Q, k=min(k, n - 1) + 1)
        a, b = np.repeat(np.arange(n, dtype=np.int64), J.shape[1] - 1), J[:, 1:].ravel().astype(np.int64)
    key = np.unique(np.minimum(a, b) * n + np.maximum(a, b))  # distinct pairs, in order (a 1-D sort)
    P = np.stack([key // n, key % n], 1)
    P = P[P[:, 0] != P[:, 1]]
    return P, np.linalg.norm(Q[P[:, 0]] - Q[P[:, 1]], axis=1)


def _plane(m: int) -> np.ndarray:
    """An orthonormal basis (m, m − 1) of the plane ⟂ (1, ..., 1)."""
    return np.linalg.svd(np.eye(m) - 1.0 / m)[0][:, : m - 1]


def _surely_long(Q: np.ndarray, fresh: np.ndarray, res: float) -> bool:
    """True when the mesh of Q (3+ objectives) surely has an edge longer than `res` at a row of `fresh`
    (rows no recorded edge touches): a fresh point whose nearest other point, projected along
    (1, ..., 1), is farther than `res` is a mesh vertex, and each of its edges is at least that long
    (the projection shortens distances). A cheap test that spares the triangulation when the budget
    is spent (False: undecided)."""
    from scipy.spatial import cKDTree

    if fresh.size == 0 or Q.shape[0] < 2:
        return False
    R = Q @ _plane(Q.shape[1])
    dist = cKDTree(R).query(R[fresh], k=2)[0][:, 1]
    return bool(np.any(dist > res * (1 + 1e-9) + 1e-12))


def _key(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One integer per edge (a, b) of solution indices, for the set of edges already split or found a gap."""
    return np.asarray(a, dtype=np.int64) * (1 << 32) + np.asarray(b, dtype=np.int64)


def _distinct(
    a: np.ndarray, b: np.ndarray, d: np.ndarray, Q: np.ndarray, S: np.ndarray, done: set[int], limit: int
) -> np.ndarray:
    """The first `limit` of the edges (a, b) of lengths d (longest first) whose objective-space midpoints
    are new: an edge whose midpoint lies within a quarter of its length of a solution (rows of S) or of
    a longer kept edge's midpoint (the two diagonals of a quadrilateral of neighbours share one) is
    dropped, and its key recorded in `done` — those near a solution always, those near a kept edge's
    midpoint only when that edge is among the returned ones (an edge dropped for one that is not split
    this round stays a candidate). Returns the positions of the kept edges, in order."""
    from scipy.spatial import cKDTree

    if a.size == 0 or limit <= 0:
        return np.zeros(0, dtype=np.int64)
    M = 0.5 * (Q[a] + Q[b])
    r = 0.25 * d
    near = cKDTree(S).query(M)[0] < r
    flag = near.tolist()  # Python lists: per-item numpy calls would dominate
    tree = cKDTree(M)
    out: list[int] = []
    # the balls (one C call per chunk) only of the edges not yet dropped when their chunk starts (a dropped
    # edge drops no other), and no further than the `limit`-th kept edge
    for i0 in range(0, a.size, 256):
        rows = [i for i in range(i0, min(a.size, i0 + 256)) if not flag[i]]
        if not rows:
            continue
        for i, ball in zip(rows, tree.query_ball_point(M[rows], r[rows]), strict=True):
            if flag[i]:  # dropped by a kept edge earlier in this chunk
                continue
            out.append(i)
            for j in ball:
                if j > i:
                    flag[j] = True
            if len(out) == limit:
                break
        if len(out) == limit:
            break
    gone = np.asarray(flag, dtype=bool)  # (a kept edge is never flagged)
    done.update(_key(a[gone], b[gone]).tolist())
    return np.asarray(out, dtype=np.int64)


class _Spent(Exception):
    """The stage-0 evaluation budget ran out inside an SLSQP ray."""


def rayable(problem: MultiObjectiveProblem, max_dim: int) -> bool:
    """True when every variable is box or free and there are at most `max_dim` scalars (the SLSQP rays)."""
    from optlang.backends.common import scalar_count

    if problem.constraints or any(v.domain.kind not in ("box", "free") for v in problem.variables):
        return False  # general constraints: the Adam rays and their exact penalty
    return scalar_count(problem.variables) <= max_dim


class _FlatEval:
    """F and its Jacobian at one flat float64 point x (CPU), one counted evaluation each (`ev.count`),
    the last point's kept (SLSQP asks for fun and jac at one x in turn); `_Spent` past `budget`. The
    evaluated points go to the archive in batches (`flush`)."""

    def __init__(self, problem: MultiObjectiveProblem, ev: Any, archive: Any, budget: int) -> None:
        from optlang.backends.common import FlatVariables
        from optlang.backends.multiobjective.common import JointJacobian

        self.fl = FlatVariables(problem.variables)
        self.jac = JointJacobian(problem, self.fl)
        self.n, self.m = int(self.fl.lo.size), len(problem.objectives)
        self.ev, self.archive, self.budget = ev, archive, budget
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.bounds: list[tuple[float | None, float | None]] = [
            (float(a) if np.isfinite(a) else None, float(b) if np.isfinite(b) else None)
            for a, b in zip(self.fl.lo, self.fl.hi, strict=True)
        ] + [(None, None)]

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        last = self.jac.last
        if last is not None and np.array_equal(last[0], x):
            return last[1], last[2]  # the point SLSQP just asked for: not a new evaluation
        if self.ev.count >= self.budget:
            raise _Spent
        F, J = self.jac(x)
        self.ev.count += 1
        self.pending.append((F, x.copy()))  # archived in batches (one merge per ray, not per point)
        return F, J

    def flush(self) -> None:
        if self.pending:
            F = torch.as_tensor(np.array([f for f, _ in self.pending]))
            self.archive.add(F, self.fl.split(torch.as_tensor(np.array([x for _, x in self.pending]))))
            self.pending.clear()


def _rays_slsqp(
    problem: MultiObjectiveProblem, W: np.ndarray, o: Any, ctx: RunContext, archive: Any, ev: Any, budget: int
) -> tuple[np.ndarray, dict[str, torch.Tensor], int, str]:
    """Stage 0 by SLSQP: each ray's point solves the augmented Pascoletti-Serafini problem

        min_{x, t}  t + α Σ_i q_i(x)   s.t.  q_i(x) ≤ t max(w_i, δ),  x in its box,

    q = (F − z)/s, in float64 on the CPU (one evaluation = F and its Jacobian at one point, the
    unit of the rest of the sweep). A direction with zero components then runs a second phase
    from that point, the same constraints plus an exact penalty (weight 1/δ, δ = `front_delta`) on
    each zero component: that objective goes to its least value, so a ray of the front's
    boundary ends on it exactly (on a bound of the box, where the floor δ leaves it ~δ inside) and
    the refinement's predictors interpolated between two such points stay on it. The second phase
    keeps its point only within 3δ (normalized) of the first's: where the least value of that
    objective is one point and not a piece of boundary, it would slide into that corner.

    The m axis rays run first (penalties only: the ideal is not known yet), from seeded starts;
    their points give the ideal (the archive's least values) and the nadir (the payoff table's
    largest) that normalize the other rays, which run from the centre direction outwards, each
    started from the point of the nearest non-axis ray already solved (an axis point may be a
    degenerate corner, where the gradients of some objectives vanish). A ray whose point another
    ray already holds (a local solution) runs again from the next seeded start, at most
    `front_ray_retries` times. At most `budget` evaluations in all (the count of `ev`); returns
    (F (K', m), X, SLSQP iterations, stopped) of the rays solved, stopped "limit" when the budget
    ran out before every first-level ray was tried.
    """
    from optlang.backends.multiobjective.common import batched_init

    m = W.shape[1]
    fe = _FlatEval(problem, ev, archive, budget)
    fl, fj, flush, n = fe.fl, fe, fe.flush, fe.n

    tries = 1 + max(0, o.front_ray_retries)
    X0 = batched_init(problem.variables, W.shape[0] * tries, ctx, offset=2)
    starts = [
        np.clip(fl.flat({k: v[i].cpu().numpy() for k, v in X0.items()}), fl.lo, fl.hi)
        for i in range(W.shape[0] * tries)
    ]
    x_start = starts[0]
    axis = [int(i) for i in np.flatnonzero((W > 0).sum(1) == 1)]
    rest = [i for i in range(W.shape[0]) if i not in set(axis)]
    order = axis + sorted(rest, key=lambda i: float(np.abs(W[i] - 1.0 / m).sum()))  # from the centre out
    sols: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # ray -> (x, F)
    iters = 0
    stopped = "converged"
    rays_done = False
    bounds = fe.bounds

    def solve_ray(
        w: np.ndarray, x: np.ndarray, axis_ray: bool, z: np.ndarray, s: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The point of direction w from x: (x, F, SLSQP iterations). An axis ray has no phase 1 (its
        start's ideal is not known; the penalties alone find the point least in the other objectives)."""
        phases = [] if axis_ray else [(np.maximum(w, o.front_delta), np.full(m, o.front_alpha))]
        if np.any(w <= 1e-12):
            # phase 2 keeps phase 1's constraints (floor δ), which hold it on its ray while the penalty takes
            # the zero components to their least values (an axis ray: the penalties alone)
            pen = np.where(w > 1e-12, o.front_alpha, o.front_alpha + 1.0 / o.front_delta)
            phases.append((w if axis_ray else np.maximum(w, o.front_delta), pen))
        nits = 0
        for j, (wc, pen) in enumerate(phases):
            nit, xn = _ps_slsqp(fj, x, wc, pen, z, s, bounds, o)
            nits += nit
            xn = np.clip(xn, fl.lo, fl.hi)
            # phase 2 keeps its point only near phase 1's (on a front whose least value of objective i
            # is one point, not a piece of boundary, it would slide into that corner)
            if j == 0 or np.abs((fj(xn)[0] - fj(x)[0]) / s).max() <= 3 * o.front_delta:
                x = xn
        return x, fj(x)[0], nits

    try:
        F0, _ = fj(x_start)
        z, s = F0 - 1e-3 * (1 + np.abs(F0)), 1 + np.abs(F0)
        for r, k in enumerate(order):
            if ctx.should_stop():
                stopped = "time"
                break
            flush()
            if r == len(axis) and sols:  # the axis rays are done: normalize by their payoff table
                P = np.array([f for _, f in sols.values()])
                lo = np.minimum(archive.all().min(0), P.min(0))
                hi = np.maximum(P.max(0), lo + 1e-6 * (1 + np.abs(lo)))
                z, s = lo - 1e-3 * (hi - lo), (hi - lo) * (1 + 1e-3)
            w = W[k]
            inner = [i for i in sols if i not in axis]  # (an axis ray's point may be a degenerate corner)
            near = min(inner, key=lambda i: float(np.abs(W[i] - w).sum())) if inner else None
            for attempt in range(tries):
                if attempt == 0 and near is not None and o.front_ray_warm:
                    x = sols[near][0]
                else:
                    x = starts[k + W.shape[0] * attempt]
                x, Fx, nit = solve_ray(w, x, r < len(axis), z, s)
                iters += nit
                # a point another ray already holds is a local solution (a degenerate corner): try again
                # from the next seeded start
                dup = any(np.abs((Fx - f) / s).max() <= 1e-3 for _, f in sols.values())
                if not dup:
                    break
            if np.all(np.isfinite(Fx)) and not dup:
                sols[k] = (x, Fx)
        rays_done = True
        if o.front_ray_split and len(sols) >= 2 and not ctx.should_stop():
            # the next Das-Dennis level: the midpoint of each pair of neighbouring solved directions,
            # started from the midpoint of their two points (close to its solution: a few iterations)
            keys = sorted(sols)
            Wk = W[keys]
            D = np.abs(Wk[:, None, :] - Wk[None, :, :]).sum(2)
            step = D[D > 1e-12].min()
            ia, ib = np.nonzero(np.triu(np.abs(D - step) <= 1e-9 * max(1.0, step), 1))
            for a, b in zip(ia.tolist(), ib.tolist(), strict=True):
                if ctx.should_stop():
                    stopped = "time"
                    break
                w = 0.5 * (Wk[a] + Wk[b])
                x, Fx, nit = solve_ray(w, 0.5 * (sols[keys[a]][0] + sols[keys[b]][0]), False, z, s)
                iters += nit
                if np.all(np.isfinite(Fx)) and not any(np.abs((Fx - f) / s).max() <= 1e-3 for _, f in sols.values()):
                    sols[len(W) + len(sols)] = (x, Fx)
    except _Spent:  # "limit" only when a first-level ray was cut (a cut split level leaves none unexplored)
        stopped = "converged" if rays_done else "limit"
    flush()
    keys = sorted(sols)
    SF = np.array([sols[k][1] for k in keys]) if keys else np.zeros((0, m))
    Xs = np.array([sols[k][0] for k in keys]) if keys else np.zeros((0, n))
    SX = {k: v.to(dtype=ctx.dtype, device=ctx.device) for k, v in fl.split(torch.as_tensor(Xs)).items()}
    return SF, SX, iters, stopped


def _ps_slsqp(
    fj: Any,
    x0: np.ndarray,
    w: np.ndarray,
    pen: np.ndarray,
    z: np.ndarray,
    s: np.ndarray,
    bounds: list[tuple[float | None, float | None]],
    o: Any,
) -> tuple[int, np.ndarray]:
    """min t + pen·q(x) s.t. q_i(x) ≤ t w_i (w_i > 0), x in `bounds`, by SLSQP from x0; (iterations, x)."""
    from scipy import optimize

    act = np.flatnonzero(w > 1e-12)

    def q(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        F, J = fj(x)
        return (F - z) / s, J / s[:, None]

    def fun(v: np.ndarray) -> float:
        return float(v[-1] + pen @ q(v[:-1])[0])

    def jac(v: np.ndarray) -> np.ndarray:
        return np.concatenate([pen @ q(v[:-1])[1], [1.0]])

    def cf(v: np.ndarray) -> np.ndarray:
        return v[-1] * w[act] - q(v[:-1])[0][act]

    def cj(v: np.ndarray) -> np.ndarray:
        return np.concatenate([-q(v[:-1])[1][act], w[act][:, None]], 1)

    q0 = q(x0)[0]
    t0 = float((q0[act] / w[act]).max())
    res = optimize.minimize(
        fun,
        np.concatenate([x0, [t0]]),
        jac=jac,
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "ineq", "fun": cf, "jac": cj}],
        options={"maxiter": o.front_ray_iters, "ftol": o.front_ray_tol},
    )
    return int(res.nit), np.asarray(res.x[:-1], dtype=np.float64)


def _normalization(
    archive: Any, Fcur: Any, nd_mask: np.ndarray | None, ctx: RunContext, feasible: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ideal z = the archive's minimum; nadir = the worst non-dominated current solution (`nd_mask`:
    the non-dominated rows of a finite Fcur, when already known; `feasible`: the rows that satisfy the
    general constraints, the only ones counted while there are any). Returns (z, nadir − z)."""
    Fc = np.asarray(Fcur.detach().cpu().numpy() if isinstance(Fcur, torch.Tensor) else Fcur, dtype=np.float64)
    if feasible is not None and bool(feasible.any()) and not bool(feasible.all()):
        Fc = Fc[feasible.cpu().numpy()]
    if nd_mask is None:
        Fc = Fc[np.all(np.isfinite(Fc), axis=1)]
        Fc = Fc[nondominated_mask(Fc)]
    else:
        Fc = Fc[nd_mask]
    A = archive.all()
    if A.size == 0:  # no feasible point seen yet: the current points set the scale
        A = Fc
    lo = A.min(0)
    hi = Fc.max(0) if Fc.shape[0] else A.max(0)
    hi = np.maximum(hi, lo + 1e-6 * (1 + np.abs(lo)))
    z_ = lo - 1e-3 * (hi - lo)
    return (
        torch.as_tensor(z_, dtype=ctx.dtype, device=ctx.device),
        torch.as_tensor(hi - z_, dtype=ctx.dtype, device=ctx.device),
    )


def front_directions(problem: MultiObjectiveProblem, o: Any) -> tuple[np.ndarray, bool]:
    """Stage 0's Das-Dennis directions and whether they run as SLSQP rays (`front_solver`, `rayable`)."""
    slsqp = o.front_solver == "slsqp" and rayable(problem, o.polish_max_dim)
    return _directions(len(problem.objectives), o, slsqp), slsqp


def _directions(m: int, o: Any, slsqp: bool) -> np.ndarray:
    default_k = {2: 10, 3: 10}.get(m, 15) if slsqp else {2: 40, 3: 36}.get(m, 70)
    return directions(o.front_points if o.front_points > 0 else default_k, m)


def min_front_evals(m: int, o: Any, slsqp: bool) -> int:
    """The smallest `front_evals` a sweep of m objectives can keep to: 3 K for K directions (the Adam
    batch's first evaluation, one step and its end point; SLSQP rays: one evaluation of each first-level
    ray at `front_ray_share`, at least 3 K); below it the budget would be overrun or no ray solved."""
    K = _directions(m, o, slsqp).shape[0]
    return max(3 * K, math.ceil(K / o.front_ray_share)) if slsqp else 3 * K


def sweep(problem: MultiObjectiveProblem, o: Any, ctx: RunContext, archive: Any, ev: Any) -> FrontRun:
    """Run stage 0 and the refinements; every evaluated point goes to `archive`. A run that converges
    on a collapsed front (`_collapsed`: every solution at one corner, as DTLZ4's rays whose x^100 gave
    them no gradient from their starts) with a stage 0's worth of budget left runs again from new
    starts, at most `_RESTARTS` times; the archive keeps every run's points."""
    run = _sweep_once(problem, o, ctx, archive, ev, 0)
    W, slsqp = front_directions(problem, o)
    budget = o.front_evals if o.front_evals > 0 else 10**12
    restarts = 0
    while (
        not slsqp
        and run.stopped == "converged"
        and restarts < _RESTARTS
        and budget - ev.count >= _RESTART_ITERS * W.shape[0]
        and _collapsed(archive)
    ):
        restarts += 1
        again = _sweep_once(problem, o, ctx, archive, ev, restarts)
        again.iterations += run.iterations
        again.stage0_iterations += run.stage0_iterations
        again.exchanged += run.exchanged
        again.explored += run.explored
        run = again
    run.restarts = restarts
    return run


_RESTARTS = 2  # stage 0 runs again from new starts at most this often after a collapsed front
_RESTART_ITERS = 20  # ... when the budget left holds this many stage-0 iterations


def _sweep_once(
    problem: MultiObjectiveProblem, o: Any, ctx: RunContext, archive: Any, ev: Any, restart: int
) -> FrontRun:
    """Stage 0 from the starts of `restart` (0: the first run), then the refinements."""
    from optlang.backends.multiobjective.common import batched_init, cosine

    m = len(problem.objectives)
    W, slsqp = front_directions(problem, o)
    K = W.shape[0]
    budget = o.front_evals if o.front_evals > 0 else 10**12
    if slsqp:
        cap0 = int(o.front_ray_share * budget) if budget < 10**12 else 10**12
        SF, SX, stage0, stopped = _rays_slsqp(problem, W, o, ctx, archive, ev, cap0)
        z0, s0 = _normalization(archive, SF, None, ctx)
        # rays cut by the budget leave parts of the front unexplored: the sweep cannot claim convergence
        return _refine(
            problem, o, ctx, archive, ev, SF, SX, z0, s0, K, stage0, stage0, stopped, budget, stopped != "limit"
        )
    iters0 = ctx.max_iter if ctx.max_iter is not None else o.front_iters
    iters0 = max(1, min(iters0, int(o.front_stage0 * budget) // K if budget < 10**12 else iters0))
    if restart:  # a run again: its stage 0 takes at most the same share of what is left
        iters0 = max(1, min(iters0, int(o.front_stage0 * (budget - ev.count)) // K))
    X0 = batched_init(problem.variables, K, ctx, offset=2 if restart == 0 else 100 + restart)
    if restart == 0 and o.front_extremes and any(_unbounded(v) for v in problem.variables):
        X0 = _starts_between_ends(problem, o, ctx, archive, ev, budget, W, X0)
    elif restart:
        X0 = _spread_unbounded(problem, X0, ctx, restart)
    if (
        o.front_kink_starts
        and problem.moving_kinks
        and all(k.exact for k in problem.moving_kinks)
        and _watches(problem, o)
    ):
        # the starts on their curved kinks: a cusp (|y − 5 cos x|^⅓) a random start's distance off them adds up
        # to 2 to f2, so that the first non-dominated points were one corner (x = −π on OKA2), the normalization
        # collapsed onto it and every ray followed (seed 3: HV/exact 0.40, `converged`)
        X0 = onto_moving_kinks(problem, X0)
    first: torch.Tensor | None = None  # the evaluation of X0, when done already
    if ev.constrained and restart == 0:
        room = int(_FEASIBLE_SHARE * budget) if budget < 10**12 else 10**12
        most = int(o.front_stage0 * budget) if budget < 10**12 else 10**12
        before = ev.count
        X0, first = _feasible_starts(problem, o, ctx, archive, ev, X0, room, most)
        if first is None and budget < 10**12:  # the phase ran: its evaluations come out of stage 0's share
            iters0 = max(1, min(iters0, (int(o.front_stage0 * budget) - (ev.count - before)) // K))
    batch = _Batch(problem, ev, X0, W, o, ctx, o.front_lr)
    stopped = "limit"
    z: torch.Tensor | None = None
    s: torch.Tensor | None = None
    prev_ach = None
    k = 0
    exchanged = 0
    prev_F: torch.Tensor | None = None

    while k < iters0:
        if ctx.should_stop():
            stopped = "time"
            break
        if z is None or s is None:  # set together, on the first iteration
            with torch.no_grad():
                out0 = first if first is not None else ev(batch.X)
            z, s = _normalization(archive, out0[:, :m], None, ctx, _archive(batch, archive, out0, batch.X))
        res = batch.step(z, s, cosine(k, iters0, o.lr_final), archive)
        if res is None:
            stopped = "diverged"
            break
        F, ach = res
        k += 1
        if k % 10 == 0:
            z, s = _normalization(archive, F, None, ctx, batch.feasible)
            if ev.constrained:
                batch.grow_penalty()
            if prev_ach is not None and float((ach - prev_ach).abs().max()) < o.front_tol:
                stopped = "converged"
                break
            if prev_ach is not None and o.front_explore > 0 and _collapsed(archive):
                stopped = "limit"  # the rays cannot spread: the budget goes to the refinement and exploration
                break
            prev_ach = ach
            if o.front_exchange and k + 10 <= iters0:
                if prev_F is not None:  # what each ray gained by itself over its last 10 iterations
                    plain = achievement((F - z) / s, batch.W, o)
                    gained = (achievement((prev_F - z) / s, batch.W, o) - plain).clamp(min=0)
                    axes = k >= _EXCHANGE_AXES_FROM * iters0
                    ach_now = plain + batch.rho * batch.pen  # an infeasible ray's penalty counts against it
                    exchanged += batch.exchange(z, s, ach_now, archive, o.front_exchange_tol + gained, axes)
                prev_F = F
        if k % 25 == 0:
            ctx.report(float(ach.mean()), None, iteration=k)
    stage0 = k
    # the solutions of stage 0 (their end points) and the normalization; with general constraints the
    # rays' end points first take the feasibility steps (an equality is otherwise only ever crossed)
    out = _restore(batch, archive, _RESTORE_STEPS) if ev.constrained and stopped != "time" else None
    if out is None:
        out = batch.settle()
    if out is None:  # no ray ever had a finite point
        out = ev(batch.X).detach()
        stopped = "diverged"
    feasible = _archive(batch, archive, out, batch.X)
    if ev.constrained and not bool(feasible.all()) and z is not None and s is not None and archive.all().size:
        # a ray that ends infeasible takes the archived (feasible) point of its sector that is best for it
        worst = torch.where(feasible, -math.inf, math.inf).to(ctx.dtype)
        if batch.exchange(z, s, worst, archive, torch.zeros_like(worst), axes=True):
            out = batch.settle()
            if out is None:
                out = ev(batch.X).detach()
            feasible = _archive(batch, archive, out, batch.X)
    if z is not None and s is not None and stopped != "time":  # the rays' ends onto their kinks
        out = batch.snap(z, s, archive, out, budget - ev.count)
        # and onto all of them at once: where every distance variable's least value is its kink, rays
        # that the line kinks of Σ|a_i − a_j| hold in their valley (WFG6: a_i all ≈ 0.25, 1/39 of a step
        # of progress per step) reach the front in one evaluation
        out = batch.snap(z, s, archive, out, budget - ev.count, everything=True)
        most = batch.kinks.kinks_per_element() if batch.kinks is not None else 0
        for rank in range(min(most, 3) if most > 1 else 0):  # elements with several kinks: each rank in turn
            out = batch.snap(z, s, archive, out, budget - ev.count, everything=True, rank=rank)
        feasible = batch.feasible
    Fend = out[:, :m]
    z, s = _normalization(archive, Fend, None, ctx, feasible)
    SF = Fend.detach().cpu().numpy().astype(np.float64)  # the solutions: objective vectors and points
    ok = np.all(np.isfinite(SF), axis=1) & feasible.cpu().numpy()
    SF = SF[ok]
    SX = {n: t.detach().clone()[torch.as_tensor(ok, device=t.device)] for n, t in batch.X.items()}
    if stopped != "time" and o.front_extremes:
        n_before = SF.shape[0]
        SF, SX = _extremes(problem, o, ctx, archive, ev, budget, SF, SX)
        if SF.shape[0] > n_before:  # the ends moved: the normalization follows them
            z, s = _normalization(archive, SF, None, ctx)
    # the refinement's correctors start from the largest penalty weight stage 0 needed
    rho = float(batch.rho.max())
    run = _refine(problem, o, ctx, archive, ev, SF, SX, z, s, K, k, stage0, stopped, budget, rho0=rho)
    run.exchanged = exchanged
    return run


_FEASIBLE_SHARE = 0.25  # the feasibility phase takes at most this share of front_evals
_FEASIBLE_ITERS = 200  # ... and at most this many steps


def _feasible_starts(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    X0: dict[str, torch.Tensor],
    room: int,
    most: int,
) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
    """Stage 0's starts of a constrained model none of whose random starts keeps its inequalities (no start
    keeps an equality; stage 0's feasibility steps bring its rays onto them): the starts descend the sum of
    their scaled violations of the inequalities alone by Rprop (iRprop⁻: each coordinate's step grows ×1.2
    while its gradient keeps its sign and halves when it flips; the first step `front_lr` of the variable's
    unit), one counted evaluation per row and step, fully feasible points archived, each row stopping once
    inside its inequalities, until all are or `room` evaluations (or 200 steps) are spent — `most` while
    none is (stage 0 with no feasible start ends the front in an error); the rows still outside then start
    from the others' points in turn. Returns (the starts, their evaluation when they are the random starts
    themselves, else None). The rays' exact penalty descends the violations and the achievement at once
    with Adam at one rate: where the feasible set is a narrow well of every distance variable (MW1: 14
    variables each within ~0.005 of its centre, the wells' walls steep and the plateau between them flat),
    60 such steps — or 100 of Adam on the violations alone — found no feasible point, and the front ended
    in an error with a third of its budget unspent. Rprop's steps follow only the gradient's signs, so a
    steep wall does not freeze the other coordinates, and a coordinate that crosses its well halves its
    step until it stays in it."""
    from optlang.backends.multiobjective.common import (
        archive_feasible,
        batched_project_,
        nan_to_zero,
        safe_grads,
        variable_scale,
    )

    X = {k: v.detach().clone() for k, v in X0.items()}
    B = next(iter(X.values())).shape[0]
    with torch.no_grad():
        out = ev(X)
    V = ev.finite_violations(out)
    assert ev.eq is not None
    ineq = ~ev.eq  # (no start keeps an equality: stage 0's feasibility steps bring its rays onto them)

    done = ev.feasible(out, o.constraint_tol, V, ineq)
    if bool(done.any()) or not bool(ineq.any()):
        return X0, out  # (not archived here: stage 0 archives this first evaluation)
    step = {
        v.name: torch.full_like(X[v.name], o.front_lr * _step_unit(v, X[v.name], variable_scale))
        for v in problem.variables
    }
    top = {n: 50 * t for n, t in step.items()}
    sign = {n: torch.zeros_like(t) for n, t in X.items()}
    spent = B
    for _ in range(_FEASIBLE_ITERS):
        rows = torch.nonzero(~done).flatten()
        cap = room if bool(done.any()) else most  # without a feasible point the rays would only end in an error
        if rows.numel() == 0 or spent + rows.numel() > cap or ctx.should_stop():
            break
        Xr = {n: t[rows].clone().requires_grad_(True) for n, t in X.items()}
        out = ev(Xr)
        spent += int(rows.numel())
        V = ev.finite_violations(out)
        archive_feasible(archive, ev, out, Xr, o.constraint_tol, V.detach())
        ok = ev.feasible(out, o.constraint_tol, V.detach(), ineq)
        done[rows[ok]] = True
        g, _ = safe_grads(V[:, ineq].sum(), Xr)
        live = rows[~ok]
        with torch.no_grad():
            for n, t in X.items():
                sg = torch.sign(nan_to_zero(g[n][~ok]))
                prev = sign[n][live]
                st = step[n][live]
                st = torch.where(
                    sg * prev > 0, torch.minimum(1.2 * st, top[n][live]), torch.where(sg * prev < 0, 0.5 * st, st)
                )
                sg = torch.where(sg * prev < 0, torch.zeros_like(sg), sg)  # iRprop⁻: no step after a flip
                step[n][live], sign[n][live] = st, sg
                t[live] = t[live] - st * sg
            batched_project_(problem.variables, X)
    if bool(done.any()) and not bool(done.all()):  # the others start from the feasible ones' points, in turn
        src = torch.nonzero(done).flatten()
        dst = torch.nonzero(~done).flatten()
        pick = src[torch.arange(dst.numel(), device=src.device) % src.numel()]
        for t in X.values():
            t[dst] = t[pick]
    return X, None


def _collapsed(archive: Any) -> bool:
    """Every non-dominated point seen so far has the same value of one objective (range ≤ 1e-6 of the
    largest range): the rays aimed at that objective found no gradient toward it (DTLZ4's x^100 below
    0.9), and more stage-0 iterations only move them along the front they share. Also one non-dominated
    point: every ray at one point (Kursawe with free variables, all at x = 0, a local minimum of both
    objectives), or a front that is one point, which a run again leaves as it is."""
    F, _ = archive.front()
    if F.shape[0] < 2:
        return F.shape[0] == 1  # one point: every ray at one point (or a front that is one point)
    span = F.max(0) - F.min(0)
    return bool(span.min() <= 1e-6 * max(float(span.max()), 1e-12))


_EXTREME_EPS = 1e-3  # the other objectives' weight (in units of each one's range) in an end's objective


def _weighted_objectives(problem: MultiObjectiveProblem, weights: np.ndarray) -> TorchFunction:
    """Σ_i weights_i F_i as one function (an end's augmented objective, for the `slsqp` backend)."""
    parts = [(float(w), f) for w, (_, f) in zip(weights, problem.objectives, strict=True)]
    joint = problem.joint

    def build(device: torch.device, dtype: torch.dtype) -> Callable[..., torch.Tensor]:
        fns = joint.compile(device, dtype)  # the objectives in one pass over what they share

        def total(values: Mapping[str, torch.Tensor], batch: Any = None) -> torch.Tensor:
            Fs = fns(values, batch)
            return sum(
                (w * f for (w, _), f in zip(parts, Fs, strict=True)), torch.zeros((), dtype=dtype, device=device)
            )

        return total

    return TorchFunction(build, source=" + ".join(f"{w:.3g} * ({f.source})" for w, f in parts))


def _extremes(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    budget: int,
    SF: np.ndarray,
    SX: dict[str, torch.Tensor],
) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
    """Each objective's end: min f_i + ε Σ_j f_j range_i / range_j (ε = `_EXTREME_EPS`: Pareto optimal, not
    only weakly) under the constraints, by the `slsqp` backend (at most `front_extreme_iters` SLSQP
    iterations and twice as many evaluations, never more than half of the budget left; one start: the
    archived feasible point best on it), archived, and added to the solutions when it keeps every
    constraint — without constraints only when it is new (farther than two resolutions from every solution,
    dominated by none). An axis ray finds an end only where the other objectives are near their least
    there too: the corners of three squared distances in the plane, or a mean–variance front's
    highest-return vertex, hold the others at their largest, and no ray aims at them. The axis rays' exact penalty
    stalls in the pockets of a wavy boundary (Tanaka's f₁ ended at 0.46 of its least 0.042) or on the
    wrong side of a piecewise front (Osyczka–Kundu's f₂ at 10 of its least 4); the front's ends bound the
    normalization and most of its hypervolume. Also after an exploration beat the mesh (any front): the
    points that beat it cluster where the offspring went (ZDT4's f₂ end was left at f₁ = 0.5). The
    evaluations count against `front_evals`."""
    from optlang.backends import registry
    from optlang.backends.common import scalar_count

    F, AX = archive.front()
    if AX is None or F.shape[0] == 0 or scalar_count(problem.variables) > o.polish_max_dim:
        return SF, SX
    backend = registry.get("slsqp")
    m = len(problem.objectives)
    span = np.maximum(F.max(0) - F.min(0), 1e-12)  # the archived front's ranges: the objectives' units
    for i in range(m):
        cap = min(2 * o.front_extreme_iters, (budget - ev.count) // (2 * (m - i)))  # half of what is left at most
        if cap < 10 or ctx.should_stop():
            break
        weights = _EXTREME_EPS * span[i] / span
        weights[i] += 1.0
        j = int(np.argmin(F @ weights))
        point = {v.name: np.asarray(AX[v.name][j], dtype=np.float64) for v in problem.variables}
        SF, SX = _extreme_from(problem, o, ctx, archive, ev, backend, weights, point, int(cap), span, SF, SX)
        if not problem.constraints and o.front_extreme_probe > 1:
            # the end may be a local one: a position coordinate (one that trades the objectives off) with
            # several basins of f_i — ZDT3's x₀, whose last piece of front no ray reached on 2 seeds of 10.
            # Probed around the end as it stands now (after SLSQP), against its value there
            F2, AX2 = archive.front()
            j2 = int(np.argmin(F2 @ weights))
            end = {v.name: np.asarray(AX2[v.name][j2], dtype=np.float64) for v in problem.variables}
            here, before = float(F2[j2] @ weights), float(F[j] @ weights)
            stalled = not here < before - 1e-9 * (1.0 + abs(before))  # the end's descent found no slope
            probe = _probe_positions(problem, o, ctx, archive, ev, i, weights, end, here, span, budget, stalled)
            cap = min(int(cap), (budget - ev.count) // (2 * (m - i)))
            if probe is not None and cap >= 10 and not ctx.should_stop():
                SF, SX = _extreme_from(problem, o, ctx, archive, ev, backend, weights, probe, cap, span, SF, SX)
    return SF, SX


_PROBE_COORDINATES = 4  # the ends' probes: at most this many position coordinates per objective (and flat ones)
_FLAT_SLOPE = 1e-12  # a coordinate whose effect on every objective across its box is below this: a plateau


def _probe_positions(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    i: int,
    weights: np.ndarray,
    point: dict[str, np.ndarray],
    f_here: float,
    span: np.ndarray,
    budget: int,
    stalled: bool = False,
) -> dict[str, np.ndarray] | None:
    """A start for objective i's end in another basin, or None: along each position coordinate of `point`
    (inside its finite box, where another objective's slope is not negligible: a coordinate that trades
    the objectives off; at most `_PROBE_COORDINATES`, the steepest) and, when the end's own descent did not
    move (`stalled`), each coordinate on which no objective has a slope (a plateau; at most as many),
    `front_extreme_probe` evenly spaced values, the rest of the point kept; the probe lowest in the end's
    weighted objective when it is lower than `point`'s (`f_here`) by more than 1e-6 of f_i's range. The probes
    are evaluated and archived (counted)."""
    from optlang.backends.common import FlatVariables
    from optlang.backends.multiobjective.common import JointJacobian, archive_feasible

    fl = FlatVariables(problem.variables)
    lo, hi = fl.lo, fl.hi
    z = fl.flat(point)
    if not np.all(np.isfinite(z)):
        return None
    width = hi - lo
    boxed = np.isfinite(width) & (width > 0) & (fl.grp < 0) & (fl.bgrp < 0)  # box coordinates only
    inside = boxed & (z > lo + 1e-6 * np.where(boxed, width, 1.0)) & (z < hi - 1e-6 * np.where(boxed, width, 1.0))
    if not inside.any():
        return None
    J = JointJacobian(problem, fl)(z)[1]  # every objective's gradient from one joint evaluation
    # each coordinate's effect on each objective across its box, in that objective's range; the largest on
    # another objective than f_i: a coordinate that trades them off
    slope = np.abs(J) * np.where(boxed, width, 0.0)[None, :] / span[:, None]
    trade = np.max(np.delete(slope, i, axis=0), axis=0) if slope.shape[0] > 1 else np.zeros(z.size)
    cand = np.flatnonzero(inside & (trade > 1e-3))
    cand = cand[np.argsort(-trade[cand])][:_PROBE_COORDINATES]
    # and, where the end's descent did not move, the coordinates on which no objective has a slope here (a
    # plateau, not a trade-off known to be absent): DTLZ4's positions enter as x^100, so from x₀ = 0.3
    # every ray and end sees a slope of 1e-50 — after a collapsed stage 0 every end solve stayed at the
    # corner (1, 0, 0), where x₀ = 1 has f1 = 0. (Not after a descent that moved: a distance coordinate at
    # its least value has no slope either, and probing it only spends evaluations.)
    if stalled:
        flat = np.flatnonzero(inside & np.all(np.nan_to_num(slope, nan=np.inf) <= _FLAT_SLOPE, axis=0))
        cand = np.concatenate([cand, flat[:_PROBE_COORDINATES]])
    if cand.size == 0:
        return None
    k = int(o.front_extreme_probe)
    if budget - ev.count < 4 * k * cand.size:
        return None

    def probe(coords: np.ndarray, grid: np.ndarray) -> tuple[dict[str, torch.Tensor], np.ndarray]:
        Z = np.repeat(z[None, :], grid.size * coords.size, axis=0)
        for c, j in enumerate(coords):
            Z[c * grid.size : (c + 1) * grid.size, j] = lo[j] + grid * width[j]
        X = {n: t.to(ctx.dtype).to(ctx.device) for n, t in fl.split(torch.as_tensor(Z, dtype=torch.float64)).items()}
        if problem.moving_kinks and _watches(problem, o):  # each probe on its curved kinks (OKA2's helix)
            X = onto_moving_kinks(problem, X)
        with torch.no_grad():
            out = ev(X)
        archive_feasible(archive, ev, out, X, o.constraint_tol)
        return X, out[:, : len(problem.objectives)].cpu().numpy().astype(np.float64)

    # a coarse pass first (5 values): a coordinate along which the weighted f_i is unimodal there has no
    # other basin worth the full grid (DTLZ2's positions); the others get `front_extreme_probe` values
    coarse = np.linspace(0.0, 1.0, 5)
    X, Fp = probe(cand, coarse)
    w5 = (Fp @ weights).reshape(cand.size, coarse.size)
    minima = np.sum((w5[:, 1:-1] < w5[:, :-2]) & (w5[:, 1:-1] < w5[:, 2:]), axis=1)
    minima += (w5[:, 0] < w5[:, 1]).astype(int) + (w5[:, -1] < w5[:, -2]).astype(int)
    several = cand[minima > 1]
    if several.size and k > coarse.size:
        X2, F2 = probe(several, np.linspace(0.0, 1.0, k))
        X = {n: torch.cat([X[n], X2[n]]) for n in X}
        Fp = np.concatenate([Fp, F2])
    score = np.where(np.all(np.isfinite(Fp), axis=1), Fp @ weights, np.inf)
    b = int(np.argmin(score))
    if not score[b] < f_here - 1e-6 * span[i]:
        return None
    return {n: t[b].cpu().numpy().astype(np.float64) for n, t in X.items()}


def _solve_end(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    backend: Any,
    weights: np.ndarray,
    point: dict[str, np.ndarray],
    cap: int,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, bool] | None:
    """SLSQP on the weighted objectives from `point` (at most `cap` evaluations, counted), its end point
    evaluated and archived: (the point as a one-row batch, its evaluation, whether it keeps the general
    constraints), or None when SLSQP failed."""
    from optlang.backends.base import Status
    from optlang.backends.multiobjective.common import archive_feasible
    from optlang.problem import SmoothProblem, Variable

    opts = backend.make_options({"restarts": 1, "max_evals": int(cap)})
    start = tuple(Variable(v.name, v.shape, v.domain, np.asarray(point[v.name])) for v in problem.variables)
    left_s = ctx.remaining()
    sub = RunContext(
        seed=ctx.seed, max_iter=o.front_extreme_iters, time_limit=None if math.isinf(left_s) else max(left_s, 1e-3)
    )
    fi = _weighted_objectives(problem, weights)
    raw = backend.solve(SmoothProblem(start, fi, problem.constraints), opts, sub)
    ev.count += int(raw.info.get("evaluations", 0))
    if raw.status not in (Status.CONVERGED, Status.FEASIBLE, Status.ITERATION_LIMIT) or not raw.values:
        return None
    X = {k: torch.as_tensor(np.asarray(v), dtype=ctx.dtype, device=ctx.device)[None] for k, v in raw.values.items()}
    with torch.no_grad():
        out = ev(X)
    return X, out, bool(archive_feasible(archive, ev, out, X, o.constraint_tol)[0])


def _extreme_from(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    backend: Any,
    weights: np.ndarray,
    point: dict[str, np.ndarray],
    cap: int,
    span: np.ndarray,
    SF: np.ndarray,
    SX: dict[str, torch.Tensor],
) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
    """One end by SLSQP on the weighted objectives from `point` (at most `cap` evaluations): archived, and
    added to the solutions SF / SX as `_extremes` says."""

    m = len(problem.objectives)
    solved = _solve_end(problem, o, ctx, archive, ev, backend, weights, point, cap)
    if solved is None:
        return SF, SX
    X, out, feasible = solved
    if feasible:
        Fi = out[:, :m].cpu().numpy().astype(np.float64)
        # without general constraints an end joins the solutions only where it is new: farther than two
        # resolutions from each (normalized by the archived front's ranges) and dominated by none (the
        # rays reach most fronts' ends themselves; another solution there only moves the mesh)
        new = ev.constrained or not SF.shape[0]
        if not new and np.all(np.isfinite(Fi)):
            gap = float(np.min(np.linalg.norm((SF - Fi) / span, axis=1)))
            new = gap > 2 * o.front_resolution and not bool(np.any(np.all(SF <= Fi, axis=1)))
        if np.all(np.isfinite(Fi)) and new:
            SF = np.concatenate([SF, Fi])
            SX = {n: torch.cat([t, X[n].to(t.dtype)]) for n, t in SX.items()}
    return SF, SX


def _refine(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    SF: np.ndarray,
    SX: dict[str, torch.Tensor],
    z: torch.Tensor,
    s: torch.Tensor,
    K: int,
    iterations: int,
    stage0: int,
    stopped: str,
    budget: int,
    complete: bool = True,
    rho0: float = _RHO0,
) -> FrontRun:
    """The refinement rounds from the stage-0 solutions SF (objective vectors) and SX (points);
    `complete` False (stage 0 cut before every ray was solved): the sweep ends "limit", never "converged";
    `rho0`: the correctors' starting penalty weight (general constraints)."""
    m = len(problem.objectives)
    nd_mask = nondominated_mask(SF)
    fresh_from = 0
    gaps: set[int] = set()  # keys (_key) of the edges split already or found spanning a gap
    refinements = 0
    cost = 1.0 + 0.5 * o.refine_iters  # evaluations per new point, re-estimated after each round
    predicted = corrected = 0
    mesh: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # the last (Q, edges, lengths)
    explored = 0  # solutions that the explorations added
    explorer = Explorer(problem, 2 * K, ctx.seed, o.constraint_tol)  # one population for every exploration

    retested: set[int] = set()
    filled = 0  # retested edges that held a new solution

    def gap_edges() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The edges to retest (`retest_gaps`), longest first: (ends a, ends b, lengths, keys, Q)."""
        Q = (SF - z.cpu().numpy().astype(np.float64)) / s.cpu().numpy().astype(np.float64)
        nd = np.flatnonzero(nd_mask)
        none = np.zeros(0, dtype=np.int64)
        if o.front_gap_retest <= 0 or nd.size < 2 or not gaps or not rayable(problem, o.polish_max_dim):
            return none, none, np.zeros(0), none, Q
        P, dist = _edges(Q[nd], m)
        ia, ib = nd[P[:, 0]], nd[P[:, 1]]
        keys = _key(ia, ib)
        sel = dist > _GAP_LONG * o.front_resolution
        sel &= np.isin(keys, np.fromiter(gaps, dtype=np.int64, count=len(gaps)))
        if retested:
            sel &= ~np.isin(keys, np.fromiter(retested, dtype=np.int64, count=len(retested)))
        if sel.any():
            from scipy.spatial import cKDTree

            M = 0.5 * (Q[ia] + Q[ib])
            sel &= cKDTree(Q[nd]).query(M)[0] >= 0.25 * dist  # (an edge whose midpoint is a solution: no gap)
        rows = np.flatnonzero(sel)
        rows = rows[np.argsort(-dist[rows], kind="stable")]
        return ia[rows], ib[rows], dist[rows], keys[rows], Q

    def retest_gaps() -> str:
        """The edges longer than 5 resolutions that a round measured as gaps (a correction of
        `refine_iters` Adam steps slid back to an end) are retested, longest first, each by one SLSQP ray
        (`_ps_slsqp`, the edge's midpoint direction) from the end better on it, then from the other end
        if it did not leave its start; all of them at most `front_gap_retest` of the budget left. A few
        small Adam steps along a curved Pareto set (UF1's x_j = sin(6π x₁ + jπ/n): a narrow valley
        whose floor bends by 6π) slide back to where they started as they do across a real gap, and
        the full-rate Adam rays leave the valley floor; a quasi-Newton ray follows it. A ray that ends
        inside the edge (farther than a quarter of its length from both ends) and that no solution
        dominates is a new solution. Box and free variables without general constraints (`rayable`).
        Returns "more" when one came, else "converged"."""
        nonlocal SF, SX, nd_mask, z, s, filled
        room = int(o.front_gap_retest * (budget - ev.count))
        ia, ib, dist, keys, Q = gap_edges()
        if room < 2 or ia.size == 0:
            return "converged"
        zn, sn = z.cpu().numpy().astype(np.float64), s.cpu().numpy().astype(np.float64)
        nd = np.flatnonzero(nd_mask)
        W = np.maximum(0.5 * (Q[ia] + Q[ib]), 0.0)
        W = W / np.maximum(W.sum(1, keepdims=True), 1e-12)
        Wt = torch.as_tensor(np.maximum(W, o.front_delta), dtype=z.dtype, device=z.device)
        qa = torch.as_tensor(Q[ia], dtype=z.dtype, device=z.device)
        qb = torch.as_tensor(Q[ib], dtype=z.dtype, device=z.device)
        use_b = (achievement(qb, Wt, o) < achievement(qa, Wt, o)).cpu().numpy()
        start = np.where(use_b, ib, ia)
        fe = _FlatEval(problem, ev, archive, ev.count + room)
        Fl, Xl, done, misses, tried = [], [], 0, 0, 0
        try:
            for r in range(start.size):
                if ctx.should_stop():
                    break
                tried += 1
                for end in (start[r], ia[r] + ib[r] - start[r]):  # the better end, then the other
                    x0 = fe.fl.flat({n: t[end].detach().cpu().numpy() for n, t in SX.items()})
                    wr, pen = np.maximum(W[r], o.front_delta), np.full(m, o.front_alpha)
                    xr = np.clip(_ps_slsqp(fe, x0, wr, pen, zn, sn, fe.bounds, o)[1], fe.fl.lo, fe.fl.hi)
                    Fr = fe(xr)[0]
                    if np.linalg.norm((Fr - SF[end]) / sn) >= 0.25 * dist[r]:  # it left its start
                        break
                Fl.append(Fr)
                Xl.append(xr)
                done += 1
                inside = np.linalg.norm((Fr - SF[ia[r]]) / sn) >= 0.25 * dist[r]
                inside &= np.linalg.norm((Fr - SF[ib[r]]) / sn) >= 0.25 * dist[r]
                misses = 0 if inside else misses + 1
                if misses >= _GAP_PATIENCE:  # (ends where SLSQP cannot move either, or real gaps)
                    break
        except _Spent:
            pass
        fe.flush()
        retested.update(keys[:tried].tolist())  # (one the budget cut is not retried either)
        if not done:
            return "converged"
        ia, ib, dist = ia[:done], ib[:done], dist[:done]
        Fn = np.array(Fl)
        Qn = (Fn - zn) / sn
        with np.errstate(invalid="ignore"):
            near = np.minimum(np.linalg.norm(Qn - Q[ia], axis=1), np.linalg.norm(Qn - Q[ib], axis=1))
        le, lt = compare_matrices(SF[nd], Fn)
        keep = np.flatnonzero(np.all(np.isfinite(Qn), axis=1) & (near >= 0.25 * dist) & ~(le & lt).any(0))
        if keep.size == 0:
            return "converged"
        filled += int(keep.size)
        nd_mask = nondominated_append(SF, nd_mask, Fn[keep])
        SF = np.concatenate([SF, Fn[keep]])
        Xk = fe.fl.split(torch.as_tensor(np.array(Xl)[keep]))
        SX = {n: torch.cat([t, Xk[n].to(dtype=t.dtype, device=t.device)]) for n, t in SX.items()}
        z, s = _normalization(archive, SF, nd_mask, ctx)
        return "more"

    retest_from = -1  # ≥ 0 after a retest found solutions: the rows from there on are the unfinished ones

    def resolved() -> str:
        """The mesh is resolved: each solution takes its finishing steps (`_finish`), then the budget left
        explores (`_explore_far`), then the edges measured as gaps are retested (`retest_gaps`). Returns
        "more" when new solutions came (the refinement goes on), else "converged" (or "time" / "diverged"
        from the finishing steps). After a retest's solutions, only the solutions since take the
        finishing steps, and the exploration (which found nothing last time) does not run again."""
        nonlocal SF, SX, nd_mask, z, s, explored, retest_from
        cut = False  # the finishing steps left half of the budget to the retests
        if o.front_finish and SF.shape[0]:
            # a front that exploring grew may grow more: its finishing steps leave half the budget to that
            # and so do edges still to retest
            cut = not explored and gap_edges()[0].size > 0
            share = 0.5 if explored or cut else 1.0
            todo = nd_mask.copy()
            if retest_from >= 0:
                todo[:retest_from] = False
            SF, SX, finished = _finish(problem, o, ctx, archive, ev, SF, SX, todo, z, s, budget, rho0, share)
            if not finished:
                return "time" if ctx.should_stop() else "diverged"
            nd_mask = nondominated_mask(SF)
            z, s = _normalization(archive, SF, nd_mask, ctx)
        if retest_from < 0:
            again = explore_more(False)
            if again != "converged":
                return again
        n_before = SF.shape[0]
        again = retest_gaps()
        if again == "more":
            retest_from = n_before
        elif again == "converged" and (cut or retest_from >= 0) and o.front_finish and SF.shape[0]:
            # the retests are done: the budget they were left goes to more finishing steps of every solution
            SF, SX, finished = _finish(problem, o, ctx, archive, ev, SF, SX, nd_mask, z, s, budget, rho0)
            if not finished:
                return "time" if ctx.should_stop() else "diverged"
            nd_mask = nondominated_mask(SF)
            z, s = _normalization(archive, SF, nd_mask, ctx)
        return again

    def explore_more(probe: bool) -> str:
        """`_explore_far`, and when its offspring beat the mesh, the front's ends and rays again. Returns
        "more" when new solutions came, else "converged" (or "time" / "diverged")."""
        nonlocal SF, SX, nd_mask, z, s, explored
        SF, SX, added = _explore_far(problem, o, ctx, archive, ev, SF, SX, nd_mask, z, s, budget, K, explorer, probe)
        explored += added
        if not added:
            return "converged"
        nd_mask = nondominated_mask(SF)
        z, s = _normalization(archive, SF, nd_mask, ctx)
        if explorer.beaten:  # the mesh was a local front: its ends and its rays follow the better one
            SF, SX = _extremes(problem, o, ctx, archive, ev, budget, SF, SX)
            SF, SX, ok = _reray(problem, o, ctx, archive, ev, SF, SX, z, s, budget, rho0)
            if not ok:
                return "time" if ctx.should_stop() else "diverged"
            nd_mask = nondominated_mask(SF)
            z, s = _normalization(archive, SF, nd_mask, ctx)
        return "more"

    big = budget >= _PROBE_FROM * _directions(m, o, False).shape[0] * o.front_iters  # (the Adam rays' stage 0)
    if o.front_probe and big and not ev.constrained and stopped not in ("time", "diverged") and SF.shape[0]:
        # before meshing the rays' front: do a few generations of offspring beat it (a local front)? Only
        # with a budget of a few stage 0s: a smaller one fits the rays and their mesh (at the default 4 000
        # an early exploration cost DTLZ4 0.84 → 0.75 mean HV over 20 seeds), and a local front would waste
        # a larger one (DTLZ1 at 25 000: 0.0 → 0.99). Not with general constraints: there the rays that the
        # penalty left short of the front are beaten too (quarter circle, TNK, OSY, CONSTR)
        probed = explore_more(True)
        stopped = probed if probed in ("time", "diverged") else stopped
    while stopped not in ("time", "diverged"):
        zn, sn = z.cpu().numpy().astype(np.float64), s.cpu().numpy().astype(np.float64)
        # edges join non-dominated solutions only (dominated ones, e.g. weakly Pareto points, stay in the archive)
        Q = (SF - zn) / sn
        nd = np.flatnonzero(nd_mask)
        if m > 2 and int((budget - ev.count) / cost) <= 0:  # budget spent: "limit" unless no edge is left
            if _surely_long(Q[nd], np.flatnonzero(nd >= fresh_from), o.front_resolution):
                stopped = "limit"
                break
        Qnd = Q[nd]
        if mesh is None or mesh[0].shape != Qnd.shape or not np.array_equal(mesh[0], Qnd):
            mesh = (Qnd, *_edges(Qnd, m))  # else the solutions did not change (a round that kept none)
        P, dist = mesh[1], mesh[2]
        ia, ib = nd[P[:, 0]], nd[P[:, 1]]
        sel = dist > o.front_resolution
        if gaps:
            sel &= ~np.isin(_key(ia, ib), np.fromiter(gaps, dtype=np.int64, count=len(gaps)))
        ia, ib, dist = ia[sel], ib[sel], dist[sel]
        if ia.size == 0:  # every edge between neighbouring solutions is below the resolution or a measured gap
            stopped = resolved()
            if stopped == "more":
                continue
            break
        left = budget - ev.count
        n_new = min(ia.size, int(left / cost))
        if n_new <= 0:
            stopped = "limit"
            break
        order = np.argsort(-dist, kind="stable")  # longest first
        ia, ib, dist = ia[order], ib[order], dist[order]
        pick = _distinct(ia, ib, dist, Q, Q[nd], gaps, n_new)
        if pick.size == 0:
            stopped = resolved()
            if stopped == "more":
                continue
            break
        ia, ib, dist = ia[pick], ib[pick], dist[pick]
        A_idx = torch.as_tensor(ia, device=ctx.device)
        B_idx = torch.as_tensor(ib, device=ctx.device)
        Xn = {n: 0.5 * (t[A_idx] + t[B_idx]) for n, t in SX.items()}
        if _watches(problem, o):  # a midpoint of two points on a curved kink: onto the kink
            Xn = onto_moving_kinks(
                problem, Xn, {n: t[A_idx] for n, t in SX.items()}, {n: t[B_idx] for n, t in SX.items()}
            )
        Wn = np.maximum(0.5 * (Q[ia] + Q[ib]), 0.0)
        Wn = Wn / np.maximum(Wn.sum(1, keepdims=True), 1e-12)
        spent0 = ev.count
        rb = _Batch(problem, ev, Xn, Wn, o, ctx, o.front_lr * o.refine_lr, rho0)
        ends = (SF[ia], SF[ib], {n: t[A_idx] for n, t in SX.items()}, {n: t[B_idx] for n, t in SX.items()})
        Fn, Xk, fate, bad = _continue(rb, z, s, archive, SF[nd], budget, o, ctx, ends)
        refinements += 1
        if fate is None:  # time limit or non-finite objectives
            stopped = "time" if not bad else "diverged"
            break
        predicted += int((fate == 1).sum())
        corrected += int((fate >= 2).sum())
        Qn = (Fn - zn) / sn
        gaps.update(_key(ia, ib).tolist())  # each edge is split in two, or spans a gap: not retried either way
        with np.errstate(invalid="ignore"):
            near = np.minimum(np.linalg.norm(Qn - Q[ia], axis=1), np.linalg.norm(Qn - Q[ib], axis=1))
            # a corrected point that slid to an end: a gap of the front; one corrected from an end (fate 3) slid
            # back when it moved less than a tenth of the edge (a shorter move is still a step along the front)
            slid = ((fate == 2) & (near < 0.25 * dist)) | ((fate == 3) & (near < 0.1 * dist))
        keep = np.flatnonzero((fate != 0) & np.all(np.isfinite(Qn), axis=1) & ~slid)
        if keep.size:
            ki = torch.as_tensor(keep, device=ctx.device)
            fresh_from = SF.shape[0]  # the new solutions' indices: no recorded edge (gaps) touches them
            nd_mask = nondominated_append(SF, nd_mask, Fn[keep])
            SF = np.concatenate([SF, Fn[keep]])
            SX = {n: torch.cat([t, Xk[n][ki]]) for n, t in SX.items()}
        cost = max(1.0, (ev.count - spent0) / max(1, ia.size))
        z, s = _normalization(archive, SF, nd_mask, ctx)
    if stopped == "converged" and (not complete or SF.shape[0] == 0):
        stopped = "limit"
    return FrontRun(
        evaluations=ev.count,
        iterations=iterations,
        stopped=stopped,
        directions=K,
        stage0_iterations=stage0,
        refinements=refinements,
        solutions=int(SF.shape[0]),
        gaps=len(gaps),
        predicted=predicted,
        corrected=corrected,
        ideal=z.cpu().numpy().astype(np.float64),
        nadir=(z + s).cpu().numpy().astype(np.float64),
        solution_F=SF,
        explored=explored,
        local_front=explorer.beaten,
        gap_retests=len(retested),
        gaps_filled=filled,
    )


def _explore_far(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    SF: np.ndarray,
    SX: dict[str, torch.Tensor],
    nd_mask: np.ndarray,
    z: torch.Tensor,
    s: torch.Tensor,
    budget: int,
    K: int,
    explorer: Explorer,
    probe: bool = False,
) -> tuple[np.ndarray, dict[str, torch.Tensor], int]:
    """A resolved mesh with budget left (at least 5 populations' worth): `explorer` runs (at most
    `front_explore` of the budget left and `front_explore_gens` generations), then the archived points
    that lie farther than 2 `front_resolution` (normalized) from every non-dominated solution join the
    solutions, at most K, spread by farthest-point sampling.

    A generation is idle when it archives no new point that far off; the exploration ends after
    `_EXPLORE_PATIENCE` idle generations in a row, or as many as `_EXPLORE_IDLE_SHARE` of the budget
    left pays for (a resolved front costs a few generations, not the whole allowance). Once an offspring
    dominates a solution of the mesh (`explorer.beaten`: the mesh was a local front, as ZDT4's rays end
    in a basin of its Rastrigin g), this and every later exploration may spend `front_explore_local` of
    the budget left, with no cap on generations: the population's search is then what improves the front,
    and meshing a front it is about to beat is wasted. Returns (SF, SX, how many were added); 0: the
    mesh stays resolved."""
    from optlang.backends.multiobjective.explore import explorable

    pop = explorer.pop
    left = budget - ev.count
    if o.front_explore <= 0 or left < 5 * pop or not explorable(problem) or archive.front()[1] is None:
        return SF, SX, 0
    capped = min(o.front_explore_gens * pop, int(o.front_explore * left) if budget < 10**12 else 10**12)
    if probe:
        capped = min(capped, _PROBE_GENS * pop)
    local = int(max(o.front_explore, o.front_explore_local) * left) if budget < 10**12 else capped
    zn, sn = z.cpu().numpy().astype(np.float64), s.cpu().numpy().astype(np.float64)
    from scipy.spatial import cKDTree

    mesh = SF[nd_mask]
    margin = o.front_resolution * sn
    tree = cKDTree((mesh - zn) / sn)
    patience = max(_EXPLORE_PATIENCE, round(_EXPLORE_IDLE_SHARE * left / pop))
    if archive.front()[0].shape[0] <= SF.shape[1]:
        patience = 10**9  # a front of at most m points: a collapse (DTLZ4's rays all at one corner) is told
        # from a front that is one point only by exploring it; the allowance bounds the cost
    idle = 0
    far, dist, Q = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, SF.shape[1]))
    F, AX = archive.front()
    before = F
    for spent in explorer.run(archive, ev, zn, sn, max(local, capped), ctx):
        F, AX = archive.front()
        if AX is None or F.shape[0] == 0:
            return SF, SX, 0
        Q = (F - zn) / sn
        dist, _ = tree.query(Q)
        far = np.flatnonzero(dist > 2 * o.front_resolution)
        new = ~np.isin(_row_keys(F), _row_keys(before))  # archived in this generation
        # a generation that archived no new point far off is idle (counting the far points instead stalls
        # a front that moves: one offspring beating many far points lowers their count)
        fresh = far[new[far]]
        if explorer.beaten:  # every point of a better front is far from the old mesh: progress is now the
            # archive's front moving (a new point better than one archived before by the resolution) or growing
            rows = np.flatnonzero(new)
            if rows.size and before.shape[0]:
                gap, _ = cKDTree((before - zn) / sn).query(Q[rows])
                moved = weakly_dominates(F[rows] + margin, before).any(1)
                fresh = rows[(gap > 2 * o.front_resolution) | moved]
        idle = 0 if fresh.size else idle + 1
        # beaten: a solution of the mesh is worse than a new point by the resolution in every objective
        if fresh.size and not explorer.beaten:
            explorer.beaten = bool(weakly_dominated(F[fresh] + margin, mesh).any())
        before = F
        if explorer.beaten:
            patience = max(patience, round(_LOCAL_IDLE_SHARE * left / pop))
        if idle >= patience or (not explorer.beaten and spent >= capped) or spent >= local:
            break
    chosen: list[int] = []
    d = dist[far].copy()
    while far.size and len(chosen) < K and float(d.max()) > 2 * o.front_resolution:
        j = int(np.argmax(d))
        chosen.append(int(far[j]))
        d = np.minimum(d, np.linalg.norm(Q[far] - Q[far[j]], axis=1))
    if not chosen or AX is None:
        return SF, SX, 0
    idx = np.asarray(chosen)
    SF = np.concatenate([SF, F[idx]])
    SX = {n: torch.cat([t, torch.as_tensor(AX[n][idx], dtype=t.dtype, device=t.device)]) for n, t in SX.items()}
    return SF, SX, idx.size


def _row_keys(F: np.ndarray) -> np.ndarray:
    """One opaque value per row of F (its bytes), for row membership tests with np.isin."""
    F = np.ascontiguousarray(F, dtype=np.float64)
    return F.view(np.dtype((np.void, F.dtype.itemsize * F.shape[1]))).ravel()


def _reray(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    SF: np.ndarray,
    SX: dict[str, torch.Tensor],
    z: torch.Tensor,
    s: torch.Tensor,
    budget: int,
    rho0: float,
) -> tuple[np.ndarray, dict[str, torch.Tensor], bool]:
    """An exploration's offspring dominated solutions of the mesh: the rays had ended on a local front
    (ZDT4's Rastrigin g), and the points that beat it cluster where the offspring went, not at the
    front's ends. Stage 0's directions run again, as one batch, each from the archived point best on its
    own achievement, for `front_reray_iters` steps (at most a quarter of the budget left); their end
    points join the solutions, so that the ends and the spread follow the better front. Returns the
    solutions and False on the time limit or non-finite objectives."""
    F, AX = archive.front()
    W, _ = front_directions(problem, o)
    iters = min(o.front_reray_iters, (budget - ev.count) // (4 * W.shape[0]) - 1)
    if AX is None or F.shape[0] <= F.shape[1] or iters < 2:  # (a front of m points: every ray would start alike)
        return SF, SX, True
    Q = (torch.as_tensor(F, dtype=z.dtype, device=z.device) - z) / s
    Wt = torch.as_tensor(np.maximum(W, o.front_delta), dtype=z.dtype, device=z.device)
    start = achievement(Q[:, None, :], Wt[None], o).argmin(0).cpu().numpy()  # (K,) archived rows
    X0 = {n: torch.as_tensor(AX[n][start], dtype=t.dtype, device=t.device) for n, t in SX.items()}
    rb = _Batch(problem, ev, X0, W, o, ctx, o.front_lr * o.refine_lr, rho0)
    # the axis rays (q ∝ e_i: every other objective least) minimize the sum of the other objectives: the ends
    axis = torch.as_tensor((W >= 0.999).any(1, keepdims=True) * (1.0 - W), device=z.device).to(z.dtype)
    res = _monotone(rb, iters, z, s, archive, ctx, o.front_lr * o.refine_lr, axis)
    if res is None:
        return SF, SX, False
    Fc, Xc, ok = res
    keep = torch.as_tensor(ok, device=ctx.device)
    SF = np.concatenate([SF, Fc[ok]])
    SX = {n: torch.cat([t, Xc[n][keep].to(t.dtype)]) for n, t in SX.items()}
    return SF, SX, True


def _monotone(
    rb: _Batch,
    iters: int,
    z: torch.Tensor,
    s: torch.Tensor,
    archive: Any,
    ctx: RunContext,
    t0: float,
    axis: torch.Tensor | None = None,
) -> tuple[np.ndarray, dict[str, torch.Tensor], np.ndarray] | None:
    """`iters` evaluations of a monotone, sign-based descent of each row's achievement (Rprop's steps
    with an acceptance test): every coordinate moves by its own step against its slope's sign from the
    row's best point so far; a step doubles while its slope keeps its sign and halves when it flips,
    and a trial point that is not better is dropped with the row's steps halved. A row so never leaves
    its best value (Adam's early steps of a fixed fraction of the box jump the basins of a multimodal
    g), and coordinates of very different slopes (ZDT4's x₀ near 0 against its g's variables) travel
    alike. A coordinate's first step is t0 of its variable's scale times its scaled slope's share of
    the row's largest (a coordinate at the bottom of its basin starts still). `axis` (B, m): a row that is not all zero
    minimizes axis · q (augmented by `front_alpha` Σ q) instead of its achievement: the front's ends.
    Returns the rows' best objective vectors, points and finiteness / feasibility, or None on the time
    limit."""
    from optlang.backends.multiobjective.common import batched_project_, safe_grads, variable_scale

    B = rb.W.shape[0]
    scales = {v.name: variable_scale(v, rb.X[v.name]) for v in rb.problem.variables}
    step: dict[str, torch.Tensor] = {}  # each coordinate's step, set at the first evaluation
    sign = {n: torch.zeros_like(v.detach()) for n, v in rb.X.items()}
    best = torch.full((B,), math.inf, dtype=rb.W.dtype, device=rb.W.device)
    bestF = torch.full((B, rb.m), math.inf, dtype=rb.W.dtype, device=rb.W.device)
    bestX = {n: v.detach().clone() for n, v in rb.X.items()}
    feasible = torch.zeros(B, dtype=torch.bool, device=rb.W.device)
    for _ in range(iters):
        if ctx.should_stop():
            return None
        out = rb.evaluate(z, s, archive)
        if out is None:  # non-finite objectives somewhere: every row keeps its best point
            break
        F, ach = out
        if axis is not None:  # an axis row minimizes its objective (augmented), not the Chebyshev achievement
            q = (F - z) / s
            own = (q * axis).sum(1) + rb.o.front_alpha * q.sum(1)
            ach = torch.where(axis.any(1), own + (ach - achievement(q, rb.W, rb.o)), ach)
        g, _ = safe_grads(ach.sum(), rb.X)
        better = ach.detach() < best  # (finite values only: inf < inf is false)
        with torch.no_grad():
            best = torch.where(better, ach.detach(), best)
            bestF = torch.where(better[:, None], F.detach(), bestF)
            feasible = torch.where(better, rb.feasible, feasible)
            if not step:  # each coordinate's first step: t0 of its scale times its slope's share of the largest
                gs = {n: torch.nan_to_num(g[n], nan=0.0, posinf=1e30, neginf=-1e30).abs() * scales[n] for n in g}
                top = torch.stack([v.reshape(B, -1).amax(1) for v in gs.values()]).amax(0).clamp(min=1e-30)
                for n, v in gs.items():
                    share = v / top.reshape((B,) + (1,) * (v.dim() - 1))
                    step[n] = t0 * scales[n] * share.clamp(min=1e-3)
            trial = {}
            for n, v in rb.X.items():
                row = better.reshape((B,) + (1,) * (v.dim() - 1))
                new = torch.sign(torch.nan_to_num(g[n], nan=0.0))
                kept = new * sign[n]
                grown = torch.where(kept > 0, _GROW * step[n], torch.where(kept < 0, 0.5 * step[n], step[n]))
                step[n] = torch.where(row, grown, 0.5 * step[n]).clamp(max=0.5 * scales[n])
                sign[n] = torch.where(row, new, sign[n])
                bestX[n] = torch.where(row, v.detach(), bestX[n])
                trial[n] = bestX[n] - step[n] * sign[n]
            batched_project_(rb.problem.variables, trial)
            rb.X = {n: v.requires_grad_(True) for n, v in trial.items()}
    ok = (feasible & torch.isfinite(best)).cpu().numpy()
    return bestF.cpu().numpy().astype(np.float64), bestX, ok


def _finish(
    problem: MultiObjectiveProblem,
    o: Any,
    ctx: RunContext,
    archive: Any,
    ev: Any,
    SF: np.ndarray,
    SX: dict[str, torch.Tensor],
    nd_mask: np.ndarray,
    z: torch.Tensor,
    s: torch.Tensor,
    budget: int,
    rho0: float = _RHO0,
    share: float = 1.0,
) -> tuple[np.ndarray, dict[str, torch.Tensor], bool]:
    """Spend what the budget has left on the resolved front: each non-dominated solution descends its
    own ray (the direction of its normalized objectives) a few more steps, all as one batch.

    The rays and predictors stop at the resolution of the mesh, not at the front: where the objectives
    flatten (Fonseca-Fleming's exponentials) the points end ~5e-3 inside it while the budget is a
    quarter unspent. A finished point replaces its solution only when it is feasible, its start does not
    dominate it, and its achievement on its own ray is no worse (an overshoot near a concave front's end lands
    on the end itself and leaves a hole in the mesh). Returns (the solutions' objectives and points, updated;
    False on the time limit or non-finite objectives)."""
    nd = np.flatnonzero(nd_mask)
    # the final evaluation, the feasibility steps, and the kinks' trial (`_Batch.snap`)
    extra = 1 + (_RESTORE_STEPS if ev.constrained else 0) + (1 if _watches(problem, o) else 0)
    iters = min(o.front_finish_iters, int(share * (budget - ev.count) // max(1, nd.size)) - extra)
    if iters < 1 or nd.size == 0:
        return SF, SX, True
    zn, sn = z.cpu().numpy().astype(np.float64), s.cpu().numpy().astype(np.float64)
    W = np.maximum((SF[nd] - zn) / sn, 0.0)
    W = W / np.maximum(W.sum(1, keepdims=True), 1e-12)
    ti = torch.as_tensor(nd, device=ctx.device)
    rb = _Batch(problem, ev, {n: t[ti] for n, t in SX.items()}, W, o, ctx, o.front_lr * o.refine_lr, rho0)
    Fc = _descend(rb, iters, z, s, archive, ctx, budget=budget)
    if Fc is None:
        return SF, SX, False
    # a finished point that left the feasible set, or that its own start dominates (UF7's f₁ = x₁^{1/5}: a step
    # off the bound x₁ = 0 raised f₁ at the front's end from 0 to 0.07), keeps its old place
    ok = rb.feasible.cpu().numpy() & ~(np.all(SF[nd] <= Fc, axis=1) & np.any(SF[nd] < Fc, axis=1))
    # and one whose achievement on its own ray got worse keeps its old place: a step's overshoot near a concave
    # front's end (ZDT2: W ≈ (0.97, 0.03), Adam's fixed-size steps) ended on the end point (1, 0), dominating
    # nothing and dominated by nothing, but leaving its part of the front with no solution (19 of 213 on
    # models/zdt2_front.opt: the resolved mesh had holes again, and the budget was spent)
    with torch.no_grad():
        a0 = achievement((torch.as_tensor(SF[nd], dtype=z.dtype, device=z.device) - z) / s, rb.W, o)
        a1 = achievement((torch.as_tensor(Fc, dtype=z.dtype, device=z.device) - z) / s, rb.W, o)
    ok &= (a1 <= a0).cpu().numpy()
    SF = SF.copy()
    SF[nd[ok]] = Fc[ok]
    rows, keep = torch.as_tensor(nd[ok], device=ctx.device), torch.as_tensor(ok, device=ctx.device)
    SX = {n: t.index_copy(0, rows, rb.X[n].detach()[keep].to(t.dtype)) for n, t in SX.items()}
    return SF, SX, True


def _descend(
    rb: _Batch,
    iters: int,
    z: torch.Tensor,
    s: torch.Tensor,
    archive: Any,
    ctx: RunContext,
    first: int = 0,
    budget: int = 0,
) -> np.ndarray | None:
    """Steps `first` … `iters` − 1 of the batch along its rays (cosine-decayed rate) and a final
    evaluation (every point archived), then the end points onto their kinks (`_Batch.snap`) while
    `budget` allows; the end points' objectives, or None on the time limit or non-finite objectives."""
    from optlang.backends.multiobjective.common import cosine

    held = rb.active  # the constraints the predictor broke: the front between its ends follows them
    for j in range(first, iters):
        if ctx.should_stop():
            return None
        if rb.step(z, s, cosine(j, iters, 0.1), archive) is None:
            return None
    out = _restore(rb, archive, _RESTORE_STEPS, held) if rb.ev.constrained else None
    if out is None:
        out = rb.settle()
    if out is None:
        return None
    Fc = out[:, : rb.m].detach()
    if not bool(torch.isfinite(Fc).all()):
        return None
    _archive(rb, archive, out, rb.X)  # rb.feasible: which end points satisfy the general constraints
    if budget > 0:
        Fc = rb.snap(z, s, archive, out, budget - rb.ev.count)[:, : rb.m].detach()
    return Fc.cpu().numpy().astype(np.float64)


_RESTORE_STEPS = 3  # feasibility steps at most after a constrained batch's last achievement step


def _restore(rb: _Batch, archive: Any, steps: int, held: torch.Tensor | None = None) -> torch.Tensor | None:
    """Newton steps onto the boundary of the general constraints that the rows of `rb` break (at the
    first evaluation here) or hold (`held`, (B, c): the constraints their predictor broke):
    δ = −(2φ / ‖∇φ‖²) ∇φ with φ = ½‖r‖² (r: `BatchEval.residuals`, aiming half of `constraint_tol`
    inside), exact for one constraint and a Polyak step otherwise, then the domains' projection.
    The achievement steps leave a ray zigzagging across an active constraint's boundary (the exact
    penalty's kink), half of its points outside and the others up to a step inside. Each step
    evaluates the batch (counted, feasible points archived). Returns the last evaluation when no step
    followed it (every row feasible and on its held boundaries), else None."""
    from optlang.backends.multiobjective.common import batched_project_, safe_grads

    for i in range(steps):
        # copies: `_repaired` moves rows at +∞ or NaN back in place (−∞: None, and the caller's `settle` says so)
        out = rb._repaired(rb.ev({k: t.clone() for k, t in rb.X.items()}))
        if out is None:
            return None
        V = rb.ev.finite_violations(out.detach())
        _archive(rb, archive, out, rb.X, V)
        limits = rb.ev.limits(out, rb.o.constraint_tol).to(V.dtype)
        if i == 0:  # a constraint broken now is held as an equality: Newton on a curved boundary lands
            # beside it on the feasible side ((1 − r)²/2r off a circle of radius 1 from radius r), not on it
            broken = V > limits
            held = broken if held is None else held | broken
        r = rb.ev.residuals(out, 0.5 * limits, held)
        r = torch.where(torch.isfinite(r), r, torch.zeros_like(r))
        on = ~rb.feasible | (r.abs().amax(1) > rb.o.constraint_tol)  # rows to move: broken, or off a held boundary
        if not bool(on.any()):
            return out.detach()
        phi = 0.5 * (r * r).sum(1)
        g, _ = safe_grads(phi.sum(), rb.X)
        n2 = sum(t.reshape(t.shape[0], -1).pow(2).sum(1) for t in g.values())
        assert isinstance(n2, torch.Tensor)
        coef = torch.where((n2 > 0) & on, 2 * phi.detach() / n2.clamp(min=1e-300), torch.zeros_like(n2))
        with torch.no_grad():
            for k, t in rb.X.items():
                gk = torch.nan_to_num(g[k], nan=0.0, posinf=0.0, neginf=0.0)
                t.sub_(coef.reshape(-1, *([1] * (t.dim() - 1))) * gk)
        batched_project_(rb.problem.variables, rb.X)
    return None


def _continue(
    rb: _Batch,
    z: torch.Tensor,
    s: torch.Tensor,
    archive: Any,
    S: np.ndarray,
    budget: int,
    o: Any,
    ctx: RunContext,
    ends: tuple[np.ndarray, np.ndarray, dict[str, torch.Tensor], dict[str, torch.Tensor]] | None = None,
) -> tuple[np.ndarray, dict[str, torch.Tensor], np.ndarray | None, bool]:
    """Predictor-corrector for one round of new points (the midpoints in `rb`).

    Predictor: one evaluation at each midpoint. A predictor that a current solution (rows of S)
    dominates is off the front (a gap, or a curved Pareto set): it is corrected by `refine_iters`
    achievement steps. Of the others, a sample (`front_verify`, at least 2) is corrected too; when
    no sampled correction strictly improves its predictor by more than `front_predict_tol` in every
    normalized objective, the midpoints lie on the Pareto set and every other predictor is kept as it
    is (one evaluation per new point), else every predictor of the round is corrected.
    `ends` (the edges' end points: F of a, F of b, X of a, X of b): a dominated predictor whose achievement
    an end beats is corrected from that end instead (its Adam moments cleared): the midpoint of two
    decision vectors is no predictor where the Pareto set between them is not connected (−DTLZ2: each
    distance variable on either bound, the midpoint at the saddle ½ where its gradient vanishes).
    Returns (F, X, fate, bad): fate 0 = dropped, 1 = predictor kept, 2 = corrected, 3 = corrected from an
    end; fate None when the round ended early (bad: on non-finite objectives, else on the time limit).
    """
    from optlang.backends.multiobjective.common import cosine

    res = rb.evaluate(z, s, archive)
    if res is None:
        return np.zeros((0, 0)), {}, None, True
    F0 = res[0].detach().cpu().numpy().astype(np.float64)
    X0 = {n: t.detach().clone() for n, t in rb.X.items()}
    n = F0.shape[0]
    le, lt = compare_matrices(S, F0)
    dom = (le & lt).any(0) | ~rb.feasible.cpu().numpy()  # an infeasible predictor is corrected (or dropped)
    fate = np.where(dom, 0, 1)
    F, X = F0.copy(), {k: v.clone() for k, v in X0.items()}
    iters = o.refine_iters
    if iters <= 0:
        return F, X, fate, False
    free = np.flatnonzero(~dom)
    n_s = min(free.size, max(2, math.ceil(o.front_verify * free.size)))
    if o.front_verify_max > 0:
        n_s = min(n_s, max(2, o.front_verify_max))
    sample = free[np.linspace(0, free.size - 1, n_s).round().astype(int)] if n_s else free
    rb.descend(res[1], cosine(0, iters, 0.1))  # the first corrector step of every row (no evaluation)
    # (not under general constraints: there a dominated predictor is mostly an infeasible one, which the
    # feasibility steps bring back to the boundary it broke — from an end, quarter circle HV 0.991 → 0.981)
    from_end = None
    if ends is not None and iters > 1 and not rb.ev.constrained:
        from_end = _from_end(rb, z, s, res[1], dom, ends)
    sn = s.cpu().numpy().astype(np.float64)

    def correct(rows: np.ndarray) -> bool:
        """`iters` − 1 more steps and a final evaluation for `rows` (as many as the budget allows)."""
        per = iters + (_RESTORE_STEPS if rb.ev.constrained else 0) + (1 if rb.kinks is not None else 0)
        rows = rows[: max(0, (budget - rb.ev.count) // per)]
        if rows.size == 0:
            return True
        sub = rb.subset(rows)
        Fc = _descend(sub, iters, z, s, archive, ctx, first=1, budget=budget)  # step 0 was taken above
        if Fc is None:
            return False
        F[rows] = Fc
        for k_, v in sub.X.items():
            X[k_][torch.as_tensor(rows, device=v.device)] = v.detach()
        ok = sub.feasible.cpu().numpy()
        tag = np.where(from_end[rows], 3, 2) if from_end is not None else 2
        fate[rows] = np.where(ok, tag, 0)  # a correction that ends infeasible is dropped
        return True

    first = np.union1d(np.flatnonzero(dom), sample)
    if not correct(first):
        return F, X, None, not ctx.should_stop()
    done = fate[sample] >= 2
    gain = ((F0[sample] - F[sample]) / sn).min(1)  # > 0: the correction strictly dominates its predictor
    if bool(np.any(done & (gain > o.front_predict_tol))):
        rest = np.setdiff1d(np.arange(n), first)
        if not correct(rest):
            return F, X, None, not ctx.should_stop()
    return F, X, fate, False


def _from_end(
    rb: _Batch,
    z: torch.Tensor,
    s: torch.Tensor,
    ach: torch.Tensor,
    dom: np.ndarray,
    ends: tuple[np.ndarray, np.ndarray, dict[str, torch.Tensor], dict[str, torch.Tensor]],
) -> np.ndarray:
    """Move the dominated rows of `rb` (mask `dom`) whose better end (of the two in `ends`) has a lower
    achievement on the row's direction than the predictor's `ach` to that end, their Adam moments
    cleared (their first corrector step is thus dropped); returns the mask of the moved rows."""
    FA, FB, XA, XB = ends
    with torch.no_grad():
        qa = (torch.as_tensor(FA, dtype=z.dtype, device=z.device) - z) / s
        qb = (torch.as_tensor(FB, dtype=z.dtype, device=z.device) - z) / s
        aa, ab = achievement(qa, rb.W, rb.o), achievement(qb, rb.W, rb.o)
        use_b = ab < aa
        best = torch.where(use_b, ab, aa)
        move = torch.as_tensor(dom, device=z.device) & (best < ach.detach())
        rows = torch.nonzero(move).flatten()
    if rows.numel():
        pick = use_b[rows]
        rb.restart(
            rows,
            {
                k: torch.where(pick.reshape(-1, *([1] * (t.dim() - 1))), XB[k][rows], XA[k][rows])
                for k, t in rb.X.items()
            },
        )
    return move.cpu().numpy()
