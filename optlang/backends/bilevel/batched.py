"""SDBPG for B simple bilevel problems at once: the points of a parameter sweep as one batched problem.

The B problems share their variables and differ only in constants (a swept `param` in the upper or
the lower objective). `solve_batch` runs SDBPG's deterministic loop (docs/backends/sdbpg.md:
d = ∇F + λ∇g with the perturbed multiplier λ = max(0, (φ − ⟨∇F, ∇g⟩)/(‖∇g‖² + ρ_t)), accelerated
steps with adaptive restart, the stall rule raising Λ, 4× curvature rollbacks on blow-ups, the
monitoring and convergence test every `report_every` steps) with a leading batch axis: every
per-point scalar (curvatures, Λ, step, multiplier, momentum counter, stall window, iteration count)
is a vector over the batch, both levels of all points come from one vectorized call (`levels(z, z)`,
a `torch.func.vmap` of both objectives), and a point is frozen (masked) once its own test says
converged (or it diverged, or reached max_iter). Each point then gets the float64
certificate a single sdbpg solve ends with (`oracle.certificate`), so it is verified like one.

Batched: full-batch (deterministic) levels, free/box/ball domains (simplex is projected row by
row), every variant and step rule, `phi = grad`. Minibatch levels and `phi = gap` are refused
(`NotBatchable`): the sweep then runs point by point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RawSolution, RunContext, Status
from optlang.backends.bilevel.faces import Faces
from optlang.backends.bilevel.oracle import (
    BLOWUP,
    FLOOR_CAP,
    FlatVars,
    auto_batch,
    certificate,
    kkt_multiplier,
    make_generator,
)
from optlang.backends.bilevel.sdbpg import SDBPGOptions, validate
from optlang.backends.common import project
from optlang.lazy import lazy_module
from optlang.problem import BilevelProblem
from optlang.result import jsonable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

MAX_ROLLBACKS = 5  # as sdbpg: blow-ups answered by 4× curvature estimates before `diverged`
WINDOW = 10  # the stall test's window (oracle.STALL_WINDOW)
# levels(z_f, z_g) (both (B, d)) -> (B, 2): every point's upper objective at its row of z_f and its
# lower objective at its row of z_g
Levels = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]


class NotBatchable(Exception):
    """The points cannot run as one batched SDBPG problem (the message says why)."""


def why_not(problems: list[BilevelProblem], o: SDBPGOptions) -> str | None:
    """None when the batch can run, else the reason (for the sweep's plan)."""
    p = problems[0]
    for fn in (p.upper, p.lower):
        if auto_batch(fn.n_samples, o.batch_f if fn is p.upper else o.batch_g) is not None:
            return "minibatch levels (a sample axis above 4096 rows or a batch size): stochastic runs are per point"
    if o.phi != "grad":
        return "phi = gap needs each point's lower-level optimum"
    return None


def _grads(levels: Levels, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(f, ∇f, g, ∇g) of every row at z: one batched forward of both levels and one backward pass
    (each level reads its own copy of z, so one gradient of f + g holds both)."""
    zf = z.detach().requires_grad_(True)
    zg = z.detach().requires_grad_(True)
    with torch.enable_grad():
        fg = levels(zf, zg)
        gf, gg = torch.autograd.grad(fg.sum(), (zf, zg), allow_unused=True) if fg.requires_grad else (None, None)
    fg = fg.detach()
    zero = torch.zeros_like(z)
    return fg[:, 0], zero if gf is None else gf, fg[:, 1], zero if gg is None else gg


def _power(levels: Levels, j: int, z: torch.Tensor, iters: int, v0: torch.Tensor) -> torch.Tensor:
    """Per-row largest |eigenvalue| of level j's Hessian by power iteration (oracle.Oracle.hvp_norm,
    batched: the same start vector for every row, a row stops at a zero or non-finite product)."""
    B = z.shape[0]
    est = torch.zeros(B, dtype=z.dtype)
    zr = z.detach().requires_grad_(True)
    with torch.enable_grad():
        val = levels(zr, zr)[:, j]
        if not val.requires_grad:
            return est
        (gr,) = torch.autograd.grad(val.sum(), zr, create_graph=True, allow_unused=True)
        if gr is None or not gr.requires_grad:
            return est
        v = (v0 / torch.clamp(torch.linalg.vector_norm(v0), min=1e-30)).expand(B, -1).clone()
        alive = torch.ones(B, dtype=torch.bool)
        for _ in range(iters):
            (hv,) = torch.autograd.grad(gr, zr, grad_outputs=v, retain_graph=True, allow_unused=True)
            if hv is None:
                return est
            nrm = torch.linalg.vector_norm(hv, dim=1)
            bad = ~torch.isfinite(nrm)
            est = torch.where(alive & bad, torch.full_like(est, math.nan), est)
            upd = alive & ~bad & (nrm > 0)
            est = torch.where(upd, nrm, est)
            v = torch.where(upd[:, None], hv.detach() / torch.clamp(nrm, min=1e-300)[:, None], v)
            alive = upd
            if not bool(alive.any()):
                break
    return est.detach()


class _Projector:
    """Projection of flat rows (R, d) onto the product of the domains."""

    def __init__(self, flat: FlatVars) -> None:
        self.flat = flat
        self.needed = flat.needs_projection

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        if not self.needed:
            return z
        z = z.clone()
        for v, a, b in self.flat.slices:
            kind = v.domain.kind
            if kind == "box":
                z[:, a:b] = project(v.domain, z[:, a:b])
            elif kind == "ball":
                nrm = torch.linalg.vector_norm(z[:, a:b], dim=1, keepdim=True)
                z[:, a:b] = z[:, a:b] * torch.clamp(v.domain.radius / torch.clamp(nrm, min=1e-30), max=1.0)
            elif kind == "simplex":
                for r in range(z.shape[0]):
                    z[r, a:b] = project(v.domain, z[r, a:b])
        return z


def _multiplier_rows(
    Fk: torch.Tensor,
    gk: torch.Tensor,
    alpha: np.ndarray,
    level: np.ndarray,
    o: SDBPGOptions,
    avg: np.ndarray | None,
    avg_set: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sdbpg's λ per row from F and ∇g (their tangent parts on a face): (λ, ‖F‖², the scalars ‖∇g‖²,
    ⟨F, ∇g⟩, φ after smoothing with the rows' EMAs `avg`, for the caller to store)."""
    ng2, nf2, inner = (
        t.detach().to("cpu", torch.float64).numpy() for t in ((gk * gk).sum(1), (Fk * Fk).sum(1), (Fk * gk).sum(1))
    )
    phi = alpha * ng2
    rho = np.maximum(np.maximum(alpha, 1e-12) * nf2 / level**3, o.rho_min) if o.perturbation else np.zeros_like(ng2)
    mixed = np.stack([ng2, inner, phi], 1)
    if avg is not None:
        s_ = max(o.lam_smoothing, 0.0)
        mixed = np.where(avg_set[:, None], (1 - s_) * avg + s_ * mixed, mixed)
    den = mixed[:, 0] + rho
    den = np.where(den <= 0.0, 1e-30 * np.maximum(nf2, 1e-30), den)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.maximum((mixed[:, 2] - mixed[:, 1]) / den, 0.0)
    return lam, nf2, mixed


def solve_batch(problems: list[BilevelProblem], levels: Levels, o: SDBPGOptions, ctx: RunContext) -> list[RawSolution]:
    """SDBPG on every problem at once (in ctx.dtype; the sweep uses float64); one RawSolution per
    problem, each with sdbpg's float64 certificate of its own problem. Every row is stepped each
    iteration (one vectorized call for the iterates, numpy for the per-row scalars); a finished row
    is frozen by masks, not removed."""
    validate(o)
    why = why_not(problems, o)
    if why is not None:
        raise NotBatchable(why)
    dt, dev = ctx.dtype, ctx.device
    B = len(problems)
    flat = FlatVars(problems[0].variables)
    proj = _Projector(flat)
    faces = Faces(flat, dt, dev)
    x0 = flat.initial(ctx).to(dt)
    if flat.needs_projection:
        flat.project_(x0)
    x = x0.expand(B, -1).clone()

    def T(a: np.ndarray) -> torch.Tensor:  # a per-row numpy vector as a column for the iterates
        return torch.as_tensor(a, dtype=dt, device=dev)[:, None]

    def N(a: torch.Tensor) -> np.ndarray:
        return a.detach().to("cpu", torch.float64).numpy()

    # curvatures at the start, with the start vectors a single solve draws (same seed, same streams)
    v_f = torch.randn(x0.shape, generator=make_generator(ctx, 1), device=dev, dtype=dt)
    v_g = torch.randn(x0.shape, generator=make_generator(ctx, 2), device=dev, dtype=dt)
    iters = o.lipschitz_iters
    Lf = N(_power(levels, 0, x, iters, v_f)) if iters > 0 else np.ones(B)
    Lg = N(_power(levels, 1, x, iters, v_g)) if iters > 0 else np.ones(B)
    status: list[Status | None] = [None] * B
    notes = [""] * B
    bad_start = ~(np.isfinite(Lf) & np.isfinite(Lg))
    for b in np.nonzero(bad_start)[0]:
        status[b], notes[b] = Status.DIVERGED, "curvature estimate is not finite at the start"
    Lf = np.where(bad_start, 1.0, Lf)
    Lg = np.where(bad_start, 1.0, Lg)
    Lf = np.maximum(np.maximum(Lf, 1e-8 * np.maximum(Lg, 1.0)), 1e-12)
    Lg = np.maximum(Lg, 1e-12)
    # the run's constants (deterministic levels: sdbpg's non-stochastic defaults)
    min_phase = o.min_phase if o.min_phase >= 0 else 50
    patience = o.patience if o.patience > 0 else 1000
    lam0 = o.lam_target if o.lam_target > 0 else 10.0
    growth = o.lam_growth if o.lam_growth >= 1 else 10.0
    smoothing = max(o.lam_smoothing, 0.0)
    tol = ctx.tol or 1e-4
    max_iter = ctx.max_iter if ctx.max_iter is not None else 100_000
    eps = float(torch.finfo(dt).eps)
    Lam = np.full(B, lam0)
    eta0 = np.full(B, o.step) if o.step > 0 else o.step_scale / (Lf + lam0 * Lg)
    _, _, _, gg0 = _grads(levels, x)
    g0_norm = N(torch.linalg.vector_norm(gg0, dim=1))
    g_tol = o.tol_g * np.maximum(g0_norm, 1.0)
    start_scale = np.maximum(N(torch.linalg.vector_norm(x, dim=1)), 1.0)
    x_prev, best_x = x.clone(), x.clone()
    t = np.zeros(B, dtype=np.int64)
    k_mom, lam_max, lam_ema = np.zeros(B), np.zeros(B), np.zeros(B)
    avg = np.zeros((B, 3))
    avg_set = np.zeros(B, dtype=bool)
    window = np.full((B, WINDOW), np.nan)
    wpos = np.zeros(B, dtype=np.int64)
    st_start, st_best_t, next_check = t.copy(), t.copy(), t.copy()
    st_best = np.full(B, np.inf)
    rollbacks, phases = t.copy(), t.copy()
    done = np.array([s is not None for s in status])
    rows = np.arange(B)

    def reset_stall(mask: np.ndarray) -> None:
        window[mask] = np.nan
        wpos[mask] = 0
        st_start[mask] = t[mask]
        st_best[mask] = np.inf
        st_best_t[mask] = t[mask]

    def end(mask: np.ndarray, st: Status, note: str = "") -> None:
        for b in np.nonzero(mask)[0]:
            status[b] = st
            notes[b] = note.replace("{t}", str(int(t[b])))
        done[mask] = True

    def pgrad_rows(z: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(z - proj(z - g), dim=1) if flat.needs_projection else g.norm(dim=1)

    def pgrad_norm(z: torch.Tensor, g: torch.Tensor) -> np.ndarray:
        return N(pgrad_rows(z, g))

    while True:
        if ctx.should_stop():
            end(~done, ctx.stop_status())
            break
        at_limit = ~done & (t >= max_iter)
        if at_limit.any():
            end(at_limit, Status.ITERATION_LIMIT)
        act = ~done
        if not act.any():
            break
        beta = np.full(B, o.momentum) if o.momentum >= 0 else k_mom / (k_mom + 3.0)
        beta = np.where(t > st_start, beta, 0.0)
        k_mom = np.where(act, k_mom + 1.0, k_mom)
        y = x + T(beta) * (x - x_prev)
        if flat.needs_projection and (beta > 0).any():
            y = torch.where(torch.as_tensor(beta > 0)[:, None], proj(y), y)
        fv_t, gf, gv_t, gg = _grads(levels, y)
        tf = t.astype(np.float64)
        pr = o.variant in ("pr", "vr")
        mu = o.pr_mu / (1.0 + tf / o.pr_tau) ** o.pr_power if pr else np.zeros(B)
        F = gf + T(mu) * gg if pr else gf
        level = lam0 * (1.0 + tf / o.rho_tau) ** o.rho_power if o.rho_rule == "power" else Lam
        alpha = o.alpha * level / lam0 if o.alpha_rule == "level" else np.full(B, o.alpha)

        # sdbpg's face rule: λ from the tangent parts of the face each row's step stays on
        tan = faces.tangent(y, gg) if faces.any else None
        for _ in range(3):
            Fk, gk = (F, gg) if tan is None else (tan.apply(F), tan.apply(gg))
            lam, nf2, mixed = _multiplier_rows(Fk, gk, alpha, level, o, avg if smoothing > 0 else None, avg_set)
            if tan is None:
                break
            new_tan = faces.tangent(y, F + T(np.nan_to_num(lam)) * gg)
            if new_tan.same_face(tan):
                break
            tan = new_tan
        if smoothing > 0:
            avg = np.where(act[:, None], mixed, avg)
            avg_set |= act
        lam_bad = act & ~np.isfinite(lam)
        lam = np.where(lam_bad, 0.0, lam)
        lam_max = np.where(act, np.maximum(lam_max, lam), lam_max)
        d = F + T(lam) * gg
        if o.step_rule == "adaptive":
            eta = o.step_scale / (Lf + (lam + mu) * Lg + 1e-30)
        elif o.step_rule == "constant":
            eta = eta0
        else:
            eta = eta0 / np.sqrt(1.0 + tf / o.rho_tau)
        x_new = proj(y - T(eta) * d)
        finite = N(torch.isfinite(x_new).all(1) & torch.isfinite(fv_t) & torch.isfinite(gv_t)).astype(bool)
        big = N(torch.linalg.vector_norm(x_new, dim=1)) > BLOWUP * start_scale
        blow = act & ~lam_bad & (~finite | big)
        if lam_bad.any():
            end(lam_bad, Status.DIVERGED, "the multiplier is not finite (‖∇g‖² + ρ = 0 with ⟨∇f, ∇g⟩ ≠ 0)")
        if blow.any():
            back = blow & (rollbacks < MAX_ROLLBACKS) if o.step_rule == "adaptive" else np.zeros(B, dtype=bool)
            end(blow & ~back, Status.DIVERGED, "non-finite or exploding iterate at iteration {t}")
            if back.any():  # back to the last monitored point with 4× the curvature estimates
                bt = torch.as_tensor(back)
                rollbacks[back] += 1
                Lf = np.where(back, 4.0 * Lf, Lf)
                Lg = np.where(back, 4.0 * Lg, Lg)
                x[bt] = best_x[bt]
                x_prev[bt] = best_x[bt]
                k_mom[back] = 0.0
                avg_set[back] = False
                reset_stall(back)
        go = act & ~lam_bad & ~blow
        if o.momentum < 0:
            uphill = go & (N((d * (x_new - x)).sum(1)) > 0)
            k_mom = np.where(uphill, 0.0, k_mom)
        gcol = torch.as_tensor(go)[:, None]
        x_prev = torch.where(gcol, x, x_prev)
        x = torch.where(gcol, x_new, x)
        t = np.where(go, t + 1, t)
        # the stall test (oracle.StallTest, one window per row)
        moving = d if not faces.any else faces.tangent(y, d).apply(d)  # a held part never vanishes
        r2 = N((moving * moving).sum(1)) / np.maximum(nf2, 1e-60)
        slot = wpos % WINDOW
        window[rows, slot] = np.where(go, r2, window[rows, slot])
        wpos = np.where(go, wpos + 1, wpos)
        filled = np.minimum(wpos, WINDOW)  # entries in the window since its reset
        lvl = np.sqrt(np.maximum(np.where(filled > 0, np.nansum(window, 1) / np.maximum(filled, 1), np.nan), 0.0))
        better = go & (lvl < 0.9 * st_best)
        st_best = np.where(better, lvl, st_best)
        st_best_t = np.where(better, t, st_best_t)
        old_enough = t - st_start >= min_phase
        stalled = go & old_enough & ((lvl < o.stall_ratio) | (t - st_best_t >= patience))
        lam_ema = np.where(go, np.where(t - st_start <= 1, lam, 0.9 * lam_ema + 0.1 * lam), lam_ema)
        if o.bind_frac > 0:
            stalled |= go & (lam_ema >= o.bind_frac * Lam) & old_enough
        if o.perturbation and o.rho_rule == "stall":
            check = stalled & (Lam < o.lam_cap) & (t >= next_check)
            if check.any():
                next_check = np.where(check, t + o.report_every, next_check)
                _, _, _, gq = _grads(levels, x)
                grow = check & ~(pgrad_norm(x, gq) <= g_tol)
                if grow.any():
                    Lam = np.where(grow, Lam * growth, Lam)
                    phases[grow] += 1
                    reset_stall(grow)
                    k_mom[grow] = 0.0
                    gt = torch.as_tensor(grow)
                    x_prev[gt] = x[gt]
                    avg_set[grow] = False
        due = go & (t % o.report_every == 0)
        if due.any():  # sdbpg._Run._monitor's test at x, for the rows that report now
            mf, mgf, mg, mgg = _grads(levels, x)
            finite_rows = N(torch.isfinite(mf) & torch.isfinite(mg)).astype(bool)
            pg_g = pgrad_norm(x, mgg)
            lam_t, kkt_t = kkt_multiplier(x, mgf, mgg, faces, pgrad_rows)
            lam_hat, kkt = N(lam_t), N(kkt_t)
            scale = np.maximum(N(mgf.norm(dim=1)), 1.0)
            nx = np.maximum(N(x.norm(dim=1)), 1e-30)
            floor = np.minimum(2.0 * eps * (Lf + lam_hat * Lg) * nx, FLOOR_CAP * scale)
            conv = due & finite_rows & (pg_g <= g_tol) & (kkt <= np.maximum(tol * scale, floor))
            if (due & ~finite_rows).any():
                end(due & ~finite_rows, Status.DIVERGED, "non-finite objective at iteration {t}")
            keep = torch.as_tensor(due & finite_rows)[:, None]
            best_x = torch.where(keep, x, best_x)
            if conv.any():
                end(conv, Status.CONVERGED)
    out = []
    for i, p in enumerate(problems):
        st = status[i] or Status.ITERATION_LIMIT
        xb = best_x[i] if st == Status.DIVERGED else x[i]
        values = flat.to_numpy(xb)
        nx_b = float(torch.linalg.vector_norm(xb))
        lf, lg = float(Lf[i]), float(Lg[i])

        def floor_b(lam: float, lf: float = lf, lg: float = lg, nx: float = nx_b) -> float:
            return 2.0 * eps * (lf + lam * lg) * nx

        stats, checks = certificate(p, flat, values, tol, o.tol_g, float(g0_norm[i]), floor=floor_b)
        if st == Status.CONVERGED and not checks["lower_stationary"][0]:
            st = Status.FEASIBLE  # as sdbpg: the float64 full check overrules the loop's test
        info: dict[str, Any] = {
            "variant": o.variant,
            "perturbation": o.perturbation,
            "lower_reached": bool(checks["lower_stationary"][0] and checks.get("lower_gap", (True, ""))[0]),
            "lam_max": float(lam_max[i]),
            "lam_level": float(Lam[i]),
            "phases": int(phases[i]),
            "rollbacks": int(rollbacks[i]),
            "L_f": lf,
            "L_g": lg,
            **stats,
        }
        if notes[i]:
            info["note"] = notes[i]
        out.append(
            RawSolution(
                status=st,
                values=values,
                objective=stats.get("f"),
                iterations=int(t[i]),
                info=jsonable(info),
                checks=checks,
            )
        )
    return out


def values_at(out: list[RawSolution]) -> np.ndarray:
    """The flat solutions (B, d) in float64 (for tests and benchmarks)."""
    return np.stack([np.concatenate([np.ravel(v) for v in r.values.values()]) for r in out])
