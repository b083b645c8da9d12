"""What the four Max-Cut SDP backends share: refusals, the trivial edgeless case, final checks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from optlang.backends.base import RawSolution, RunContext, Status
from optlang.backends.maxcut.bounds import SHIFT_MODES
from optlang.backends.maxcut.reduce import MaxCutForm
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    from optlang.analysis import Form

MAX_DENSE_N = 10_000  # dense n × n weights and an O(n³) float64 eigen-certificate

# the Goemans–Williamson rounding options gnnsdp, sdp-bm and sdp-cvxpy share (Backend.option_ranges /
# option_choices): at least one hyperplane; polish 0 = no 1-flip local search of the best roundings
ROUNDING_RANGES = {"planes": ">=1", "polish": ">=0"}
ROUNDING_CHOICES = {"shift": SHIFT_MODES}


def refuse_maxcut(form: Form, kinds: frozenset[str], max_n: int = MAX_DENSE_N) -> str | None:
    """The shared refusal sentences of the SDP backends."""
    if form.kind not in kinds:
        return f"solves {', '.join(sorted(kinds))} problems, not {form.kind}"
    if form.constraints:
        return (
            f"cannot honour the {len(form.constraints)} general constraint(s) "
            f"({'; '.join(form.constraints)}): the SDP relaxation has only the ±1 (unit-diagonal) constraints"
        )
    if form.degree is not None and form.degree > 2:
        return f"handles quadratic objectives only; this one has degree {form.degree}"
    if form.n_spins > max_n:
        return (
            f"works on dense {form.n_spins}×{form.n_spins} matrices with an O(n³) eigenvalue certificate; "
            f"{form.n_spins} spins is above its limit of {max_n}"
        )
    return None


def edgeless(problem: IsingProblem, mc: MaxCutForm) -> RawSolution:
    """A graph without edges: every cut is 0, so any spins are optimal and the bound is exact."""
    t = np.ones(mc.n)
    s = mc.spins(t)
    e = float(problem.energy(s))
    return RawSolution(
        status=Status.OPTIMAL,
        values={"s": s},
        objective=e,
        bound=e,
        info={"cut": 0.0, "sdp_upper_bound": 0.0, "gap": 0.0},
        checks={"bound_ge_cut": (True, "no edges: cut 0 = bound 0")},
    )


def energy_check(problem: IsingProblem, mc: MaxCutForm, s: np.ndarray, cut: float) -> tuple[float, tuple[bool, str]]:
    """The energy of the returned spins, recomputed from the original problem, against offset − cut."""
    e = float(problem.energy(s))
    want = mc.energy(cut)
    ok = abs(e - want) <= 1e-7 * max(1.0, abs(e))
    return e, (ok, f"energy {e:.6f} recomputed from J, h vs offset − cut = {want:.6f}")


def proven_lower(mc: MaxCutForm, cut_bound: float) -> float:
    """The energy lower bound a relaxation proves for the model itself, from its certified upper
    bound on the cut. With integer weights every cut is an integer, so cut ≤ ⌊bound⌋ (a bound of
    12.5 proves a cut of 12 optimal); otherwise the relaxation's bound as it is."""
    if is_integral(mc):
        cut_bound = math.floor(cut_bound + 1e-6)  # +1e-6: never round a bound of 12.9999999 down to 12
    return mc.offset - cut_bound


def status_for(energy: float, lower: float, ctx: RunContext, stopped_early: bool) -> Status:
    """OPTIMAL only when the proven lower bound meets the energy (gap 0 within float tolerance);
    otherwise FEASIBLE (or the stop status) — a relaxation's optimum is not the model's."""
    if lower >= energy - 1e-9 * max(1.0, abs(energy)):
        return Status.OPTIMAL
    if stopped_early:
        return ctx.stop_status(Status.FEASIBLE)
    return Status.FEASIBLE


def is_integral(mc: MaxCutForm) -> bool:
    """True when every weight is an integer, so every cut (hence energy − offset) is an integer."""
    d = mc.W.data
    return bool(d.size == 0 or np.all(np.abs(d - np.round(d)) <= 1e-12 * np.maximum(1.0, np.abs(d))))
