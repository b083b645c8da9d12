"""Preference sweeps of a multi-objective model as ONE batched problem (`optlang sweep`, `Model.sweep`).

B points of one model that differ only in constants (a `param` swept inside `prefer ...` or inside
the objectives) are solved together, in float64, in three batched stages — the same answer a
`paretom3` single solve returns (its polished preferred weakly Pareto point), by other means:

1. candidates: K Chebyshev rays (Das-Dennis directions; smoothed, augmented achievement, projected
   Adam) spread points over the front — once for all B points when the swept param is only in the
   preference (the fronts are the same), else B·K rays in one vmapped run; each point starts from its
   ray end of least preference (warm start across the path: one front serves every weight);
2. polish: damped Newton (Levenberg–Marquardt) on the KKT system of paretom3's polish problem
   min φ(x) s.t. ∇_free Σ λ_i F_i(x) = 0, Σλ = 1 (polish.py), for all B points at once: residual and
   Jacobian by `torch.func` (vmap of jacfwd through the compiled objectives), box coordinates that the
   weighted gradient pushes against held at their bound, as polish.py does;
3. checks, as in a single solve: u(x) = max_y min_i (F_i(x) − F_i(y)) by projected inner ascent
   (the `weak_pareto_merit` check), and no evaluated point better in every objective (the
   `not_dominated_by_seen` check); the Result is then recomputed in float64 by `verify`.

A point whose polish does not converge or whose merit check fails is solved again on its own by
`paretom3` (the sweep's note counts them). Batched: box or free variables, a preference, at most
`polish_max_dim` scalars; anything else runs point by point with the reason in the plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RawSolution, RunContext, Status
from optlang.backends.multiobjective.common import (
    Archive,
    ProjectedAdam,
    batched_init,
    batched_project_,
    cosine,
    coupled_domains,
    min_norm_faces,
    nan_to_zero,
    nudge,
    safe_grads,
    variable_scale,
)
from optlang.backends.multiobjective.metrics import directions, strictly_dominating_count
from optlang.backends.multiobjective.paretom3 import ParetoM3, ParetoM3Options
from optlang.lazy import lazy_module
from optlang.problem import Variable

if TYPE_CHECKING:
    import torch

    from optlang.batched import BatchedExpr
    from optlang.result import Result
else:
    torch = lazy_module("torch")

BACKEND = "batched-paretom3"
RAYS = {2: 40, 3: 36}  # Das-Dennis directions per front (as paretom3's front stage 0); 70 for 4+ objectives
RAY_ITERS = 80
LM_ITERS = 40
OPTIONS = ("merit_iters", "merit_tol", "lr_y", "stat_tol", "polish_max_dim", "tau")  # paretom3 options honoured


def cannot_batch(models: list[Any], backend: str | None) -> str | None:
    """Why these points cannot share one batched preference solve (None: they can)."""
    m = models[0]
    if backend not in (None, "", "auto", "paretom3"):
        return f"backend '{backend}' was named; the batched solver replaces paretom3 only"
    if m.ir.objective.prefer is None:
        return "no preference: each point is a front (fronts run point by point)"
    chosen = m.plan(backend).chosen
    if chosen != "paretom3":
        return f"the planned backend is {chosen}, not paretom3"
    if m.compiled.rescaled:
        return "per-element bounds (the batched functions take the model's variables as written)"
    problem = m.compiled.problem
    kinds = {v.domain.kind for v in problem.variables}
    if not kinds <= {"box", "free"}:
        return "simplex or ball variables (the batched polish handles box and free variables)"
    o = _options(m)
    if _size(problem.variables) > o.polish_max_dim:
        return f"more than polish_max_dim = {o.polish_max_dim} scalar variables (the polish forms Jacobians)"
    return None


def _options(m: Any) -> ParetoM3Options:
    """The model's paretom3 options, checked as a single solve checks them (types, then ranges)."""
    solver = m.ir.solver
    given = dict(solver.options) if solver and solver.name in ("auto", "paretom3") else {}
    o: ParetoM3Options = ParetoM3().make_options({k: given[k] for k in OPTIONS if k in given})
    return o


def _size(variables: tuple[Variable, ...]) -> int:
    return int(sum(int(np.prod(v.shape)) if v.shape else 1 for v in variables))


# ----------------------------------------------------------------------------- batched functions
@dataclass
class RowFunctions:
    """The objectives and the preference of every point: per-row functions of (x, the row's constants)."""

    exprs: list[BatchedExpr]  # m objectives, then the preference
    m: int

    @property
    def shared_objectives(self) -> bool:
        return all(not e.consts for e in self.exprs[: self.m])

    def consts(self, rows: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        return [{k: v[rows] for k, v in e.consts.items()} for e in self.exprs]

    def one(self, x: dict[str, torch.Tensor], cs: list[dict[str, torch.Tensor]], upto: int) -> torch.Tensor:
        """[F_1 … F_m(, φ)] at one point (unbatched): the first `upto` functions."""
        return torch.stack([self.exprs[i].single({**x, **cs[i]}).reshape(()) for i in range(upto)])

    def batch(self, X: dict[str, torch.Tensor], rows: torch.Tensor, upto: int) -> torch.Tensor:
        """(R, upto) values at R points, point r with the constants of row rows[r] (one vmapped call)."""
        cs = self.consts(rows)
        return torch.func.vmap(lambda x, c: self.one(x, c, upto))(X, cs)


def _flat(variables: tuple[Variable, ...]) -> tuple[list[str], list[tuple[int, ...]], np.ndarray, np.ndarray]:
    names = [v.name for v in variables]
    shapes = [tuple(v.shape) for v in variables]
    lo = np.concatenate(
        [
            np.full(int(np.prod(v.shape)) if v.shape else 1, v.domain.lo if v.domain.kind == "box" else -np.inf)
            for v in variables
        ]
    )
    hi = np.concatenate(
        [
            np.full(int(np.prod(v.shape)) if v.shape else 1, v.domain.hi if v.domain.kind == "box" else np.inf)
            for v in variables
        ]
    )
    return names, shapes, lo, hi


def _unflat(z: torch.Tensor, names: list[str], shapes: list[tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """A flat vector (last axis) as a dict of variables (leading axes kept)."""
    out, pos = {}, 0
    lead = z.shape[:-1]
    for n, s in zip(names, shapes, strict=True):
        k = int(np.prod(s)) if s else 1
        out[n] = z[..., pos : pos + k].reshape((*lead, *s))
        pos += k
    return out


def _flatten(X: dict[str, torch.Tensor], names: list[str]) -> torch.Tensor:
    B = X[names[0]].shape[0]
    return torch.cat([X[n].reshape(B, -1) for n in names], 1)


# ----------------------------------------------------------------------------- stage 1: rays
def _rays(
    fns: RowFunctions,
    variables: tuple[Variable, ...],
    rows: np.ndarray,
    K: int,
    ctx: RunContext,
    iters: int,
    archives: list[Archive],
    arch_of: np.ndarray,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """K Chebyshev rays for each row in `rows` (R = len(rows)·K instances); their end points, row-major."""
    m = fns.m
    D = torch.as_tensor(np.maximum(directions(K, m), 1e-2), dtype=torch.float64)
    K = D.shape[0]
    inst_rows = torch.as_tensor(np.repeat(rows, K))
    Dr = D.repeat(len(rows), 1)
    # the ideal and nadir of each row's front from its payoff table: each objective minimized alone
    # (augmented by 1e-2 Σ F_j so that the minimizer is Pareto, not only weakly)
    P_rows = torch.as_tensor(np.repeat(rows, m))
    E = torch.eye(m, dtype=torch.float64).repeat(len(rows), 1) + 1e-2
    P = batched_init(variables, len(P_rows), ctx, offset=13)
    P = {k: v.requires_grad_(True) for k, v in P.items()}
    optp = ProjectedAdam(
        P, {v.name: variable_scale(v, P[v.name]) for v in variables}, 0.08, coupled=coupled_domains(variables)
    )
    for k in range(iters):
        g = _grads(lambda Z: (E * fns.batch(Z, P_rows, m)).sum(1), variables, P)
        optp.step(P, g, cosine(k, iters, 1e-3))
        batched_project_(variables, P)
    with torch.no_grad():
        table = fns.batch({k: v.detach() for k, v in P.items()}, P_rows, m).reshape(len(rows), m, m)
    _archive(archives, arch_of, P_rows, table.reshape(-1, m))
    ideal = torch.diagonal(table, dim1=1, dim2=2)
    nadir = table.amax(1)
    span = torch.nan_to_num(nadir - ideal, nan=1.0)
    # a degenerate table (every minimizer at the same value of an objective, as DTLZ2's f2 = 0) would make
    # that objective's unit vanish and pull every ray to its minimum: no unit below 25 % of the largest
    span = torch.maximum(span, 0.25 * span.amax(1, keepdim=True)).clamp(min=1e-12)
    ideal = torch.nan_to_num(ideal, nan=0.0)
    z = (ideal - 1e-3 * span).repeat_interleave(K, 0)
    span_r = span.repeat_interleave(K, 0)
    X = batched_init(variables, len(inst_rows), ctx, offset=11)
    X = {k: v.requires_grad_(True) for k, v in X.items()}
    scales = {v.name: variable_scale(v, X[v.name]) for v in variables}
    opt = ProjectedAdam(X, scales, 0.08, coupled=coupled_domains(variables))
    tau, alpha = 1e-3, 1e-3
    seen: list[torch.Tensor] = []

    def achievement(Z: dict[str, torch.Tensor]) -> torch.Tensor:
        F = fns.batch(Z, inst_rows, m)
        if Z is X:
            seen.append(F.detach())
        a = Dr * (F - z) / span_r
        return tau * torch.logsumexp(a / tau, 1) + alpha * a.sum(1)

    for k in range(iters):
        g = _grads(achievement, variables, X)
        opt.step(X, g, cosine(k, iters, 1e-3))
        batched_project_(variables, X)
        if k % 10 == 9:
            _archive(archives, arch_of, inst_rows, seen[-1])
        seen.clear()
    Xd = {k: v.detach() for k, v in X.items()}
    return Xd, inst_rows


def _grads(loss: Any, variables: tuple[Variable, ...], X: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """∇ of Σ_r loss(X)_r; rows whose gradient is not finite (sqrt at a bound, as ZDT1 at x₁ = 0) take it at
    a point nudged 1e-3 toward the interior (common.nudge, as paretom3 does), non-finite entries then 0."""
    g, ok = safe_grads(loss(X).sum(), X)
    if not bool(ok.all()):
        Xn = nudge(variables, X, ~ok, 1e-3)
        gn, _ = safe_grads(loss(Xn).sum(), Xn)
        sel = ~ok
        g = {k: torch.where(sel.reshape(-1, *([1] * (v.dim() - 1))), gn[k], v) for k, v in g.items()}
    return {k: nan_to_zero(v) for k, v in g.items()}


def _archive(archives: list[Archive], arch_of: np.ndarray, rows: torch.Tensor, F: torch.Tensor) -> None:
    which = arch_of[rows.numpy()]
    for a in np.unique(which):
        sel = torch.as_tensor(np.flatnonzero(which == a))
        archives[a].add(F[sel], {})


# ----------------------------------------------------------------------------- stage 2: KKT Newton
class KKT:
    """The KKT residual of paretom3's polish problem for one point, z = (x_U, λ, μ_U, ν) over the coordinates
    U free in some point (the others held at their bound in every point):

        f ⊙ (∇φ + H_λ (f ⊙ μ)) + (1 − f) ⊙ μ,   J (f ⊙ μ) + ν 1,   f ⊙ Jᵀλ + (1 − f) ⊙ (x − x_fix),   Σλ − 1

    restricted to U (f: 1 on the point's free coordinates, 0 on those held at a bound; H_λ = Σ λ_i ∇²F_i,
    J = ∇F)."""

    def __init__(
        self, fns: RowFunctions, names: list[str], shapes: list[tuple[int, ...]], U: np.ndarray, n: int
    ) -> None:
        self.fns, self.names, self.shapes, self.m = fns, names, shapes, fns.m
        self.u = len(U)
        S = np.zeros((n, len(U)))
        S[U, np.arange(len(U))] = 1.0
        self.S = torch.as_tensor(S)  # x = x_fix + S (x_U − x_fix[U])
        self.U = torch.as_tensor(U)

    def F(self, x: torch.Tensor, cs: list) -> torch.Tensor:
        return self.fns.one(_unflat(x, self.names, self.shapes), cs, self.m)

    def phi(self, x: torch.Tensor, cs: list) -> torch.Tensor:
        e = self.fns.exprs[self.m]
        return e.single({**_unflat(x, self.names, self.shapes), **cs[self.m]}).reshape(())

    def full(self, xu: torch.Tensor, xfix: torch.Tensor) -> torch.Tensor:
        return xfix + self.S @ (xu - xfix[self.U])

    def residual(self, z: torch.Tensor, f: torch.Tensor, xfix: torch.Tensor, cs: list) -> torch.Tensor:
        u, m = self.u, self.m
        xu, lam, mu, nu = z[:u], z[u : u + m], z[u + m : 2 * u + m], z[2 * u + m]
        x = self.full(xu, xfix)
        fm = f * mu
        gphi = torch.func.grad(self.phi)(x, cs)[self.U]
        J = torch.func.jacrev(self.F)(x, cs)[:, self.U]

        def glam(xx: torch.Tensor) -> torch.Tensor:
            return torch.func.grad(lambda y: (lam * self.F(y, cs)).sum())(xx)

        Hmu = torch.func.jvp(glam, (x,), (self.S @ fm,))[1]
        r1 = f * (gphi + Hmu[self.U]) + (1 - f) * mu
        r2 = J @ fm + nu
        r3 = f * (J.T @ lam) + (1 - f) * (xu - xfix[self.U])
        r4 = (lam.sum() - 1).reshape(1)
        return torch.cat([r1, r2, r3, r4])

    def batch(self, Z: torch.Tensor, Fm: torch.Tensor, Xf: torch.Tensor, cs: list) -> torch.Tensor:
        return torch.func.vmap(self.residual)(Z, Fm, Xf, cs)

    def jacobian(self, Z: torch.Tensor, Fm: torch.Tensor, Xf: torch.Tensor, cs: list) -> torch.Tensor:
        """(B, d, d) by central differences, all 2d perturbations of all B points in ONE vmapped residual
        call (forward-over-reverse-over-reverse through the IR is ~4× slower; the differences only shape
        the Newton step — the residual itself, which decides convergence, is exact)."""
        B, d = Z.shape
        h = 1e-6 * (1.0 + Z.abs())  # (B, d)
        E = torch.eye(d, dtype=Z.dtype)
        Zp = torch.cat([Z[:, None, :] + h[:, None, :] * E, Z[:, None, :] - h[:, None, :] * E], 1).reshape(-1, d)
        rep = [{k: v.repeat_interleave(2 * d, 0) for k, v in c.items()} for c in cs]
        R = self.batch(Zp, Fm.repeat_interleave(2 * d, 0), Xf.repeat_interleave(2 * d, 0), rep).reshape(B, 2, d, -1)
        return ((R[:, 0] - R[:, 1]) / (2 * h[:, :, None])).transpose(1, 2)


def _start(fns: RowFunctions, F: Any, x0: torch.Tensor, rows: torch.Tensor, lo: np.ndarray, hi: np.ndarray) -> tuple:
    """λ (min-norm weights of the reduced gradients) and the coordinates held at a bound (polish.py's rule:
    within 1e-3 of the box width of a bound that the weighted gradient pushes against), per point."""
    m = fns.m
    cs = fns.consts(rows)
    J = torch.func.vmap(torch.func.jacrev(F))(x0, cs)  # (B, m, n)
    Jn = torch.nan_to_num(J, nan=0.0, posinf=0.0, neginf=0.0)
    lo_t, hi_t = torch.as_tensor(lo), torch.as_tensor(hi)
    width = torch.where(torch.isfinite(hi_t - lo_t), hi_t - lo_t, 1.0 + x0.abs())
    xb = x0[:, None, :]
    blocked = ((xb <= lo_t) & (Jn > 0)) | ((xb >= hi_t) & (Jn < 0))
    R = torch.where(blocked, torch.zeros_like(Jn), Jn)
    G = (R @ R.transpose(1, 2)).numpy()
    lam = torch.as_tensor(min_norm_faces(G) if m <= 5 else np.full((x0.shape[0], m), 1.0 / m))
    g0 = (lam[:, :, None] * Jn).sum(1)
    at_lo = (x0 - lo_t <= 1e-3 * width) & (g0 > 0)
    at_hi = (hi_t - x0 <= 1e-3 * width) & (g0 < 0)
    xfix = torch.where(at_lo, lo_t.expand_as(x0), torch.where(at_hi, hi_t.expand_as(x0), x0))
    free = ~(at_lo | at_hi)
    return lam, free, xfix


def _newton(
    kkt: KKT,
    Z: torch.Tensor,
    Fm: torch.Tensor,
    Xf: torch.Tensor,
    rows: torch.Tensor,
    lo: np.ndarray,
    hi: np.ndarray,
    iters: int,
    tol: float,
) -> tuple[torch.Tensor, np.ndarray, torch.Tensor]:
    """Levenberg–Marquardt on the KKT residual of every row at once (x kept inside its box)."""
    n = kkt.u
    B, d = Z.shape
    cs_all = kkt.fns.consts(rows)
    Rv = kkt.batch(Z, Fm, Xf, cs_all)
    nr = torch.linalg.vector_norm(torch.nan_to_num(Rv, nan=np.inf), dim=1)
    eta = torch.full((B,), 1e-3, dtype=torch.float64)
    done = nr <= tol
    lo_t, hi_t = torch.as_tensor(lo), torch.as_tensor(hi)
    eye = torch.eye(d, dtype=torch.float64)
    for _ in range(iters):
        idx = torch.nonzero(~done & torch.isfinite(nr)).flatten()
        if idx.numel() == 0:
            break
        cs = [{k: v[idx] for k, v in c.items()} for c in cs_all]
        Jm = torch.nan_to_num(kkt.jacobian(Z[idx], Fm[idx], Xf[idx], cs))
        r = Rv[idx]
        A = Jm.transpose(1, 2) @ Jm
        diag = torch.diagonal(A, dim1=1, dim2=2).clamp(min=1e-12)
        M = A + eta[idx, None, None] * (torch.diag_embed(diag) + 1e-12 * eye)
        step = -torch.linalg.solve(M, (Jm.transpose(1, 2) @ r[:, :, None]))[:, :, 0]
        Zt = Z[idx] + step
        Zt[:, :n] = torch.minimum(torch.maximum(Zt[:, :n], lo_t[kkt.U]), hi_t[kkt.U])
        Rt = kkt.batch(Zt, Fm[idx], Xf[idx], cs)
        nt = torch.linalg.vector_norm(torch.nan_to_num(Rt, nan=np.inf), dim=1)
        ok = nt < nr[idx]
        acc = idx[ok]
        Z[acc], Rv[acc], nr[acc] = Zt[ok], Rt[ok], nt[ok]
        eta[acc] = torch.clamp(eta[acc] / 5.0, min=1e-12)
        rej = idx[~ok]
        eta[rej] = eta[rej] * 8.0
        done |= (nr <= tol) | (eta > 1e12)
    return Z, (nr <= tol).numpy(), nr


def _polish(
    fns: RowFunctions,
    names: list[str],
    shapes: list[tuple[int, ...]],
    lam0: torch.Tensor,
    free: torch.Tensor,
    xfix: torch.Tensor,
    rows: torch.Tensor,
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, torch.Tensor]:
    """The KKT Newton solve of the points `rows` (held coordinates: ~free, at xfix): x, λ, converged, ‖R‖."""
    n, m, B = xfix.shape[1], fns.m, xfix.shape[0]
    U = np.flatnonzero(free.any(0).numpy())
    kkt = KKT(fns, names, shapes, U, n)
    u = len(U)
    Z = torch.cat([xfix[:, U], lam0, torch.zeros(B, u + 1, dtype=torch.float64)], 1)
    Z, conv, nr = _newton(kkt, Z, free[:, U].to(torch.float64), xfix, rows, lo, hi, LM_ITERS, 1e-11)
    x = torch.stack([kkt.full(Z[b, :u], xfix[b]) for b in range(B)])
    return x, Z[:, u : u + m].clone(), conv, nr


# ----------------------------------------------------------------------------- stage 3: the merit
def _merit(
    fns: RowFunctions,
    variables: tuple[Variable, ...],
    X: dict[str, torch.Tensor],
    rows: torch.Tensor,
    iters: int,
    lr: float,
    tau: float,
    archives: list[Archive],
    arch_of: np.ndarray,
) -> np.ndarray:
    """u(x) ≈ max_y min_i (F_i(x) − F_i(y)) per row, by projected Adam on the softmin of the gaps from
    y = x (the best y seen is kept: a lower bound of u, as paretom3's inner_merit)."""
    m = fns.m
    with torch.no_grad():
        fx = fns.batch(X, rows, m)
    u_best = torch.zeros(fx.shape[0], dtype=fx.dtype)
    Y = {k: v.detach().clone().requires_grad_(True) for k, v in X.items()}
    scales = {v.name: variable_scale(v, X[v.name]) for v in variables}
    opt = ProjectedAdam(Y, scales, lr, coupled=coupled_domains(variables))
    for k in range(iters):
        with torch.no_grad():
            fy = fns.batch(Y, rows, m)
        gaps = fx - fy
        u_best = torch.maximum(u_best, torch.nan_to_num(gaps.min(1).values, nan=0.0))
        t = tau * (1e-12 + fx.abs().mean(1, keepdim=True) + gaps.abs().max(1, keepdim=True).values)
        lam = torch.softmax(-gaps / t, dim=1)
        g = _grads(lambda Z, lam=lam: (lam * fns.batch(Z, rows, m)).sum(1), variables, Y)
        opt.step(Y, g, cosine(k, iters, 1e-2))
        batched_project_(variables, Y)
        if k % 25 == 24:
            _archive(archives, arch_of, rows, fy.detach())
    return u_best.numpy().astype(np.float64)


# ----------------------------------------------------------------------------- the sweep
def solve(models: list[Any], seed: int = 0, max_iter: int | None = None) -> tuple[list[Result], str]:
    """Every point's preferred weakly Pareto point, in one batched run; one verified Result each."""
    from optlang.batched_solve import NotBatchable

    try:
        return _solve(models, seed, max_iter)
    except (RuntimeError, NotImplementedError) as e:  # an atom torch.func cannot batch or differentiate
        raise NotBatchable(f"the batched preference solve could not run ({type(e).__name__}: {e})") from e


def _solve(models: list[Any], seed: int, max_iter: int | None) -> tuple[list[Result], str]:
    from optlang.batched import batched_function
    from optlang.batched_solve import NotBatchable
    from optlang.verify import verify

    t0 = time.perf_counter()
    B = len(models)
    first = models[0]
    o = _options(first)
    entries = [[e for _, e in mm.ir.objective.entries] for mm in models]
    m = len(entries[0])
    if any(len(e) != m for e in entries) or any(
        [n for n, _ in mm.ir.objective.entries] != [n for n, _ in first.ir.objective.entries] for mm in models
    ):
        raise NotBatchable("the points differ in their objectives, not only in constants")
    exprs = []
    for i in range(m + 1):
        nodes = [mm.ir.objective.prefer if i == m else entries[b][i] for b, mm in enumerate(models)]
        be = batched_function(nodes)
        if be is None:
            raise NotBatchable("the points differ in structure (shapes or operations), not only in constants")
        exprs.append(be)
    fns = RowFunctions(exprs, m)
    compiled = [mm.compiled for mm in models]
    variables = compiled[0].problem.variables
    names, shapes, lo, hi = _flat(variables)
    n = lo.size
    ctx = RunContext(seed=seed, device="cpu", dtype="float64")
    torch.manual_seed(seed)
    all_rows = torch.arange(B)

    # 1. candidates on the front(s); each point starts from its ray end of least preference
    shared = fns.shared_objectives
    K = RAYS.get(m, 70)
    archives = [Archive() for _ in range(1 if shared else B)]
    arch_of = np.zeros(B, dtype=np.int64) if shared else np.arange(B)
    ray_iters = max_iter if max_iter is not None else RAY_ITERS
    Xr, inst = _rays(
        fns,
        variables,
        np.zeros(1, np.int64) if shared else np.arange(B),
        K,
        ctx,
        ray_iters,
        archives,
        np.zeros(B, dtype=np.int64) if shared else arch_of,
    )
    K = inst.numel() // (1 if shared else B)
    with torch.no_grad():
        if shared:  # every point's preference at every ray end: (B, K)
            Xrep = {k: v.repeat(B, *([1] * (v.dim() - 1))) for k, v in Xr.items()}
            phi = fns.batch(Xrep, all_rows.repeat_interleave(K), m + 1)[:, m].reshape(B, K)
            zr = _flatten(Xr, names)
            pick = torch.argmin(torch.nan_to_num(phi, nan=np.inf), 1)
            x0 = zr[pick]
        else:
            phi = fns.batch(Xr, inst, m + 1)[:, m].reshape(B, K)
            zr = _flatten(Xr, names).reshape(B, K, n)
            pick = torch.argmin(torch.nan_to_num(phi, nan=np.inf), 1)
            x0 = zr[all_rows, pick]
    t_rays = time.perf_counter() - t0

    # 2. the polish: damped Newton on the KKT system of every point
    def F(xx: torch.Tensor, cs: list) -> torch.Tensor:
        return fns.one(_unflat(xx, names, shapes), cs, m)

    lam0, free, xfix = _start(fns, F, x0.clone(), all_rows, lo, hi)
    with torch.no_grad():
        x, lam, conv, nr = _polish(fns, names, shapes, lam0, free, xfix, all_rows, lo, hi)
        # a point whose polish ends against a box bound (the preferred point is a corner of the front, as
        # ZDT1's x₁ = 1 for small w): hold the coordinates the step was clipped at, and polish again
        lo_t, hi_t = torch.as_tensor(lo), torch.as_tensor(hi)
        width = torch.where(torch.isfinite(hi_t - lo_t), hi_t - lo_t, 1.0 + x.abs())
        clipped = ((x - lo_t).abs() <= 1e-9 * width) | ((hi_t - x).abs() <= 1e-9 * width)
        again = torch.as_tensor(~conv) & (clipped & free).any(1)
        if bool(again.any()):
            r = torch.nonzero(again).flatten()
            free2 = free[r] & ~clipped[r]
            xfix2 = torch.where(free2, x[r], torch.minimum(torch.maximum(x[r], lo_t), hi_t))
            x2, lam2, conv2, nr2 = _polish(fns, names, shapes, lam[r], free2, xfix2, r, lo, hi)
            x[r], lam[r], nr[r], free[r] = x2, lam2, nr2, free2
            conv[r.numpy()] = conv2
    t_newton = time.perf_counter() - t0 - t_rays

    # 3. the checks of a single solve: weak-Pareto merit and domination by the points seen
    X = _unflat(x, names, shapes)
    with torch.no_grad():
        out = fns.batch(X, all_rows, m + 1)
    _archive(archives, arch_of, all_rows, out[:, :m])
    u = _merit(fns, variables, X, all_rows, o.merit_iters, o.lr_y, o.tau, archives, arch_of)
    Fx = out[:, :m].numpy().astype(np.float64)
    phix = out[:, m].numpy().astype(np.float64)
    scale = 1.0 + np.abs(Fx).max(1)
    merit_ok = u <= o.merit_tol * scale
    lam_ok = (lam >= -1e-9).all(1).numpy()
    # the polish's own measures (polish.py's units): the KKT residual relative to the gradients' size
    with torch.no_grad():
        Jfin = torch.func.vmap(torch.func.jacrev(F))(x, fns.consts(all_rows))
    jmax = np.nan_to_num(Jfin.abs().amax((1, 2)).numpy(), nan=np.inf)
    residual = nr.numpy() / (1.0 + jmax)
    good = conv & merit_ok & lam_ok & np.isfinite(phix) & (residual <= o.stat_tol)

    the_plan = first.plan()
    results: list[Result] = []
    fallback = 0
    per_point = (time.perf_counter() - t0) / B
    for b, (mm, c) in enumerate(zip(models, compiled, strict=True)):
        if not good[b]:  # solved again on its own, exactly as a single solve
            fallback += 1
            results.append(mm.solve(backend="paretom3", seed=seed, max_iter=max_iter))
            continue
        vals = {k: v[b].numpy().astype(np.float64).copy() for k, v in X.items()}
        seen = archives[arch_of[b]].all()
        tol_dom = o.merit_tol * scale[b]
        n_dom = strictly_dominating_count(seen, Fx[b], tol_dom)
        obj_names = [nm for nm, _ in mm.ir.objective.entries]
        info: dict[str, Any] = {
            "preference": float(phix[b]),
            "objectives": {nm: float(Fx[b, j]) for j, nm in enumerate(obj_names)},
            "merit": float(u[b]),
            "returned": "polished",
            "kkt_residual": float(residual[b]),
            "lambda": lam[b].numpy().tolist(),
            "held_at_bound": int((~free[b]).sum()),
            "dominated_by_seen": n_dom,
            "sweep": {"batch": B, "index": b, "solver": BACKEND, "rays": K, "shared_front": shared},
        }
        checks = {
            "weak_pareto_merit": (
                bool(merit_ok[b]),
                f"u(x) = {u[b]:.3g} by {o.merit_iters} inner ascent steps (tolerance {o.merit_tol * scale[b]:.3g})",
            ),
            "not_dominated_by_seen": (
                n_dom == 0,
                f"{n_dom} of the {seen.shape[0]} non-dominated points seen are better than the result in every "
                f"objective by more than {tol_dom:.2g}",
            ),
        }
        raw = RawSolution(Status.CONVERGED, vals, objective=float(phix[b]), iterations=0, info=info, checks=checks)
        timing = {"compile": 0.0, "solve": per_point, "total": per_point}
        results.append(verify(mm.ir, mm.form, c, raw, the_plan, BACKEND, timing, ctx))
    note = (
        f"{B} preference points as one multiobjective problem ({'one shared front of ' if shared else ''}{K} "
        f"Chebyshev rays{'' if shared else ' per point'}, batched KKT Newton polish, float64; "
        f"{B - fallback} of {B} polished and verified, {fallback} solved again singly by paretom3; "
        f"rays {t_rays:.2f} s, polish {t_newton:.2f} s)"
    )
    return results, note
