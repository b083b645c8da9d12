"""The simulated-bifurcation anchor for the Max-Cut benchmarks (optional: `pip install simulated-bifurcation`,
part of the `anchors` extra): the PyTorch package of Goto et al.'s SB algorithm, version 2.0.

How it is run, time-limited: the package's pump ramps from 0 to 1 over `max_steps`, so a run cannot
simply be cut short (an agent stopped mid-ramp has not bifurcated). Two calibration runs (2 and 8
steps) measure the cost of a step apart from the per-call setup; one run then gets `max_steps` =
90 % of the remaining time (less one setup) / step cost (at least 5), with the package's own
`timeout` as a safety, early stopping on (its default; it needs 2500 steps to trigger). Defaults:
128 agents (the package's default), `mode = discrete` (dSB; on G1 at 5 s, one seed, loaded machine:
discrete 11229, ballistic 10754, the heated variants lower), not heated, float32, on the CPU with
the caller's torch threads. Its answer comes at the end of the run (no anytime history).
The package needs the dense n × n matrix: sizes whose dense float32 copy would pass `max_dense_gb`
are skipped (`None`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

MODE = "discrete"
AGENTS = 128


def available() -> bool:
    """Whether the simulated-bifurcation package can be imported."""
    try:
        import simulated_bifurcation  # noqa: F401
    except ImportError:
        return False
    return True


def settings() -> str:
    """One line naming how the anchor is run (printed by the benchmarks)."""
    return f"sb = simulated-bifurcation 2.0, {AGENTS} agents, mode {MODE}, not heated, max_steps fitted to the time"


def solve(problem: Any, time_limit: float, seed: int, max_dense_gb: float = 2.0) -> dict[str, Any] | None:
    """Minimize sᵀJs + hᵀs + c over ±1 with SB within `time_limit` seconds; None when it cannot run.

    Returns {"s": best spins (n,) float64, "energy": E(s) recomputed in float64, "first_time": time of
    its only answer, "wall": seconds, "steps": SB steps of the main run}."""
    if not available() or problem.n * problem.n * 4 > max_dense_gb * 2**30:
        return None
    import simulated_bifurcation as sb
    import torch

    t0 = time.perf_counter()
    Q = torch.as_tensor(problem.J.toarray(), dtype=torch.float32)
    lin = torch.as_tensor(np.asarray(problem.h), dtype=torch.float32)
    torch.manual_seed(seed)

    def run(steps: int, timeout: float | None) -> tuple[Any, Any]:
        return sb.minimize(
            Q,
            lin,
            domain="spin",
            agents=AGENTS,
            max_steps=steps,
            mode=MODE,
            heated=False,
            verbose=False,
            timeout=timeout,
        )

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no agent has converged" on the short calibration run
        cost = []
        for k in (2, 8):  # two short runs: the step cost without the per-call setup
            tc = time.perf_counter()
            run(k, None)
            cost.append(time.perf_counter() - tc)
        per_step = max((cost[1] - cost[0]) / 6, 1e-6)
        setup = max(cost[0] - 2 * per_step, 0.0)
        remaining = time_limit - (time.perf_counter() - t0) - setup
        steps = max(5, int(0.9 * remaining / per_step))
        s, _ = run(steps, max(remaining, 1.0))
    x = s.to(torch.float64).numpy().ravel()
    energy = float(problem.energy(x))
    wall = time.perf_counter() - t0
    return {"s": x, "energy": energy, "first_time": wall, "wall": wall, "steps": steps}
