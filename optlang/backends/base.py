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
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from optlang.errors import OptionError
from optlang.problem import Auto
from optlang.result import Status  # re-exported: backends import it with the rest of their API from here

if TYPE_CHECKING:
    from optlang.analysis import Form

log = logging.getLogger("optlang")


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


# import name → (pip package, optlang-dsl extra that installs it); see pyproject's optional-dependencies
OPTIONAL_PACKAGES: dict[str, tuple[str, str]] = {
    "dwave.samplers": ("dwave-samplers", "anchors"),
    "dimod": ("dwave-samplers", "anchors"),
    "pymoo": ("pymoo", "anchors"),
    "cvxpy": ("cvxpy", "cvxpy"),
    "distributed": ("dask[distributed]", "dask"),
}


def module_present(name: str) -> bool:
    """Whether `import name` would find a module, without importing it; a missing parent package
    (`dwave` for `dwave.samplers`) means absent — find_spec raises for it instead of returning None."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ModuleNotFoundError, ValueError):
        return False


def missing_package(mod: str) -> str | None:
    """None when the optional module `mod` is installed, else the sentence a refusal quotes."""
    if module_present(mod):
        return None
    package, extra = OPTIONAL_PACKAGES.get(mod, (mod.split(".")[0], "all"))
    return f"needs optional package {package} (pip install 'optlang-dsl[{extra}]')"


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
    uses_torch: ClassVar[bool] = True  # False: numpy-only, so a solve never imports torch
    preload: ClassVar[tuple[str, ...]] = ()  # heavy modules the solve imports (besides torch): see prepare()
    # the declared meaning of option values, checked by make_options (so `optlang check` sees them too):
    # numeric ranges (check_ranges' rules) and the allowed words of string options
    option_ranges: ClassVar[Mapping[str, str]] = {}
    option_choices: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def available(self) -> str | None:
        """None when usable here, else the sentence naming the missing optional package and its extra."""
        for mod in self.requires:
            if (why := missing_package(mod)) is not None:
                return why
        return None

    def prepare(self) -> None:
        """Import what the solve needs before its clock starts: a time limit caps the solve, and
        first imports (torch ≈ 1–3 s, torch.optim's dynamo ≈ 1–4 s, cvxpy ≈ 1–3 s on a loaded 2-core
        machine) are start-up, like the process start, not solve time."""
        import importlib

        for mod in (("torch",) if self.uses_torch else ()) + self.preload:
            try:
                importlib.import_module(mod)
            except ImportError:  # an optional helper (e.g. one cvxpy solver) absent: the solve says so
                pass

    def refuse(self, form: Form) -> str | None:
        """A sentence saying why this backend cannot solve `form`, or None if it can."""
        if form.kind not in self.kinds:
            return f"solves {', '.join(sorted(self.kinds))} problems, not {form.kind}"
        return None

    @abstractmethod
    def solve(self, problem: Any, options: Any, ctx: RunContext) -> RawSolution:
        """Solve the lowered problem within ctx's limits; return the best point found.

        `problem` is one of problem.Problem: the planner hands a backend only the kinds it declares, so each
        backend annotates the problem class it serves (typed Any here so that narrowing is not an override error).
        """

    # --- options
    def make_options(self, given: Mapping[str, Any]) -> Any:
        """Build the Options dataclass from a solver block / API dict; unknown keys are errors; numeric
        options given as `auto` are kept aside for backends/autotune.py."""
        fields = {f.name: f for f in dataclasses.fields(self.Options)}
        given, auto = split_auto_options(self.name, fields, given)  # numeric options given as `auto`
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
            kwargs[key] = coerce_option(value, fields[key], key, self.name)
        opts = self.Options(**kwargs)
        self.check_options(opts, auto)
        if auto:
            setattr(opts, AUTO_KEY, auto)  # chosen by backends/autotune.solve before the final solve
        return opts

    def check_for_model(self, options: Any, form: Form) -> None:
        """Option rules that depend on the model (e.g. a budget against its size), checked by `optlang check`
        after make_options; the default has none. A solve checks them again on the compiled problem."""
        return None

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """Refuse (OptionError E700) a string option outside `option_choices` and a number outside
        `option_ranges`, the candidates of an `auto` option included: a nonsense value (a negative step,
        a zero iteration count) would otherwise run to a silently wrong or crashing end."""
        for key, words in self.option_choices.items():
            value = getattr(options, key)
            if value not in words:
                raise OptionError(
                    key,
                    f"option '{key}' of '{self.name}' must be one of {', '.join(map(repr, words))}, not {value!r}",
                )
        check_ranges(options, self.option_ranges, self.name)
        for key, cands in (auto or {}).items():
            if key in self.option_ranges:
                for c in cands:
                    check_ranges(SimpleNamespace(**{key: c}), {key: self.option_ranges[key]}, self.name)


def coerce_option(value: Any, f: dataclasses.Field, key: str, backend: str) -> Any:
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
        if not math.isfinite(float(value)):  # no option means anything by nan or inf
            raise OptionError(key, f"option '{key}' of '{backend}' must be a finite number, got {value!r}")
        return float(value)
    if ann == "bool" and not isinstance(value, bool):
        raise OptionError(key, f"option '{key}' of '{backend}' must be true or false, got {value!r}")
    if ann == "str" and not isinstance(value, str):
        raise OptionError(key, f"option '{key}' of '{backend}' must be a string, got {value!r}")
    return value


_RANGE_TEXT = {
    ">0": "> 0",
    ">=0": ">= 0",
    ">=1": ">= 1",
    "(0,1]": "in (0, 1]",
    "[0,1]": "in [0, 1]",
    "(0,1)": "in (0, 1)",
    "[0,1)": "in [0, 1)",
}


def check_ranges(options: Any, ranges: Mapping[str, str], backend: str) -> None:
    """Raise an OptionError (E700, at the option's line) for the first option outside its range.

    `ranges` maps option names to one of ">0", ">=0", ">=1", "(0,1]", "[0,1]", "(0,1)", "[0,1)"; backends call it at
    the start of `solve`, so a nonsense value (a negative step, a zero budget) is refused before any work
    instead of running to a silently wrong or crashing end."""
    tests: dict[str, Callable[[float], bool]] = {
        ">0": lambda v: v > 0,
        ">=0": lambda v: v >= 0,
        ">=1": lambda v: v >= 1,
        "(0,1]": lambda v: 0 < v <= 1,
        "[0,1]": lambda v: 0 <= v <= 1,
        "(0,1)": lambda v: 0 < v < 1,
        "[0,1)": lambda v: 0 <= v < 1,
    }
    for key, rule in ranges.items():
        value = getattr(options, key)
        if isinstance(value, Auto) or value is None:
            continue
        if not tests[rule](float(value)):
            raise OptionError(key, f"option '{key}' of '{backend}' must be {_RANGE_TEXT[rule]}, got {value!r}")


# ----------------------------------------------------------------------------- `auto` options
# numeric options given as `auto` (docs/language.md §6) are kept aside under this attribute of the
# Options instance; backends/autotune.py chooses them before the final solve
AUTO_KEY = "_auto_options"
AUTO_FACTORS = (0.1, 1.0, 10.0)  # default candidates of a float option: its default times these


def numeric_kind(f: dataclasses.Field) -> str | None:
    """'int' or 'float' for a numeric Options field (optionally `| None`), else None."""
    ann = (f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))).replace(" ", "")
    ann = ann.removesuffix("|None")
    return ann if ann in ("int", "float") else None


def default_auto_grid(backend: str, key: str, f: dataclasses.Field) -> tuple[float, ...]:
    """The documented default candidates of a numeric option: d/10, d, 10·d (float), d//2, d, 2·d (int)."""
    d = f.default
    kind = numeric_kind(f)
    if isinstance(d, (int, float)) and not isinstance(d, bool) and d > 0:
        if kind == "int" and d >= 1:
            return tuple(sorted({max(1, int(d) // 2), int(d), 2 * int(d)}))
        if kind == "float":
            return tuple(float(f"{float(d) * c:.12g}") for c in AUTO_FACTORS)
    raise OptionError(
        key,
        f"option '{key}' of '{backend}' has no default candidates for auto (its default is {d!r})",
        hint=f"give them: {key} = auto in [c1, c2, ...]",
        code="E703",
    )


def split_auto_options(
    backend: str, fields: Mapping[str, dataclasses.Field], given: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, tuple[float, ...]]]:
    """(the options without their auto entries, {option: candidates}) — `auto` on a numeric option;
    on a string option the word `auto` is an ordinary value (`solver = auto`)."""
    rest: dict[str, Any] = {}
    auto: dict[str, tuple[float, ...]] = {}
    for key, value in given.items():
        f = fields.get(key)
        is_auto = isinstance(value, Auto) or (isinstance(value, str) and value == "auto")
        if f is None or not is_auto or key in COMMON_OPTIONS:  # max_iter, tol, ...: the run's budget, not tuned
            rest[key] = value
            continue
        if numeric_kind(f) is None:
            if isinstance(value, Auto):
                numeric = sorted(k for k, g in fields.items() if numeric_kind(g) and k not in COMMON_OPTIONS)
                raise OptionError(
                    key,
                    f"option '{key}' of '{backend}' is not a number: `auto in [...]` chooses numeric options only",
                    hint=f"numeric options: {', '.join(numeric)}" if numeric else None,
                    code="E703",
                )
            rest[key] = value
            continue
        cands = value.candidates if isinstance(value, Auto) and value.candidates else default_auto_grid(backend, key, f)
        auto[key] = tuple(sorted({float(coerce_option(c, f, key, backend)) for c in cands}))
    return rest, auto
