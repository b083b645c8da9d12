"""The shared run loop (backends/loop.py): the order of its hooks and what each LoopOptions switch changes."""

from __future__ import annotations

import math

import torch

from optlang.backends.base import RunContext, Status
from optlang.backends.common import KeepBest
from optlang.backends.loop import REDO, End, LoopOptions, Step, diverged, from_fields, run_loop
from optlang.backends.stopping import Stagnation


class Halve(Step):
    """x ← x/2 on a one-entry tensor; the value is x itself; converged below `tol`; scripted events."""

    def __init__(self, x: torch.Tensor, tol: float = 0.0, blow_at: int = -1, redo_at: int = -1) -> None:
        self.x, self.tol, self.blow_at, self.redo_at = x, tol, blow_at, redo_at
        self.calls: list[str] = []
        self.redone = False

    def measure(self, t: float) -> float:
        self.calls.append(f"measure {t:g}")
        return float(self.x)

    def update(self, t: float) -> float | End | object | None:
        self.calls.append(f"update {t:g}")
        if t == self.redo_at and not self.redone:
            self.redone = True
            return REDO
        if t == self.blow_at:
            self.x.fill_(math.nan)
            return None
        self.x.mul_(0.5)
        return None

    def check(self, t: float) -> End | None:
        self.calls.append(f"check {t:g}")
        return End(Status.CONVERGED) if float(self.x) < self.tol else None


def test_order_and_convergence() -> None:
    step = Halve(torch.tensor([1.0]), tol=0.2)
    end = run_loop(step, RunContext(), LoopOptions(max_iter=100))
    assert (end.status, end.stop, end.iterations) == (Status.CONVERGED, "converged", 3)
    assert step.calls[:3] == ["measure 0", "update 0", "check 1"]


def test_iteration_limit_and_rows() -> None:
    ctx = RunContext()
    end = run_loop(Halve(torch.tensor([1.0])), ctx, LoopOptions(max_iter=6, report_every=2))
    assert (end.status, end.stop, end.iterations) == (Status.ITERATION_LIMIT, "iteration_limit", 6)
    # rows after iterations 2, 4, 6 with the value measured before the last move
    assert [r[1] for r in ctx.history] == [0.5, 0.125, 0.03125]


def test_divergence_restores_the_best_iterate() -> None:
    x = torch.tensor([1.0])
    keep = KeepBest({"x": x})
    step = Halve(x, blow_at=3)
    end = run_loop(step, RunContext(), LoopOptions(max_iter=100), keep=keep)
    assert (end.status, end.stop, end.iterations) == (Status.DIVERGED, "diverged", 4)
    assert float(x) == 0.125 and keep.value == 0.125  # the last finite measured iterate


def test_redo_counts_nothing() -> None:
    step = Halve(torch.tensor([1.0]), redo_at=2)
    end = run_loop(step, RunContext(), LoopOptions(max_iter=4))
    assert end.iterations == 4
    assert step.calls[6:10] == ["measure 2", "update 2", "measure 2", "update 2"]  # taken back: no check, no count


def test_limits_order_and_first_poll() -> None:
    ctx = RunContext(time_limit=0.0)  # the clock has run out before the loop starts
    assert run_loop(Halve(torch.tensor([1.0])), ctx, LoopOptions(max_iter=5)).status == Status.TIME_LIMIT
    end = run_loop(Halve(torch.tensor([1.0])), ctx, LoopOptions(max_iter=5, poll_first=False))
    assert (end.status, end.iterations) == (Status.TIME_LIMIT, 1)  # one step first
    end = run_loop(Halve(torch.tensor([1.0])), ctx, LoopOptions(max_iter=0, iterations_first=True))
    assert end.status == Status.ITERATION_LIMIT


def test_interrupt_and_counted_end() -> None:
    ctx = RunContext()

    class Interrupting(Halve):
        def check(self, t: float) -> End | None:
            if t == 2:
                ctx.interrupted = True
            return None

    end = run_loop(Interrupting(torch.tensor([1.0])), ctx, LoopOptions(max_iter=10))
    assert (end.status, end.stop, end.iterations) == (Status.INTERRUPTED, "interrupted", 2)

    class Ends(Halve):
        def update(self, t: float) -> End:
            return diverged("at once", counted=t > 0)

    assert run_loop(Ends(torch.tensor([1.0])), RunContext(), LoopOptions(max_iter=10)).iterations == 0


def test_stagnation_and_callback() -> None:
    x = torch.tensor([1.0])
    step = Halve(x)
    step.measure = lambda t: 1.0  # type: ignore[method-assign]  # a value that never improves
    end = run_loop(
        step, RunContext(), LoopOptions(max_iter=1000), keep=KeepBest({"x": x}), stagnation=Stagnation(patience=5)
    )
    assert (end.status, end.stop) == (Status.FEASIBLE, "stagnated") and end.iterations < 1000
    end = run_loop(Halve(torch.tensor([1.0])), RunContext(), LoopOptions(max_iter=100), callback=lambda t: t >= 3)
    assert (end.status, end.iterations) == (Status.ITERATION_LIMIT, 3)


def test_from_fields_reads_by_name() -> None:
    from dataclasses import dataclass

    @dataclass
    class Settings:
        b: int = 0
        a: float = 1.0

    @dataclass
    class Options:
        a: float = 5.0
        other: str = "x"

    assert from_fields(Settings, Options()) == Settings(b=0, a=5.0)
    assert from_fields(Settings, Options(), b=3) == Settings(b=3, a=5.0)
