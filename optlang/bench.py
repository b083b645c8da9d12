"""`optlang bench`: a suite of models × backends × seeds, resumable, summarized by performance profiles.

Holds suite discovery (a folder or a glob of .opt files), the resumable results file (JSON lines,
one row per finished run, appended and flushed as runs finish; a rerun skips the (model, backend,
seed) keys it already holds), the Dolan–Moré performance profiles (time to reach the best objective
any backend found, and objective gap) and the CLI subcommand. Rendering lives in report/.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import math
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optlang.compare.cli import add_common_arguments
from optlang.compare.stats import ATOL, RTOL, best_of, has_value, usable_objective
from optlang.compare.traces import objective_trace
from optlang.executors import Job, JobFn, execute, make_executor, stream
from optlang.result import Result

# Reaching the target: within atol + rtol * max(1, |target|). Continuous solvers stop at slightly
# different points, so they get a relative 1e-4; spin problems have exact values and must match.
TARGET_RTOL = {"ising": 1e-9, "maxcut": 1e-9}
DEFAULT_TARGET_RTOL = 1e-4
T_FLOOR = 1e-3  # seconds: times below this count as this, so ratios stay finite and meaningful
GAP_EPS = 1e-6  # the gap profile compares (gap + GAP_EPS) / (best gap + GAP_EPS)


# ----------------------------------------------------------------------------- suite
def discover(suite: str | Path) -> list[Path]:
    """The .opt files of a suite: a folder (searched recursively), a glob pattern, or one file."""
    p = Path(suite)
    if p.is_dir():
        files = sorted(p.rglob("*.opt"))
    elif p.is_file():
        files = [p]
    else:
        files = sorted(Path(f) for f in glob.glob(str(suite), recursive=True) if f.endswith(".opt"))
    if not files:
        from optlang.errors import OptionError

        raise OptionError(
            "suite", f"no .opt models found in '{suite}'", hint="give a folder or a glob like 'models/*.opt'"
        )
    return [f.resolve() for f in files]


@dataclass
class ModelEntry:
    """One suite model: its id (resolved path), name, kind, sense, the backends to run and refusals."""

    id: str
    name: str
    kind: str = ""
    sense: str = "minimize"
    backends: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # the model did not load: no runs
    time_limit: float | None = None  # the model's own time_limit (its solver block), if any

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def inspect_model(
    path: Path, requested: Sequence[str] | None, params: dict[str, Any], data: dict[str, str]
) -> ModelEntry:
    """Load a model to learn its kind, sense and applicable backends; a load error is recorded, not raised."""
    import optlang
    from optlang.compare.orchestrate import candidate_backends, model_time_limit

    entry = ModelEntry(id=str(path), name=path.stem)
    try:
        model = optlang.load(str(path), params=params, data=data)
        entry.name = getattr(model, "name", path.stem) or path.stem
        entry.kind = getattr(model, "kind", "")
        entry.sense = getattr(getattr(model, "form", None), "sense", "minimize") or "minimize"
        entry.backends, entry.refused = candidate_backends(model, requested)
        entry.time_limit = model_time_limit(model)
    except Exception as e:  # one broken model must not stop the suite
        entry.error = " ".join(str(getattr(e, "message", e)).split())[:500]
    return entry


# ----------------------------------------------------------------------------- results file
class ResultsFile:
    """Append-only JSON lines of finished runs; tolerant of a truncated last line left by a kill."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> dict[tuple[str, str, int], dict[str, Any]]:
        """key -> row for every complete line (the last row wins when a key repeats)."""
        rows: dict[tuple[str, str, int], dict[str, Any]] = {}
        if not self.path.exists():
            return rows
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                    key = (str(row["key"][0]), str(row["key"][1]), int(row["key"][2]))
                    Result.from_dict(row["result"])
                except (json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
                    continue  # a partial line from an interrupted write
                rows[key] = row
        return rows

    def append(self, job: Job, result: dict[str, Any]) -> None:
        """Write one row and flush it to disk before returning (a kill loses at most the running jobs)."""
        row = {
            "key": list(job.key),
            "job": job.to_dict(),
            "result": result,
            "finished": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        text = json.dumps(row, allow_nan=False, default=str)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # close a line cut short by a kill
                    f.write(b"\n")
            f.write(text.encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())


# ----------------------------------------------------------------------------- profiles
def reached(value: float, target: float, sense: str, atol: float = ATOL, rtol: float = RTOL) -> bool:
    """Is `value` within tolerance of (or better than) `target`?"""
    sign = 1.0 if sense == "maximize" else -1.0
    return sign * (value - target) >= -(atol + rtol * max(1.0, abs(target)))


def time_to_target(r: Result, target: float | None, sense: str, atol: float = ATOL, rtol: float = RTOL) -> float:
    """Seconds until the run's incumbent objective first reached the target (inf if it never did).

    The incumbent is compare.traces.objective_trace: the backend's reports only where they are the model's
    objective, ending at the recomputed objective at the end of the solve.
    """
    if target is None or not has_value(r):
        return math.inf
    for t, obj in objective_trace(r, sense)[0]:  # the incumbent: never a relaxation value
        if reached(obj, target, sense, atol, rtol):
            return max(float(t), T_FLOOR)
    return math.inf


def objective_gap(r: Result, target: float | None, sense: str) -> float:
    """How far a run's objective falls short of the target, relative to max(1, |target|) (inf: no solution)."""
    objective = usable_objective(r)
    if target is None or objective is None:
        return math.inf
    sign = 1.0 if sense == "maximize" else -1.0
    return max(0.0, sign * (target - float(objective))) / max(1.0, abs(target))


@dataclass
class Profile:
    """A Dolan–Moré performance profile: per model × backend ratios and ρ_s(τ) step curves."""

    metric: str  # "time" | "gap"
    ratios: dict[str, dict[str, float]]  # model -> backend -> ratio (inf = failed)
    curves: dict[str, list[tuple[float, float]]]  # backend -> [(τ, ρ(τ))] breakpoints
    tau_max: float

    def rho(self, backend: str, tau: float) -> float:
        """Fraction of models on which `backend` is within a factor τ of the best."""
        rs = [m[backend] for m in self.ratios.values() if backend in m]
        return sum(r <= tau * (1 + 1e-12) for r in rs) / len(rs) if rs else 0.0


def performance_profile(costs: dict[str, dict[str, float]], metric: str = "time", eps: float = 0.0) -> Profile:
    """Ratios r_ps = (t_ps + eps) / (min_s t_ps + eps); ρ_s(τ) = share of models with r_ps ≤ τ.

    A model on which no backend succeeded gives every backend ratio inf (it counts against all).
    The share is over the models a backend was run on: a suite mixes problem kinds, and a backend
    that refuses a kind is not a backend that failed on it (refusals are listed in the report).
    """
    backends = sorted({b for m in costs.values() for b in m})
    ratios: dict[str, dict[str, float]] = {}
    for model, row in costs.items():
        finite = [v for v in row.values() if math.isfinite(v)]
        best = min(finite) if finite else math.inf
        ratios[model] = {
            b: (
                (v + eps) / (best + eps)
                if math.isfinite(v) and math.isfinite(best) and best + eps > 0
                else (1.0 if math.isfinite(v) and v == best else math.inf)
            )
            for b, v in row.items()
        }
    finite_r = [r for m in ratios.values() for r in m.values() if math.isfinite(r)]
    tau_max = max(finite_r + [1.0]) * 1.25 if finite_r else 2.0
    tau_max = max(tau_max, 2.0)
    curves: dict[str, list[tuple[float, float]]] = {}
    for b in backends:
        rs = sorted(m[b] for m in ratios.values() if b in m)
        n = max(1, len(rs))
        pts = [(1.0, sum(r <= 1.0 + 1e-12 for r in rs) / n)]
        for r in rs:
            if math.isfinite(r) and r > 1.0 + 1e-12:
                pts.append((r, sum(x <= r * (1 + 1e-12) for x in rs) / n))
        pts.append((tau_max, pts[-1][1]))
        curves[b] = pts
    return Profile(metric, ratios, curves, tau_max)


# ----------------------------------------------------------------------------- the report data
@dataclass
class BenchReport:
    """Every run of a suite with its models; tables and profiles are computed from the rows."""

    suite: str
    models: list[ModelEntry]
    backends: list[str]
    rows: list[tuple[str, Result]]  # (model id, result)
    seeds: list[int] = field(default_factory=list)
    time_limit: float | None = None
    device: str = "auto"
    environment: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    atol: float = ATOL
    rtol: float | None = None  # None: by kind (TARGET_RTOL, else DEFAULT_TARGET_RTOL)

    def target_rtol(self, kind: str) -> float:
        return self.rtol if self.rtol is not None else TARGET_RTOL.get(kind, DEFAULT_TARGET_RTOL)

    def model(self, model_id: str) -> ModelEntry:
        return next(m for m in self.models if m.id == model_id)

    def results(self, model_id: str, backend: str) -> list[Result]:
        return sorted((r for m, r in self.rows if m == model_id and r.backend == backend), key=lambda r: r.seed)

    def target(self, model_id: str) -> float | None:
        """The best objective any backend found on the model (the profile's reference)."""
        sense = self.model(model_id).sense
        return best_of([r.objective for m, r in self.rows if m == model_id and has_value(r)], sense)

    def costs(self, metric: str = "time") -> dict[str, dict[str, float]]:
        """model -> backend -> lower median over seeds of the run costs (time to target, or objective gap).

        The lower median counts a model as reached when at least half of the seeds reached it.
        """
        out: dict[str, dict[str, float]] = {}
        for m in self.models:
            if m.error or not m.backends:
                continue
            target = self.target(m.id)
            row = {}
            for b in m.backends:
                runs = self.results(m.id, b)
                if not runs:
                    continue
                vals = [
                    time_to_target(r, target, m.sense, self.atol, self.target_rtol(m.kind))
                    if metric == "time"
                    else objective_gap(r, target, m.sense)
                    for r in runs
                ]
                row[b] = statistics.median_low(vals)  # inf (a failed run) sorts last
            if row:
                out[m.id] = row
        return out

    def profile(self, metric: str = "time") -> Profile:
        return performance_profile(self.costs(metric), metric, eps=GAP_EPS if metric == "gap" else 0.0)

    def backend_table(self) -> list[dict[str, Any]]:
        """Per backend: models attempted, reached the best, fastest, ρ at τ = 1, 2, 10, errors, median gap."""
        prof_t, prof_g = self.profile("time"), self.profile("gap")
        gaps = self.costs("gap")
        out = []
        for b in self.backends:
            attempted = [m for m, row in prof_t.ratios.items() if b in row]
            errors = sum(1 for _, r in self.rows if r.backend == b and not r.status.has_solution)
            g = [gaps[m][b] for m in gaps if b in gaps[m]]
            finite_g = [x for x in g if math.isfinite(x)]
            out.append(
                {
                    "backend": b,
                    "models": len(attempted),
                    "reached_best": sum(math.isfinite(prof_t.ratios[m][b]) for m in attempted),
                    "fastest": sum(prof_t.ratios[m][b] <= 1.0 + 1e-12 for m in attempted),
                    "rho_1": prof_t.rho(b, 1.0),
                    "rho_2": prof_t.rho(b, 2.0),
                    "rho_10": prof_t.rho(b, 10.0),
                    "gap_rho_1": prof_g.rho(b, 1.0),
                    "median_gap": statistics.median(finite_g) if finite_g else None,
                    "failed_models": len(g) - len(finite_g),
                    "error_runs": errors,
                    "runs": sum(1 for _, r in self.rows if r.backend == b),
                }
            )
        return out

    def model_table(self, timing: bool = True) -> list[list[str]]:
        """Rows: model, kind, best objective, then per backend 'best / median (time)' cells."""
        from optlang.report.fmt import DASH, num, seconds

        table = []
        for m in self.models:
            row = [m.name, m.kind or DASH, num(self.target(m.id)) if not m.error else f"load error: {m.error}"]
            for b in self.backends:
                runs = self.results(m.id, b)
                if not runs:
                    row.append(DASH if b not in m.refused else "refused")
                    continue
                objs = [v for r in runs if (v := usable_objective(r)) is not None]
                if not objs:
                    row.append(runs[0].status.value)
                    continue
                text = f"{num(best_of(objs, m.sense))} / {num(statistics.median(objs))}"
                if timing:
                    t = [v for r in runs if (v := r.timing.get("total")) is not None]
                    text += f" ({seconds(statistics.median(t))})" if t else ""
                row.append(text)
            table.append(row)
        return table

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "optlang-bench/1",
            "suite": self.suite,
            "backends": list(self.backends),
            "models": [m.to_dict() for m in self.models],
            "seeds": list(self.seeds),
            "time_limit": self.time_limit,
            "device": self.device,
            "created": self.created,
            "atol": self.atol,
            "rtol": self.rtol,
            "environment": self.environment,
            "summary": self.backend_table(),
            "profiles": {
                k: {"ratios": _finite(p.ratios), "curves": p.curves}
                for k, p in (("time", self.profile("time")), ("gap", self.profile("gap")))
            },
            "rows": [{"model": m, "result": r.to_dict()} for m, r in self.rows],
        }


def _finite(ratios: dict[str, dict[str, float]]) -> dict[str, dict[str, float | None]]:
    return {m: {b: (v if math.isfinite(v) else None) for b, v in row.items()} for m, row in ratios.items()}


# ----------------------------------------------------------------------------- running a suite
def plan_jobs(
    models: Sequence[ModelEntry],
    seeds: Sequence[int],
    time_limit: float | None,
    device: str,
    params: dict[str, Any],
    data: dict[str, str],
    options: dict[str, Any] | None = None,
) -> list[Job]:
    """Every (model, backend, seed) job, seeds outermost so a cut-short suite covers all models.

    time_limit None: each model's own time_limit, else DEFAULT_TIME_LIMIT (as `compare` does).
    """
    from optlang.compare.orchestrate import DEFAULT_TIME_LIMIT

    def limit(m: ModelEntry) -> float:
        return time_limit if time_limit is not None else (m.time_limit or DEFAULT_TIME_LIMIT)

    return [
        Job(m.id, b, s, limit(m), device, params, data, dict(options or {}), r)
        for r, s in enumerate(seeds)
        for m in models
        if not m.error
        for b in m.backends
    ]


def bench(
    suite: str | Path,
    backends: Sequence[str] | None = None,
    repeats: int = 1,
    time_limit: float | None = 10.0,
    seed: int = 0,
    device: str = "auto",
    params: dict[str, Any] | None = None,
    data: dict[str, str] | None = None,
    results_path: str | Path | None = None,
    executor: str = "local",
    scheduler: Any = None,
    workers: int = 1,
    progress: bool = False,
    retry_errors: bool = False,
    options: dict[str, Any] | None = None,
    fn: JobFn = execute,
    on_row: Callable[[Job, dict[str, Any]], None] | None = None,
) -> BenchReport:
    """Run the suite (skipping keys already in the results file) and return the full report data."""
    from optlang.compare.environment import environment

    params, data = dict(params or {}), dict(data or {})
    models = [inspect_model(p, backends, params, data) for p in discover(suite)]
    seeds = [seed + r for r in range(max(1, repeats))]
    jobs = plan_jobs(models, seeds, time_limit, device, params, data, options)
    store = ResultsFile(results_path) if results_path else None
    done = store.load() if store else {}
    if retry_errors:
        done = {k: v for k, v in done.items() if v["result"].get("status") != "error"}
    todo = [j for j in jobs if j.key not in done]
    rows: dict[tuple[str, str, int], dict[str, Any]] = {j.key: done[j.key]["result"] for j in jobs if j.key in done}

    def record(job: Job, res: dict[str, Any]) -> None:
        rows[job.key] = res
        if store is not None:
            store.append(job, res)
        if on_row is not None:
            on_row(job, res)

    if todo:
        ex = make_executor(executor, scheduler, workers)
        try:
            stream(ex, todo, fn, progress=progress, description=f"bench {len(todo)} runs", on_result=record)
        finally:
            ex.close()
    order = {j.key: i for i, j in enumerate(jobs)}
    names = _ordered_backends(models)
    out_rows = [(k[0], Result.from_dict(res)) for k, res in sorted(rows.items(), key=lambda kv: order[kv[0]])]
    return BenchReport(
        suite=str(suite),
        models=models,
        backends=names,
        rows=out_rows,
        seeds=seeds,
        time_limit=time_limit,
        device=device,
        environment=environment(device),
        created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def _ordered_backends(models: Iterable[ModelEntry]) -> list[str]:
    names: list[str] = []
    for m in models:
        for b in m.backends:
            if b not in names:
                names.append(b)
    return names


# ----------------------------------------------------------------------------- CLI
def add_parser(subparsers: Any) -> None:
    """Register `optlang bench` on the CLI's subparsers."""
    from optlang.cli_common import new_command

    p = new_command(
        subparsers,
        "bench",
        "run a suite of models × backends × seeds; performance profiles",
        "Run every model of a suite (folder or glob of .opt files) with every "
        "applicable (or named) backend and seed; resumable from --results.",
    )
    p.add_argument("suite", help="a folder of .opt models, a glob like 'models/*.opt', or one file")
    add_common_arguments(p)
    p.add_argument("--results", metavar="FILE.jsonl", help="append finished runs here; a rerun skips them")
    p.add_argument("--retry-errors", action="store_true", help="rerun runs recorded with status error")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """CLI entry: 0 = done, 1 = no run produced a solution."""
    from optlang.compare.cli import print_outputs, run_arguments

    b = bench(args.suite, results_path=args.results, retry_errors=args.retry_errors, **run_arguments(args))
    notes = [f"[red]model {m.name} did not load:[/red] {m.error}" for m in b.models if m.error]
    print_outputs(b, args, notes)
    return 0 if any(r.status.has_solution for _, r in b.rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m optlang.bench ...` and `python -m optlang.compare ...` without the full CLI."""
    from optlang.compare import cli as compare

    parser = argparse.ArgumentParser(prog="optlang")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    compare.add_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
