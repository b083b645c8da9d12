"""Statistics of a comparison: per-backend summaries and the contradiction flags.

Pure functions of Results (no loading, no running, no rendering): summaries (best/median/spread,
tightest bound, gap, times, checks) and the claims other runs' recomputed objectives contradict,
plus the claims a run's own numbers contradict (`optimal` next to a positive gap).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from optlang.backends.base import Status
from optlang.result import Result

# A claim is contradicted when beaten by more than ATOL + RTOL * max(1, |claimed value|).
ATOL = 1e-6
RTOL = 1e-6


# ----------------------------------------------------------------------------- summaries
def better(a: float, b: float, sense: str) -> bool:
    """Is objective a strictly better than b in the model's sense?"""
    return a > b if sense == "maximize" else a < b


def best_of(values: Sequence[float | None], sense: str) -> float | None:
    """The best finite value in the model's sense (None and non-finite entries skipped), or None."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return max(vals) if sense == "maximize" else min(vals)


def tightest_bound(values: Sequence[float | None], sense: str) -> float | None:
    """The tightest claimed bound: the least upper bound (maximize) or greatest lower bound (minimize)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return min(vals) if sense == "maximize" else max(vals)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|bound − objective| / max(1, |objective|), as Result defines gap."""
    if objective is None or bound is None or not (math.isfinite(objective) and math.isfinite(bound)):
        return None
    return abs(bound - objective) / max(1.0, abs(objective))


def has_value(r: Result) -> bool:
    """A run that holds a usable, finite objective value."""
    return r.status.has_solution and r.objective is not None and math.isfinite(r.objective)


def usable_objective(r: Result) -> float | None:
    """The run's objective when has_value(r) holds, else None (the typed form, for narrowing)."""
    return r.objective if has_value(r) else None


@dataclass
class BackendSummary:
    """Statistics of one backend's repeats: objective best/median/spread, bound, gap, time, checks."""

    backend: str
    runs: int
    solved: int  # runs with a solution (a front counts, even without a scalar objective)
    statuses: dict[str, int]
    best: float | None
    median: float | None
    worst: float | None
    spread: float | None  # max − min of the objective over runs with a solution
    stdev: float | None
    bound: float | None  # the tightest bound this backend claimed
    gap: float | None  # relative gap between its best objective and its own bound
    time_median: float | None
    time_min: float | None
    time_max: float | None
    checks_passed: int
    checks_total: int
    errors: list[str] = field(default_factory=list)
    flagged: bool = False

    @property
    def status_text(self) -> str:
        return ", ".join(f"{k}×{v}" if v > 1 else k for k, v in sorted(self.statuses.items()))

    @property
    def checks_text(self) -> str:
        if self.checks_total == 0:
            return "—"
        return f"{self.checks_passed}/{self.checks_total}"

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["statuses"] = dict(self.statuses)
        d["errors"] = list(self.errors)
        return d


def summarize(results: Sequence[Result], backend: str, sense: str, flagged: bool = False) -> BackendSummary:
    """The summary row of one backend's runs."""
    runs = [r for r in results if r.backend == backend]
    objs = [v for r in runs if (v := usable_objective(r)) is not None]
    times = [
        t for r in runs if r.status.has_solution and (t := r.timing.get("total", r.timing.get("solve"))) is not None
    ]
    statuses: dict[str, int] = {}
    for r in runs:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    best = best_of(objs, sense)
    bound = tightest_bound([r.bound for r in runs if r.bound is not None], sense)
    checks = [c for r in runs for c in r.checks]
    errors = sorted({str(r.info.get("error")) for r in runs if r.status == Status.ERROR and r.info.get("error")})
    return BackendSummary(
        backend=backend,
        runs=len(runs),
        solved=sum(r.status.has_solution for r in runs),
        statuses=statuses,
        best=best,
        median=statistics.median(objs) if objs else None,
        worst=(min(objs) if sense == "maximize" else max(objs)) if objs else None,
        spread=(max(objs) - min(objs)) if objs else None,
        stdev=statistics.stdev(objs) if len(objs) > 1 else None,
        bound=bound,
        gap=relative_gap(best, bound),
        time_median=statistics.median(times) if times else None,
        time_min=min(times) if times else None,
        time_max=max(times) if times else None,
        checks_passed=sum(c.passed for c in checks),
        checks_total=len(checks),
        errors=errors,
        flagged=flagged,
    )


# ----------------------------------------------------------------------------- fronts
def front_matrix(r: Result) -> tuple[list[str], list[list[float]]]:
    """Objective names and finite points of a run's Pareto front (info["front"]: [{"objectives": {...}}, ...])."""
    front = r.info.get("front") if r.status.has_solution else None
    names: list[str] = []
    pts: list[list[float]] = []
    for p in front if isinstance(front, list) else []:
        objs = p.get("objectives") if isinstance(p, dict) else None
        if not isinstance(objs, dict):
            continue
        if not names:
            names = list(objs)
        try:
            row = [float(objs[n]) for n in names]
        except (KeyError, TypeError, ValueError):
            continue
        if all(math.isfinite(v) for v in row):
            pts.append(row)
    return names, pts


@dataclass
class FrontHypervolumes:
    """Every run's front hypervolume against ONE reference point for the whole comparison, so the
    backends' numbers compare (a run's own info["hypervolume"] uses a reference of its own front)."""

    objectives: list[str]
    reference: list[float]  # the worst value of each objective over all fronts + 10 % of the union's range
    values: dict[str, list[float]]  # backend -> hypervolume of each run with a front, in seed order
    points: dict[str, list[int]]  # backend -> front size of each of those runs

    def median(self, backend: str) -> float | None:
        v = self.values.get(backend) or []
        return statistics.median(v) if v else None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def front_hypervolumes(runs: dict[str, list[Result]]) -> FrontHypervolumes | None:
    """The common-reference hypervolumes of the runs' fronts (backend -> its runs); None when no run has
    a front of 2 or 3 objectives (the exact hypervolume's range) or the fronts name other objectives."""
    from optlang.backends.multiobjective.metrics import hypervolume

    names: list[str] | None = None
    fronts: dict[str, list[list[list[float]]]] = {}
    for b, rs in runs.items():
        for r in rs:
            n, pts = front_matrix(r)
            if not pts:
                continue
            if names is None:
                names = n
            if n != names or len(n) not in (2, 3):
                return None
            fronts.setdefault(b, []).append(pts)
    if names is None:
        return None
    every = [p for fs in fronts.values() for F in fs for p in F]
    lo = [min(p[i] for p in every) for i in range(len(names))]
    hi = [max(p[i] for p in every) for i in range(len(names))]
    ref = [h + 0.1 * ((h - lo_) if h > lo_ else max(1.0, abs(h))) for lo_, h in zip(lo, hi, strict=True)]
    import numpy as np

    values = {b: [float(hypervolume(np.asarray(F), np.asarray(ref))) for F in fs] for b, fs in fronts.items()}
    return FrontHypervolumes(names, ref, values, {b: [len(F) for F in fs] for b, fs in fronts.items()})


# ----------------------------------------------------------------------------- contradictions
@dataclass
class Contradiction:
    """A claimed optimum or bound beaten by another run's recomputed objective."""

    claimant: str
    claimant_seed: int
    claim: str  # "optimal" (claimed an optimum) | "bound" (claimed a bound)
    claimed: float
    witness: str
    witness_seed: int
    witness_objective: float
    excess: float  # how far the witness beats the claim, in objective units

    def sentence(self, sense: str = "minimize") -> str:
        what = (
            "claimed optimum"
            if self.claim == "optimal"
            else ("claimed upper bound" if sense == "maximize" else "claimed lower bound")
        )
        return (
            f"{self.claimant} (seed {self.claimant_seed}) {what} {self.claimed:.10g} is contradicted by "
            f"{self.witness} (seed {self.witness_seed}), whose recomputed objective {self.witness_objective:.10g} "
            f"is better by {self.excess:.3g}"
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _witness_ok(r: Result) -> bool:
    """A run may contradict others when it has a finite objective and passed its feasibility checks."""
    return has_value(r) and not any((not c.passed) and "feas" in c.name.lower() for c in r.checks)


def find_contradictions(
    results: Sequence[Result], sense: str, atol: float = ATOL, rtol: float = RTOL
) -> list[Contradiction]:
    """Every (claim, witness) pair where a proven optimum or bound is beaten beyond tolerance.

    Claims: status OPTIMAL with an objective (nothing may be better), or a bound (no feasible
    objective may lie beyond it). Witnesses: any run, the claimant's other runs and itself included,
    with a recomputed finite objective. Only the strongest witness per claim is reported.
    """
    sign = 1.0 if sense == "maximize" else -1.0  # sign * (witness - claim) > 0 means the witness beats it
    witnesses = [(v, r) for r in results if _witness_ok(r) and (v := usable_objective(r)) is not None]
    if not witnesses:
        return []
    champion_objective, champion = max(witnesses, key=lambda w: sign * w[0])
    out: list[Contradiction] = []
    for r in results:
        claims: list[tuple[str, float]] = []
        objective = usable_objective(r)
        if r.status == Status.OPTIMAL and objective is not None:
            claims.append(("optimal", float(objective)))
        if r.bound is not None and math.isfinite(r.bound):
            claims.append(("bound", float(r.bound)))
        for claim, value in claims:
            excess = sign * (champion_objective - value)
            if excess > atol + rtol * max(1.0, abs(value)):
                out.append(
                    Contradiction(
                        r.backend,
                        r.seed,
                        claim,
                        value,
                        champion.backend,
                        champion.seed,
                        float(champion_objective),
                        float(excess),
                    )
                )
    return out


@dataclass
class StatusConflict:
    """A run whose claimed status its own numbers contradict (for example `optimal` with a 0.77% gap)."""

    claimant: str
    claimant_seed: int
    claim: str  # the status the backend claimed
    reason: str
    objective: float | None = None
    bound: float | None = None

    def sentence(self, sense: str = "minimize") -> str:
        nums = ""
        if self.objective is not None and self.bound is not None:
            what = "upper" if sense == "maximize" else "lower"
            nums = f" (objective {self.objective:.10g}, {what} bound {self.bound:.10g})"
        return f"{self.claimant} (seed {self.claimant_seed}) claimed {self.claim}{nums}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def find_status_conflicts(results: Sequence[Result]) -> list[StatusConflict]:
    """Every run whose status claim its own gap contradicts (Result.inconsistencies), as flags."""
    out = []
    for r in results:
        for why in r.inconsistencies():
            claim = str(r.info.get("status_claimed") or r.status.value)
            out.append(StatusConflict(r.backend, r.seed, claim, why, r.objective, r.bound))
    return out
