"""The batched solve of an Ising/Max-Cut sweep: the points' fields and couplings over one shared pattern.

`solve(models, ...)` stacks the points' lowered problems (`backends/ising/batched.stack`: values
(B, nnz) over the union coupling pattern, fields (B, n), constants (B,)) and lets the backend a
single solve would use decide the method:

- `bruteforce` (the planner's choice for small models, or named): every point enumerated exactly
  in one batch; status `optimal` (enumeration is the proof), the bound the enumerated minimum;
- `specann` or `localsearch`: the batched annealing path (`anneal_path`: restarts, annealed chains
  with a leading instance dimension, warm starts from the path neighbours' best states); status
  `feasible` (no proof), `time_limit` or `iteration_limit` when those ended it.

Anything else raises NotBatchable with the reason (bnb, which proves each point optimal; gnnsdp,
neal, the SDPs; bound = "sdp"; the single backend's own options in the solver block; points of
different sizes or coupling patterns) and the sweep runs point by point. Each point is verified
like a single solve: its energy recomputed in float64 from its own lowered problem
(`energy_recomputed`) and its objective from the model (`verify`).
"""

from __future__ import annotations

import time
from typing import Any

from optlang.backends.base import COMMON_OPTIONS, RawSolution, RunContext, Status
from optlang.backends.ising.batched import PathOptions, anneal_path, brute_force_batch, stack
from optlang.backends.ising.ops import BRUTE_FORCE_MAX_N, energy_check, ising_info, torch_threads
from optlang.result import Result
from optlang.verify import verify

EXACT = "bruteforce"
HEURISTIC = ("specann", "localsearch")


class NotBatchable(Exception):
    """The points cannot be one batched Ising problem (the message says why)."""


def solve(
    models: list[Any], backend: str | None = None, seed: int = 0, max_iter: int | None = None
) -> tuple[list[Result], str]:
    """Solve every point (ising or maxcut models of one size and coupling pattern) in one batch."""
    t0 = time.perf_counter()
    plans = [m.plan(backend) for m in models]
    chosen = sorted({p.chosen for p in plans})
    if len(chosen) > 1:
        raise NotBatchable(f"the points plan different backends ({', '.join(chosen)})")
    name = chosen[0]
    if name not in (EXACT, *HEURISTIC):
        why = {
            "bnb": "bnb proves each point optimal, which only enumeration does in a batch; name -b specann "
            "for the batched heuristic"
        }.get(name, "the batched solver replaces bruteforce (exact) and specann / localsearch (heuristic) only")
        raise NotBatchable(f"the planned backend is {name}: {why}")
    solver = models[0].ir.solver
    given = dict(solver.options) if solver is not None and solver.name in ("auto", name) else {}
    own = sorted(k for k in given if k not in COMMON_OPTIONS)
    if own:
        raise NotBatchable(f"{name} options in the solver block ({', '.join(own)}); the batched solver has its own")
    if given.get("bound", "none") not in ("none", None, False):
        raise NotBatchable('bound = "sdp" asks for an SDP bound per point')
    problems = [m.compiled.problem for m in models]
    batch = stack(problems)
    if isinstance(batch, str):
        raise NotBatchable(batch)
    B, n = batch.size, batch.n
    max_iter = max_iter if max_iter is not None else given.get("max_iter")
    time_limit = given.get("time_limit")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))):
        raise NotBatchable(f"time_limit {time_limit!r} is not a number (each point's own solve reports it)")
    raws: list[RawSolution] = []
    if name == EXACT:
        ctx = RunContext(seed=seed, device="cpu", dtype="float64")  # numpy only: no torch to import
        if n > BRUTE_FORCE_MAX_N:  # the planner refuses bruteforce above this; kept as a guard
            raise NotBatchable(f"{n} spins: enumeration is limited to {BRUTE_FORCE_MAX_N}")
        energies, states = brute_force_batch(batch)
        solver_name = "batched-bruteforce"
        for p, e, s in zip(problems, energies, states, strict=True):
            E, chk = energy_check(p, s, float(e))
            raws.append(
                RawSolution(
                    Status.OPTIMAL,
                    {"s": s},
                    objective=E,
                    bound=E,
                    iterations=2**n,
                    info={**ising_info(p, E), "states": 2**n},
                    checks={"energy_recomputed": chk},
                )
            )
        note = f"{B} points of {n} spins enumerated exactly in one batch (2^{n} states each; optimal by enumeration)"
    else:
        ctx = RunContext(seed=seed, device=str(given.get("device", "auto")), dtype=str(given.get("dtype", "float32")))
        opts = PathOptions()
        # a time limit in the solver block is each single solve's: the batch may use B of them
        budget = None if time_limit is None else float(time_limit) * B
        with torch_threads(1 if str(ctx.device) == "cpu" else 0):
            out = anneal_path(batch, opts, seed, ctx.device, ctx.dtype, max_iter, budget)
        solver_name = "batched-anneal"
        if out.stop == "time_limit":
            status = Status.TIME_LIMIT
        elif max_iter is not None and out.rounds >= max_iter:
            status = Status.ITERATION_LIMIT
        else:
            status = Status.FEASIBLE
        for b, p in enumerate(problems):
            s = out.states[b]
            E, chk = energy_check(p, s, float(out.energies[b]))
            info = {
                **ising_info(p, E),
                "rounds": out.rounds,
                "sweeps": out.sweeps,
                "chains": out.chains,
                "warm_start": bool(out.warm[b]),
                "stop": out.stop,
            }
            checks = {"energy_recomputed": chk}
            raws.append(RawSolution(status, {"s": s}, objective=E, iterations=out.rounds, info=info, checks=checks))
        note = (
            f"{B} points of {n} spins annealed as one batch ({out.chains} chains each, {out.rounds} round(s) of "
            f"≤ {opts.sweeps} sweeps, warm starts from the path neighbours: {int(out.warm.sum())} of {B} points "
            f"kept a neighbour's state; replaces {name}, no optimality proof)"
        )
    t_solve = time.perf_counter() - t0
    results = []
    for b, (m, p, raw) in enumerate(zip(models, plans, raws, strict=True)):
        raw.info["sweep"] = {"batch": B, "index": b, "solver": solver_name, "replaces": name}
        timing = {"compile": 0.0, "solve": t_solve / B, "total": t_solve / B}
        results.append(verify(m.ir, m.form, m.compiled, raw, p, solver_name, timing, ctx))
    return results, note + f"; shared pattern: {batch.nnz} couplings"
