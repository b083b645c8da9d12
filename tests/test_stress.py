"""No path ends a solve without a result: several backends on many seeds and time limits (tiny ones
included, where the clock has run out before the first step) each return a Result with a status;
a status that claims a solution carries finite values for every variable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import optlang
from optlang.backends import registry

FIXTURES = Path(__file__).parent / "fixtures" / "compare"

RUNS = [
    ("maxcut_small.opt", "localsearch"),
    ("maxcut_small.opt", "neal"),
    ("maxcut_small.opt", "specann"),
    ("ising_small.opt", "localsearch"),
    ("ising_small.opt", "bruteforce"),
    ("smooth_small.opt", "gd"),
    ("minimax_small.opt", "gda"),
]
SEEDS = range(4)
LIMITS = (1e-4, 0.05, 0.5)


def _available(backend: str) -> bool:
    return registry.get(backend).available() is None


@pytest.mark.parametrize("model,backend", RUNS)
def test_every_solve_returns_a_result(model: str, backend: str) -> None:
    if not _available(backend):
        pytest.skip(f"{backend} is not installed")
    seen = set()
    m = optlang.load(FIXTURES / model)
    for seed in SEEDS:
        for limit in LIMITS:
            r = m.solve(backend=backend, seed=seed, time_limit=limit)
            assert isinstance(r, optlang.Result)
            seen.add(r.status.value)
            if r.status.has_solution:
                assert r.values and all(np.all(np.isfinite(v)) for v in r.values.values()), (seed, limit)
                assert r.objective is not None and np.isfinite(r.objective)
    assert seen
