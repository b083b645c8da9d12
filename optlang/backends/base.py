"""The backend contract: what a solver declares, what it receives, what it returns.

A backend is one class: a name, the problem kinds it serves, an Options dataclass, a
`refuse(form)` that returns a sentence when it cannot honour a model, and `solve(problem,
options, ctx)` that returns a RawSolution. Registering it is one line in registry.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from optlang.errors import OptionError

if TYPE_CHECKING:
    from optlang.analysis import Form
    from optlang.problem import Problem

log = logging.getLogger("optlang")


class Status(StrEnum):
    """How a solve ended. `has_solution` says whether `values` hold a usable point."""

    OPTIMAL = "optimal"  # proven optimal (closed tree, exact enumeration, convex solver optimum)
    CONVERGED = "converged"  # stationarity / tolerance criteria met (no global certificate)
    FEASIBLE = "feasible"  # a solution, no convergence claim (heuristics at their own stop)
    TIME_LIMIT = "time_limit"  # stopped by the time limit; best solution returned
    ITERATION_LIMIT = "iteration_limit"  # stopped by the iteration/node limit; best solution returned
    INTERRUPTED = "interrupted"  # Ctrl-C; best solution returned
    DIVERGED = "diverged"  # NaN/inf or blow-up; the best iterate before it is returned
    UNBOUNDED = "unbounded"  # the objective ran past 1e20 in the improving direction with growing iterates
    INFEASIBLE = "infeasible"  # proven infeasible
    ERROR = "error"  # the backend failed; no solution

    @property
    def has_solution(self) -> bool:
        return self not in (Status.INFEASIBLE, Status.ERROR, Status.UNBOUNDED)


@dataclass
class RawSolution:
    """What a backend returns, in the terms of the problem it was given (minimization).

    values: variable name -> numpy array (for IsingProblem the key is "s": the ±1 spin vector).
    objective: the backend's own value of its problem (recomputed by Result; kept for comparison).
    bound: a valid lower bound on the minimum of the given problem, when the backend proves one.
    history: (seconds since solve start, objective, bound or None) rows.
    info: backend-specific extras (front, per-region statistics, stationarity, ...), JSON-able.
    checks: name -> (passed, detail) certificate checks the backend ran itself.
    """

    status: Status
    values: dict[str, np.ndarray]
    objective: float | None = None
    bound: float | None = None
    iterations: int = 0
    history: list[tuple[float, float, float | None]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, tuple[bool, str]] = field(default_factory=dict)


class RunContext:
    """Seed, device, dtype, limits and progress for one solve. Backends poll `should_stop()`."""

    def __init__(
        self,
        seed: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
        time_limit: float | None = None,
        max_iter: int | None = None,
        tol: float | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.seed = int(seed)
        self.device = resolve_device(device)
        self.dtype_name = dtype
        self.time_limit = time_limit
        self.max_iter = max_iter
        self.tol = tol
        self._progress = progress
        self._start = time.perf_counter()
        self.interrupted = False
        self.history: list[tuple[float, float, float | None]] = []

    # --- time and stopping
    def restart_clock(self, at: float | None = None) -> None:
        """Start the clock now, or at an earlier perf_counter() reading (the model's load)."""
        self._start = time.perf_counter() if at is None else float(at)

    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    def remaining(self) -> float:
        return math.inf if self.time_limit is None else self.time_limit - self.elapsed()

    def should_stop(self) -> bool:
        return self.interrupted or (self.time_limit is not None and self.elapsed() >= self.time_limit)

    def stop_status(self, default: Status = Status.ITERATION_LIMIT) -> Status:
        """The status a loop that ended early should report."""
        if self.interrupted:
            return Status.INTERRUPTED
        if self.time_limit is not None and self.elapsed() >= self.time_limit:
            return Status.TIME_LIMIT
        return default

    # --- numerics
    @property
    def dtype(self) -> Any:
        import torch

        return torch.float64 if self.dtype_name == "float64" else torch.float32

    def generator(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)

    def torch_generator(self) -> Any:
        import torch

        g = torch.Generator(device=self.device)
        g.manual_seed(self.seed)
        return g

    # --- progress
    def report(self, objective: float, bound: float | None = None, **extra: Any) -> None:
        """Record one history row and forward it to the progress display."""
        t = self.elapsed()
        self.history.append((t, float(objective), None if bound is None else float(bound)))
        if self._progress is not None:
            self._progress({"time": t, "objective": float(objective), "bound": bound, **extra})


def resolve_device(device: str | None) -> str:
    """'auto' → 'cuda' when torch sees a GPU, else 'cpu'; 'cuda' without a GPU is an error."""
    if device in (None, "", "auto"):
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise OptionError(
                "device",
                "device 'cuda' was asked for but torch sees no CUDA GPU",
                hint="use --device cpu or --device auto",
            )
    elif device != "cpu":
        raise OptionError("device", f"unknown device '{device}'", hint="use cpu, cuda or auto")
    return device


class interrupt_to_flag:
    """Context manager: Ctrl-C (SIGINT) and SIGTERM set ctx.interrupted instead of killing the solve;
    the backend stops at its next poll and returns its incumbent as `interrupted`."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._old: dict[int, Any] = {}

    def __enter__(self) -> RunContext:
        for sig in self.SIGNALS:
            try:
                self._old[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread
                pass
        return self.ctx

    def _handler(self, signum: int, frame: Any) -> None:
        if self.ctx.interrupted:  # second Ctrl-C: give up
            raise KeyboardInterrupt
        self.ctx.interrupted = True

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


@dataclass
class NoOptions:
    """A backend without options of its own."""


# Options understood by every backend; they go to RunContext, not to the backend's Options.
COMMON_OPTIONS = ("time_limit", "max_iter", "seed", "device", "dtype", "tol", "bound")


class Backend(ABC):
    """Base class. Subclasses set the class attributes and implement `solve` (and maybe `refuse`)."""

    name: ClassVar[str] = ""
    kinds: ClassVar[frozenset[str]] = frozenset()
    summary: ClassVar[str] = ""
    research: ClassVar[bool] = False  # a research method (the planner prefers these when they accept)
    auto: ClassVar[bool] = True  # may the planner pick it automatically (anchors like neal: False)
    priority: ClassVar[int] = 50  # lower = preferred among those that accept a model
    Options: ClassVar[type] = NoOptions
    requires: ClassVar[tuple[str, ...]] = ()  # optional import names; missing → refusal

    def available(self) -> str | None:
        """None when usable here, else why not (an optional dependency is missing)."""
        import importlib.util

        for mod in self.requires:
            if importlib.util.find_spec(mod) is None:
                return f"needs the optional package '{mod}' (pip install 'optlang-dsl[anchors]')"
        return None

    def refuse(self, form: Form) -> str | None:
        """A sentence saying why this backend cannot solve `form`, or None if it can."""
        if form.kind not in self.kinds:
            return f"solves {', '.join(sorted(self.kinds))} problems, not {form.kind}"
        return None

    @abstractmethod
    def solve(self, problem: Problem, options: Any, ctx: RunContext) -> RawSolution:
        """Solve the lowered problem within ctx's limits; return the best point found."""

    # --- options
    def make_options(self, given: Mapping[str, Any]) -> Any:
        """Build the Options dataclass from a solver block / API dict; unknown keys are errors."""
        fields = {f.name: f for f in dataclasses.fields(self.Options)}
        kwargs: dict[str, Any] = {}
        for key, value in given.items():
            if key in COMMON_OPTIONS:
                continue
            if key not in fields:
                close = difflib.get_close_matches(key, list(fields) + list(COMMON_OPTIONS), n=1)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else ("options: " + ", ".join(sorted(list(fields) + list(COMMON_OPTIONS))))
                )
                raise OptionError(key, f"backend '{self.name}' has no option '{key}'", hint=hint)
            kwargs[key] = _coerce(value, fields[key], key, self.name)
        return self.Options(**kwargs)


def _coerce(value: Any, f: dataclasses.Field, key: str, backend: str) -> Any:
    """Check an option value against the field's declared type (int, float, str, bool, or X | None)."""
    ann = (f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))).replace(" ", "")
    optional = ann.endswith("|None")
    ann = ann.removesuffix("|None")
    if value is None and optional:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ann == "int":
        if not number or not float(value).is_integer():
            raise OptionError(key, f"option '{key}' of '{backend}' must be an integer, got {value!r}")
        return int(value)
    if ann == "float":
        if not number:
            raise OptionError(key, f"option '{key}' of '{backend}' must be a number, got {value!r}")
        return float(value)
    if ann == "bool" and not isinstance(value, bool):
        raise OptionError(key, f"option '{key}' of '{backend}' must be true or false, got {value!r}")
    if ann == "str" and not isinstance(value, str):
        raise OptionError(key, f"option '{key}' of '{backend}' must be a string, got {value!r}")
    return value
