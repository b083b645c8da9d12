"""Exact enumeration for small Ising/Max-Cut models (n ≤ 24 spins): the oracle of the tests."""

from __future__ import annotations

from typing import Any, ClassVar

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.ising.ops import BRUTE_FORCE_MAX_N, brute_force_min, energy_check, ising_info, ising_refusal
from optlang.problem import IsingProblem


class BruteForce(Backend):
    """Enumerates all 2^n spin states (vectorized in float64); proves optimality."""

    name: ClassVar[str] = "bruteforce"
    kinds: ClassVar[frozenset[str]] = frozenset({"ising", "maxcut"})
    summary: ClassVar[str] = f"exact enumeration of every spin state (at most {BRUTE_FORCE_MAX_N} spins)"
    priority: ClassVar[int] = 60
    uses_torch: ClassVar[bool] = False

    def refuse(self, form: Any) -> str | None:
        # n_spins counts the model's spins (a field is not an extra spin here), as problem.n does
        n = form.n_spins
        if form.kind in self.kinds and n > BRUTE_FORCE_MAX_N:
            return f"enumerates at most {BRUTE_FORCE_MAX_N} spins exactly, and this model has {n}"
        return ising_refusal(form, self.kinds)

    def solve(self, problem: IsingProblem, options: Any, ctx: RunContext) -> RawSolution:
        if problem.n > BRUTE_FORCE_MAX_N:
            raise ValueError(
                f"bruteforce enumerates at most {BRUTE_FORCE_MAX_N} spins, and this problem has {problem.n}"
            )
        energy, s = brute_force_min(problem)
        E, chk = energy_check(problem, s, energy)
        ctx.report(E, E)
        return RawSolution(
            status=Status.OPTIMAL,
            values={"s": s},
            objective=E,
            bound=E,
            iterations=2**problem.n,
            history=list(ctx.history),
            info={**ising_info(problem, E), "states": 2**problem.n},
            checks={"energy_recomputed": chk},
        )
