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
from optlang.backends.stopping import stop_reason
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


def load(path: str | Path, params: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None) -> Model:
    """Read a .opt file; params/data override `param`/`data`/`graph` declarations by name."""
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
    return parse(text, base_dir=p.parent, params=params, data=data, path=str(path))


def parse(
    text: str,
    base_dir: str | Path = ".",
    params: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    path: str = "<string>",
) -> Model:
    """Parse model text (paths in load() are relative to base_dir)."""
    source = Source(text, path, Path(base_dir))
    try:
        ir = lower_source(source, dict(params or {}), dict(data or {}))
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
    return model


class Model:
    """A checked, classified model. `plan()` explains the backend choice; `solve()` runs it."""

    def __init__(self, ir: ModelIR, form: Form) -> None:
        self.ir = ir
        self.form = form

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

    def plan(self, backend: str | None = None, time_limit: float | None = None) -> Plan:
        """Rank the backends for this model; `backend` forces one (an error if it refuses).

        `time_limit` (default: the solver block's) sizes the budget exact methods must fit in."""
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
        """Solve with the planned (or named) backend; the Result is recomputed from the model."""
        the_plan = self.plan(backend, time_limit if isinstance(time_limit, (int, float)) else None)
        b = registry.get(the_plan.chosen)
        opts: dict[str, Any] = {}
        if self.ir.solver and self.ir.solver.name in ("auto", the_plan.chosen):
            opts.update(self.ir.solver.options)
        opts.update(options or {})
        common = {k: opts.pop(k) for k in list(opts) if k in COMMON_OPTIONS}
        time_limit = time_limit if time_limit is not None else common.get("time_limit")
        seed = seed if seed is not None else int(common.get("seed", 0))
        device = device or common.get("device", "auto")
        if device == "auto" and not b.uses_torch:
            device = "cpu"  # a numpy-only backend: no need to import torch to look for a GPU
        dtype = dtype or common.get("dtype", "float32")
        max_iter = max_iter if max_iter is not None else common.get("max_iter")
        bound_mode = common.get("bound", "none")
        if bound_mode not in ("none", "sdp", False, None):
            raise OptionError("bound", f"unknown bound '{bound_mode}'", hint='use bound = "sdp" or "none"', code="E702")
        if bound_mode == "sdp" and self.kind not in ("ising", "maxcut"):
            raise OptionError("bound", 'bound = "sdp" applies to ising and maxcut models only', code="E702")
        if dtype not in ("float32", "float64"):
            raise OptionError("dtype", f"unknown dtype '{dtype}'", hint="float32 or float64", code="E702")
        if time_limit is not None and (not isinstance(time_limit, (int, float)) or time_limit <= 0):
            raise OptionError("time_limit", f"time_limit must be a positive number, got {time_limit!r}", code="E702")
        backend_options = self._backend_options(b.name, opts)

        b.prepare()  # the backend's imports, before any clock starts
        if bound_mode == "sdp":  # the bound's torch and network code, too
            registry.get("gnnsdp").prepare()
            import optlang.backends.maxcut_sdp.model  # noqa: F401
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
        _seed_everything(seed, torch=b.uses_torch)
        ctx.restart_clock()
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
        t_solve = ctx.elapsed()
        if raw.status.has_solution:
            raw.info.setdefault("stop", stop_reason(raw.status))  # why it ended, for every backend
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


def _seed_everything(seed: int, torch: bool = True) -> None:
    """Seed Python's, numpy's and (for backends that use it, or when already imported) torch's RNGs."""
    import random
    import sys

    random.seed(seed)
    np.random.seed(seed % (2**32))
    if torch or "torch" in sys.modules:
        import torch as _torch

        _torch.manual_seed(seed)


__all__ = ["load", "parse", "Model", "Result", "Status", "SolveError"]
