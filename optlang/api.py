"""The Python API: load/parse a model, plan it, solve it into a re-verified Result."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from optlang.analysis import Form
from optlang.backends import registry
from optlang.backends.base import COMMON_OPTIONS, RawSolution, RunContext, Status, interrupt_to_flag
from optlang.compiler import Compiled, classify, compile_problem
from optlang.errors import DataError, OptionError, OptlangError, ParseError
from optlang.ir.lower import lower_source
from optlang.ir.model import ModelIR
from optlang.planner import Plan, plan
from optlang.result import Result
from optlang.source import Source
from optlang.verify import verify


class SolveError(OptlangError):
    """A backend failed while solving (a bug or an environment problem, not bad input)."""

    code = "E900"


def load(
    path: str | Path,
    params: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    allow_paths: list[str | Path] | None = None,
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
    allow_paths: list[str | Path] | None = None,
) -> Model:
    """Parse model text (paths in load() are relative to base_dir and confined to it and allow_paths)."""
    t_loaded = time.perf_counter()
    source = Source(text, path, Path(base_dir))
    try:
        ir = lower_source(source, dict(params or {}), dict(data or {}), allow_paths)
        form = classify(ir)
        model = Model(ir, form)
        if form.kind in ("ising", "maxcut"):  # the lowering is cheap and tells the planner sizes and fields
            problem = model.compiled.problem
            model.form = replace(
                form,
                n_spins=problem.n,
                nnz=int(problem.J.nnz),  # type: ignore[union-attr]
                has_field=problem.has_field,
            )  # type: ignore[union-attr]
    except OptlangError as e:
        raise e.with_source(source) from None
    model._loaded_at = t_loaded
    return model


class Model:
    """A checked, classified model. `plan()` explains the backend choice; `solve()` runs it."""

    def __init__(self, ir: ModelIR, form: Form) -> None:
        self.ir = ir
        self.form = form
        # when the model was loaded: the first solve's time limit counts from here (then from each call)
        self._loaded_at: float | None = None

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

    def __repr__(self) -> str:
        return f"Model({self.name!r}, kind={self.kind!r})"

    @cached_property
    def compiled(self) -> Compiled:
        return compile_problem(self.ir, self.form)

    def plan(self, backend: str | None = None) -> Plan:
        """Rank the backends for this model; `backend` forces one (an error if it refuses)."""
        solver = self.ir.solver
        name = backend if backend not in (None, "") else (solver.name if solver else "auto")
        span = solver.span if solver and backend in (None, "") else None
        if self.form.kind == "general_bilevel":
            span = next(c.span for c in self.ir.constraints if c.sense == "argmin")
        try:
            p = plan(self.form, name or "auto", span)
            if solver and solver.name in ("auto", p.chosen):
                self._backend_options(p.chosen, solver.options)
            return p
        except OptlangError as e:
            raise e.with_source(self.ir.source) from None

    def _backend_options(self, backend: str, options: Mapping[str, Any]) -> Any:
        """Validate options for a backend; an unknown key points at its line in the solver block."""
        try:
            return registry.get(backend).make_options(options)
        except OptionError as e:
            spans = self.ir.solver.option_spans if self.ir.solver else {}
            if e.span is None and e.key in spans:
                e.span = spans[e.key]
            raise e.with_source(self.ir.source) from None

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

        return model_latex(self)

    def solve(
        self,
        backend: str | None = None,
        time_limit: float | None = None,
        seed: int | None = None,
        device: str | None = None,
        options: Mapping[str, Any] | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
        dtype: str | None = None,
        max_iter: int | None = None,
    ) -> Result:
        """Solve with the planned (or named) backend; the Result is recomputed from the model.

        The time limit counts from the model's load for the first solve (so folding and compiling
        count), from this call for later ones.
        """
        clock_start = self._loaded_at if self._loaded_at is not None else time.perf_counter()
        self._loaded_at = None
        the_plan = self.plan(backend)
        b = registry.get(the_plan.chosen)
        opts: dict[str, Any] = {}
        if self.ir.solver and self.ir.solver.name in ("auto", the_plan.chosen):
            opts.update(self.ir.solver.options)
        opts.update(options or {})
        common = {k: opts.pop(k) for k in list(opts) if k in COMMON_OPTIONS}
        given = {"time_limit": time_limit, "seed": seed, "device": device, "dtype": dtype, "max_iter": max_iter}
        from_block = {k for k in common if given.get(k) is None and k not in (options or {})}
        time_limit = time_limit if time_limit is not None else common.get("time_limit")
        seed = seed if seed is not None else common.get("seed", 0)
        device = device or common.get("device", "auto")
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
            progress=progress,
        )
        _seed_everything(seed)
        ctx.restart_clock(at=clock_start)
        t_backend = time.perf_counter()
        with interrupt_to_flag(ctx):
            try:
                raw = b.solve(compiled.problem, backend_options, ctx)
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
        if not raw.history and ctx.history:
            raw.history = list(ctx.history)
        return verify(
            self,
            compiled,
            raw,
            the_plan,
            b.name,
            {"compile": t_compile, "solve": t_solve, "total": t_compile + t_solve},
            ctx,
        )


def _add_sdp_bound(compiled: Compiled, raw: RawSolution, ctx: RunContext) -> RawSolution:
    from optlang.backends.maxcut_sdp import sdp_bound

    # its own clock: by now the solve has spent its time limit (annealers use all of it), and a bound
    # cut short by that limit is valid but needlessly loose (G1: 12139 instead of 12094)
    bound_ctx = RunContext(seed=ctx.seed, device=str(ctx.device), dtype=ctx.dtype_name)
    bound_ctx.interrupted = ctx.interrupted
    bound = float(sdp_bound(compiled.problem, bound_ctx))
    if raw.bound is None or bound > raw.bound:
        raw.bound = bound
    raw.info["sdp_energy_lower_bound"] = bound  # in the lowered (minimize-energy) terms; Result.bound is the user's
    return raw


def _seed_everything(seed: int) -> None:
    import random

    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


__all__ = ["load", "parse", "Model", "Result", "Status", "SolveError"]
