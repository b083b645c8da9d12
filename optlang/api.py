"""The Python API: load/parse a model, plan it, solve it into a re-verified Result."""

from __future__ import annotations

import importlib
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from optlang.analysis import Form
from optlang.backends import autotune, registry
from optlang.backends.base import COMMON_OPTIONS, RawSolution, RunContext, Status, interrupt_to_flag
from optlang.backends.stopping import stop_reason
from optlang.compiler import Compiled, classify, compile_problem
from optlang.errors import DataError, OptionError, OptlangError, ParseError
from optlang.ir.lower import lower_source
from optlang.ir.model import ModelIR
from optlang.planner import Plan, plan
from optlang.problem import IsingProblem
from optlang.result import Result
from optlang.source import Source, Span
from optlang.verify import verify


class SolveError(OptlangError):
    """A backend failed while solving (a bug or an environment problem, not bad input)."""

    code = "E900"


def load(
    path: str | Path,
    params: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    allow_paths: Sequence[str | Path] | None = None,
) -> Model:
    """Read a .opt file; params/data override `param`/`data`/`graph` declarations by name.

    load() in the model reads only inside the model's folder tree and `allow_paths`.
    """
    t_loaded = time.perf_counter()  # the --time-limit clock starts here (folding and compiling count)
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise DataError(f"model file not found: {path}", None, code="E601") from None
    except IsADirectoryError:
        raise DataError(f"{path} is a folder, not a model file", None, code="E601") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        from optlang.source import Span

        err = ParseError(
            f"the file is not UTF-8 text (byte 0x{raw[e.start]:02x})",
            Span(line, col, line, col + 1),
            hint="save the model as UTF-8",
            code="E105",
        )
        err.source = Source(raw.decode("utf-8", errors="replace"), str(path), p.parent)
        raise err from None
    model = parse(text, base_dir=p.parent, params=params, data=data, path=str(path), allow_paths=allow_paths)
    model._loaded_at = t_loaded
    return model


def parse(
    text: str,
    base_dir: str | Path = ".",
    params: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    path: str = "<string>",
    allow_paths: Sequence[str | Path] | None = None,
) -> Model:
    """Parse model text (paths in load() are relative to base_dir and confined to it and allow_paths).

    Overrides may be numbers, lists, numpy arrays, scipy sparse matrices, networkx graphs, `(X, y)`
    tables or file paths (str or Path); a graph or table given under `params` is used as a data override."""
    t_loaded = time.perf_counter()
    source = Source(text, path, Path(base_dir))
    try:
        ir = lower_source(source, _overrides(params), _overrides(data), allow_paths)
        form = classify(ir)
        model = Model(ir, form)
        model.overrides = (dict(params or {}), dict(data or {}))  # what a sweep re-lowers each point with
        if form.kind in ("ising", "maxcut"):  # the lowering is cheap and tells the planner sizes and fields
            problem = model.compiled.problem
            assert isinstance(problem, IsingProblem)
            model.form = replace(form, n_spins=problem.n, nnz=int(problem.J.nnz), has_field=problem.has_field)
    except OptlangError as e:
        raise e.with_source(source) from None
    model._loaded_at = t_loaded
    return model


def _overrides(given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Normalize API overrides: a networkx graph becomes its weighted adjacency matrix (nodes in sorted
    order when they sort), a Path becomes its string."""
    out: dict[str, Any] = {}
    for name, value in (given or {}).items():
        if isinstance(value, Path):
            value = str(value)
        elif type(value).__module__.startswith("networkx"):
            import networkx as nx

            nodes = list(value.nodes)
            try:
                nodes = sorted(nodes)
            except TypeError:
                pass
            value = nx.to_scipy_sparse_array(value, nodelist=nodes, weight="weight", format="csr")
        out[name] = value
    return out


@dataclass(frozen=True)
class Variable:
    """A decision variable as the model declares it: element kind (real, spin, binary), shape, domain."""

    name: str
    kind: str
    shape: tuple[int, ...]
    domain: str

    def describe(self) -> str:
        """`real [3] in [0, 1]`, `spin [800]`, `real scalar free`."""
        dims = "[" + ", ".join(map(str, self.shape)) + "]" if self.shape else "scalar"
        return f"{self.kind} {dims}" + ("" if self.kind != "real" else f" {self.domain}")


COMMON_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "time_limit": ((int, float), "a positive number of seconds"),
    "max_iter": ((int, float), "a positive integer"),
    "seed": ((int, float), "an integer"),
    "tol": ((int, float), "a positive number"),
    "device": (str, 'one of "cpu", "cuda", "auto"'),
    "dtype": (str, '"float32" or "float64"'),
    "bound": (str, '"sdp" or "none"'),
}


def _check_common(key: str, value: Any) -> str | None:
    """Why a common solver option's value is wrong, or None."""
    types, want = COMMON_TYPES[key]
    if isinstance(value, bool) or not isinstance(value, types):
        return want
    value = cast(Any, value)
    if key in ("max_iter", "seed") and not float(value).is_integer():
        return want
    if key in ("time_limit", "max_iter", "tol") and value <= 0:
        return want
    if key == "device" and not (value in ("cpu", "cuda", "auto") or value.startswith("cuda:")):
        return want
    if key == "dtype" and value not in ("float32", "float64"):
        return want
    if key == "bound" and value not in ("sdp", "none"):
        return want
    return None


class Model:
    """A checked, classified model. `plan()` explains the backend choice; `solve()` runs it.

    `params`, `variables` and `graphs` are read-only views of what the model declares."""

    def __init__(self, ir: ModelIR, form: Form) -> None:
        self.ir = ir
        self.form = form
        # when the model was loaded: the first solve's time limit counts from here (then from each call)
        self._loaded_at: float | None = None
        self.overrides: tuple[dict[str, Any], dict[str, Any]] = ({}, {})

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def kind(self) -> str:
        return self.form.kind

    @property
    def source_text(self) -> str:
        return self.ir.source.text

    @property
    def solver_options(self) -> dict[str, Any]:
        return dict(self.ir.solver.options) if self.ir.solver else {}

    @property
    def params(self) -> Mapping[str, Any]:
        """Read-only: each `param` by name, as a Python float or a numpy array (scipy sparse when sparse)."""
        return MappingProxyType(self.ir.params)

    @property
    def variables(self) -> Mapping[str, Variable]:
        """Read-only: each declared variable (var, spin, binary) by name."""
        return MappingProxyType(
            {n: Variable(n, v.kind, tuple(v.shape), v.domain.describe()) for n, v in self.ir.variables.items()}
        )

    @property
    def graphs(self) -> Mapping[str, Any]:
        """Read-only: each `graph` by name (`.W` the symmetric weight matrix, `.n` nodes, `.m` edges)."""
        return MappingProxyType(self.ir.graphs)

    @property
    def data(self) -> Mapping[str, Any]:
        """Read-only: each `data` table by name (`.X` features, `.y` target or None, `.columns`)."""
        return MappingProxyType(self.ir.tables)

    def __repr__(self) -> str:
        return f"Model({self.name!r}, kind={self.kind!r})"

    def _repr_markdown_(self) -> str:
        from optlang.display import model_markdown

        return model_markdown(self)

    def _repr_html_(self) -> str:
        from optlang.display import model_html

        return model_html(self)

    def check_solver(self, backends: Sequence[str] | None = None) -> None:
        """Validate the solver block (backend name, option names, types and ranges) and the named backends,
        as `optlang check` does; raises OptionError/PlanError with a did-you-mean hint."""
        import difflib

        from optlang.errors import PlanError

        solver = self.ir.solver
        names = list(backends or [])
        if solver is not None:
            self._check_common_options(solver.options)
            if solver.name != "auto":
                names.insert(0, solver.name)
        for i, name in enumerate(names):
            if name not in registry.names():
                close = difflib.get_close_matches(name, registry.names(), n=1)
                from_block = solver is not None and i == 0 and name == solver.name and not backends
                raise PlanError(
                    f"unknown backend '{name}'",
                    solver.span if from_block and solver else None,
                    hint=f"did you mean '{close[0]}'?" if close else "backends: " + ", ".join(registry.names()),
                    code="E803",
                ).with_source(self.ir.source)
        if solver is not None:  # `solver auto { ... }`: option names are checked once the plan picks a backend
            for name in names:
                opts = self._backend_options(name, solver.options)
                try:
                    registry.get(name).check_for_model(opts, self.form)
                except OptionError as e:
                    if e.span is None and e.key in solver.option_spans:
                        e.span = solver.option_spans[e.key]
                    raise e.with_source(self.ir.source) from None

    @cached_property
    def compiled(self) -> Compiled:
        return compile_problem(self.ir, self.form)

    def plan(self, backend: str | Sequence[str] | None = None, time_limit: float | None = None) -> Plan:
        """Rank the backends for this model; `backend` forces one (an error if it refuses).

        A list (or "a,b,c") is an order of preference: the first backend that accepts the model.
        `time_limit` (default: the solver block's) sizes the budget exact methods must fit in."""
        if isinstance(backend, str) and "," in backend:
            backend = [b.strip() for b in backend.split(",") if b.strip()]
        if isinstance(backend, (list, tuple)):
            if len(backend) == 1:
                backend = backend[0]
            else:
                from optlang.errors import PlanError

                first: PlanError | None = None
                for name in backend:
                    try:
                        return self.plan(name, time_limit)
                    except PlanError as e:
                        first = first or e
                if first is None:
                    return self.plan(None, time_limit)
                raise first
        assert backend is None or isinstance(backend, str)
        if time_limit is None and self.ir.solver is not None:
            tl = self.ir.solver.options.get("time_limit")
            time_limit = float(tl) if isinstance(tl, (int, float)) and not isinstance(tl, bool) else None
        solver = self.ir.solver
        name = backend if backend not in (None, "") else (solver.name if solver else "auto")
        span = solver.span if solver and backend in (None, "") else None
        if self.form.kind == "general_bilevel":
            span = next(c.span for c in self.ir.constraints if c.sense == "argmin")
        try:
            p = plan(self.form, name or "auto", span, time_limit)
            if solver and solver.name in ("auto", p.chosen):
                auto = autotune.auto_of(self._backend_options(p.chosen, solver.options))
                if auto:
                    p = replace(
                        p, auto_options=tuple(auto), auto_note=autotune.describe(auto, self.form, self.compiled.problem)
                    )
            return p
        except OptlangError as e:
            if e.code in ("E802", "E804"):
                self._hint_domain(e)
                if e.span is None:
                    e.span = self.refusal_span()
            raise e.with_source(self.ir.source) from None

    def refusal_span(self) -> Span:
        """Where a 'no backend can solve this' error points: the first general constraint (what the
        backends refuse most often), else the objective."""
        general = [c for c in self.ir.constraints if c.sense != "argmin"]
        return general[0].span if general else self.ir.objective.span

    def _check_common_options(self, options: Mapping[str, Any]) -> None:
        """Types of the options every backend shares; a solver-block option points at its line."""
        spans = self.ir.solver.option_spans if self.ir.solver else {}
        for key, value in options.items():
            if key in COMMON_TYPES:
                want = _check_common(key, value)
                if want is not None:
                    block = self.ir.solver is not None and self.ir.solver.options.get(key, object()) is value
                    raise OptionError(
                        key,
                        f"option '{key}' must be {want}, got {value!r}",
                        span=spans.get(key) if block else None,
                        code="E702",
                    ).with_source(self.ir.source)

    def _hint_domain(self, e: OptlangError) -> None:
        """A refused model whose constraints are plain bounds on a variable: say to write a domain."""
        import re

        for c in self.ir.constraints:
            m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(>=|<=)\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*", c.text or "")
            r = re.fullmatch(r"\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*(>=|<=)\s*([A-Za-z_]\w*)\s*", c.text or "")
            if m and m.group(1) in self.ir.variables:
                name, op, bound = m.groups()
            elif r and r.group(3) in self.ir.variables:
                bound, op, name = r.groups()
                op = ">=" if op == "<=" else "<="
            else:
                continue
            v = self.ir.variables[name]
            dims = "[" + ", ".join(map(str, v.shape)) + "]" if v.shape else ""
            e.hint = (
                f"a bound on a variable is a domain, which every backend handles: declare `var {name}{dims} "
                f"{op} {bound}` (or `in [lo, hi]`) and drop the constraint"
            )
            if e.span is None:
                e.span = c.span
            return
        general = [c for c in self.ir.constraints if c.sense != "argmin"]
        if general and self.form.kind == "smooth" and e.hint is None:
            c = general[0]
            m = re.fullmatch(r"\s*sum\(\s*([A-Za-z_]\w*)\s*\)\s*==\s*1(\.0*)?\s*", c.text or "")
            if m and m.group(1) in self.ir.variables:
                v = self.ir.variables[m.group(1)]
                dims = "[" + ", ".join(map(str, v.shape)) + "]" if v.shape else ""
                e.hint = f"if {m.group(1)} is also >= 0, this is a domain: declare `var {m.group(1)}{dims} in simplex`"
            else:
                e.hint = (
                    "the smooth backend projects onto variable domains only: write bounds as a domain "
                    "(`in [lo, hi]`, `>= lo`, `<= hi`, `in simplex`, `in ball(r)`), or move the constraint into "
                    "the objective as a penalty"
                )
            if e.span is None:
                e.span = c.span

    def _backend_options(self, backend: str, options: Mapping[str, Any]) -> Any:
        """Validate options for a backend; an unknown key points at its line in the solver block."""
        try:
            return registry.get(backend).make_options(options)
        except OptionError as e:
            spans = self.ir.solver.option_spans if self.ir.solver else {}
            if e.span is None and e.key in spans:
                e.span = spans[e.key]
            raise e.with_source(self.ir.source) from None

    def sweep(
        self,
        params: Mapping[str, Any],
        mode: str = "product",
        backend: str | None = None,
        seed: int = 0,
        max_iter: int | None = None,
        batch: bool = True,
        executor: str = "inline",
    ) -> Any:
        """Solve over a grid of param values (`mode` product or zip) as one batched problem where the
        kind allows (smooth, dro), else point by point; see optlang/sweep.py. Returns a SweepResult."""
        # sweep sits above api (it solves through the executors, which load models through optlang):
        # looked up when called, so api's import graph stays one-way
        run_sweep = importlib.import_module("optlang.sweep").run_sweep
        return run_sweep(self, params, mode, backend, seed, max_iter, batch, executor)

    def _check_common_all(
        self, common: Mapping[str, Any], time_limit: Any, seed: Any, max_iter: Any, dtype: Any
    ) -> tuple[int, int | None]:
        """Every option all backends share, checked before anything runs (OptionError E702)."""
        from optlang.backends.base import resolve_device

        bound_mode = common.get("bound", "none")
        if bound_mode not in ("none", "sdp", False, None):
            raise OptionError("bound", f"unknown bound '{bound_mode}'", hint='use bound = "sdp" or "none"', code="E702")
        if bound_mode == "sdp" and self.kind not in ("ising", "maxcut"):
            raise OptionError("bound", 'bound = "sdp" applies to ising and maxcut models only', code="E702")
        if dtype not in ("float32", "float64"):
            raise OptionError("dtype", f"unknown dtype '{dtype}'", hint="float32 or float64", code="E702")
        if time_limit is not None and (
            isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0
        ):
            raise OptionError("time_limit", f"time_limit must be a positive number, got {time_limit!r}", code="E702")
        if "device" in common and not isinstance(common["device"], str):
            raise OptionError("device", "device must be cpu, cuda or auto", code="E702")
        if isinstance(common.get("device"), str):
            resolve_device(common["device"])
        return self._check_common(seed, max_iter, common.get("tol"))

    def _check_common(self, seed: Any, max_iter: Any, tol: Any) -> tuple[int, int | None]:
        """seed: a whole number in [0, 2^63); max_iter: a whole number ≥ 1; tol: a positive number.
        An error points at the option's line in the solver block when it came from there."""
        spans = self.ir.solver.option_spans if self.ir.solver else {}

        def bad(key: str, want: str, got: Any) -> OptionError:
            e = OptionError(key, f"{key} must be {want}, got {str(got)[:40]!r}", spans.get(key), code="E702")
            return e.with_source(self.ir.source)  # type: ignore[return-value]

        def whole(v: Any) -> bool:
            return (
                isinstance(v, (int, float, np.integer, np.floating))
                and not isinstance(v, bool)
                and (np.isfinite(v) and float(v).is_integer())
            )

        if not whole(seed) or not 0 <= seed < 2**63:
            raise bad("seed", "a whole number from 0 to 2^63 - 1", seed)
        if max_iter is not None and (not whole(max_iter) or max_iter < 1):
            raise bad("max_iter", "a whole number ≥ 1", max_iter)
        if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < np.inf):
            raise bad("tol", "a positive number", tol)
        return int(seed), None if max_iter is None else int(max_iter)

    def latex(self) -> str:
        from optlang.latex import model_latex

        return model_latex(self.ir)

    def solve(
        self,
        backend: str | Sequence[str] | None = None,
        time_limit: float | None = None,
        seed: int | None = None,
        device: str | None = None,
        options: Mapping[str, Any] | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
        dtype: str | None = None,
        max_iter: int | None = None,
    ) -> Result:
        """Solve with the planned (or named) backend; the Result is recomputed from the model.

        `progress` receives rows {time, objective, bound, ...} in the user's sense (a maximize model's
        objective as maximized). Warnings the solver emits are kept in `Result.log`, not printed.
        The time limit counts from the model's load for the first solve (so folding and compiling
        count), from this call for later ones.
        """
        clock_start = self._loaded_at if self._loaded_at is not None else time.perf_counter()
        self._loaded_at = None
        the_plan = self.plan(backend, time_limit if isinstance(time_limit, (int, float)) else None)
        b = registry.get(the_plan.chosen)
        opts: dict[str, Any] = {}
        if self.ir.solver and self.ir.solver.name in ("auto", the_plan.chosen):
            opts.update(self.ir.solver.options)
        opts.update(options or {})
        self._check_common_options(opts)
        common = {k: opts.pop(k) for k in list(opts) if k in COMMON_OPTIONS}
        given = {"time_limit": time_limit, "seed": seed, "device": device, "dtype": dtype, "max_iter": max_iter}
        from_block = {k for k in common if given.get(k) is None and k not in (options or {})}
        time_limit = time_limit if time_limit is not None else common.get("time_limit")
        seed = seed if seed is not None else common.get("seed", 0)
        device = device or common.get("device", "auto")
        if device == "auto" and not b.uses_torch:
            device = "cpu"  # a numpy-only backend: no need to import torch to look for a GPU
        dtype = dtype or common.get("dtype", "float32")
        max_iter = max_iter if max_iter is not None else common.get("max_iter")
        try:
            seed, max_iter = self._check_common_all(common, time_limit, seed, max_iter, dtype)
        except OptionError as e:
            spans = self.ir.solver.option_spans if self.ir.solver else {}
            if e.span is None and e.key in from_block and e.key in spans:
                e.span = spans[e.key]
            raise e.with_source(self.ir.source) from None
        bound_mode = common.get("bound", "none")
        backend_options = self._backend_options(b.name, opts)

        # the backend's imports (torch and friends: seconds on a loaded machine) are not the model's
        # work: the time limit counts from the load, folding and compiling included, imports excluded
        t_prep = time.perf_counter()
        b.prepare()
        if bound_mode == "sdp":  # the bound's torch and network code, too
            registry.get("gnnsdp").prepare()
            import optlang.backends.maxcut.model  # noqa: F401
        clock_start += time.perf_counter() - t_prep
        t0 = time.perf_counter()
        compiled = self.compiled
        t_compile = time.perf_counter() - t0
        ctx = RunContext(
            seed=seed,
            device=device,
            dtype=dtype,
            time_limit=time_limit,
            max_iter=max_iter,
            tol=common.get("tol"),
            progress=_user_progress(progress, compiled.sign, compiled.offset) if progress else None,
        )
        _seed_everything(seed, torch=b.uses_torch)
        ctx.restart_clock(at=clock_start)
        t_backend = time.perf_counter()
        with interrupt_to_flag(ctx), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                raw = autotune.solve(b, compiled.problem, backend_options, ctx)  # `auto` options first
            except OptionError as e:  # a value the backend refuses once it sees the problem: point at its line
                spans = self.ir.solver.option_spans if self.ir.solver else {}
                if e.span is None and e.key in spans and e.key not in (options or {}):
                    e.span = spans[e.key]
                raise e.with_source(self.ir.source) from None
            except OptlangError:
                raise
            except KeyboardInterrupt:
                raise
            except Exception as e:  # a backend bug must not look like bad input, nor lose the context
                raise SolveError(
                    f"backend '{b.name}' failed: {type(e).__name__}: {e}",
                    None,
                    hint="this is a bug in optlang; please report it with the model",
                ) from e
            if bound_mode == "sdp" and raw.status.has_solution:
                raw = _add_sdp_bound(compiled, raw, ctx)
        t_solve = time.perf_counter() - t_backend
        if raw.status.has_solution:
            raw.info.setdefault("stop", stop_reason(raw.status))  # why it ended, for every backend
        if not raw.history and ctx.history:
            raw.history = list(ctx.history)
        log = _warning_log(caught)
        result = verify(
            self.ir,
            self.form,
            compiled,
            raw,
            the_plan,
            b.name,
            {"compile": t_compile, "solve": t_solve, "total": t_compile + t_solve},
            ctx,
        )
        return replace(result, log=result.log + log) if log else result


def _user_progress(
    progress: Callable[[dict[str, Any]], None], sign: float, offset: float
) -> Callable[[dict[str, Any]], None]:
    """Progress rows in the user's sense: the lowered problem minimizes sign·f − offset."""

    def forward(row: dict[str, Any]) -> None:
        row = dict(row)
        for key in ("objective", "bound"):
            if row.get(key) is not None:
                row[key] = sign * float(row[key]) + offset
        progress(row)

    return forward


def _warning_log(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    """Each distinct warning once, with its category: `UserWarning: Solution may be inaccurate. ... (×3)`."""
    counts: dict[str, int] = {}
    for w in caught:
        text = f"{w.category.__name__}: {str(w.message).strip()}"
        counts[text] = counts.get(text, 0) + 1
    return tuple(t if n == 1 else f"{t} (×{n})" for t, n in counts.items())


def _add_sdp_bound(compiled: Compiled, raw: RawSolution, ctx: RunContext) -> RawSolution:
    from optlang.backends.maxcut import sdp_bound

    # its own clock: by now the solve has spent its time limit (annealers use all of it), and a bound
    # cut short by that limit is valid but needlessly loose (G1: 12139 instead of 12094)
    bound_ctx = RunContext(seed=ctx.seed, device=str(ctx.device), dtype=ctx.dtype_name)
    bound_ctx.interrupted = ctx.interrupted
    bound = float(sdp_bound(compiled.problem, bound_ctx))
    if raw.bound is None or bound > raw.bound:
        raw.bound = bound
    raw.info["sdp_energy_lower_bound"] = bound  # in the lowered (minimize-energy) terms; Result.bound is the user's
    return raw


def _seed_everything(seed: int, torch: bool = True) -> None:
    """Seed Python's, numpy's and (for backends that use it, or when already imported) torch's RNGs."""
    import random
    import sys

    random.seed(seed)
    np.random.seed(seed % (2**32))
    if torch or "torch" in sys.modules:
        import torch as _torch

        _torch.manual_seed(seed)


__all__ = ["load", "parse", "Model", "Variable", "Result", "Status", "SolveError"]
