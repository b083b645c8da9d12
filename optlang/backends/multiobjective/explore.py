"""Front mode's exploration: evolutionary offspring of the archived front, for the budget a resolved
mesh left unspent.

The rays and the mesh follow gradients, so a front whose parametrization flattens them (DTLZ4's x^100:
the gradient in x₀ is ~x₀¹⁹⁹, zero in float32 below x₀ ≈ 0.6) keeps whole regions that no ray reaches
and no midpoint predictor lands in. Here an NSGA-II population evolves from the archived non-dominated
points (at most one population's worth, spread by farthest-point sampling): each generation draws
parents by binary tournaments on (non-dominated rank, crowding distance), recombines them by simulated
binary crossover and perturbs them by polynomial mutation (Deb & Agrawal 1995; the operators of
NSGA-II/III), with a share of uniform immigrants in the boxes; the offspring are evaluated as one
batch and archived, and the best of parents and offspring survive. The caller adds the archived
points far from its solutions to the mesh, whose refinement then fills the region between them at a
predictor's cost.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

_ETA_C = 15.0  # SBX distribution index (pymoo's NSGA-II default)
_ETA_M = 20.0  # polynomial mutation's
_IMMIGRANTS = 0.1  # share of each generation drawn uniformly in the boxes (bounded variables only)


def explorable(problem: MultiObjectiveProblem) -> bool:
    """Offspring need a box per scalar: every variable is a box with finite bounds (simplex and ball
    domains, and unbounded sides, have no uniform immigrant nor a mutation width)."""
    return all(
        v.domain.kind == "box" and np.isfinite(v.domain.lo) and np.isfinite(v.domain.hi) and v.domain.hi > v.domain.lo
        for v in problem.variables
    )


def _bounds(problem: MultiObjectiveProblem) -> tuple[np.ndarray, np.ndarray, list[tuple[str, tuple[int, ...]]]]:
    """Per-scalar lower and upper bounds of the flattened variables, and each variable's (name, shape)."""
    lo, hi, layout = [], [], []
    for v in problem.variables:
        size = int(np.prod(v.shape)) if v.shape else 1
        lo.append(np.full(size, float(v.domain.lo)))
        hi.append(np.full(size, float(v.domain.hi)))
        layout.append((v.name, tuple(v.shape)))
    return np.concatenate(lo), np.concatenate(hi), layout


def crowding(Q: np.ndarray) -> np.ndarray:
    """NSGA-II's crowding distance of each row: the sum over objectives of the gap between its two
    neighbours in that objective's order, each objective's extremes infinite (the front's ends are
    always preferred, so that the offspring walk past them)."""
    n, m = Q.shape
    d = np.zeros(n)
    if n < 3:
        return np.full(n, np.inf)
    for i in range(m):
        order = np.argsort(Q[:, i], kind="stable")
        q = Q[order, i]
        span = max(float(q[-1] - q[0]), 1e-12)
        d[order[1:-1]] += (q[2:] - q[:-2]) / span
        d[order[[0, -1]]] = np.inf
    return d


def spread_subset(Q: np.ndarray, size: int) -> np.ndarray:
    """Indices of at most `size` rows of Q spread by farthest-point sampling, each objective's least
    value first (each objective scaled to its span): the parent pool, as NSGA-II keeps a population of
    its size, so that the few points of a sparse region weigh as much as the many of a dense one."""
    n = Q.shape[0]
    if n <= size:
        return np.arange(n)
    span = np.maximum(Q.max(0) - Q.min(0), 1e-12)
    Qs = (Q - Q.min(0)) / span
    chosen = list(dict.fromkeys(int(i) for i in Q.argmin(0)))[:size]
    d = np.min(np.linalg.norm(Qs[:, None, :] - Qs[chosen][None], axis=2), axis=1)
    while len(chosen) < size:
        j = int(np.argmax(d))
        chosen.append(j)
        d = np.minimum(d, np.linalg.norm(Qs - Qs[j], axis=1))
    return np.asarray(chosen)


def sbx(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One child per parent pair (rows of a, b) by bounded simulated binary crossover, each scalar
    crossed with probability ½ (else taken from a)."""
    u = rng.random(a.shape)
    y1, y2 = np.minimum(a, b), np.maximum(a, b)
    span = np.maximum(y2 - y1, 1e-14)
    child = a.copy()
    cross = (rng.random(a.shape) < 0.5) & (y2 - y1 > 1e-14)
    upper = rng.random(a.shape) < 0.5  # which of the pair's two children a crossed scalar takes
    for side in (0, 1):  # the bound-aware spread of Deb's SBX, toward the lower then the upper bound
        beta = 1.0 + 2.0 * ((y1 - lo) if side == 0 else (hi - y2)) / span
        alpha = 2.0 - beta ** (-(_ETA_C + 1.0))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            bq = np.where(
                u <= 1.0 / alpha,
                (u * alpha) ** (1.0 / (_ETA_C + 1.0)),
                (1.0 / np.maximum(2.0 - u * alpha, 1e-300)) ** (1.0 / (_ETA_C + 1.0)),
            )
        c = 0.5 * ((y1 + y2) - bq * span) if side == 0 else 0.5 * ((y1 + y2) + bq * span)
        pick = cross & (upper == bool(side))
        child = np.where(pick, c, child)
    return np.clip(np.nan_to_num(child, nan=0.5 * (lo + hi)), lo, hi)


def polynomial_mutation(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Deb's bounded polynomial mutation, each scalar with probability 1/n."""
    n = x.shape[1]
    width = hi - lo
    d1, d2 = (x - lo) / width, (hi - x) / width
    u = rng.random(x.shape)
    p = 1.0 / (_ETA_M + 1.0)
    low = u < 0.5
    v1 = 2 * u + (1 - 2 * u) * (1 - d1) ** (_ETA_M + 1)
    v2 = 2 * (1 - u) + 2 * (u - 0.5) * (1 - d2) ** (_ETA_M + 1)
    dq = np.where(low, np.maximum(v1, 0.0) ** p - 1, 1 - np.maximum(v2, 0.0) ** p)
    mutate = rng.random(x.shape) < 1.0 / n
    return np.clip(np.where(mutate, x + dq * width, x), lo, hi)


def ranks(F: np.ndarray) -> np.ndarray:
    """Non-dominated sorting: 0 for the rows no other row dominates, 1 for those only rank-0 rows
    dominate, and so on (of equal rows, the first has the lower rank)."""
    from optlang.backends.multiobjective.metrics import nondominated_mask

    r = np.zeros(F.shape[0], dtype=np.int64)
    rest = np.arange(F.shape[0])
    k = 0
    while rest.size:
        top = nondominated_mask(F[rest])
        r[rest[top]] = k
        rest = rest[~top]
        k += 1
    return r


def survivors(F: np.ndarray, size: int) -> np.ndarray:
    """NSGA-II's environmental selection: indices of at most `size` rows, whole ranks first, the last
    rank cut by crowding distance (largest first)."""
    if F.shape[0] <= size:
        return np.arange(F.shape[0])
    r = ranks(F)
    chosen: list[np.ndarray] = []
    count = 0
    for k in range(int(r.max()) + 1):
        idx = np.flatnonzero(r == k)
        if count + idx.size > size:
            d = crowding(F[idx])
            chosen.append(idx[np.argsort(-d, kind="stable")[: size - count]])
            break
        chosen.append(idx)
        count += idx.size
    return np.concatenate(chosen)


def children(
    P: np.ndarray, F: np.ndarray, lo: np.ndarray, hi: np.ndarray, count: int, rng: np.random.Generator
) -> np.ndarray:
    """`count` children of the population (flattened points P, objectives F): binary tournaments on
    (rank, crowding distance), SBX and polynomial mutation, a share of uniform immigrants."""
    rank = ranks(F)
    iso = np.zeros(F.shape[0])
    for k in np.unique(rank):
        idx = np.flatnonzero(rank == k)
        iso[idx] = crowding(F[idx])

    def tournament() -> np.ndarray:
        i, j = rng.integers(0, P.shape[0], count), rng.integers(0, P.shape[0], count)
        i_wins = (rank[i] < rank[j]) | ((rank[i] == rank[j]) & (iso[i] >= iso[j]))
        return np.where(i_wins, i, j)

    C = polynomial_mutation(sbx(P[tournament()], P[tournament()], lo, hi, rng), lo, hi, rng)
    fresh = rng.random(count) < _IMMIGRANTS
    C[fresh] = lo + rng.random((int(fresh.sum()), lo.size)) * (hi - lo)
    return C


def _flat(AX: dict[str, np.ndarray], layout: list[tuple[str, tuple[int, ...]]], n: int) -> np.ndarray:
    return np.concatenate([np.asarray(AX[name]).reshape(n, -1) for name, _ in layout], axis=1)


def _unflat(C: np.ndarray, layout: list[tuple[str, tuple[int, ...]]]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    col = 0
    for name, shape in layout:
        size = int(np.prod(shape)) if shape else 1
        out[name] = C[:, col : col + size].reshape(C.shape[0], *shape)
        col += size
    return out


class Explorer:
    """An NSGA-II population that lives across a front's explorations: each `run` first merges the
    archived non-dominated points into it (at most one population's worth, spread by `spread_subset`),
    so that what the mesh found since joins the parents, while the population's own progress in the
    decision space (the mixed variables of a multimodal g, ZDT4's nine Rastrigin terms) is kept rather
    than re-drawn from a front the gradient steps took into local basins."""

    def __init__(self, problem: MultiObjectiveProblem, pop: int, seed: int, tol: float) -> None:
        self.problem, self.pop, self.tol = problem, pop, tol
        self.lo, self.hi, self.layout = _bounds(problem)
        self.P = np.zeros((0, self.lo.size))
        self.F = np.zeros((0, len(problem.objectives)))  # raw objective values (the normalization moves)
        self.seed = seed
        self.generations = 0
        self.beaten = False  # an offspring dominated a solution of the caller's mesh (a local front)

    def _merge(self, archive: Any, z: np.ndarray, s: np.ndarray) -> None:
        """At most `pop` archived non-dominated points (spread) join the population; the best `pop` stay."""
        F0, AX = archive.front()
        P, F = self.P, self.F
        if AX is not None and F0.shape[0]:
            Fa = np.asarray(F0, dtype=np.float64)
            keep = spread_subset((Fa - z) / s, self.pop)
            P = np.concatenate([P, _flat({k: np.asarray(v)[keep] for k, v in AX.items()}, self.layout, keep.size)])
            F = np.concatenate([F, Fa[keep]])
        _, first = np.unique(P, axis=0, return_index=True)  # an archived point the population holds already
        first = np.sort(first)
        P, F = P[first], F[first]
        alive = survivors((F - z) / s, self.pop)
        self.P, self.F = P[alive], F[alive]

    def run(self, archive: Any, ev: Any, z: np.ndarray, s: np.ndarray, evals: int, ctx: Any) -> Iterator[int]:
        """Generations of `pop` offspring (the last one smaller) until `evals` evaluations are spent, every
        offspring evaluated and archived (feasible ones only: `archive_feasible`); yields the evaluations
        spent so far after each generation (the caller stops early by leaving the loop). Parents and
        offspring compete as NSGA-II's do (`survivors`), so that dominated offspring stay parents while
        the population is small: a front collapsed to a few points (every ray at one corner) still
        spreads. Yields nothing when neither the archive nor the population holds a point."""
        from optlang.backends.multiobjective.common import archive_feasible

        self._merge(archive, z, s)
        if self.P.shape[0] == 0:
            return
        rng = np.random.default_rng([self.seed, 104729, ev.count])
        m = self.F.shape[1]
        spent = 0
        while spent < evals and not ctx.should_stop():
            n = min(self.pop, evals - spent)
            C = children(self.P, (self.F - z) / s, self.lo, self.hi, n, rng)
            X = {k: torch.as_tensor(v, dtype=ctx.dtype, device=ctx.device) for k, v in _unflat(C, self.layout).items()}
            with torch.no_grad():
                out = ev(X)
            ok = archive_feasible(archive, ev, out, X, self.tol).cpu().numpy()
            Fc = out[:, :m].detach().cpu().numpy().astype(np.float64)
            ok &= np.all(np.isfinite(Fc), axis=1)
            P, F = np.concatenate([self.P, C[ok]]), np.concatenate([self.F, Fc[ok]])
            alive = survivors((F - z) / s, self.pop)
            self.P, self.F = P[alive], F[alive]
            self.generations += 1
            spent += n
            yield spent
