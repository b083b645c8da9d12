"""Random-restart greedy 1-flip local search, batched over restarts in torch (an Ising baseline)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.ising.ops import (
    descent_with_fields,
    energy_check,
    ising_info,
    ising_refusal,
    to_torch_csr,
    torch_threads,
)
from optlang.backends.stopping import Stagnation
from optlang.lazy import lazy_module
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class LocalSearchOptions:
    """Restarts per batch, and the number of batches when no time limit is given."""

    batch: int = 64  # random restarts descended at once (capped by max_elems / n)
    rounds: int = 10  # batches when there is no time limit (max_iter overrides)
    max_elems: int = 16_777_216  # cap on batch × spins
    threads: int = 1  # torch CPU threads (0: leave torch's setting)
    patience: int = 10  # time-limited: stop after batches without a better state (stopping.py); 0: fill the limit


class LocalSearch(Backend):
    """Uniform random ±1 starts, each descended to a 1-flip local minimum; the best is kept."""

    name: ClassVar[str] = "localsearch"
    kinds: ClassVar[frozenset[str]] = frozenset({"ising", "maxcut"})
    summary: ClassVar[str] = "random-restart greedy 1-flip local search, batched over restarts"
    priority: ClassVar[int] = 70
    Options: ClassVar[type] = LocalSearchOptions
    # threads 0: leave torch's setting; patience 0: fill the time limit
    option_ranges: ClassVar[dict[str, str]] = {
        "batch": ">=1",
        "rounds": ">=1",
        "max_elems": ">=1",
        "threads": ">=0",
        "patience": ">=0",
    }

    def refuse(self, form: Any) -> str | None:
        return ising_refusal(form, self.kinds)

    def solve(self, problem: IsingProblem, options: LocalSearchOptions, ctx: RunContext) -> RawSolution:
        with torch_threads(options.threads if str(ctx.device) == "cpu" else 0), torch.no_grad():
            return self._solve(problem, options, ctx)

    def _solve(self, problem: IsingProblem, options: LocalSearchOptions, ctx: RunContext) -> RawSolution:
        n = problem.n
        dev, dt = ctx.device, ctx.dtype
        Jt = to_torch_csr(problem.J, dev, dt)
        h_t = torch.as_tensor(problem.h, dtype=dt, device=dev)
        gen = ctx.torch_generator()
        B = int(max(1, min(options.batch, options.max_elems // max(n, 1))))
        max_rounds = ctx.max_iter if ctx.max_iter is not None else (None if ctx.time_limit else options.rounds)
        best_E, best_s, rounds = math.inf, None, 0
        stagnation, stop = Stagnation(options.patience if max_rounds is None else 0), ""
        while (max_rounds is None or rounds < max_rounds) and not (rounds > 0 and ctx.should_stop()):
            if rounds > 0 and stagnation.update(best_E, ctx.elapsed()):
                stop = "stagnated"
                break
            S = torch.where(torch.rand(B, n, generator=gen, device=dev) < 0.5, 1.0, -1.0).to(dt)
            # a descent cut short by the limit still holds valid states (not yet local minima)
            S, G, _ = descent_with_fields(Jt, h_t, S, stop=ctx.should_stop)
            E = (S * (G + h_t)).sum(dim=1) / 2
            k = int(torch.argmin(E))
            if float(E[k]) < best_E:
                best_E, best_s = float(E[k]), S[k].clone()
                ctx.report(best_E + problem.constant)
            rounds += 1
        assert best_s is not None
        s = best_s.to("cpu", torch.float64).numpy()
        energy, chk = energy_check(problem, s, best_E + problem.constant)
        if ctx.interrupted:
            status, stop = Status.INTERRUPTED, "interrupted"
        elif stop == "stagnated":
            status = Status.FEASIBLE
        elif max_rounds is None:
            status, stop = Status.TIME_LIMIT, "time_limit"
        elif ctx.max_iter is not None:
            status, stop = Status.ITERATION_LIMIT, "iteration_limit"
        else:
            status, stop = Status.FEASIBLE, "finished"
        return RawSolution(
            status=status,
            values={"s": s},
            objective=energy,
            iterations=rounds,
            history=list(ctx.history),
            info={**ising_info(problem, energy), "restarts": rounds * B, "batch": B, "stop": stop},
            checks={"energy_recomputed": chk},
        )
