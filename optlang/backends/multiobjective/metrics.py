"""Multi-objective quality measures, in float64 numpy.

What lives here: non-dominated filtering, exact hypervolume for 2 and 3 objectives, IGD and
Das-Dennis reference directions. Nothing here solves. All objectives are minimized. The ZDT/DTLZ
test problems and their analytic fronts are in benchmarks/mo_problems.py (test data, not library).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

# ----------------------------------------------------------------------------- dominance


def dominates(a: np.ndarray, b: np.ndarray, tol: float = 0.0) -> bool:
    """True when a Pareto-dominates b: a ≤ b + tol everywhere and a < b − tol somewhere."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return bool(np.all(a <= b + tol) and np.any(a < b - tol))


def strictly_dominating_count(seen: np.ndarray, f: np.ndarray, tol: float) -> int:
    """How many rows of `seen` are better than f in *every* objective by more than tol.

    The sound test of a weak-Pareto claim: Pareto domination with a tolerance ("≤ f + tol everywhere,
    < f − tol somewhere") counts a front neighbour slightly worse in one objective as dominating.
    """
    seen = np.atleast_2d(np.asarray(seen, dtype=np.float64))
    if seen.size == 0:
        return 0
    return int(np.sum(np.all(seen < np.asarray(f, dtype=np.float64) - tol, axis=1)))


def nondominated_mask(F: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows of F (n, m) that no other row dominates (of equal rows, the first kept)."""
    F = np.asarray(F, dtype=np.float64)
    n = F.shape[0]
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    order = np.lexsort(F.T[::-1])  # by the first objective, ties by the next ones
    if F.shape[1] == 2:  # a sweep: keep a row when its f2 is below every f2 kept so far
        f2 = F[order, 1]
        prev = np.concatenate([[np.inf], np.minimum.accumulate(f2)[:-1]])
        keep[order[f2 < prev]] = True
        return keep
    # 3+ objectives: rows in order of (Σ f, f1, f2, ..., index); a dominator (or an equal row of lower index)
    # comes strictly earlier, and whatever a dropped row weakly dominates a kept row weakly dominates too,
    # so each block of rows is tested against the kept rows before it and the earlier rows of the block
    # (vectorized, about half the pairs of an all-pairs test, O(512 n) memory)
    key = np.clip(F, -1e300, 1e300).sum(1)  # monotone in every objective (clipped: no inf − inf); NaN rows last
    order = np.lexsort((np.arange(n), *F.T[::-1], key))
    G = F[order]
    kept = np.zeros(n, dtype=bool)
    tri = _upper(512)  # tri[j, a]: j < a
    for i0 in range(0, n, 512):
        Fi = G[i0 : i0 + 512]
        b = Fi.shape[0]
        hit = weakly_dominated(G[:i0][kept[:i0]], Fi)
        hit |= (weakly_dominates(Fi, Fi) & tri[:b, :b]).any(0)
        kept[i0 : i0 + b] = ~hit
    keep[order[kept]] = True
    return keep


def nondominated_append(F: np.ndarray, mask: np.ndarray, new: np.ndarray) -> np.ndarray:
    """`nondominated_mask` of F's rows followed by `new`'s, given `mask` = nondominated_mask(F): a row
    that F's non-dominated rows do not dominate is dominated by none of F (a dominating row is dominated
    by, or is, a non-dominated one), so only the new rows are compared — with F's non-dominated rows and
    among themselves (equal rows: the earlier kept, as in `nondominated_mask`)."""
    new = np.asarray(new, dtype=np.float64)
    own = nondominated_mask(new)
    old = np.flatnonzero(mask)
    if old.size and own.any():
        own[own] = ~weakly_dominated(np.asarray(F, dtype=np.float64)[old], new[own])
    kept = np.asarray(mask, dtype=bool).copy()
    if own.any() and old.size:
        kept[old] = ~weakly_dominated(new[own], np.asarray(F, dtype=np.float64)[old])
    return np.concatenate([kept, own])


@functools.cache
def _upper(n: int) -> np.ndarray:
    """The strict upper triangle mask (n, n), made once (read-only)."""
    t = np.tri(n, n, -1, dtype=bool).T
    t.flags.writeable = False
    return t


def weakly_dominates(P: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """le[i, j] = all(P_i ≤ Q_j) (the first matrix of compare_matrices, alone: half the work)."""
    le = np.ones((P.shape[0], Q.shape[0]), dtype=bool)
    for c in range(P.shape[1]):
        le &= P[:, c][:, None] <= Q[:, c][None, :]
    return le


def weakly_dominated(P: np.ndarray, Q: np.ndarray, cells: int = 1 << 15) -> np.ndarray:
    """hit[j] = any_i all(P_i ≤ Q_j): whether some row of P weakly dominates row j of Q, (q,) bool.

    The same as weakly_dominates(P, Q).any(0), done over blocks of P's rows of about `cells` pairs so that
    the (block, q) comparison matrices stay in cache instead of a full (p, q) matrix per objective.
    """
    p, q = P.shape[0], Q.shape[0]
    if p * q <= 2 * cells:
        return np.asarray(weakly_dominates(P, Q).any(0), dtype=bool)
    PT, QT = np.ascontiguousarray(P.T), np.ascontiguousarray(Q.T)
    b = max(1, cells // q)
    hit = np.zeros(q, dtype=bool)
    le = np.empty((b, q), dtype=bool)
    tmp = np.empty((b, q), dtype=bool)
    for i0 in range(0, p, b):
        i1 = min(p, i0 + b)
        blk, t = le[: i1 - i0], tmp[: i1 - i0]
        np.less_equal(PT[0, i0:i1, None], QT[0], out=blk)
        for c in range(1, P.shape[1]):
            np.less_equal(PT[c, i0:i1, None], QT[c], out=t)
            blk &= t
        hit |= blk.any(0)
    return hit


def compare_matrices(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(le, lt) with le[i, j] = all(P_i ≤ Q_j) and lt[i, j] = any(P_i < Q_j), column by column (fast for small m)."""
    le = np.ones((P.shape[0], Q.shape[0]), dtype=bool)
    lt = np.zeros((P.shape[0], Q.shape[0]), dtype=bool)
    for c in range(P.shape[1]):
        a, b = P[:, c][:, None], Q[:, c][None, :]
        le &= a <= b
        lt |= a < b
    return le, lt


def nondominated(F: np.ndarray) -> np.ndarray:
    """The non-dominated rows of F (duplicates removed)."""
    F = np.asarray(F, dtype=np.float64)
    return F[nondominated_mask(F)]


# ----------------------------------------------------------------------------- hypervolume


def _hv2(F: np.ndarray, ref: np.ndarray) -> float:
    """Exact 2-D hypervolume of points already inside the reference box (vectorized staircase sum)."""
    P = nondominated(F)
    P = P[np.argsort(P[:, 0])]
    prev_f2 = np.concatenate([[ref[1]], P[:-1, 1]])
    return float(np.sum((ref[0] - P[:, 0]) * (prev_f2 - P[:, 1])))


def _hv3(F: np.ndarray, ref: np.ndarray) -> float:
    """Exact 3-D hypervolume: sweep along the third objective keeping the 2-D staircase of the points
    seen so far (sorted lists, area updated where a point enters), O(n log n) plus list edits."""
    import bisect

    P = F[np.argsort(F[:, 2], kind="stable")]
    rx, ry, rz = (float(v) for v in ref)
    xs: list[float] = []
    ys: list[float] = []
    area = 0.0
    hv = 0.0
    for k in range(P.shape[0]):
        px, py = float(P[k, 0]), float(P[k, 1])
        i = bisect.bisect_left(xs, px)
        dominated = (i > 0 and ys[i - 1] <= py) or (i < len(xs) and xs[i] == px and ys[i] <= py)
        if not dominated:
            j = i
            while j < len(xs) and ys[j] >= py:
                j += 1
            # the level below which the old staircase dominates, on [px, x_j), replaced by py
            x_end = xs[j] if j < len(xs) else rx
            level = ys[i - 1] if i > 0 else ry
            x0 = px
            for t in range(i, j):
                area += (xs[t] - x0) * (level - py)
                x0, level = xs[t], ys[t]
            area += (x_end - x0) * (level - py)
            xs[i:j] = [px]
            ys[i:j] = [py]
        z_next = float(P[k + 1, 2]) if k + 1 < P.shape[0] else rz
        hv += area * (z_next - float(P[k, 2]))
    return float(hv)


def hypervolume(F: np.ndarray, ref: np.ndarray) -> float:
    """Exact hypervolume dominated by the rows of F (n, m) and bounded by `ref`, for m = 2 or 3.

    Points not strictly better than ref in every objective contribute nothing.
    """
    F = np.atleast_2d(np.asarray(F, dtype=np.float64))
    ref = np.asarray(ref, dtype=np.float64).ravel()
    if F.size == 0:
        return 0.0
    if F.shape[1] != ref.size:
        raise ValueError(f"reference point has {ref.size} entries for {F.shape[1]} objectives")
    F = F[np.all(F < ref, axis=1)]
    if F.shape[0] == 0:
        return 0.0
    if F.shape[1] == 1:
        return float(ref[0] - F[:, 0].min())
    if F.shape[1] == 2:
        return _hv2(F, ref)
    if F.shape[1] == 3:
        return _hv3(F, ref)
    raise ValueError("exact hypervolume is implemented for 1 to 3 objectives only")


def igd(F: np.ndarray, reference_front: np.ndarray) -> float:
    """Inverted generational distance: mean distance from each reference point to its nearest row of F."""
    F = np.atleast_2d(np.asarray(F, dtype=np.float64))
    R = np.atleast_2d(np.asarray(reference_front, dtype=np.float64))
    d = np.sqrt(((R[:, None, :] - F[None, :, :]) ** 2).sum(-1))
    return float(d.min(axis=1).mean())


# ----------------------------------------------------------------------------- directions


def das_dennis(n_partitions: int, m: int) -> np.ndarray:
    """Das-Dennis weights: every w ∈ Δ^{m−1} with entries in {0, 1/p, ..., 1} (C(p+m−1, m−1) rows)."""
    p = int(n_partitions)
    rows = []
    for c in itertools.combinations(range(p + m - 1), m - 1):
        bars = (-1, *c, p + m - 1)
        rows.append([bars[i + 1] - bars[i] - 1 for i in range(m)])
    return np.asarray(rows, dtype=np.float64) / p


def directions(k: int, m: int) -> np.ndarray:
    """About k simplex weights for m objectives (Das-Dennis with the largest partition not above k)."""
    if m == 1:
        return np.ones((1, 1))
    p = 1
    while math.comb(p + 1 + m - 1, m - 1) <= k:
        p += 1
    return das_dennis(p, m)
