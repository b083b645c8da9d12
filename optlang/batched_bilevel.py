"""The batched sweep of simple bilevel models: B lowered points → one batched SDBPG run → B Results.

The upper and lower objectives of every point become one vmapped function each
(`batched.batched_function`: the points differ only in constants), `backends/bilevel/batched.py`
runs SDBPG's deterministic loop for all points at once in float64, and each point's RawSolution,
which carries sdbpg's float64 certificate of its own problem, is verified by `verify` from that
point's model exactly as after a single solve. Registered in `sweep.BATCHED_KINDS`.
"""

from __future__ import annotations

import time
from typing import Any

from optlang.backends.base import COMMON_OPTIONS, RunContext
from optlang.batched import batched_function, vmap_or_rows
from optlang.batched_solve import NotBatchable
from optlang.result import Result
from optlang.verify import verify

BACKEND = "batched-sdbpg"


def cannot_batch(models: list[Any], backend: str | None) -> str | None:
    """Why the points cannot run as one batched SDBPG problem, or None."""
    if backend not in (None, "", "auto", "sdbpg"):
        return f"backend '{backend}' was named; the batched solver replaces sdbpg (bilevel) only"
    chosen = models[0].plan(backend).chosen
    if chosen != "sdbpg":
        return f"the planned backend is {chosen}, not sdbpg"
    if models[0].compiled.rescaled:
        return "per-element bounds (the batched functions take the model's variables as written)"
    return None


def solve(models: list[Any], seed: int = 0, max_iter: int | None = None) -> tuple[list[Result], str]:
    """Every point in one batched SDBPG run; one verified Result each."""
    import torch

    from optlang.backends.bilevel import batched as bb
    from optlang.backends.bilevel.sdbpg import SDBPG

    t0 = time.perf_counter()
    upper = batched_function([m.ir.objective.expr for m in models])
    lower = batched_function([next(c for c in m.ir.constraints if c.sense == "argmin").expr for m in models])
    if upper is None or lower is None:
        raise NotBatchable("the points differ in structure (shapes or operations), not only in constants")
    compiled = [m.compiled for m in models]
    problems = [c.problem for c in compiled]
    variables = problems[0].variables
    solver = models[0].ir.solver
    given = dict(solver.options) if solver and solver.name in ("auto", "sdbpg") else {}
    options = SDBPG().make_options({k: v for k, v in given.items() if k not in COMMON_OPTIONS})
    if getattr(options, "_auto_options", None):
        raise NotBatchable("auto options inside a sweep (each point would choose its own)")
    common_iter = given.get("max_iter")
    ctx = RunContext(
        seed=seed,
        device="cpu",
        dtype="float64",
        max_iter=max_iter if max_iter is not None else common_iter,
        tol=given.get("tol"),
    )

    slices = [(v.name, tuple(v.shape), a, b) for v, a, b in bb.FlatVars(variables).slices]
    d = sum(v.size for v in variables)
    # the swept constants of both levels, flattened into one (B, K) block beside the two iterates:
    # vmap then maps ONE tensor (its per-call cost grows with the number of inputs)
    parts = [("u", k, c) for k, c in upper.consts.items()] + [("l", k, c) for k, c in lower.consts.items()]
    B = len(models)
    block = torch.cat([c.reshape(B, -1) for _, _, c in parts], 1) if parts else torch.zeros(B, 0, dtype=torch.float64)
    where, pos = [], 2 * d
    for side, k, c in parts:
        n = int(c[0].numel())
        where.append((side, k, tuple(c.shape[1:]), pos, pos + n))
        pos += n

    def both(row: torch.Tensor) -> torch.Tensor:
        vf = {name: row[a:b].reshape(shape) for name, shape, a, b in slices}
        vg = {name: row[d + a : d + b].reshape(shape) for name, shape, a, b in slices}
        for side, k, shape, a, b in where:
            (vf if side == "u" else vg)[k] = row[a:b].reshape(shape)
        return torch.stack([upper.single(vf), lower.single(vg)])

    batched = vmap_or_rows(both)

    def levels(zf: torch.Tensor, zg: torch.Tensor) -> torch.Tensor:
        return batched(torch.cat([zf, zg, block.to(zf.dtype)], 1))

    try:
        raws = bb.solve_batch(problems, levels, options, ctx)
    except bb.NotBatchable as e:
        raise NotBatchable(str(e)) from None
    t_solve = time.perf_counter() - t0
    the_plan = models[0].plan()
    results = []
    for b, (m, c, raw) in enumerate(zip(models, compiled, raws, strict=True)):
        raw.info["sweep"] = {"batch": B, "index": b, "iterations": raw.iterations, "solver": BACKEND}
        timing = {"compile": 0.0, "solve": t_solve / B, "total": t_solve / B}
        results.append(verify(m.ir, m.form, c, raw, the_plan, BACKEND, timing, ctx))
    conv = sum(r.status.value == "converged" for r in raws)
    note = (
        f"{B} points as one bilevel problem (vmapped upper and lower levels"
        f"{'' if batched.vectorized else ', row loop: an atom without a batching rule'}, "
        f"batched SDBPG, float64; {conv} of {B} converged in ≤ {max(r.iterations for r in raws)} iterations)"
    )
    return results, note
