"""Local polish of a preferred Pareto point: min φ over the Pareto-critical manifold, by SLSQP in float64.

A point x is Pareto critical (box domains) when some λ ∈ Δ makes the reduced gradient of Σ λ_i F_i
vanish. Near the answer of the M³ loop, the preferred point solves the smooth equality-constrained
problem in (x_free, λ)

    min φ(x)  s.t.  ∇_free (Σ λ_i F_i)(x) = 0,  Σ λ_i = 1,  λ ≥ 0,  lo ≤ x_free ≤ hi,

where the coordinates sitting on a box bound that Σλ∇F pushes against are fixed there. Its
first-order measure — the norm of ∇φ projected onto the manifold's tangent space (the null space of
the constraint Jacobian [H_λ, Jᵀ; 0, 1ᵀ]) — is the `stationarity` that ends a ParetoM³ solve as
`converged`. Only box and free variables, and at most `max_dim` free coordinates, are polished
(Hessians are formed); anything else returns None and the loop's own stop decides.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.common import FlatVariables, scalar_count
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class Polished:
    """A polished point: its values, multipliers, constraint residual and tangential stationarity."""

    values: dict[str, np.ndarray]
    lam: np.ndarray
    residual: float  # ‖∇_free Σλ F‖ / (1 + max‖∇F_i‖)
    stationarity: float  # ‖P_T ∇φ‖ / (1 + ‖∇φ‖)
    iterations: int
    evaluations: int  # point evaluations with gradient (Hessian products counted as one per coordinate)


def polishable(problem: MultiObjectiveProblem, max_dim: int) -> bool:
    """True when every variable is box, simplex, ball or free and the problem has at most `max_dim` scalars."""
    if problem.preference is None or any(
        v.domain.kind not in ("box", "free", "simplex", "ball") for v in problem.variables
    ):
        return False
    return scalar_count(problem.variables) <= max_dim


def polish(
    problem: MultiObjectiveProblem,
    start: dict[str, np.ndarray],
    max_dim: int = 200,
    maxiter: int = 100,
    stop: Callable[[], bool] | None = None,
    keep_free: np.ndarray | None = None,
    retries: int = 2,
    unbounded: bool = False,
) -> Polished | None:
    """SLSQP on the Pareto-critical formulation from `start`; None when not applicable or it failed.
    `stop()` (the run's time limit / interrupt) ends SLSQP early; the point is then judged as it is.

    The coordinates fixed on a bound (or at 0 on a simplex) are checked at the end: a fixed coordinate
    whose multiplier changed sign (Σλ∂F no longer pushes against its bound; on a simplex ∂_j Σλ F < ν)
    means the polish left the Pareto-critical set along its face (a mean–variance front whose efficient
    support changes), so it is polished again from there with those coordinates free (`keep_free`, at
    most `retries` times), and what is left of the wrong signs adds to the residual (never certified).
    A free coordinate that ends on its bound with a vanishing multiplier is a breakpoint of the critical set
    (the efficient support changes there): the face's manifold ends, and the branch on which that coordinate
    stays on the bound is measured too (`_branch_descent`): φ falling along it is no stationary point."""
    preference = problem.preference  # polishable() refuses a problem without one
    if preference is None or not polishable(problem, max_dim):
        return None

    from optlang.backends.multiobjective.common import JointJacobian

    fl = FlatVariables(problem.variables)
    joint = problem.joint.compile("cpu", torch.float64)  # the objectives in one pass over what they share
    jac = JointJacobian(problem, fl)  # F and J at the last point asked for
    pref = preference.compile("cpu", torch.float64)
    m = len(problem.objectives)
    count = [0]
    steep = np.zeros(fl.lo.size, bool)  # coordinates held on a bound by an infinite slope (`steep_bounds`)

    def jac_F(z: np.ndarray) -> np.ndarray:
        J = jac(z)[1].copy()
        count[0] += 1
        # held on a bound or a cusp: their infinite slopes there take no part in λ or the tests (the finite
        # slopes next to a cusp stay: they are what `_holds` reads)
        J[:, steep] = np.where(np.isfinite(J[:, steep]), J[:, steep], 0.0)
        return J

    z0 = fl.flat(start)
    if not np.all(np.isfinite(z0)):
        return None
    width = np.where(np.isfinite(fl.hi - fl.lo), fl.hi - fl.lo, 1.0 + np.abs(z0))
    J0 = jac_F(z0)
    if not np.all(np.isfinite(J0)):
        # a cusp of the objectives (Kursawe's |x|^0.8 at 0: ±∞ or NaN in autograd) at a kink the IR knows:
        # moved onto it and held like a bound; whether it holds the critical set is `_kinks_held`'s test
        cusp = _cusps(problem, fl, z0, ~np.all(np.isfinite(J0), axis=0), width)
        z0 = np.where(np.isnan(cusp), z0, cusp)
        on_cusp = ~np.isnan(cusp)
        held = steep_bounds(np.where(on_cusp, 0.0, J0), z0, fl.lo, fl.hi, width, (fl.grp >= 0) | (fl.bgrp >= 0))
        if held is None:
            return None
        steep[:] = (held != 0) | on_cusp
        z0 = np.where(held < 0, fl.lo, np.where(held > 0, fl.hi, z0))
        J0 = jac_F(z0)
        if not np.all(np.isfinite(J0)):
            return None
    lam0 = _min_norm(J0)
    g0 = lam0 @ J0
    # fixed coordinates: on (or within 1e-3 of) a bound that the weighted gradient pushes against; a
    # weighted gradient that vanishes there (the point is Pareto critical as an interior point too, and
    # the critical set goes on inside) leaves the coordinate free, bounded
    push = 1e-8 * (1.0 + float(np.abs(J0).max(initial=0.0)))
    at_lo = (z0 - fl.lo <= 1e-3 * width) & (g0 > push)
    at_hi = (fl.hi - z0 <= 1e-3 * width) & (g0 < -push)
    # simplex coordinates: KKT says g_j = ν on the support, g_j ≥ ν off it; fix the small ones with g_j > ν̂
    insimplex = fl.grp >= 0
    at_lo &= ~insimplex
    at_hi &= ~insimplex
    for gi in fl.groups:
        idx = np.flatnonzero(fl.grp == gi)
        big = idx[z0[idx] > 1e-3]
        nu_hat = float(np.median(g0[big])) if big.size else float(g0[idx].min())
        at_lo[idx] = (z0[idx] <= 1e-3) & (g0[idx] > nu_hat + 1e-9 * (1 + abs(nu_hat)))
    # coordinates on a kink of the objectives (|x − c|) that every objective rises from on both sides (the
    # critical set lies on the kink): fixed too. Left free, their row of ∇_free Σλ F is 0 = 0 (autograd's
    # slope of |·| at 0), a singular Jacobian on which SLSQP stops at its first iteration.
    kink_at, kink_h = _kinks_held(problem, fl, z0, jac_F, width, push, at_lo | at_hi)
    if keep_free is not None:
        at_lo &= ~keep_free
        at_hi &= ~keep_free
        kink_at &= ~keep_free
    at_lo &= ~kink_at
    at_hi &= ~kink_at
    at_lo |= steep & (z0 <= fl.lo)
    at_hi |= steep & (z0 >= fl.hi)
    fixed = at_lo | at_hi | kink_at
    z0 = np.where(at_lo, fl.lo, np.where(at_hi, fl.hi, z0))
    for gi in fl.groups:  # back onto the simplex after zeroing
        idx = np.flatnonzero(fl.grp == gi)
        z0[idx] = z0[idx] / max(z0[idx].sum(), 1e-300)
    if kink_at.any() or steep.any():
        # a coordinate moved onto its kink or bound can meet an infinite slope there (|x|^0.8 at 0 from
        # x = 0.0098): held, its slope left out as above; one that is not fixed there makes λ NaN
        bad = ~np.all(np.isfinite(jac_F(z0)), axis=0)
        if np.any(bad & ~fixed):
            return None
        steep |= bad
    free = np.flatnonzero(~fixed)
    nf = free.size
    G = len(fl.groups)
    gfree = fl.grp[free]
    E = np.stack([(gfree == gi).astype(np.float64) for gi in fl.groups], 1) if G else np.zeros((nf, 0))
    # balls: active when x̂ is on the sphere and Σλ̂∇F points inward (∇ΣλF + κ x = 0, ‖x‖² = r², κ ≥ 0);
    # inactive ones only keep ‖x‖² ≤ r² as an inequality
    bfree = fl.bgrp[free]
    act_b: list[tuple[np.ndarray, float]] = []  # (free indices of the ball's entries, radius)
    inact_b: list[tuple[np.ndarray, float]] = []
    for gi, rad in fl.balls:
        ix = np.flatnonzero(bfree == gi)
        nx = float(np.linalg.norm(z0[free][ix]))
        on_sphere = nx >= rad * (1 - 1e-3) and float(g0[free][ix] @ z0[free][ix]) < 0
        (act_b if on_sphere else inact_b).append((ix, rad))
        if nx > 0 and (on_sphere or nx > rad):
            z0[free[ix]] *= rad / nx
    nb = len(act_b)

    def full(v: np.ndarray) -> np.ndarray:
        z = z0.copy()
        z[free] = v[:nf]
        return z

    free_t = torch.as_tensor(free)

    def leaf(v: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """(the tensor gradients are taken in, the point): the whole point, or with coordinates held by an
        infinite slope only its free coordinates — the held ones constant, so no ∞ · 0 reaches the rest."""
        z = torch.as_tensor(full(v), dtype=torch.float64)
        if not steep.any():
            z = z.requires_grad_(True)
            return z, z
        zf = z[free_t].clone().requires_grad_(True)
        return zf, z.index_put((free_t,), zf)

    def on_free(g: torch.Tensor | None, zt: torch.Tensor) -> np.ndarray:
        """A gradient in `leaf`'s tensor, as the free coordinates' part."""
        out = np.zeros(zt.numel()) if g is None else g.detach().numpy()
        return out if steep.any() else out[free]

    def phi(v: np.ndarray) -> tuple[float, np.ndarray]:
        zt, z = leaf(v)
        p = pref(fl.split(z)).reshape(())
        (g,) = torch.autograd.grad(p, zt, allow_unused=True)
        count[0] += 1
        out = np.zeros(v.size)
        out[:nf] = on_free(g, zt)
        return float(p.detach()), out

    def cons_parts(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(∇_free Σλ F, H_λ[free, free], J[:, free]) at the point."""
        if steep.any():
            return cons_parts_free(v)
        zt = torch.as_tensor(full(v), dtype=torch.float64).requires_grad_(True)
        lam = torch.as_tensor(v[nf : nf + m], dtype=torch.float64)
        vals = fl.split(zt)
        Fs = torch.stack(joint(vals))
        J = _row_grads(Fs, zt, create_graph=True)
        if J is None:
            J = torch.zeros((m, zt.numel()), dtype=torch.float64)
        gl = (lam[:, None] * J).sum(0)[free]
        h = _row_grads(gl, zt) if gl.requires_grad and nf else None
        H = np.zeros((nf, nf)) if h is None else h.detach().numpy()[:, free].copy()
        count[0] += 1 + nf
        return gl.detach().numpy(), H, J.detach().numpy()[:, free]

    def jac_free(v: np.ndarray) -> np.ndarray:
        """J[:, free] at the point, first derivatives only (`leaf`: the held coordinates constant)."""
        zt, z = leaf(v)
        vals = fl.split(z)
        Fs = joint(vals)
        rows = [torch.autograd.grad(F, zt, retain_graph=True, allow_unused=True)[0] for F in Fs]
        count[0] += 1
        return np.stack([on_free(r, zt) for r in rows])

    def cons_parts_free(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`cons_parts` where coordinates are held by infinite slopes. A second derivative through such a
        slope is ∞ · 0 = NaN in autograd (the held column's ∞ sits upstream of every row), so H_λ is the
        central difference of the exact ∇_free Σλ F (step 1e-6 of the width, one-sided at a bound)."""
        lam = v[nf : nf + m]
        Jf = jac_free(v)
        H = np.zeros((nf, nf))
        lo_f, hi_f, w_f = fl.lo[free], fl.hi[free], width[free]
        for r in range(nf):
            h = 1e-6 * w_f[r]
            up, dn = v.copy(), v.copy()
            up[r] = min(v[r] + h, hi_f[r])
            dn[r] = max(v[r] - h, lo_f[r])
            if up[r] > dn[r]:
                H[r] = lam @ (jac_free(up) - jac_free(dn)) / (up[r] - dn[r])
        H = 0.5 * (H + H.T)
        return lam @ Jf, H, Jf

    cache: dict[bytes, tuple] = {}

    def parts(v: np.ndarray) -> tuple:
        key = v.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = cons_parts(v)
        return cache[key]

    def c_fun(v: np.ndarray) -> np.ndarray:
        """[∇_free Σλ F − E ν + κ x (balls), Σ_group x − 1, ‖x_ball‖² − r², Σλ − 1]."""
        gl, _, _ = parts(v)
        x, nu, ka = v[:nf], v[nf + m : nf + m + G], v[nf + m + G :]
        r1 = gl - E @ nu
        for b, (ix, _) in enumerate(act_b):
            r1[ix] += ka[b] * x[ix]
        sph = [x[ix] @ x[ix] - rad**2 for ix, rad in act_b]
        return np.concatenate([r1, E.T @ x - 1.0, sph, [v[nf : nf + m].sum() - 1.0]])

    def c_jac(v: np.ndarray) -> np.ndarray:
        _, H, Jf = parts(v)
        return constraint_jacobian(H, Jf, E, v[:nf], [ix for ix, _ in act_b], v[nf + m + G :])

    def ball_in(v: np.ndarray) -> np.ndarray:
        return np.array([rad**2 - v[:nf][ix] @ v[:nf][ix] for ix, rad in inact_b])

    def ball_in_jac(v: np.ndarray) -> np.ndarray:
        out = np.zeros((len(inact_b), v.size))
        for b, (ix, _) in enumerate(inact_b):
            out[b, ix] = -2.0 * v[:nf][ix]
        return out

    nu0 = np.array([float(np.mean(g0[free][gfree == gi])) if np.any(gfree == gi) else 0.0 for gi in fl.groups])
    ka0 = np.array([max(0.0, -float(g0[free][ix] @ z0[free][ix])) / rad**2 for ix, rad in act_b])
    v0 = np.concatenate([z0[free], lam0, nu0, ka0])
    boxed = (fl.grp[free] < 0) & (fl.bgrp[free] < 0)  # box coordinates (a simplex's keep x ≥ 0)
    lo_f = np.where(unbounded & boxed, -np.inf, fl.lo[free])
    hi_f = np.where(unbounded & boxed, np.inf, fl.hi[free])
    bounds = scipy_bounds(lo_f, hi_f)
    bounds += [(0.0, 1.0)] * m + [(None, None)] * G + [(0.0, None)] * nb
    cons = [{"type": "eq", "fun": c_fun, "jac": c_jac}]
    if inact_b:
        cons.append({"type": "ineq", "fun": ball_in, "jac": ball_in_jac})
    solved = run_slsqp(phi, v0, bounds, cons, maxiter, 1e-14, stop)
    if solved is None:
        return None
    v, nit = solved
    if unbounded and np.any((v[:nf] < fl.lo[free] - 1e-9 * width[free]) | (v[:nf] > fl.hi[free] + 1e-9 * width[free])):
        return None  # the critical set left the box: the bounded polish's point stands
    v[:nf] = np.clip(v[:nf], fl.lo[free], fl.hi[free])
    for ix, rad in act_b:  # exactly on the sphere
        v[:nf][ix] *= rad / max(float(np.linalg.norm(v[:nf][ix])), 1e-300)
    for gi in fl.groups:  # exactly on the simplex (SLSQP meets Σ = 1 to ~1e-15)
        sel = gfree == gi
        v[:nf][sel] = v[:nf][sel] / max(v[:nf][sel].sum(), 1e-300)
    gl, H, Jf = cons_parts(v)
    if not (np.all(np.isfinite(H)) and np.all(np.isfinite(Jf))):
        return None
    lam = v[nf : nf + m]
    residual = float(np.abs(c_fun(v)).sum()) / (1.0 + float(np.abs(Jf).max(initial=0.0)))
    _, gphi = phi(v)
    A = constraint_jacobian(H, Jf, E, v[:nf], [ix for ix, _ in act_b], v[nf + m + G :])
    none = np.zeros(G + nb, bool)
    at_low = np.concatenate([v[:nf] <= fl.lo[free] + 1e-12, lam <= 1e-12, none])
    at_high = np.concatenate([v[:nf] >= fl.hi[free] - 1e-12, np.zeros(m, bool), none])
    stationarity = tangential_stationarity(gphi, A, at_low, at_high)
    values = {k: t.detach().numpy().copy() for k, t in fl.split(torch.as_tensor(full(v))).items()}
    # the fixed coordinates' multipliers at the end: each must still hold its coordinate on its bound
    J_all = jac_F(full(v))
    if not np.all(np.isfinite(J_all)):
        return None
    g_all = lam @ J_all
    scale = 1.0 + float(np.abs(J_all).max(initial=0.0))
    nu_of = np.zeros(g_all.size)  # each coordinate's simplex multiplier ν (0 off a simplex)
    for k, gi in enumerate(fl.groups):
        nu_of[fl.grp == gi] = v[nf + m + k]
    wrong = np.zeros(g_all.size)
    wrong[at_lo] = np.maximum(0.0, nu_of[at_lo] - g_all[at_lo])  # (a box's lower bound: ν = 0)
    wrong[at_hi] = np.maximum(0.0, g_all[at_hi])
    if kink_at.any():  # each kink still held at the end (`_holds`), else its slopes' wrong signs count
        zf = full(v)
        J_end = jac_F(zf)
        for k in np.flatnonzero(kink_at).tolist():
            right, left = _one_sided(jac_F, zf, k, kink_h[k])
            if not _holds(J_end[:, ~fixed], right, left, 0.0):
                wrong[k] = max(float(np.maximum(0.0, -right).sum() + np.maximum(0.0, left).sum()), 2e-9 * scale)
    bad = wrong > 1e-9 * scale
    if bad.any() and retries > 0 and not (stop is not None and stop()):
        released = bad if keep_free is None else keep_free | bad
        again = polish(problem, values, max_dim, maxiter, stop, released, retries - 1, unbounded)
        if again is not None:
            again.iterations += nit
            again.evaluations += count[0]
            return again
    residual += float(wrong.sum()) / scale
    # breakpoints: a free coordinate on its lower bound with a vanishing multiplier, where the efficient
    # support changes. The face's manifold ends there, and its measure says nothing of the branch on which
    # that coordinate stays on the bound (its row of the stationarity equations becomes "≥ 0"): that
    # branch's tangent is measured too, in the orientation that keeps the dropped row non-negative. A box
    # coordinate on its upper bound likewise, its row "≤ 0" (x₁ = sin(6π x₀) touching 1 at x₀ = 0.75 had
    # stationarity 0 there: the critical set with x₁ held is that one point, and φ falls along the branch)
    on_lo = v[:nf] <= fl.lo[free] + 1e-12
    on_hi = (v[:nf] >= fl.hi[free] - 1e-12) & boxed
    idle = np.abs(g_all[free] - nu_of[free]) <= 1e-7 * scale
    kinks = np.flatnonzero(on_lo & idle)
    stationarity = max(
        stationarity, _branch_descent(gphi, A, kinks), _branch_descent(gphi, A, np.flatnonzero(on_hi & idle), -1.0)
    )
    # a plateau: moving along the critical set moves no objective (DTLZ4's x₀^100 at x₀ = 0.62: the front's
    # tangent there is ~1e-19 per unit of x₀'s width). φ is flat along it, so the stationarity says nothing
    # of the front, along which φ may fall (certified 0.14 above the least); the sampled tests decide
    F_end = jac(full(v))[0]  # (J_all's point: no new evaluation)
    if nf and _plateau(A, Jf, width[free], 1e-6 * (1.0 + float(np.abs(F_end).max()))):
        stationarity = max(stationarity, 1.0)
    done = Polished(values, lam, residual, stationarity, nit, count[0])
    # a free coordinate on a bound with a vanishing multiplier, where the critical set only touches the bound
    # (UF1's x_j = sin(6π x₀ + jπ/n) reaches ±1 every 1/180 of x₀): SLSQP holds the touched bound as active
    # and stops at the touch point next to its start (stationarity 2e-4, x₀ = 31/45 for 0.665856). It is
    # polished again with the box coordinates unbounded: kept when it ends inside the box, more stationary
    touched = (on_lo | on_hi) & idle
    if touched.any() and stationarity > _BREAKPOINT_RETRY_ABOVE and not unbounded and not (stop is not None and stop()):
        again = polish(problem, values, max_dim, maxiter, stop, keep_free, retries, unbounded=True)
        if again is not None:
            again.iterations += nit
            again.evaluations += count[0]
            if again.stationarity + again.residual < stationarity + residual:
                return again
            done.iterations, done.evaluations = again.iterations, again.evaluations
    return done


def _row_grads(out: torch.Tensor, zt: torch.Tensor, create_graph: bool = False) -> torch.Tensor | None:
    """The gradient of each entry of the 1-D `out` at the leaf zt, as rows (None: no entry depends on zt).
    One batched backward pass over one-hot cotangents (`is_grads_batched`: the same vector-Jacobian products
    as one pass per entry, vectorized — the polish's Hessian on DTLZ3's 11 variables: 1.2 ms instead of 4.2 ms,
    its main cost); an op that the batched pass cannot take falls back to one pass per entry."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (vmap's "performance drop" fallback notice)
            eye = torch.eye(out.shape[0], dtype=out.dtype)
            (g,) = torch.autograd.grad(
                out, zt, eye, retain_graph=True, create_graph=create_graph, allow_unused=True, is_grads_batched=True
            )
            return g
    except RuntimeError:
        pass
    rows = [torch.autograd.grad(o, zt, retain_graph=True, create_graph=create_graph, allow_unused=True)[0] for o in out]
    if all(r is None for r in rows):
        return None
    return torch.stack([torch.zeros_like(zt) if r is None else r for r in rows])


_BREAKPOINT_RETRY_ABOVE = 1e-7  # the stationarity above which a breakpoint is polished again (paretom3's stat_tol)


def _cusps(
    problem: MultiObjectiveProblem, fl: FlatVariables, z: np.ndarray, bad: np.ndarray, width: np.ndarray
) -> np.ndarray:
    """Per coordinate the kink value (problem.kinks) it sits on or within 1e-3 of the width of, where its
    column of the Jacobian is not finite (`bad`), else NaN: a cusp such as |x|^0.8 at 0."""
    out = np.full(z.size, np.nan)
    for j, value in _kink_sites(problem, fl):
        if bad[j] and abs(z[j] - value) <= 1e-3 * width[j]:
            out[j] = value
    return out


def _kink_sites(problem: MultiObjectiveProblem, fl: FlatVariables) -> list[tuple[int, float]]:
    """(flat index, value) of each kink the IR knows (problem.kinks) on a box or free coordinate."""
    start = dict(zip([v.name for v in fl.vars], np.cumsum([0, *fl.sizes[:-1]]).tolist(), strict=True))
    size = dict(zip([v.name for v in fl.vars], fl.sizes, strict=True))
    out = []
    for name, index, value in problem.kinks:
        if name in start and index < size[name]:
            j = int(start[name]) + int(index)
            if fl.grp[j] < 0 and fl.bgrp[j] < 0:
                out.append((j, float(value)))
    return out


def steep_bounds(
    J: np.ndarray, z: np.ndarray, lo: np.ndarray, hi: np.ndarray, width: np.ndarray, not_box: np.ndarray
) -> np.ndarray | None:
    """Per coordinate −1 / +1 where an infinite slope holds it on its lower / upper bound, else 0; None when
    a non-finite slope is anything else. A coordinate is held when it is on (or within 1e-3 of the width of)
    a box bound and every objective rises leaving it — +∞ or ≥ 0 at the lower bound, −∞ or ≤ 0 at the
    upper — as ZDT6's g = 1 + 9 mean(x)^¼ at x = 0, or DTLZ6's Σ x^0.1. Such a point is Pareto critical in
    that coordinate for every λ, so the polish fixes it there; left in, its column makes λ and every test
    NaN (why every polish on ZDT6's Pareto set failed)."""
    bad = ~np.all(np.isfinite(J), axis=0)
    if np.isnan(J).any() or (bad & not_box).any():
        return None
    near_lo = z - lo <= 1e-3 * width
    near_hi = hi - z <= 1e-3 * width
    up = np.all(J >= 0, axis=0)  # (±∞ compare as numbers)
    down = np.all(J <= 0, axis=0)
    held = np.where(bad & near_lo & up, -1, np.where(bad & near_hi & down, 1, 0))
    return held if np.all(held[bad] != 0) else None


def _plateau(A: np.ndarray, Jf: np.ndarray, width: np.ndarray, tol: float) -> bool:
    """Whether no direction along the polish's critical set (the null space of its constraint Jacobian A)
    moves the objectives by more than `tol` per unit of the free coordinates' widths (‖J_free dx‖), counting
    directions that move only λ (a corner of the front, where x stays) as not moving them."""
    from scipy.linalg import null_space

    nf = Jf.shape[1]
    N = null_space(A, rcond=1e-10)
    if N.size == 0:
        return False
    return all(float(np.linalg.norm(Jf @ t[:nf])) <= tol * float(np.linalg.norm(t[:nf] / width)) for t in N.T)


def _one_sided(jac_F: Callable[[np.ndarray], np.ndarray], z: np.ndarray, j: int, h: float) -> tuple[np.ndarray, ...]:
    """The objectives' slopes along coordinate j just right and just left of z (a kink's two sides)."""
    e = np.zeros(z.size)
    e[j] = h
    return jac_F(z + e)[:, j], jac_F(z - e)[:, j]


def _kinks_held(
    problem: MultiObjectiveProblem,
    fl: FlatVariables,
    z: np.ndarray,
    jac_F: Callable[[np.ndarray], np.ndarray],
    width: np.ndarray,
    push: float,
    bound_fixed: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(mask, step) of the coordinates on or near one of their kinks (within 1e-3 of the width, as a bound)
    that hold the Pareto-critical set there (`_holds`); they are moved onto the kink (z is changed in
    place). `step` is the offset at which the kink's two sides are measured."""
    near, step = np.zeros(z.size, bool), np.zeros(z.size)
    zk = z.copy()
    for j, value in _kink_sites(problem, fl):
        if near[j] or abs(z[j] - value) > 1e-3 * width[j]:
            continue
        h = 1e-7 * width[j]
        if fl.lo[j] <= value - h and value + h <= fl.hi[j] and not bound_fixed[j]:
            near[j], step[j], zk[j] = True, h, value
    held = np.zeros(z.size, bool)
    if not near.any():
        return held, step
    J = jac_F(zk)
    for k in np.flatnonzero(near).tolist():
        right, left = _one_sided(jac_F, zk, k, step[k])
        held[k] = _holds(J[:, ~(near | bound_fixed)], right, left, push)
    z[held] = zk[held]
    return held, np.where(held, step, 0.0)


def _holds(J_free: np.ndarray, right: np.ndarray, left: np.ndarray, push: float) -> bool:
    """Whether a kink keeps the Pareto-critical set on it: no λ ∈ Δ that balances the other free
    coordinates (J_free: the objectives' gradients there) zeroes Σλ's slope just off the kink.
    Every objective rising on both sides is enough (slopes > push right, < −push left). Otherwise the
    free coordinates must pin λ (rank m − 1: ZDT's f1 = x₀ is flat in the distance variables, but x₀
    fixes λ) and Σλ̂'s slopes must be strict at that λ̂. A kink that an objective does not rise from
    with λ left loose (|x| against (x − 1)², one variable) is where the set ends, not where it lies."""
    if np.all(right > push) and np.all(left < -push):
        return True
    m = J_free.shape[0]
    if J_free.shape[1] < m - 1 or m < 2:
        return False
    sv = np.linalg.svd(J_free, compute_uv=False)
    if sv.size < m - 1 or sv[m - 2] <= 1e-6 * max(float(sv[0]), 1e-300):
        return False
    lam = _min_norm(J_free)
    if not np.all(np.isfinite(lam)):
        return False
    return float(lam @ right) > push and float(lam @ left) < -push


def _branch_descent(g: np.ndarray, A: np.ndarray, rows: np.ndarray, side: float = 1.0) -> float:
    """The steepest relative descent of φ (gradient g in the polish's unknowns) along the branches that
    start at breakpoints: for each row p in `rows` (a free coordinate p on its bound whose stationarity row
    holds with a vanishing multiplier), the tangent of the critical set with coordinate p held on its bound
    and row p dropped, oriented so that row p's value grows (`side` 1: a lower bound's multiplier) or falls
    (−1: an upper bound's), staying a valid multiplier; 0 when φ falls along none. Other active bounds are
    not imposed on the branch, which can only make the measure larger."""
    from scipy.linalg import null_space

    worst = 0.0
    n = A.shape[1]
    gn = 1.0 + float(np.linalg.norm(g))
    for p in rows:
        keep = np.r_[0:p, p + 1 : A.shape[0]]
        N = null_space(np.concatenate([A[keep], np.eye(n)[[p]]], 0), rcond=1e-10)
        for d in N.T:
            slope = side * float(A[p] @ d)
            signs = (1.0,) if slope > 1e-12 else (-1.0,) if slope < -1e-12 else (1.0, -1.0)
            for sg in signs:
                worst = max(worst, -sg * float(g @ d) / gn)
    return worst


def scipy_bounds(lo: np.ndarray, hi: np.ndarray) -> list[tuple[float | None, float | None]]:
    """SLSQP's bounds from arrays (infinite ends as None)."""
    return [
        (float(a) if np.isfinite(a) else None, float(b) if np.isfinite(b) else None)
        for a, b in zip(lo, hi, strict=True)
    ]


def run_slsqp(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    bounds: list[tuple[float | None, float | None]],
    constraints: list[dict[str, Any]],
    maxiter: int,
    ftol: float,
    stop: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, int] | None:
    """scipy's SLSQP on `fun` (value and gradient) in float64: (end point, iterations), or None when it
    raised or ended outside the finite numbers. `stop()` ends it early (the run's clock)."""
    from scipy import optimize

    try:
        with np.errstate(all="ignore"):
            res = optimize.minimize(
                fun,
                x0,
                jac=True,
                method="SLSQP",
                bounds=bounds,
                constraints=constraints,
                options={"maxiter": maxiter, "ftol": ftol},
                callback=None if stop is None else stop_callback(stop),
            )
    except (ValueError, np.linalg.LinAlgError, RuntimeError):
        return None
    v = np.asarray(res.x, dtype=np.float64)
    return (v, int(res.nit)) if np.all(np.isfinite(v)) else None


def stop_callback(stop: Callable[[], bool]) -> Callable[..., None]:
    """A SLSQP callback that ends the solve (StopIteration, scipy ≥ 1.11) once `stop()` is true."""

    def cb(*_: object) -> None:
        if stop():
            raise StopIteration

    return cb


def _min_norm(J: np.ndarray) -> np.ndarray:
    """λ ∈ Δ minimizing ‖λᵀJ‖ (projected gradient on the Gram matrix; m is small)."""
    from optlang.backends.multiobjective.common import min_norm_faces

    G = J @ J.T
    if J.shape[0] <= 5:
        return min_norm_faces(G[None])[0]
    lam = np.full(J.shape[0], 1.0 / J.shape[0])
    L = max(np.trace(G), 1e-300)
    for _ in range(500):
        lam = _proj_simplex(lam - G @ lam / L)
    return lam


def _proj_simplex(v: np.ndarray) -> np.ndarray:
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
    return np.maximum(v - css[k] / (k + 1.0), 0.0)


def constraint_jacobian(
    H: np.ndarray,
    Jf: np.ndarray,
    E: np.ndarray,
    x: np.ndarray | None = None,
    balls: list[np.ndarray] | None = None,
    kappa: np.ndarray | None = None,
) -> np.ndarray:
    """Jacobian of [∇Σλ F − Eν + Σ_b κ_b x_b, Eᵀx − 1, ‖x_b‖² − r_b², Σλ − 1] in (x_free, λ, ν, κ)."""
    balls = balls or []
    nf, m, G, nb = H.shape[0], Jf.shape[0], E.shape[1], len(balls)
    Hk = H.copy()
    Bc = np.zeros((nf, nb))
    sph = np.zeros((nb, nf + m + G + nb))
    if balls:
        if x is None or kappa is None:
            raise ValueError("constraint_jacobian: balls need the point x and their multipliers kappa")
        for b, ix in enumerate(balls):
            Hk[ix, ix] += kappa[b]
            Bc[ix, b] = x[ix]
            sph[b, ix] = 2.0 * x[ix]
    top = np.concatenate([Hk, Jf.T, -E, Bc], 1)
    mid = np.concatenate([E.T, np.zeros((G, m + G + nb))], 1)
    bottom = np.concatenate([np.zeros(nf), np.ones(m), np.zeros(G + nb)])[None, :]
    return np.concatenate([top, mid, sph, bottom], 0)


def tangential_stationarity(
    g: np.ndarray, A: np.ndarray, at_low: np.ndarray, at_high: np.ndarray | None = None
) -> float:
    """`tangential_projection`'s measure alone."""
    return tangential_projection(g, A, at_low, at_high)[0]


def tangential_projection(
    g: np.ndarray, A: np.ndarray, at_low: np.ndarray, at_high: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """(measure, P∇φ): ‖∇φ projected on the null space of the constraint Jacobian A, with the bounds that hold φ back
    fixed‖ / (1 + ‖∇φ‖): zero at a first-order point of the polish problem.

    A variable on a bound (x on a box bound, λ_i = 0) is held fixed only while its multiplier has the
    sign of a bound that φ presses on (lower: ∂φ pushes below it); one whose multiplier says φ
    decreases inwards is released (an active-set loop), so a point sitting on a bound with a feasible
    descent direction along the critical set does not measure as stationary."""
    from scipy.linalg import null_space

    if at_high is None:
        at_high = np.zeros_like(at_low)
    bound = at_low | at_high
    fixed = bound.copy()
    n = A.shape[1]
    for _ in range(2 * int(bound.sum()) + 2):
        E = np.eye(n)[fixed]
        Af = np.concatenate([A, E], 0) if fixed.any() else A
        N = null_space(Af, rcond=1e-10)
        Pg = N @ (N.T @ g) if N.size else np.zeros(n)
        if not fixed.any():
            break
        # multipliers of the fixed rows: g − P g = Aᵀ α + Eᵀ μ
        coef, *_ = np.linalg.lstsq(Af.T, g - Pg, rcond=None)
        mu = np.zeros(n)
        mu[np.flatnonzero(fixed)] = coef[A.shape[0] :]
        tol = 1e-10 * (1.0 + float(np.linalg.norm(g)))
        wrong = fixed & ((at_low & (mu < -tol)) | (at_high & (mu > tol)))
        if not wrong.any():
            break
        fixed &= ~wrong
    return float(np.linalg.norm(Pg)) / (1.0 + float(np.linalg.norm(g))), Pg
