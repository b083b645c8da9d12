"""What the multi-objective backends share: a batched evaluator of the objective vector, batched
projections and starts, a projected Adam step, the archive of non-dominated evaluated points, the
front summary and the refusals. Used by `paretom3` (the research method) and `weighted-sum` (its baseline).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.common import project
from optlang.backends.multiobjective.metrics import nondominated_mask, weakly_dominated
from optlang.lazy import lazy_module, no_grad
from optlang.problem import MultiObjectiveProblem, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


_NO_SIZE = 1e30  # the size of a constraint not written `a <= b` (`BatchEval.limits`: the scale rules)


class BatchEval:
    """Evaluates the objective vector (and optionally the preference) at B points at once.

    Points are dicts name -> (B, *shape) tensors. torch.func.vmap is tried first; functions it cannot
    trace fall back to a Python loop. `count` is the number of point evaluations done: one point
    evaluation = the whole objective vector (plus the preference, which inlines it) at one point,
    with or without its reverse-mode gradient.
    """

    def __init__(
        self, problem: MultiObjectiveProblem, ctx: RunContext, with_preference: bool, with_constraints: bool = False
    ) -> None:
        self.joint = problem.joint.compile(ctx.device, ctx.dtype)  # the objectives in one pass
        pref = problem.preference if with_preference else None
        self.pref = pref.compile(ctx.device, ctx.dtype) if pref is not None else None
        self.m = len(problem.objectives)  # the objectives' columns come first
        self.k = self.m + (self.pref is not None)  # the columns before the constraints'
        # general constraints (front mode): their values follow the objectives' columns, each flattened
        cons = problem.constraints if with_constraints else ()
        self.cons = [(c.fn.compile(ctx.device, ctx.dtype), c.sense) for c in cons]
        # |a| + |b| of each constraint `a <= b`: its columns follow the constraints' (`limits`)
        self.sizes = [c.size.compile(ctx.device, ctx.dtype) if c.size is not None else None for c in cons]
        self.scale: torch.Tensor | None = None  # per constraint column: 1 + max |g| over the first batch
        self.eq: torch.Tensor | None = None  # per constraint column: an equality
        self._con_sizes: list[int] = []
        self.device = str(ctx.device)
        self.vmap_ok: bool | None = None
        self.count = 0
        self.retreats = 0  # rows taken back from a point where F is +∞ or NaN (`repaired`)

    def _one(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        Fs = self.joint(values)
        head = torch.stack(Fs if self.pref is None else [*Fs, self.pref(values).reshape(())])
        if not self.cons:
            return head
        parts = [g(values).reshape(-1).to(head.dtype) for g, _ in self.cons]
        self._con_sizes = [int(t.shape[0]) for t in parts]  # static under vmap: the shapes of one point
        sizes = [
            size(values).reshape(-1).to(head.dtype).expand_as(g) if size is not None else torch.full_like(g, _NO_SIZE)
            for size, g in zip(self.sizes, parts, strict=True)
        ]
        return torch.cat([head, *parts, *sizes])

    @property
    def c(self) -> int:
        """The number of constraint columns (each constraint's elements, flattened; known after a call)."""
        return sum(self._con_sizes)

    @property
    def constrained(self) -> bool:
        """True when the constraint columns are evaluated (front mode of a constrained model)."""
        return bool(self.cons)

    def violations(self, out: torch.Tensor) -> torch.Tensor:
        """(B, c) scaled violations of the constraint columns of `out` (an output of this evaluator):
        max(g, 0), |g| for equalities, each divided by its column's scale 1 + max |g| over the first batch
        seen here, so that a tolerance means the same for a constraint in metres as in millimetres."""
        G = out[:, self.k : self.k + self.c]
        if self.scale is None:
            g = G.detach()
            self.scale = 1.0 + torch.where(torch.isfinite(g), g.abs(), torch.zeros_like(g)).max(0).values
        if self.eq is None:
            senses = [sense for _, sense in self.cons]
            flags = [torch.full((n,), q == "==", device=G.device) for q, n in zip(senses, self._con_sizes, strict=True)]
            self.eq = torch.cat(flags)
        return torch.where(self.eq, G.abs(), G.clamp(min=0)) / self.scale

    def limits(self, out: torch.Tensor, tol: float) -> torch.Tensor:
        """(B, c) the largest scaled violation (`violations`) each row of `out` may have in each constraint
        column and be feasible: `tol`, and at most tol · (1 + |a| + |b|) / scale — a violation of `a <= b` at
        most `tol` of the size of its two sides at that point too. The scale 1 + max |g| over the first batch
        is a constraint's size where the random starts are, not where the front is: MW9's products of
        distances are ~7e3 at the starts and O(1) on the front, and `tol` of that scale admitted front points
        7e-3 outside (the Result's own check of the constraint failed); a steep constraint's
        ((1 − x₀ − x₁)(1 + ‖x‖²)² ≤ 0, ~1e6 at the starts) front points ended 0.4 inside it. The size keeps
        the tolerance relative where a constraint is large at the front too (the welded beam's stress limit
        13 600 psi, which float32 resolves to ~1e-3 psi: an absolute 1e-3 there lost 2 % of the front's
        hypervolume). The penalty keeps the first batch's scale: scaled by the size too, its rays crossed the
        infeasible bands of CTP6–8 and Osyczka–Kundu's pieces less freely (mean HV 0.932 → 0.910 over CTP2–8,
        CONSTR, SRN, TNK and OSY, seeds 0–2). Call after `violations`."""
        assert self.scale is not None
        S = out[:, self.k + self.c :].detach()
        return tol * torch.clamp((1.0 + S) / self.scale.to(S.dtype), max=1.0)

    def feasible(
        self, out: torch.Tensor, tol: float, V: torch.Tensor | None = None, columns: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B,) the rows of `out` within `limits` in every constraint column, or in the `columns` (a (c,) mask)
        only (`V`: their `finite_violations`, when already computed)."""
        V = self.finite_violations(out.detach()) if V is None else V
        within = V <= self.limits(out, tol).to(V.dtype)
        return (within if columns is None else within[:, columns]).all(1)

    def finite_violations(self, out: torch.Tensor) -> torch.Tensor:
        """`violations`, a non-finite one counted as far outside (1e6): a penalty's terms, and never feasible."""
        V = self.violations(out)
        return torch.where(torch.isfinite(V), V, torch.full_like(V, 1e6))

    def residuals(
        self, out: torch.Tensor, margin: float | torch.Tensor, held: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, c) what a feasibility step drives to zero: g/scale for equalities and for the inequalities
        `held` (B, c) as equalities, max(g/scale + margin, 0) for the others (aiming `margin` inside, so
        that the point lands on the feasible side; per entry when a tensor: half of `limits`)."""
        self.violations(out)  # sets the scales and the equality flags on a first call
        assert self.scale is not None and self.eq is not None
        G = out[:, self.k : self.k + self.c] / self.scale
        two_sided = self.eq if held is None else self.eq | held
        return torch.where(two_sided, G + torch.where(self.eq, 0.0, margin), (G + margin).clamp(min=0))

    def __call__(self, X: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, k) tensor of [F_1, ..., F_m(, φ)] with the autograd graph kept."""
        B = next(iter(X.values())).shape[0]
        self.count += B
        if B == 1:  # no batching overhead for a single point
            return self._one({k: v[0] for k, v in X.items()}).unsqueeze(0)
        if self.vmap_ok is not False and (B > 8 or self.device != "cpu"):  # vmap pays off on many points
            try:
                out = torch.func.vmap(self._one)(X)
                self.vmap_ok = True
                return out
            except Exception:  # a function vmap cannot trace (data-dependent control flow, .item())
                self.vmap_ok = False
        return torch.stack([self._one({k: v[b] for k, v in X.items()}) for b in range(B)])


class JointJacobian:
    """F and its Jacobian at a flat float64 point (`fl`: the problem's `FlatVariables`), from one evaluation
    of the objectives together (`MultiObjectiveProblem.joint`) and one backward pass per objective; the last
    point's are kept, as SLSQP asks for the objective and each constraint at one point in separate calls.
    The arrays returned are that cache: read them, do not write them."""

    def __init__(self, problem: MultiObjectiveProblem, fl: Any) -> None:
        self.joint = problem.joint.compile("cpu", torch.float64)
        self.fl = fl
        self.last: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.last is not None and np.array_equal(self.last[0], x):
            return self.last[1], self.last[2]
        zt = torch.as_tensor(x, dtype=torch.float64).requires_grad_(True)
        Fs = self.joint(self.fl.split(zt))
        m = len(Fs)
        J = np.zeros((m, x.size))
        for k, f in enumerate(Fs):  # each objective's own graph (a zero upstream through another's is NaN)
            if f.requires_grad:
                (g,) = torch.autograd.grad(f, zt, allow_unused=True, retain_graph=k < m - 1)
                if g is not None:
                    J[k] = g.numpy()
        F = np.array([float(f.detach()) for f in Fs])
        self.last = (x.copy(), F, J)
        return F, J


def batched_project_(variables: tuple[Variable, ...], X: dict[str, torch.Tensor]) -> None:
    """Project every instance of every variable onto its domain, in place."""
    with torch.no_grad():
        for v in variables:
            t = X[v.name]
            if v.domain.kind == "free":
                continue
            if v.domain.kind == "box":
                t.copy_(project(v.domain, t))
            else:  # ball / simplex act on a whole instance
                for b in range(t.shape[0]):
                    t[b].copy_(project(v.domain, t[b]))


def coupled_domains(variables: tuple[Variable, ...]) -> dict[str, str]:
    """The variables whose domain couples their coordinates (simplex, ball): `ProjectedAdam`'s `coupled`."""
    return {v.name: v.domain.kind for v in variables if v.domain.kind in ("simplex", "ball")}


def variable_scale(v: Variable, x0: torch.Tensor) -> float:
    """The length unit of a variable's steps: the box width, the ball radius, or max(1, |x0|∞)."""
    d = v.domain
    if d.kind == "box" and np.isfinite(d.lo) and np.isfinite(d.hi):
        return float(d.hi - d.lo)
    if d.kind == "ball":
        return float(d.radius)
    if d.kind == "simplex":
        return 1.0
    return max(1.0, float(x0.detach().abs().max()))


def batched_init(variables: tuple[Variable, ...], B: int, ctx: RunContext, offset: int = 0) -> dict[str, torch.Tensor]:
    """B seeded feasible starts per variable (instance 0 uses the variable's `init` when given)."""
    out: dict[str, torch.Tensor] = {}
    rng = np.random.default_rng([ctx.seed, 7919 + offset])
    for v in variables:
        rows = []
        for b in range(B):
            if b == 0 and v.init is not None:
                rows.append(v.initial(rng))
            else:
                free = Variable(v.name, v.shape, v.domain, None)
                rows.append(free.initial(rng))
        out[v.name] = torch.as_tensor(np.stack(rows), dtype=ctx.dtype, device=ctx.device).contiguous()
    return out


class ProjectedAdam:
    """Adam on a dict of (B, ...) tensors with a per-variable step unit and a cosine-decayed rate.

    `coupled`: the variables on a simplex or a ball, whose domain couples their coordinates. Their step is
    scaled by one number per instance (the root of the mean second moment), not per coordinate: with a
    diagonal scaling D the fixed points of x = P(x − D g) are not KKT points of a coupled domain (on the
    simplex they have D_i g_i equal over the free coordinates, not g_i), and the iterates stalled off the
    front (a mean–variance front's points up to 0.19 of its range inside). On a simplex the gradient also
    loses its mean over each instance (the component along (1, …, 1), normal to the simplex, would only
    shrink the step)."""

    def __init__(
        self,
        X: dict[str, torch.Tensor],
        scales: dict[str, float],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.99),
        coupled: dict[str, str] | None = None,
    ) -> None:
        self.m = {k: torch.zeros_like(v) for k, v in X.items()}
        self.v = {k: torch.zeros_like(v) for k, v in X.items()}
        self.scales = scales
        self.lr = lr
        self.b1, self.b2 = betas
        self.t = 0
        self.coupled = coupled or {}  # name -> "simplex" | "ball"

    @no_grad
    def step(self, X: dict[str, torch.Tensor], G: dict[str, torch.Tensor], factor: float) -> None:
        self.t += 1
        c1 = 1 - self.b1**self.t
        c2 = 1 - self.b2**self.t
        for k, g in G.items():
            kind = self.coupled.get(k)
            flat = (-1, *([1] * (g.dim() - 1)))
            if kind == "simplex" and g.dim() > 1:
                g = g - g.reshape(g.shape[0], -1).mean(1).reshape(flat)
            self.m[k].mul_(self.b1).add_(g, alpha=1 - self.b1)
            self.v[k].mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            if kind is not None and g.dim() > 1:  # one scale per instance
                denom = (self.v[k].reshape(g.shape[0], -1).mean(1) / c2).sqrt_().add_(1e-12).reshape(flat)
            else:
                denom = (self.v[k] / c2).sqrt_().add_(1e-12)
            X[k].sub_(self.lr * factor * self.scales[k] * (self.m[k] / c1) / denom)


def cosine(k: int, total: int, final: float) -> float:
    """Cosine decay from 1 to `final` over `total` steps."""
    s = min(1.0, k / max(1, total))
    return final + (1 - final) * 0.5 * (1 + math.cos(math.pi * s))


def safe_grads(
    loss: torch.Tensor, X: dict[str, torch.Tensor], retain: bool = False
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Gradients of a scalar loss w.r.t. the batch, and a (B,) mask of instances whose gradient is finite."""
    names = list(X)  # never empty: autograd.grad refuses empty inputs
    gs = torch.autograd.grad(loss, [X[k] for k in names], retain_graph=retain, allow_unused=True)
    out: dict[str, torch.Tensor] = {}
    finite: list[torch.Tensor] = []
    for k, g in zip(names, gs, strict=True):
        g = torch.zeros_like(X[k]) if g is None else g
        finite.append(torch.isfinite(g).reshape(g.shape[0], -1).all(1))
        out[k] = g
    return out, torch.stack(finite).all(0)


def nudge(variables: tuple[Variable, ...], X: dict[str, torch.Tensor], bad: torch.Tensor, delta: float) -> dict:
    """Copies of the points moved a relative `delta` toward the domain's interior (for the bad instances).

    Used where a gradient is infinite on the boundary (e.g. sqrt at 0, as in ZDT1 at x₁ = 0).
    """
    out = {}
    for v in variables:
        t = X[v.name].detach().clone()
        d = v.domain
        if d.kind == "box":
            lo = d.lo if np.isfinite(d.lo) else None
            hi = d.hi if np.isfinite(d.hi) else None
            if lo is not None and hi is not None:
                centre = torch.full_like(t, 0.5 * (lo + hi))
                moved = t + delta * (centre - t)
            elif lo is not None:
                moved = t + delta * (1.0 + abs(lo))
            elif hi is not None:
                moved = t - delta * (1.0 + abs(hi))
            else:  # a box infinite on both sides is free
                moved = t + delta * (1.0 + t.abs())
        elif d.kind == "simplex":
            moved = (1 - delta) * t + delta / t[0].numel()
        elif d.kind == "ball":
            moved = (1 - delta) * t
        else:
            moved = t + delta * (1.0 + t.abs())
        sel = bad.reshape(-1, *([1] * (t.dim() - 1)))
        out[v.name] = torch.where(sel, moved, t).requires_grad_(True)
    return out


class Archive:
    """The non-dominated objective vectors (and their points, while small) of every evaluated iterate.

    Kept incrementally: each batch is merged with the current front and filtered, so memory follows
    the front's size, not the number of evaluations.
    """

    def __init__(self, max_floats: int = 20_000_000) -> None:
        self.F = np.zeros((0, 0))
        self.X: dict[str, np.ndarray] | None = None
        self.max_floats = max_floats
        self.keep_points = True
        self.seen = 0

    def add(self, F: torch.Tensor, X: dict[str, torch.Tensor]) -> None:
        Fn = F.detach().to("cpu", torch.float64).numpy()
        ok = np.all(np.isfinite(Fn), axis=1)
        if not ok.any():
            return
        self.seen += int(ok.sum())
        if self.F.size:
            ok &= ~weakly_dominated(self.F, Fn)  # drop new points that a kept point weakly dominates
            if not ok.any():
                return
        Fn = Fn[ok]
        Xn = {k: v.detach().to("cpu", torch.float64).numpy()[ok] for k, v in X.items()} if self.keep_points else None
        own = nondominated_mask(Fn)  # the new batch among itself (small)
        Fn = Fn[own]
        Xn = {k: v[own] for k, v in Xn.items()} if Xn is not None else None
        if self.F.size == 0:
            self.F, self.X = Fn, Xn
            return
        # kept points that a new one weakly dominates leave: no kept point weakly dominates a new one, so
        # "new ≤ kept" here is strict domination (or an equal row, which the kept row would have dropped)
        gone = weakly_dominated(Fn, self.F)
        self.F = np.concatenate([self.F[~gone], Fn])
        if Xn is not None and self.X is not None:
            self.X = {k: np.concatenate([self.X[k][~gone], Xn[k]]) for k in Xn}
            if sum(v.size for v in self.X.values()) > self.max_floats:
                self.keep_points, self.X = False, None
        else:
            self.X = None

    def all(self) -> np.ndarray:
        """The non-dominated objective vectors seen so far (every seen point is dominated by or equal to one)."""
        return self.F

    def front(self) -> tuple[np.ndarray, dict[str, np.ndarray] | None]:
        """Non-dominated objective vectors seen (n, m), with their points when kept (name -> (n, *shape))."""
        return self.F, self.X


def subsample_front(F: np.ndarray, k: int) -> np.ndarray:
    """Indices of the front points kept in info["front"]: all when k ≤ 0 or the front has at most k.

    Otherwise, for 2 objectives, the points of least exclusive hypervolume are removed one at a time
    (reference: nadir + 10 % of the range; the two extremes are always kept), which keeps the subset's
    hypervolume as high as a greedy removal can; for 3+ objectives, greedy farthest-point selection in
    the normalized objective space (extremes first), which keeps the spread.
    """
    n = F.shape[0]
    if k <= 0 or n <= k:
        return np.arange(n)
    if F.shape[1] == 2:
        return _hv_greedy_2d(F, max(k, 2))
    span = F.max(0) - F.min(0)
    Z = (F - F.min(0)) / np.where(span > 0, span, 1.0)
    chosen = list(dict.fromkeys(int(i) for i in np.argmin(Z, axis=0)))[:k]
    d = np.min(((Z[:, None, :] - Z[chosen][None, :, :]) ** 2).sum(-1), axis=1)
    while len(chosen) < k:
        i = int(np.argmax(d))
        chosen.append(i)
        d = np.minimum(d, ((Z - Z[i]) ** 2).sum(-1))
    return np.sort(np.asarray(chosen))


def _hv_greedy_2d(F: np.ndarray, k: int) -> np.ndarray:
    """Remove the least exclusive-hypervolume contributor of a 2-D non-dominated set until k remain."""
    order = np.argsort(F[:, 0])
    P = F[order]
    ref = hv_reference(P)
    alive = list(range(P.shape[0]))

    def contrib(j: int) -> float:
        i = alive[j]
        left_f2 = P[alive[j - 1], 1] if j > 0 else ref[1]
        right_f1 = P[alive[j + 1], 0] if j + 1 < len(alive) else ref[0]
        if j == 0 or j + 1 == len(alive):
            return np.inf
        return float((right_f1 - P[i, 0]) * (left_f2 - P[i, 1]))

    c = [contrib(j) for j in range(len(alive))]
    while len(alive) > k:
        j = int(np.argmin(c))
        del alive[j], c[j]
        for jj in (j - 1, j):
            if 0 <= jj < len(alive):
                c[jj] = contrib(jj)
    return np.sort(order[np.asarray(alive)])


def front_rule(n: int, k: int, m: int) -> str:
    """The sentence saying which front points info["front"] holds."""
    if k <= 0 or n <= k:
        return f"all {n} non-dominated evaluated points"
    how = "least hypervolume contributors removed greedily" if m == 2 else "greedy farthest-point spread"
    return f"{k} of {n} non-dominated evaluated points ({how}; front_max = {k})"


def front_info(names: list[str], F: np.ndarray, X: dict[str, np.ndarray] | None, k: int) -> list[dict[str, Any]]:
    """The JSON-able front list: [{"objectives": {name: value}, "values": {var: list}}] (see front_rule);
    X: the points' values (name -> (n, *shape)) or None. Rows become Python lists in one call per array."""
    idx = subsample_front(F, k)
    rows = np.asarray(F, dtype=np.float64)[idx].tolist()
    vals = {v: np.asarray(a)[idx].tolist() for v, a in X.items()} if X is not None else None
    out: list[dict[str, Any]] = []
    for j, r in enumerate(rows):
        row: dict[str, Any] = {"objectives": dict(zip(names, r, strict=True))}
        if vals is not None:
            row["values"] = {v: a[j] for v, a in vals.items()}
        out.append(row)
    return out


def hv_reference(F: np.ndarray) -> np.ndarray:
    """The hypervolume reference point used in reports: nadir + 10% of the front's range."""
    lo, hi = F.min(0), F.max(0)
    return hi + 0.1 * np.where(hi > lo, hi - lo, 1.0)


def refuse_multiobjective(form: Any, kinds: frozenset[str], front_constraints: bool = False) -> str | None:
    """The refusals shared by the multi-objective backends (kind, constraints, discrete variables);
    `front_constraints`: the backend honours general constraints (front and preferred point)."""
    if form.kind not in kinds:
        return f"solves multiobjective problems, not {form.kind}"
    if form.constraints and not front_constraints:
        return (
            "cannot honour general constraints (" + "; ".join(form.constraints) + "): only variable domains "
            "(box, simplex, ball) are projected on"
        )
    discrete = [v.name for v in form.variables if v.kind != "real"]
    if discrete:
        return f"needs continuous variables, but {', '.join(discrete)} are discrete"
    return None


def min_norm_faces(G: np.ndarray, reg: float = 1e-6, allowed: np.ndarray | None = None) -> np.ndarray:
    """Exact min of λᵀGλ + ε‖λ − 1/m‖² on the simplex for small m, face by face (ε = reg · tr(G) / m).

    The small pull toward uniform weights picks, among (near-)minimizers of a singular G, the most
    balanced one instead of an arbitrary vertex (a vertex λ = e_i can pin x on a weak-Pareto face).
    """
    B, m, _ = G.shape
    allowed = np.ones((B, m), dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool).copy()
    allowed[~allowed.any(1)] = True
    prior = allowed / allowed.sum(1, keepdims=True)
    eps = reg * np.trace(G, axis1=1, axis2=2) / m + 1e-300
    Gr = G + eps[:, None, None] * np.eye(m)
    best = np.full(B, np.inf)
    lam = prior.copy()
    for r in range(1, m + 1):
        for S in itertools.combinations(range(m), r):
            idx = np.asarray(S)
            inv = np.linalg.inv(Gr[:, idx][:, :, idx])
            a = inv @ (eps[:, None, None] * prior[:, idx, None])
            b = inv @ np.ones((B, r, 1))
            mu = (1.0 - a.sum(axis=(1, 2))) / b.sum(axis=(1, 2))
            w = (a + mu[:, None, None] * b)[:, :, 0]
            ok = (w >= -1e-12).all(1) & allowed[:, idx].all(1)
            full = np.zeros((B, m))
            full[:, idx] = np.clip(w, 0.0, None)
            d = full - prior
            val = np.einsum("bi,bij,bj->b", full, G, full) + eps * (d * d).sum(1)
            take = ok & (val < best)
            best = np.where(take, val, best)
            lam[take] = full[take]
    return lam


def step_back(
    X: dict[str, torch.Tensor],
    out: torch.Tensor,
    bad: torch.Tensor,
    good: tuple[dict[str, torch.Tensor], torch.Tensor] | None,
    momenta: list[dict[str, torch.Tensor]],
) -> torch.Tensor | None:
    """Rows `bad` of the batch X (evaluated as `out`: +∞ or NaN there, a pole or where the model is undefined)
    go back to their last finite point and its evaluation (`good`: the batch's points and `out` then), as
    constants (no gradient this step), with half their momentum (each optimizer's first moments in
    `momenta`) so that the next step goes the same way half as far; without `good` (a batch's first
    evaluation) to the nearest finite row's. X is changed in place (evaluate copies of it so that the graph
    allows that). Returns `out` with those rows replaced, or None when no row is finite to go to."""
    rows = torch.nonzero(bad).flatten()
    if good is None:
        finite = torch.nonzero(~bad).flatten()
        if finite.numel() == 0:
            return None
        with torch.no_grad():
            flat = torch.cat([t.detach().reshape(t.shape[0], -1) for t in X.values()], 1)
            donor = finite[torch.cdist(flat[rows], flat[finite]).argmin(1)]
        to_x = {k: t.detach()[donor].clone() for k, t in X.items()}
        to_out = out.detach()[donor]
    else:
        to_x = {k: t[rows] for k, t in good[0].items()}
        to_out = good[1][rows]
    with torch.no_grad():
        for k, t in X.items():
            t[rows] = to_x[k].to(t.dtype)
            for m in momenta:
                m[k][rows] *= 0.5
    placed = torch.zeros_like(out.detach()).index_copy(0, rows, to_out.to(out.dtype))
    return torch.where(bad[:, None], placed, out)


def repaired(
    X: dict[str, torch.Tensor],
    out: torch.Tensor,
    ev: BatchEval,
    good: tuple[dict[str, torch.Tensor], torch.Tensor] | None,
    momenta: list[dict[str, torch.Tensor]],
) -> torch.Tensor | None:
    """`out` (ev's evaluation of the batch X) when its objectives are finite; else with the rows at +∞ or NaN
    stepped back (`step_back`, counted in `ev.retreats`); None at −∞ (unbounded below: a divergence) or when
    no row is finite to go to."""
    F = out[:, : ev.m]
    bad = ~torch.isfinite(F.detach()).all(1)
    if not bool(bad.any()):
        return out
    if minus_infinity(F):
        return None
    ev.retreats += int(bad.sum())
    return step_back(X, out, bad, good, momenta)


def minus_infinity(t: torch.Tensor) -> bool:
    """Whether any value of t is −∞: unbounded below there, a divergence (unlike +∞ at a pole or NaN where
    the model is undefined, which `step_back` handles)."""
    return bool((t.detach() == -float("inf")).any())


def nan_to_zero(g: torch.Tensor) -> torch.Tensor:
    return torch.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0)


def archive_feasible(
    archive: Archive,
    ev: BatchEval,
    out: torch.Tensor,
    X: dict[str, torch.Tensor],
    tol: float,
    V: torch.Tensor | None = None,
) -> torch.Tensor:
    """Archive the rows of `out` (ev's evaluation of the points X) whose general constraints hold within
    `tol` (every row when there are none; `V`: their `finite_violations`, when already computed);
    returns the (B,) mask of those rows."""
    m = ev.k
    F = out[:, :m].detach()
    if not ev.constrained:
        archive.add(F, X)
        return torch.ones(F.shape[0], dtype=torch.bool, device=F.device)
    ok = ev.feasible(out, tol, V)
    if bool(ok.any()):
        archive.add(F[ok], {k: v[ok] for k, v in X.items()})
    return ok


def no_feasible_point(evaluations: int, tol: float) -> str:
    """The `error` of a constrained front that never saw a feasible point."""
    return (
        f"no feasible point among the {evaluations} evaluated (constraint_tol {tol:g}); this is not a proof "
        "that none exists"
    )


def front_feasibility(
    problem: MultiObjectiveProblem, pts: dict[str, np.ndarray] | None, ev: BatchEval, tol: float
) -> tuple[bool, str]:
    """The `front_feasible` check: every front point's general constraints re-evaluated in float64 on the
    CPU from the model's own functions, each violation relative to what the solve allowed (`limits`: the
    solve's first-batch scale, or the size of the constraint's two sides where smaller), at most `tol`
    plus 100 ulps of the solve's dtype (a float32 solve admits points by float32 values).
    Fails when the points were not kept (`pts` None: too large a front)."""
    from optlang.backends.base import RunContext

    if pts is None:
        return False, "the front's points were not kept (too large): not re-checked"
    ctx64 = RunContext(device="cpu", dtype="float64")
    ev64 = BatchEval(problem, ctx64, with_preference=False, with_constraints=True)
    ev64.scale = ev.scale.to("cpu", torch.float64) if ev.scale is not None else None
    n = next(iter(pts.values())).shape[0]
    worst = 0.0
    for i0 in range(0, n, 4096):
        X = {k: torch.as_tensor(v[i0 : i0 + 4096], dtype=torch.float64) for k, v in pts.items()}
        with torch.no_grad():
            out = ev64(X)
        V = ev64.violations(out)
        if V.numel():  # each violation as a multiple of what `limits` allows, times `tol`
            worst = max(worst, float((V / ev64.limits(out, 1.0)).max()))
    eps = float(torch.finfo(torch.float32 if ev.scale is None else ev.scale.dtype).eps)
    limit = tol + 100 * eps
    return (
        bool(worst <= limit),
        f"{n} front points re-evaluated in float64: largest scaled violation {worst:.3g} (limit {limit:.3g}; "
        "a violation of a <= b relative to 1 + |a| + |b|, or to the solve's scale where that is smaller)",
    )
