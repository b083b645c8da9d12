"""`auto` ambiguity parameters of DRO models, chosen by validation on the training data alone.

`radius = auto` (and `bins = auto`, `solver tcdro { outer_radius = auto }`) is resolved here,
before the final fit: the training samples are split into K seeded folds (default 5; or one
seeded holdout of `val_frac`), every candidate is fitted on each fold's training part, and all
(candidate × fold) fits plus an ERM reference per fold (radius 0) run as ONE batched problem
(`batched.lbfgs`, one vectorized loss evaluation per step for all members, exact float64 duals per
member). Each candidate is then scored on the held-out folds:

  validation MSE  = mean held-out loss (pooled over folds),
  validation tail = mean held-out loss over the samples whose target is ≥ the 90 % quantile of
                    that fold's training targets (no targets: the top decile of held-out losses),

and the chosen candidate has the least validation tail among those whose validation MSE is at
most `val_slack` (1.10) × ERM's; if none qualifies, the smallest radius. This is the rule
`benchmarks/dro_tail.py --select-radius` used (slack chosen there on development splits), moved
into the backend. Candidates for target_conditional also include the inner radius 0 with the
outer (region-mass) radius r (a χ² group DRO over target regions), next to inner = outer = r.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.autotune import folds
from optlang.backends.dro.common import Regions, RobustValue, make_regions, robust_value, single_region
from optlang.lazy import lazy_module
from optlang.problem import DROProblem, LinearResidual

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

AUTO_OPTIONS = ("outer_radius",)  # tcdro options that may be `auto`


@dataclass(frozen=True)
class Member:
    """One fit of the batch: a sample subset (None = all), its regions and its mixing."""

    idx: np.ndarray | None
    regions: Regions
    base: str
    mix: str
    outer: float


def chi2_dual_batch(L: np.ndarray, P: np.ndarray, radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`dro_common.chi2_dual` for G padded rows at once: values (G,) and worst-case weights (G, M).

    Row g holds losses L[g] with probabilities P[g] (0 marks padding). Padding is placed just
    below the row's smallest loss with probability 0: it adds pieces on which the dual function is
    still exact, so the minimum over the clipped stationary points is unchanged (same closed form
    as the scalar routine, vectorized over rows).
    """
    valid = P > 0
    padded = not bool(valid.all())  # no padding (every global-ball row): the masks below are no-ops
    shift = (np.where(valid, L, -np.inf) if padded else L).max(1)
    v = L - shift[:, None]
    if padded:
        low = np.where(valid, v, np.inf).min(1) - 1.0
        v = np.where(valid, v, low[:, None])
    order = np.argsort(-v, axis=1)  # ties: any order gives the same pieces (equal ends)
    vs = np.take_along_axis(v, order, 1)
    ps = np.take_along_axis(P, order, 1)
    c2 = (1.0 + 2.0 * np.maximum(radius, 0.0))[:, None]
    W = np.cumsum(ps, 1)
    S1 = np.cumsum(ps * vs, 1)
    S2 = np.cumsum(ps * vs * vs, 1)
    var = np.maximum(S2 - S1 * S1 / W, 0.0)
    hi = vs
    lo = np.concatenate([vs[:, 1:], np.full((vs.shape[0], 1), -np.inf)], 1)
    denom = c2 - 1.0 / W
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(denom > 0, np.sqrt(var / np.where(denom > 0, denom, 1.0)), np.inf)
        eta_stat = (S1 - u) / W
    eta = np.clip(np.where(np.isfinite(eta_stat), eta_stat, lo), lo, hi)
    eta = np.where(np.isfinite(eta), eta, hi)
    g = np.maximum(S2 - 2.0 * eta * S1 + W * eta * eta, 0.0)
    f = eta + np.sqrt(c2) * np.sqrt(g)
    best = np.argmin(f, 1)
    rows = np.arange(L.shape[0])
    eta_star = eta[rows, best]
    excess = np.maximum(v - eta_star[:, None], 0.0) * P
    tot = excess.sum(1)
    pos = tot > 0
    q = excess / np.where(pos, tot, 1.0)[:, None]
    if not pos.all():  # the ball holds the point mass on the maximum: those rows' weights sit there
        point = np.where((v[~pos] >= 0.0) & valid[~pos], P[~pos], 0.0)
        q[~pos] = point / point.sum(1)[:, None]
    value = f[rows, best] + shift
    flat = radius <= 0
    if flat.any():
        value = np.where(flat, ((np.where(valid, L, 0.0) if padded else L) * P).sum(1), value)
        q = np.where(flat[:, None], P, q)
    return value, q


class BatchDuals:
    """The exact χ² worst-case weights of every member at once (regions padded into one array).

    Inner: one padded row per (member, region), solved by `chi2_dual_batch`; outer: one padded row
    of region values per member (robust: a χ² ball around the region masses; empirical: the
    masses; balanced: uniform). Equal to looping `robust_value` over members (tested).
    """

    def __init__(self, members: list[Member], n: int) -> None:
        groups: list[tuple[int, np.ndarray, float]] = []
        self.kmax = max(m.regions.k for m in members)
        self.group_k: list[int] = []
        for b, m in enumerate(members):
            base_idx = np.arange(n) if m.idx is None else m.idx
            for k in range(m.regions.k):
                groups.append((b, base_idx[m.regions.index(k)], float(m.regions.radii[k])))
                self.group_k.append(k)
        M = max(g[1].size for g in groups)
        G = len(groups)
        self.owner = np.array([g[0] for g in groups])
        self.gidx = np.zeros((G, M), dtype=np.int64)
        self.P = np.zeros((G, M))
        for i, (_, idx, _) in enumerate(groups):
            self.gidx[i, : idx.size] = idx
            self.P[i, : idx.size] = 1.0 / idx.size
        self.valid = self.P > 0
        self.radius = np.array([g[2] for g in groups])
        B = len(members)
        self.masses = np.zeros((B, self.kmax))
        self.mix_p = np.zeros((B, self.kmax))
        self.outer = np.zeros(B)
        for b, m in enumerate(members):
            K = m.regions.k
            self.masses[b, :K] = m.regions.masses
            self.mix_p[b, :K] = {"balanced": np.full(K, 1.0 / K)}.get(m.mix, m.regions.masses)
            self.outer[b] = m.outer if (m.mix == "robust" and K > 1) else 0.0
        self.B = B
        self.gk = np.array(self.group_k)
        # every member one region of all samples (global χ² balls): rows are the groups, the outer
        # mix is 1, and the weights are the inner duals' (no gather, no scatter)
        self.plain = all(m.idx is None and m.regions.k == 1 for m in members) and M == n
        # the scatter target of each padded entry: its sample, padding to an extra column n
        self.gidx_pad = np.where(self.valid, self.gidx, n)
        self.n = n

    def weights(self, L: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Worst-case weights (R, N) of the members `rows`, whose losses are L (R, N)."""
        if self.plain:  # group b is member b, over the samples in order
            return chi2_dual_batch(L, self.P[rows], self.radius[rows])[1]
        return self._solve(L, rows)[2]

    def robust_values(self, L: np.ndarray, rows: np.ndarray, members: list[Member]) -> list[RobustValue]:
        """`robust_value` of each member `rows[i]` at its losses L[i] (finite), from the batched duals:
        the value, region values V_k, region weights a_k and sample weights (the duals η_k are NaN: not
        computed here)."""
        value, V, W, a = self._solve(L, rows)
        out = []
        for i, b in enumerate(rows):
            K = members[b].regions.k
            out.append(RobustValue(float(value[i]), V[i, :K].copy(), a[i, :K].copy(), np.full(K, np.nan), W[i]))
        return out

    def _solve(self, L: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(values (R,), region values (R, kmax), sample weights (R, N), region weights (R, kmax))."""
        pos = np.full(self.B, -1)
        pos[rows] = np.arange(rows.size)
        sel = np.nonzero(pos[self.owner] >= 0)[0]
        owner, gidx, gk = pos[self.owner[sel]], self.gidx[sel], self.gk[sel]
        vals, q = chi2_dual_batch(L[owner[:, None], gidx], self.P[sel], self.radius[sel])
        V = np.zeros((rows.size, self.kmax))
        V[owner, gk] = vals
        value, a = chi2_dual_batch(V, self.mix_p[rows], self.outer[rows])
        W = np.zeros((L.shape[0], self.n + 1))
        wq = a[owner, gk][:, None] * q
        W[owner[:, None], self.gidx_pad[sel]] = wq  # padding (weight 0) lands in the extra column
        return value, V, W[:, : self.n], a


def batch_duals(members: list[Member], n: int) -> BatchDuals | None:
    """The members' χ² duals solved all at once, when every member is a χ² ball with a robust,
    empirical or balanced mix; None otherwise (the members are then solved one by one)."""
    if all(m.base == "chi2" and m.mix in ("robust", "empirical", "balanced") for m in members):
        return BatchDuals(members, n)
    return None


def robust_batch_weights(members: list[Member], n: int) -> Any:
    """weights(L (R, N) float64, rows) -> (R, N): member rows[i]'s exact worst-case weights at its
    losses L[i], 0 off its subset, NaN rows where a loss is not finite. χ² members with
    robust/empirical/balanced mixes are solved all at once (BatchDuals), others one by one."""
    duals = batch_duals(members, n)

    def weights(Lnp: np.ndarray, r: np.ndarray) -> np.ndarray:
        bad = ~np.all(np.isfinite(Lnp), 1)
        if duals is not None:
            W = duals.weights(np.where(bad[:, None], 0.0, Lnp) if bad.any() else Lnp, r)
            W[bad] = np.nan
            return W
        W = np.zeros_like(Lnp)
        for b, mb in enumerate(r):
            m = members[mb]
            row = Lnp[b] if m.idx is None else Lnp[b, m.idx]
            if bad[b]:
                W[b] = np.nan
                continue
            rv = robust_value(row, m.regions, m.base, m.mix, m.outer)
            if m.idx is None:
                W[b] = rv.sample_weights
            else:
                W[b, m.idx] = rv.sample_weights
        return W

    return weights


def robust_batch_objective(losses_of: Any, members: list[Member], n: int) -> Any:
    """objective(vars) -> (B,) exact robust values: Σ_i w_bi ℓ_bi with member b's worst-case
    weights solved in float64 on its detached losses (Danskin's gradient), weight 0 off its subset."""
    weights = robust_batch_weights(members, n)

    def objective(values: dict[str, torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
        L = losses_of(values, rows)  # (R, N)
        W = weights(L.detach().to("cpu", torch.float64).numpy(), rows.cpu().numpy())
        return (torch.as_tensor(W, dtype=L.dtype, device=L.device) * L).sum(1)

    return objective


def wasserstein_batch_objective(losses_of: Any, members: list[Member], n: int, lin: LinearResidual, p: int) -> Any:
    """objective(vars) -> (B,) the Wasserstein closed forms of linear models (dro_common), member b
    on its training rows: abs loss: mean|r| + ρ‖w‖₂; square, p = 2: (√mean r² + ρ‖w‖₂)²; square,
    p = 1, ρ > 0: finite only at w = 0, whose fit (w = 0, the bias at the rows' mean target) is the
    minimizer of ‖w‖² + (b − ȳ)². Members of the `chi2` base are ERM references (radius 0). The
    losses ℓ_i are φ(r_i), which is what makes the model linear-residual (compiler.linear_residual)."""
    B = len(members)
    M = np.zeros((B, n))
    ybar = np.zeros(B)
    for b, m in enumerate(members):
        idx = np.arange(n) if m.idx is None else m.idx
        M[b, idx] = 1.0 / idx.size
        ybar[b] = float(np.mean(np.asarray(lin.y, dtype=np.float64)[idx]))
    radius = np.array([0.0 if m.base != "wasserstein" else float(m.regions.radii[0]) for m in members])
    closed = (radius > 0) & (lin.loss == "square") & (p == 1)
    sqrt_form = (radius > 0) & (lin.loss == "square") & (p == 2)
    Mt, rad_t = torch.as_tensor(M), torch.as_tensor(radius)
    closed_t, sqrt_t, ybar_t = torch.as_tensor(closed), torch.as_tensor(sqrt_form), torch.as_tensor(ybar)

    def objective(values: dict[str, torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
        L = losses_of(values, rows)  # (R, N)
        mean = (Mt[rows].to(L.dtype) * L).sum(1)
        w = values[lin.weight].reshape(L.shape[0], -1)
        wn = torch.sqrt((w * w).sum(1) + 1e-300)
        r = rad_t[rows].to(L.dtype)
        out = torch.where(sqrt_t[rows], (torch.sqrt(torch.clamp(mean, min=1e-300)) + r * wn) ** 2, mean + r * wn)
        if bool(closed_t[rows].any()):
            pin = (w * w).sum(1)
            if lin.bias is not None:
                pin = pin + (values[lin.bias].reshape(L.shape[0]) - ybar_t[rows].to(L.dtype)) ** 2
            out = torch.where(closed_t[rows], pin, out)
        return out

    return objective


def member_regions(
    problem: DROProblem, targets: np.ndarray | None, idx: np.ndarray | None, radius: float, bins: int, o: Any
) -> Regions:
    amb = problem.ambiguity
    n = problem.n_samples if idx is None else idx.size
    if amb.kind in ("chi2", "kl"):
        return single_region(n, radius)
    assert targets is not None
    y = targets if idx is None else targets[idx]
    return make_regions(y, bins, radius, edges=amb.edges, scheme=o.regions, rule=o.radius_rule)


def candidates(problem: DROProblem, options: Any) -> list[dict[str, float]]:
    """Every (radius, outer, bins) combination to score; outer < 0 means 'the radius'."""
    amb = problem.ambiguity
    grid = dict(amb.auto)
    radii = grid.get("radius", (float(amb.radius),))
    bins = tuple(int(b) for b in grid.get("bins", (amb.bins,)))
    outer_auto = getattr(options, "_auto", {}).get("outer_radius")
    out: list[dict[str, float]] = []
    for r, k in itertools.product(radii, bins):
        if outer_auto is not None:
            out += [{"radius": r, "outer_radius": o, "bins": k} for o in outer_auto]
        elif amb.kind == "target_conditional" and "radius" in grid and options.outer_radius < 0:
            out.append({"radius": r, "outer_radius": r, "bins": k})
            if r > 0:
                out.append({"radius": 0.0, "outer_radius": r, "bins": k})
        else:
            out.append({"radius": r, "outer_radius": options.outer_radius, "bins": k})
    return out


def _tail_mean(val_losses: np.ndarray, val_y: np.ndarray | None, ref_y: np.ndarray | None, q: float) -> tuple:
    if val_y is not None and ref_y is not None:
        mask = val_y >= np.quantile(ref_y, q)
        return float(val_losses[mask].sum()), int(mask.sum())
    m = max(1, int(math.ceil((1 - q) * val_losses.size)))
    top = np.sort(val_losses)[-m:]
    return float(top.sum()), m


def select(problem: DROProblem, options: Any, ctx: Any, targets: np.ndarray | None) -> tuple[dict, dict[str, Any]]:
    """Choose the auto parameters by batched validation; returns (chosen candidate, record for info)."""
    from optlang.backends.common import init_tensors
    from optlang.batched import Layout, lbfgs, value_and_grad, vmap_or_rows

    o = options
    amb = problem.ambiguity
    n = problem.n_samples
    cands = candidates(problem, o)
    splits = folds(n, o.select, o.folds, o.val_frac, ctx.seed)
    base = amb.base if amb.kind == "target_conditional" else amb.kind
    from optlang.backends.dro.report import resolve_mix

    mix = resolve_mix(o.region_weights, base)
    members: list[Member] = []
    tags: list[tuple[int, int]] = []  # (candidate index or -1 for ERM, fold)
    for f, (tr, _) in enumerate(splits):
        members.append(Member(tr, single_region(tr.size, 0.0), "chi2", "robust", 0.0))  # ERM: radius 0
        tags.append((-1, f))
        for c, cand in enumerate(cands):
            if amb.kind == "wasserstein":  # no regions: the closed form per member (wasserstein_batch_objective)
                members.append(Member(tr, single_region(tr.size, cand["radius"]), "wasserstein", "robust", 0.0))
                tags.append((c, f))
                continue
            reg = member_regions(problem, targets, tr, cand["radius"], int(cand["bins"]), o)
            outer = cand["radius"] if cand["outer_radius"] < 0 else cand["outer_radius"]
            members.append(Member(tr, reg, base, mix, outer))
            tags.append((c, f))
    B = len(members)
    dtype = torch.float64
    layout = Layout(tuple(v.name for v in problem.variables), tuple(tuple(v.shape) for v in problem.variables))
    fn = problem.loss.compile("cpu", dtype)
    vfn = vmap_or_rows(fn)

    def losses_of(values: dict[str, torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
        return vfn(values)

    if amb.kind == "wasserstein":
        assert problem.linear is not None  # tcdro refuses Wasserstein models without linear structure
        obj = wasserstein_batch_objective(losses_of, members, n, problem.linear, amb.p)
    else:
        obj = robust_batch_objective(losses_of, members, n)
    start = {k: v.detach().cpu().numpy() for k, v in init_tensors(problem.variables, ctx, requires_grad=False).items()}
    z0 = layout.pack([start] * B, dtype)
    max_iter = ctx.max_iter if ctx.max_iter is not None else 500
    out = lbfgs(
        value_and_grad(lambda z, rows: obj(layout.unpack(z), rows)),
        z0,
        max_iter=max_iter,
        tol=1e-9,
        should_stop=ctx.should_stop,
    )
    with torch.no_grad():
        L = losses_of(layout.unpack(out.z), torch.arange(B)).to(torch.float64).numpy()
    # pooled validation sums per (candidate or ERM)
    sums: dict[int, list[float]] = {}
    for b, (c, f) in enumerate(tags):
        tr, va = splits[f]
        vl = L[b, va]
        t_sum, t_n = _tail_mean(
            vl, None if targets is None else targets[va], None if targets is None else targets[tr], o.tail_quantile
        )
        acc = sums.setdefault(c, [0.0, 0.0, 0.0, 0.0])
        acc[0] += float(vl.sum())
        acc[1] += vl.size
        acc[2] += t_sum
        acc[3] += t_n
    erm_mse = sums[-1][0] / sums[-1][1]
    rows = []
    best, best_tail = None, math.inf
    for c, cand in enumerate(cands):
        s = sums[c]
        mse = s[0] / s[1]
        tail = s[2] / s[3] if s[3] else math.nan
        admissible = bool(mse <= o.val_slack * erm_mse)
        rows.append({**_public(cand), "val_mse": mse, "val_tail": tail, "admissible": admissible})
        if admissible and math.isfinite(tail) and tail < best_tail:
            best, best_tail = c, tail
    how = "validation"
    if best is None:
        best = min(range(len(cands)), key=lambda c: (cands[c]["radius"] + max(cands[c]["outer_radius"], 0), c))
        how = "fallback: no candidate within the validation-MSE slack; the smallest radius"
    method = f"{len(splits)}-fold" if o.select == "kfold" else f"holdout {o.val_frac:g}"
    record = {
        "parameters": sorted(set(amb.auto) | set(getattr(o, "_auto", {}))),
        "method": f"{method} cross-validation on the training data (seed {ctx.seed})",
        "criterion": (
            f"least validation tail loss (targets ≥ the training folds' {o.tail_quantile:g} quantile) among "
            f"candidates with validation mean loss ≤ {o.val_slack:g} × ERM's"
        ),
        "erm_val_mse": erm_mse,
        "val_slack": float(o.val_slack),
        "val_mse_threshold": float(o.val_slack * erm_mse),  # admissible: val_mse ≤ this
        "candidates": rows,
        "chosen": _public(cands[best]),
        "how": how,
        "batch": {
            "members": B,
            "iterations": int(out.iterations.max()),
            "converged": int(out.converged.sum()),
            "solver": "batched L-BFGS",
        },
    }
    return cands[best], record


def _public(cand: dict[str, float]) -> dict[str, float]:
    out = {"radius": float(cand["radius"]), "bins": int(cand["bins"])}
    if cand["outer_radius"] >= 0:
        out["outer_radius"] = float(cand["outer_radius"])
    return out


def resolved(problem: DROProblem, chosen: dict[str, Any]) -> DROProblem:
    """The problem with the auto ambiguity parameters replaced by the chosen values."""
    amb = dataclasses.replace(problem.ambiguity, radius=float(chosen["radius"]), bins=int(chosen["bins"]), auto={})
    return dataclasses.replace(problem, ambiguity=amb)
