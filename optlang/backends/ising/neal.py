"""The simulated-annealing anchor: dwave-samplers' SimulatedAnnealingSampler ("neal").

Optional (pip install 'optlang-dsl[anchors]'); the planner never picks it, `compare` and the
benchmarks do. Our E = sᵀJs + hᵀs + c counts each pair twice; dimod's Ising energy is
Σ h_i s_i + Σ_{i<j} J'_ij s_i s_j + offset, so J'_ij = 2 J_ij for i < j and offset = c.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.ising.ops import energy_check, ising_info, ising_refusal
from optlang.backends.stopping import Stagnation
from optlang.problem import IsingProblem


@dataclass
class NealOptions:
    """Reads and sweeps of the sampler, and whether to keep reading until the time limit."""

    num_reads: int = 10
    num_sweeps: int = 1000
    fill_time: bool = True  # with a time limit: calibrate one read, then add reads up to the limit
    patience: int = 10  # ... ending early after chunks without a better state (stopping.py); 0: fill the limit
    beta_schedule_type: str = "geometric"  # geometric | linear (dwave-samplers' own schedules)


def to_bqm(problem: IsingProblem) -> Any:
    """The dimod SPIN BinaryQuadraticModel with the same energy as the problem (offset included)."""
    import dimod

    J = problem.J.tocoo()
    upper = J.row < J.col
    return dimod.BinaryQuadraticModel.from_numpy_vectors(
        np.asarray(problem.h, dtype=np.float64),
        (J.row[upper], J.col[upper], 2.0 * J.data[upper]),
        float(problem.constant),
        dimod.SPIN,
    )


def samples_to_array(sampleset: Any, n: int) -> np.ndarray:
    """The sampleset's samples as a (reads, n) float array in variable order 0..n-1."""
    labels = np.asarray(list(sampleset.variables), dtype=np.int64)
    out = np.empty((len(sampleset.record), n))
    out[:, labels] = sampleset.record.sample
    return out


class Neal(Backend):
    """dwave-samplers SimulatedAnnealingSampler on the exact Ising conversion of the model."""

    name: ClassVar[str] = "neal"
    kinds: ClassVar[frozenset[str]] = frozenset({"ising", "maxcut"})
    summary: ClassVar[str] = "simulated annealing by dwave-samplers (the anchor SpecAnn is compared with)"
    auto: ClassVar[bool] = False
    priority: ClassVar[int] = 80
    uses_torch: ClassVar[bool] = False
    Options: ClassVar[type] = NealOptions
    option_ranges: ClassVar[dict[str, str]] = {"num_reads": ">=1", "num_sweeps": ">=1", "patience": ">=0"}
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {"beta_schedule_type": ("geometric", "linear")}
    requires: ClassVar[tuple[str, ...]] = ("dwave.samplers",)
    preload: ClassVar[tuple[str, ...]] = ("dimod", "dwave.samplers")

    def refuse(self, form: Any) -> str | None:
        return ising_refusal(form, self.kinds)

    def solve(self, problem: IsingProblem, options: NealOptions, ctx: RunContext) -> RawSolution:
        from dwave.samplers import SimulatedAnnealingSampler

        self.check_options(options)  # (options built by hand, not by make_options)
        schedule = cast(Literal["geometric", "linear"], options.beta_schedule_type)
        n = problem.n
        bqm = to_bqm(problem)
        sampler = SimulatedAnnealingSampler()
        best_E, best_s, reads, calls = math.inf, None, 0, 0
        per_read: float | None = None

        def run(k: int) -> None:
            nonlocal best_E, best_s, reads, calls, per_read
            t = time.perf_counter()
            ss = sampler.sample(
                bqm,
                num_reads=k,
                num_sweeps=options.num_sweeps,
                seed=(ctx.seed * 7919 + calls) % 2**32,
                beta_schedule_type=schedule,
            )
            dt = time.perf_counter() - t
            per_read = dt / k if per_read is None else 0.5 * per_read + 0.5 * dt / k
            reads += k
            calls += 1
            E = np.asarray(ss.record.energy, dtype=np.float64)
            j = int(np.argmin(E))
            if E[j] < best_E:
                best_E = float(E[j])
                best_s = samples_to_array(ss, n)[j]
                ctx.report(best_E)

        stop = "finished"
        if options.fill_time and ctx.time_limit is not None:
            run(1)  # calibration read
            stagnation = Stagnation(options.patience)
            stop = "time_limit"
            cap = math.inf if ctx.max_iter is None else int(ctx.max_iter)  # --max-iter caps the reads
            while not ctx.should_stop() and reads < cap:
                assert per_read is not None
                if stagnation.update(best_E, ctx.elapsed()):
                    stop = "stagnated"
                    break
                # chunks grow with the elapsed time (a small model stops early), at most a tenth of the
                # limit, and end by 80% of what remains (a sampler call cannot be interrupted)
                chunk_time = min(ctx.time_limit / 10, max(0.02, 0.5 * ctx.elapsed()))
                k = int(min(ctx.remaining() * 0.8, max(chunk_time, per_read)) / max(per_read, 1e-9))
                k = int(min(k, cap - reads))
                if k < 1:
                    break
                run(k)
        else:
            run(max(1, min(options.num_reads, ctx.max_iter or options.num_reads)))
        assert best_s is not None
        E, chk = energy_check(problem, best_s, best_E)
        if ctx.interrupted:
            status, stop = Status.INTERRUPTED, "interrupted"
        elif stop == "time_limit":
            status = Status.TIME_LIMIT
            if ctx.max_iter is not None and reads >= ctx.max_iter and not ctx.should_stop():
                status, stop = Status.ITERATION_LIMIT, "iteration_limit"
        else:
            status = Status.FEASIBLE
        return RawSolution(
            status=status,
            values={"s": best_s},
            objective=E,
            iterations=reads,
            history=list(ctx.history),
            info={
                **ising_info(problem, E),
                "reads": reads,
                "num_sweeps": options.num_sweeps,
                "seconds_per_read": per_read,
                "stop": stop,
            },
            checks={"energy_recomputed": chk},
        )
