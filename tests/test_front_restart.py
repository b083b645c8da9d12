"""A front sweep that converges on a collapsed front runs stage 0 again from new starts (front.py `sweep`):
DTLZ4's rays that their x^100 gave no gradient from their starts all end at one corner, and the budget
left then bought nothing. The control logic is tested on a stand-in for one run; the DTLZ4 numbers are in
docs/backends/paretom3.md."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from optlang.backends.base import RunContext
from optlang.backends.multiobjective import front
from optlang.backends.multiobjective.common import Archive
from optlang.backends.multiobjective.paretom3 import ParetoM3Options
from optlang.problem import Domain, MultiObjectiveProblem, TorchFunction, Variable


def _problem() -> MultiObjectiveProblem:
    f1 = TorchFunction.from_callable(lambda v, batch=None: v["x"][..., 0])
    f2 = TorchFunction.from_callable(lambda v, batch=None: 1 - v["x"][..., 0])
    return MultiObjectiveProblem((Variable("x", (2,), Domain("box", 0.0, 1.0)),), (("f1", f1), ("f2", f2)))


class _Count:
    count = 0


def _fake_runs(
    monkeypatch: pytest.MonkeyPatch, fronts: list[np.ndarray], cost: int, stopped: str = "converged"
) -> list[int]:
    """Replace one run of the sweep: run r archives fronts[r] and spends `cost` evaluations."""
    calls: list[int] = []

    def once(problem: Any, o: Any, ctx: Any, archive: Archive, ev: _Count, restart: int) -> front.FrontRun:
        calls.append(restart)
        F = torch.as_tensor(fronts[min(restart, len(fronts) - 1)], dtype=torch.float64)
        archive.add(F, {"x": torch.zeros(F.shape[0], 2, dtype=torch.float64)})
        ev.count += cost
        return front.FrontRun(ev.count, 10, stopped, 40, 20, 1, F.shape[0], 0, exchanged=1, explored=2)

    monkeypatch.setattr(front, "_sweep_once", once)
    return calls


COLLAPSED = np.array([[1.0, 1e-10], [1.001, 0.0]])  # every point at one corner: f2 spans 1e-7 of f1
SPREAD = np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])


def _sweep(evals: int) -> tuple[front.FrontRun, Archive, _Count]:
    o = dataclasses.replace(ParetoM3Options(), front_evals=evals)
    archive, ev = Archive(), _Count()
    return front.sweep(_problem(), o, RunContext(seed=0), archive, ev), archive, ev


def test_a_collapsed_converged_front_runs_stage_0_again_from_new_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_runs(monkeypatch, [COLLAPSED, SPREAD], cost=1000)
    run, archive, ev = _sweep(4000)
    assert calls == [0, 1] and run.restarts == 1
    assert run.iterations == 20 and run.stage0_iterations == 40 and run.exchanged == 2 and run.explored == 4
    assert archive.front()[0].shape[0] >= 3 and not front._collapsed(archive)


def test_restarts_are_capped_and_need_the_budget_of_a_stage_0(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_runs(monkeypatch, [COLLAPSED], cost=100)  # every run collapses
    run, _, _ = _sweep(4000)
    assert calls == [0, 1, 2] and run.restarts == front._RESTARTS == 2
    K = front.front_directions(_problem(), ParetoM3Options())[0].shape[0]
    calls = _fake_runs(monkeypatch, [COLLAPSED], cost=4000 - front._RESTART_ITERS * K + 1)  # too little left
    run, _, _ = _sweep(4000)
    assert calls == [0] and run.restarts == 0


@pytest.mark.parametrize("stopped", ["limit", "time", "diverged"])
def test_only_a_converged_run_restarts(monkeypatch: pytest.MonkeyPatch, stopped: str) -> None:
    calls = _fake_runs(monkeypatch, [COLLAPSED], cost=100, stopped=stopped)
    run, _, _ = _sweep(4000)
    assert calls == [0] and run.restarts == 0


def test_a_spread_front_does_not_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_runs(monkeypatch, [SPREAD], cost=100)
    run, _, _ = _sweep(4000)
    assert calls == [0] and run.restarts == 0


def test_rays_that_all_end_at_one_point_run_again_from_spread_starts() -> None:
    """Kursawe with `var x[3]` (no box): both objectives have a local minimum at x = 0 (|x|^0.8), the ends
    solved from a start near 0 end there too, and on seed 2 every ray did: a front of one point, `converged`
    (HV/exact 0.18). One point now counts as a collapsed front, and the run again spreads the unbounded
    variables' starts: the front is found (HV/exact 1.003 against mo_heldout's grid front on [−5, 5]³)."""
    import optlang

    text = (
        "var x[3]\nminimize {\n  f1: sum(-10 * exp(-0.2 * sqrt(x[:2]^2 + x[1:]^2)))\n"
        "  f2: sum(abs(x)^0.8 + 5 * sin(x^3))\n}\n"
    )
    res = optlang.parse(text).solve(seed=2)
    F = np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in res.info["front"]])
    assert res.info["restarts"] >= 1
    assert F.shape[0] > 100
    assert F[:, 1].min() < -11.0  # f2's end (-11.6 at x ≈ -1.15) is reached, far from the point at x = 0
    assert F[:, 0].min() == pytest.approx(-20.0, abs=1e-6)  # and f1's, at x = 0
