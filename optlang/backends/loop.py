"""The one run loop of the first-order backends: limits, divergence, keep-best, history, interrupt.

A backend writes its step as a `Step` (what to compute before the move, the move, the test after
it) and hands it to `run_loop`, which owns everything around it, in this order each iteration:

1. limits: time limit or interrupt (`ctx.should_stop()`) → `time_limit` / `interrupted`;
   the iteration limit → `iteration_limit` (`LoopOptions.iterations_first` says which wins when both
   hold; `poll_first=False` lets a run take its first step even when its clock has run out);
2. `step.measure(t)`: a value at the current iterate, before the move (or `End`, or None);
   a non-finite value ends the run `diverged` (the iteration not counted; a step that counts it
   returns `diverged(counted=True)` itself); a finite one is offered to keep-best;
3. `step.update(t)`: the move; it may return the value after the move (tested and offered as in 2,
   after the count), an `End` (that move does not count unless `End.counted`), or `REDO` (the step
   was taken back, e.g. sdbpg's rollback: nothing is counted, recorded or tested);
4. the counter advances by `step.count` (1, or a step's oracle calls);
5. a history row every `report_every` iterations (`step.row`, default `ctx.report(value)`, the
   value being the last one measured or the best one: `report_value`);
6. `step.check(t)` every `check_every` iterations: the backend's convergence (or stationarity) test;
7. stagnation (`stopping.Stagnation` on keep-best's value, else `step.progress()`) → `feasible`,
   stop `stagnated`;
8. `callback(t)` (benchmarks) → the status the limits imply, default `iteration_limit`.

The run ends with a `LoopEnd` (status, stop reason, iterations, note); keep-best's iterate is copied
back when it ended `diverged` (or always, `restore="always"`). SIGINT/SIGTERM set the interrupt flag
for the duration (base.interrupt_to_flag), so Ctrl-C ends the run `interrupted` with its incumbent.
The backend builds its RawSolution from the LoopEnd: certificates and reports are its own.

Batching: the loop never looks inside the iterate, so a step over B stacked instances (a leading
batch dimension, as paretom3's M3Loop) runs unchanged; its `measure`/`update` then return one scalar
that summarizes the batch (e.g. the worst instance), since the loop stops all instances together.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from optlang.backends.base import RunContext, Status, interrupt_to_flag
from optlang.backends.stopping import Stagnation, stop_reason

if TYPE_CHECKING:
    from optlang.backends.common import KeepBest

T = TypeVar("T")


@dataclass
class End:
    """A step's way to end the run: the status (None: the step's own rule finished, e.g. a penalty
    stage), the stop reason (default: the one the status implies), a note, and whether the iteration
    that ended it counts."""

    status: Status | None
    stop: str = ""
    note: str = ""
    counted: bool = False


class Redo:
    """`update` returned REDO: the step was taken back; nothing is counted, recorded or tested."""


REDO = Redo()

Value = float | End | Redo | None


def diverged(note: str = "", counted: bool = False) -> End:
    """The End of a step that met a non-finite or exploding value."""
    return End(Status.DIVERGED, "diverged", note, counted)


@dataclass
class LoopOptions:
    """Where the loop checks what, as named switches (each backend keeps its own iteration counts)."""

    max_iter: float  # iteration limit, on the loop's counter
    start: float = 0  # the counter's first value (a later stage goes on counting from the earlier ones)
    poll_first: bool = True  # test time limit and interrupt before the first step (False: always one step)
    iterations_first: bool = False  # both limits reached: report iteration_limit (else time_limit/interrupted)
    report_every: int | None = None  # a history row every this many iterations (None: the step writes its own)
    report_value: str = "last"  # the value of the default row: "last" (measured) | "best" (keep-best's)
    check_every: int = 1  # step.check every this many iterations (0: never)
    restore: str = "diverged"  # copy keep-best's iterate back: "diverged" | "always" | "never"


@dataclass
class LoopEnd:
    """How the run ended: status (None: the step's own rule), stop reason (stopping.STOP_REASONS),
    iterations on the loop's counter, the ending step's note."""

    status: Status | None
    stop: str
    iterations: float
    note: str = ""


class Step:
    """A backend's step. Override `update`, and the hooks the backend needs (all optional)."""

    count: float = 1  # how far one update advances the counter (a step may set it per update)

    def measure(self, t: float) -> float | End | None:
        """The value at the current iterate before the move (None: nothing to test or keep)."""
        return None

    def update(self, t: float) -> Value:
        """The move from iteration t; may return the value after it, an End, or REDO."""
        raise NotImplementedError

    def check(self, t: float) -> End | None:
        """The test after the move (t already counted): convergence, a stage's end, ..."""
        return None

    def row(self, t: float, value: float | None, ctx: RunContext) -> None:
        """One history row (every report_every iterations)."""
        if value is not None:
            ctx.report(value)

    def progress(self) -> float:
        """The value stagnation watches (minimization): by default keep-best's, set by the loop."""
        return math.inf


def _limit(ctx: RunContext, t: float, o: LoopOptions, first: bool) -> End | None:
    over = t >= o.max_iter
    if over and o.iterations_first:
        return End(Status.ITERATION_LIMIT)
    if (not first or o.poll_first) and ctx.should_stop():
        return End(ctx.stop_status())
    if over:
        return End(Status.ITERATION_LIMIT)
    return None


def _finite(v: float) -> bool:
    return math.isfinite(v)


def run_loop(
    step: Step,
    ctx: RunContext,
    options: LoopOptions,
    keep: KeepBest | None = None,
    stagnation: Stagnation | None = None,
    callback: Callable[[float], bool] | None = None,
) -> LoopEnd:
    """Run `step` until it ends the run, diverges, stagnates or reaches a limit (module docstring)."""
    o = options
    t = o.start
    last: float | None = None
    end: End
    with interrupt_to_flag(ctx):
        while True:
            stop = _limit(ctx, t, o, t == o.start)
            if stop is not None:
                end = stop
                break
            m = step.measure(t)
            if isinstance(m, End):
                if m.counted:
                    t += step.count
                end = m
                break
            if m is not None:
                if not _finite(m):
                    end = diverged(f"non-finite value at iteration {t:g}")
                    break
                last = m
                if keep is not None:
                    keep.offer(m)
            u = step.update(t)
            if isinstance(u, Redo):
                continue
            if isinstance(u, End):
                if u.counted:
                    t += step.count
                end = u
                break
            t += step.count
            if u is not None:
                if not _finite(u):
                    end = diverged(f"non-finite value at iteration {t:g}", counted=True)
                    break
                last = u
                if keep is not None:
                    keep.offer(u)
            if o.report_every and t % o.report_every == 0:
                value = keep.value if (o.report_value == "best" and keep is not None) else last
                step.row(t, value, ctx)
            if o.check_every and t % o.check_every == 0 and (c := step.check(t)) is not None:
                end = c
                break
            if stagnation is not None:
                watched = keep.value if keep is not None else step.progress()
                if stagnation.update(watched, ctx.elapsed()):
                    end = End(Status.FEASIBLE, "stagnated")
                    break
            if callback is not None and callback(t):
                end = End(ctx.stop_status(Status.ITERATION_LIMIT))
                break
    if keep is not None and (o.restore == "always" or (o.restore == "diverged" and end.status == Status.DIVERGED)):
        keep.restore()
    reason = end.stop or (stop_reason(str(end.status)) if end.status is not None else "finished")
    return LoopEnd(end.status, reason, t, end.note)


def from_fields(cls: type[T], source: Any, **overrides: Any) -> T:
    """An instance of the dataclass `cls` whose fields are read by name from `source` (a backend's
    Options) where it has them, the rest defaulted or given: options are never copied by position."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]  # cls is a dataclass
    values = {n: getattr(source, n) for n in names if hasattr(source, n)}
    values.update(overrides)
    return cls(**values)
