"""Running a comparison: pick the backends, build the jobs, run them on an executor, collect a Comparison."""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from optlang import report  # noqa: F401  (registers the Comparisons' notebook display; plots load lazily)
from optlang.compare.comparison import Comparison
from optlang.executors import Job, JobFn, execute, make_executor, stream
from optlang.result import Result

DEFAULT_TIME_LIMIT = 10.0  # seconds per run when neither the model nor the caller sets one


def candidate_backends(model: Any, requested: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The backends to run (the named ones, or every one the planner accepts) and why others are not run."""
    from optlang.backends import registry
    from optlang.errors import OptionError

    refused: dict[str, str] = {}
    known = registry.names()
    if not requested:  # every registered backend that accepts the form, baselines included, by priority
        accepted: list[tuple[int, int, str]] = []  # (priority, registration order, name)
        for name in known:
            backend = registry.get(name)
            reason = backend.available() or backend.refuse(model.form)
            if reason is None:
                accepted.append((backend.priority, len(accepted), name))
            elif model.form.kind in backend.kinds:
                refused[name] = reason
        if not accepted:
            from optlang.errors import PlanError

            detail = "; ".join(f"{b}: {r}" for b, r in refused.items()) or "none is registered for it"
            raise PlanError(
                f"no backend can solve this {model.form.kind} model — {detail}", model.refusal_span(), code="E802"
            ).with_source(model.ir.source)
        return [name for _, _, name in sorted(accepted)], refused
    chosen = []
    for name in requested:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            raise OptionError(
                "backend",
                f"unknown backend '{name}'",
                hint=f"did you mean '{close[0]}'?" if close else "backends: " + ", ".join(known),
            )
        backend = registry.get(name)
        reason = backend.available() or backend.refuse(model.form)
        if reason:
            refused[name] = reason
        elif name not in chosen:
            chosen.append(name)
    return chosen, refused


def compare(
    model_path: str | Path,
    backends: Sequence[str] | None = None,
    repeats: int = 1,
    time_limit: float | None = None,
    seed: int = 0,
    device: str = "auto",
    params: dict[str, Any] | None = None,
    data: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
    executor: str = "local",
    scheduler: Any = None,
    workers: int = 1,
    progress: bool = False,
    fn: JobFn = execute,
) -> Comparison:
    """Run every applicable (or named) backend `repeats` times with seeds seed, seed+1, ... on one model.

    time_limit None: the model's own `time_limit` (its solver block), else DEFAULT_TIME_LIMIT; every
    backend gets the same one, and the Comparison says where it came from.
    """
    import optlang
    from optlang.compare.environment import environment

    path = str(Path(model_path))
    params, data = dict(params or {}), dict(data or {})
    model = optlang.load(path, params=params, data=data)
    names, refused = candidate_backends(model, backends)
    time_limit, time_limit_source = resolve_time_limit(model, time_limit)
    seeds = [seed + r for r in range(max(1, repeats))]
    # Interleave backends within each repeat so a cut-short comparison still covers every backend.
    job_path = str(Path(model_path).resolve())  # workers may run elsewhere (Dask): an absolute path
    jobs = [
        Job(job_path, b, s, time_limit, device, params, data, dict(options or {}), r)
        for r, s in enumerate(seeds)
        for b in names
    ]
    ex = make_executor(executor, scheduler, workers)
    try:
        pairs = stream(ex, jobs, fn, progress=progress, description=f"compare {Path(path).name}")
    finally:
        ex.close()
    order = {b: i for i, b in enumerate(names)}
    results = sorted((Result.from_dict(res) for _, res in pairs), key=lambda r: (order.get(r.backend, 99), r.seed))
    latex, plan_text = model_texts(model)
    return Comparison(
        model=getattr(model, "name", Path(path).stem),
        path=path,
        kind=getattr(model, "kind", ""),
        sense=_sense(model, results),
        backends=names,
        results=results,
        source=getattr(model, "source_text", ""),
        latex=latex,
        plan=plan_text,
        refused=refused,
        repeats=len(seeds),
        time_limit=time_limit,
        time_limit_source=time_limit_source,
        seeds=seeds,
        device=device,
        params=params,
        environment={**environment(device), "devices_used": sorted({r.device for r in results if r.device})},
        created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def model_texts(model: Any, backend: str = "auto") -> tuple[str | None, str]:
    """The model's LaTeX form and plan explanation for a report; a failure is noted, never fatal."""
    latex = None
    if hasattr(model, "latex"):
        try:
            latex = model.latex()
        except Exception as e:  # the math is a nicety
            latex = f"(LaTeX form unavailable: {e})"
    try:
        plan_text = model.plan(backend=backend).explain()
    except Exception as e:
        plan_text = f"(no automatic plan: {getattr(e, 'message', e)})"
    return latex, plan_text


def of_solve(
    model: Any, result: Result, path: str, params: dict[str, Any] | None, time_limit: float | None
) -> Comparison:
    """A one-run Comparison of a single `optlang solve`: the same report (convergence, bound, checks, model)."""
    from optlang.compare.environment import environment

    latex, plan_text = model_texts(model, None if result.backend is None else result.backend)
    own = model_time_limit(model)
    limit, source = (time_limit, "--time-limit") if time_limit is not None else (own, "the model's solver block")
    return Comparison(
        model=getattr(model, "name", Path(path).stem),
        path=str(path),
        kind=getattr(model, "kind", result.kind),
        sense=_sense(model, [result]),
        backends=[result.backend],
        results=[result],
        source=getattr(model, "source_text", ""),
        latex=latex,
        plan=plan_text,
        repeats=1,
        time_limit=limit,
        time_limit_source=source if limit is not None else "",
        seeds=[result.seed],
        device=result.device,
        params=dict(params or {}),
        environment={**environment(result.device), "devices_used": [result.device]},
        created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        command="solve",
    )


def model_time_limit(model: Any) -> float | None:
    """The `time_limit` of the model's solver block (whichever backend it names), or None."""
    solver = getattr(getattr(model, "ir", None), "solver", None)
    value = getattr(solver, "options", {}).get("time_limit") if solver is not None else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def resolve_time_limit(model: Any, requested: float | None) -> tuple[float, str]:
    """The time limit every run gets and where it came from: the caller, the model, or the default."""
    if requested is not None:
        return float(requested), "--time-limit"
    own = model_time_limit(model)
    if own is not None:
        return own, "the model's solver block"
    return DEFAULT_TIME_LIMIT, "the default"


def _sense(model: Any, results: Sequence[Result]) -> str:
    form = getattr(model, "form", None)
    if form is not None and getattr(form, "sense", None):
        return form.sense
    return results[0].sense if results else "minimize"
