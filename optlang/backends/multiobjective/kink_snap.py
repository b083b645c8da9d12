"""Points moved onto the coordinate kinks of their objectives (`MultiObjectiveProblem.kinks`).

Near a kink (|x − ½| in a distance function, |x|^0.8 in Kursawe's f2) the gradient flips sign, so
Adam's iterates circle it at about the distance of their steps (1e-2 – 1e-1 of the box with momentum)
instead of landing on it, and the front's points stay off the front by that much. The kink itself is
a candidate point: `KinkWatch` tells which elements of a batch circle one of their kinks, the caller
evaluates the snapped copy and keeps it only where its own merit says it is no worse, since a kink is
not always a minimum along its coordinate (|x| beside a steeper linear term).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optlang.backends.multiobjective.common import variable_scale
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

_DECAY = 0.8  # the crossing count forgets this much per step
_CIRCLING = 1.2  # ... and at least this count (two crossings within the last few steps) is circling
_CIRCLE_REACH = 0.1  # a circling element snaps from this far (a fraction of its step unit)
_CREEP_STEPS = 3  # an element that came closer to its kink on this many steps in a row creeps toward it
_CREEP_REACH = 0.3  # ... and snaps from this far (the end rays' distance variables of |x − ½|, whose
# gradient is only the augmentation's: Adam moves them ~1e-3 per step, 0.1 away when stage 0 stops)
_NEWTON = 6  # Newton steps onto a moving kink whose argument's rest depends on the element too


def _per_row(f: Any, *points: dict[str, torch.Tensor]) -> Any:
    """f at each row of the batches `points` (dicts of (B, ...) tensors), stacked: vmapped, else one row at a
    time (a function vmap cannot trace); f returns a tensor or a tuple of tensors."""
    try:
        return torch.func.vmap(f)(*points)
    except Exception:
        B = next(iter(points[0].values())).shape[0]
        rows = [f(*({k: t[b] for k, t in p.items()} for p in points)) for b in range(B)]
        if isinstance(rows[0], tuple):
            return tuple(torch.stack(parts) for parts in zip(*rows, strict=True))
        return torch.stack(rows)


class KinkWatch:
    """Which elements of a batch (B, ...) circle or creep toward one of their kinks, and the snapped
    copies.

    Every kink (variable, flat element, value) is a column: `diff` is x − value at the last step,
    `crossings` an exponentially forgotten count of its sign changes, `streak` the steps in a row that
    brought the element closer without crossing. One circling the kink crosses again and again; one
    creeping toward it comes closer step after step. An element that crossed once on its way past (a
    ray passing a cusp of |x|^0.8 toward a lower basin) is neither, and is taken from near only (a cusp
    is a local minimum along its coordinate: a point snapped there stays)."""

    def __init__(self, problem: MultiObjectiveProblem, X: dict[str, torch.Tensor]) -> None:
        by_var = {v.name: v for v in problem.variables}
        self.cols: dict[str, tuple[torch.Tensor, torch.Tensor, float]] = {}  # name -> (elements, values, unit)
        self.box: dict[str, tuple[float, float]] = {}
        # name -> [(argument, its positions, the elements they move, the slopes)]: kinks along curves
        self.moving: dict[str, list[tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, bool]]] = {}
        some = next(iter(X.values()))
        for mk in problem.moving_kinks:
            v = by_var.get(mk.name)
            if v is None or mk.name not in X or v.domain.kind in ("ball", "simplex"):
                continue
            cols = [(p, i, c) for p, (i, c) in enumerate(zip(mk.index, mk.coef, strict=True)) if c != 0]
            if cols:
                dev = some.device
                fn = mk.arg.compile(dev, some.dtype)
                pos = torch.as_tensor([p for p, _, _ in cols], dtype=torch.long, device=dev)
                idx = torch.as_tensor([i for _, i, _ in cols], dtype=torch.long, device=dev)
                coef = torch.as_tensor([c for _, _, c in cols], dtype=some.dtype, device=dev)
                self.moving.setdefault(mk.name, []).append((fn, pos, idx, coef, mk.exact))
        for name in sorted({k[0] for k in problem.kinks} | set(self.moving)):
            v = by_var.get(name)
            if v is None or name not in X:
                continue
            x = X[name].detach()
            size = x[0].numel()
            lo, hi = (v.domain.lo, v.domain.hi) if v.domain.kind == "box" else (-float("inf"), float("inf"))
            if v.domain.kind in ("ball", "simplex"):  # a snapped instance would leave its ball or simplex
                continue
            ks = [(i, val) for n, i, val in problem.kinks if n == name and i < size and lo <= val <= hi]
            idx = torch.as_tensor([i for i, _ in ks], dtype=torch.long, device=x.device)
            val = torch.as_tensor([val for _, val in ks], dtype=x.dtype, device=x.device)
            self.cols[name] = (idx, val, variable_scale(v, x))
            self.box[name] = (lo, hi)
        self.cols = {n: c for n, c in self.cols.items() if c[0].numel() or n in self.moving}
        self.diff = self._diffs(X, steps=1)  # x − its kinks, last step
        self.crossings = {n: torch.zeros_like(d) for n, d in self.diff.items()}
        self.streak = {n: torch.zeros_like(d, dtype=torch.long) for n, d in self.diff.items()}

    def _moved(self, fn: Any, X: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, size) a moving kink's argument at the batch's points."""
        with torch.no_grad():
            return _per_row(lambda v: fn(v).reshape(-1), {n: t.detach() for n, t in X.items()})

    @staticmethod
    def _newton(
        fn: Any,
        X: dict[str, torch.Tensor],
        name: str,
        pos: torch.Tensor,
        el: torch.Tensor,
        unit: float,
        steps: int = _NEWTON,
    ) -> torch.Tensor:
        """(B, columns) x − the kink along each element `el` of `name`, by Newton's method on the argument
        (forward-mode slopes along those elements, all of them at once); NaN where it does not settle to
        within 1e-6 of the unit in `steps` steps or a slope vanishes (one step: its length, unchecked — the
        side and distance `update` tracks)."""
        values = {k: t.detach().clone() for k, t in X.items()}
        B = values[name].shape[0]
        tangent = {k: torch.zeros_like(t) for k, t in values.items()}
        tangent[name].reshape(B, -1)[:, el] = 1.0

        def value_and_slope(v: dict[str, torch.Tensor], tv: dict[str, torch.Tensor]) -> Any:
            return torch.func.jvp(lambda w: fn(w).reshape(-1), (v,), (tv,))

        start = values[name].reshape(B, -1)[:, el].clone()
        step = torch.full_like(start, float("inf"))
        with torch.no_grad():
            for _ in range(steps):
                u, du = _per_row(value_and_slope, values, tangent)
                u, du = u[:, pos].to(start.dtype), du[:, pos].to(start.dtype)
                step = torch.where(du.abs() > 1e-12, u / du, torch.full_like(u, float("nan")))
                flat = values[name].reshape(B, -1)
                flat[:, el] = flat[:, el] - torch.nan_to_num(step, nan=0.0)
                if bool((step.abs() <= 1e-6 * unit).all() | torch.isnan(step).all()):
                    break
        d = start - values[name].reshape(B, -1)[:, el]
        settled = ~torch.isnan(step) if steps == 1 else step.abs() <= 1e-6 * unit
        return torch.where(settled, d, torch.full_like(d, float("nan")))

    def _diffs(self, X: dict[str, torch.Tensor], steps: int = _NEWTON) -> dict[str, torch.Tensor]:
        """Per variable (B, columns): x − the kink of each column (static kinks first, then the moving ones:
        −arg/slope; NaN where a moving kink lies outside the box)."""
        out = {}
        for n, (idx, val, _) in self.cols.items():
            flat = X[n].detach().reshape(X[n].shape[0], -1)
            parts = [flat[:, idx] - val]
            lo, hi = self.box[n]
            for fn, pos, el, coef, exact in self.moving.get(n, []):
                if exact:
                    d = self._moved(fn, X)[:, pos].to(flat.dtype) / coef
                else:
                    d = self._newton(fn, X, n, pos, el, self.cols[n][2], steps)
                at = flat[:, el] - d
                parts.append(torch.where((at >= lo) & (at <= hi), d, torch.full_like(d, float("nan"))))
            out[n] = torch.cat(parts, 1)
        return out

    def _elements(self, n: str) -> torch.Tensor:
        """The element of each column of variable n (static, then moving)."""
        return torch.cat([self.cols[n][0], *(el for _, _, el, _, _ in self.moving.get(n, []))])

    def update(self, X: dict[str, torch.Tensor]) -> None:
        """Record the batch's new points (after a step)."""
        for n, diff in self._diffs(X, steps=1).items():
            prev = self.diff[n]
            crossed = diff * prev < 0
            self.crossings[n] = _DECAY * self.crossings[n] + crossed.to(diff.dtype)
            closer = (diff.abs() < prev.abs()) & ~crossed
            self.streak[n] = torch.where(closer, self.streak[n] + 1, torch.zeros_like(self.streak[n]))
            self.diff[n] = diff

    def subset(self, ti: torch.Tensor) -> KinkWatch:
        """The rows `ti` as a watch of their own."""
        sub = KinkWatch.__new__(KinkWatch)
        sub.cols, sub.box, sub.moving = self.cols, self.box, self.moving
        sub.diff = {n: t[ti] for n, t in self.diff.items()}
        sub.crossings = {n: t[ti] for n, t in self.crossings.items()}
        sub.streak = {n: t[ti] for n, t in self.streak.items()}
        return sub

    def kinks_per_element(self) -> int:
        """The most kinks any element has (s_decept's |y − A| ± B: three)."""
        most = 0
        for idx, _, _ in self.cols.values():
            most = max(most, int(torch.bincount(idx).max()) if idx.numel() else 0)
        return most

    def _ranked(self, idx: torch.Tensor, val: torch.Tensor, rank: int) -> torch.Tensor:
        """Mask of the columns that are their element's `rank`-th kink by value (its last when it has fewer)."""
        keep = torch.zeros(idx.numel(), dtype=torch.bool, device=idx.device)
        for e in torch.unique(idx).tolist():
            cols = torch.nonzero(idx == e).flatten()
            order = cols[torch.argsort(val[cols])]
            keep[order[min(rank, order.numel() - 1)]] = True
        return keep

    def snapped(
        self, X: dict[str, torch.Tensor], tol: float, everything: bool = False, rank: int | None = None
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Copies of X with every element near one of its kinks moved onto the nearest, and the (B,)
        mask of the rows that moved. Near: within `tol` of the variable's step unit (box width, radius,
        or max(1, |x|∞)), within `_CIRCLE_REACH` of it for an element circling that kink, within
        `_CREEP_REACH` for one creeping toward it. Kinks outside the variable's box were dropped at
        construction: the copies stay in their box. `everything`: every element onto its nearest kink,
        however far (one candidate per row: all of its kinked coordinates taken at once), or with `rank`
        onto its rank-th kink by value (an element with several: s_decept's least value is the middle one
        of three, never the nearest from afar)."""
        some = next(iter(X.values()))
        moved = torch.zeros(some.shape[0], dtype=torch.bool, device=some.device)
        out = {n: t.detach().clone() for n, t in X.items()}
        diffs = self._diffs(X)
        for n, (idx, val, unit) in self.cols.items():
            flat = out[n].reshape(out[n].shape[0], -1)  # a view of the clone
            signed = diffs[n]  # (B, columns): x − kink
            elements = self._elements(n)
            d = torch.where(torch.isnan(signed), torch.full_like(signed, float("inf")), signed.abs())
            reach = torch.full_like(d, tol * unit)
            reach = torch.where(self.crossings[n] >= _CIRCLING, max(tol, _CIRCLE_REACH) * unit, reach)
            reach = torch.where(self.streak[n] >= _CREEP_STEPS, max(tol, _CREEP_REACH) * unit, reach)
            near = ((d <= reach) | everything) & (d > 0) & torch.isfinite(d)
            if everything and rank is not None:  # the rank-th static kink by value (moving ones: none)
                ranked = torch.zeros(elements.numel(), dtype=torch.bool, device=d.device)
                ranked[: idx.numel()] = self._ranked(idx, val, rank)
                near &= ranked[None]
            if not bool(near.any()):
                continue
            d = torch.where(near, d, torch.full_like(d, float("inf")))
            # one kink per element: the nearest of those in reach (columns sharing an element compete)
            target = flat.clone()
            best = torch.full_like(flat, float("inf"))
            for c in range(elements.numel()):
                e = int(elements[c])
                take = d[:, c] < best[:, e]
                best[:, e] = torch.where(take, d[:, c], best[:, e])
                at = val[c].expand_as(d[:, c]) if c < idx.numel() else flat[:, e] - signed[:, c]
                target[:, e] = torch.where(take, at, target[:, e])
            rows = near.any(1)
            flat[rows] = target[rows]
            moved |= rows
        return out, moved


_SHARED = 1e-5  # an end is on a moving kink within this fraction of its step unit


def onto_moving_kinks(
    problem: MultiObjectiveProblem,
    X: dict[str, torch.Tensor],
    A: dict[str, torch.Tensor] | None = None,
    B: dict[str, torch.Tensor] | None = None,
) -> dict[str, torch.Tensor]:
    """X with each element moved onto its moving kink (an element's first; where the kink is in its box), no
    evaluation. With A and B (X the midpoints of A and B) only onto a kink that both A and B lie on: the
    midpoint of two points of a curved kink (y = 5 cos x) is off it, where a cusp (|·|^⅓) makes it far from the
    front, and the kink at the midpoint's other coordinates is the predictor instead."""
    if not problem.moving_kinks:
        return X
    watch = KinkWatch(problem, X)
    if not watch.moving:
        return X
    dx = watch._diffs(X)
    da, db = (watch._diffs(A), watch._diffs(B)) if A is not None and B is not None else (None, None)
    out = {n: t.detach().clone() for n, t in X.items()}
    for n, (idx, _, unit) in watch.cols.items():
        if n not in watch.moving:
            continue
        flat = out[n].reshape(out[n].shape[0], -1)
        elements = watch._elements(n)
        done = torch.zeros_like(flat, dtype=torch.bool)
        for c in range(idx.numel(), elements.numel()):  # the moving columns
            e = int(elements[c])
            on = torch.isfinite(dx[n][:, c]) & ~done[:, e]
            if da is not None and db is not None:
                on &= (da[n][:, c].abs() <= _SHARED * unit) & (db[n][:, c].abs() <= _SHARED * unit)
            flat[:, e] = torch.where(on, flat[:, e] - dx[n][:, c], flat[:, e])
            done[:, e] |= on
    return out
