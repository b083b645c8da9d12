"""`optlang compare`: run several backends × repeats on one model with the same budget and seeds.

Holds the comparison data (Comparison: every Result plus the model's source, math and plan),
the per-backend summary statistics, the contradiction flags (a claimed optimum or bound that
another run's recomputed objective beats) and the CLI subcommand. Rendering lives in report/,
execution (local processes, Dask) in executors.py.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optlang.backends.base import Status
from optlang.executors import Job, JobFn, execute, make_executor, stream
from optlang.result import Result

# A claim is contradicted when beaten by more than ATOL + RTOL * max(1, |claimed value|).
ATOL = 1e-6
RTOL = 1e-6


# ----------------------------------------------------------------------------- summaries
def better(a: float, b: float, sense: str) -> bool:
    """Is objective a strictly better than b in the model's sense?"""
    return a > b if sense == "maximize" else a < b


def best_of(values: Sequence[float], sense: str) -> float | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return max(vals) if sense == "maximize" else min(vals)


def tightest_bound(values: Sequence[float], sense: str) -> float | None:
    """The tightest claimed bound: the least upper bound (maximize) or greatest lower bound (minimize)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return min(vals) if sense == "maximize" else max(vals)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|bound − objective| / max(1, |objective|), as Result defines gap."""
    if objective is None or bound is None or not (math.isfinite(objective) and math.isfinite(bound)):
        return None
    return abs(bound - objective) / max(1.0, abs(objective))


def has_value(r: Result) -> bool:
    """A run that holds a usable, finite objective value."""
    return r.status.has_solution and r.objective is not None and math.isfinite(r.objective)


@dataclass
class BackendSummary:
    """Statistics of one backend's repeats: objective best/median/spread, bound, gap, time, checks."""

    backend: str
    runs: int
    solved: int  # runs with a solution (a front counts, even without a scalar objective)
    statuses: dict[str, int]
    best: float | None
    median: float | None
    worst: float | None
    spread: float | None  # max − min of the objective over runs with a solution
    stdev: float | None
    bound: float | None  # the tightest bound this backend claimed
    gap: float | None  # relative gap between its best objective and its own bound
    time_median: float | None
    time_min: float | None
    time_max: float | None
    checks_passed: int
    checks_total: int
    errors: list[str] = field(default_factory=list)
    flagged: bool = False

    @property
    def status_text(self) -> str:
        return ", ".join(f"{k}×{v}" if v > 1 else k for k, v in sorted(self.statuses.items()))

    @property
    def checks_text(self) -> str:
        if self.checks_total == 0:
            return "—"
        return f"{self.checks_passed}/{self.checks_total}"

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["statuses"] = dict(self.statuses)
        d["errors"] = list(self.errors)
        return d


def summarize(results: Sequence[Result], backend: str, sense: str, flagged: bool = False) -> BackendSummary:
    """The summary row of one backend's runs."""
    runs = [r for r in results if r.backend == backend]
    objs = [r.objective for r in runs if has_value(r)]
    times = [r.timing.get("total", r.timing.get("solve")) for r in runs if r.status.has_solution]
    times = [t for t in times if t is not None]
    statuses: dict[str, int] = {}
    for r in runs:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    best = best_of(objs, sense)
    bound = tightest_bound([r.bound for r in runs if r.bound is not None], sense)
    checks = [c for r in runs for c in r.checks]
    errors = sorted({str(r.info.get("error")) for r in runs if r.status == Status.ERROR and r.info.get("error")})
    return BackendSummary(
        backend=backend,
        runs=len(runs),
        solved=sum(r.status.has_solution for r in runs),
        statuses=statuses,
        best=best,
        median=statistics.median(objs) if objs else None,
        worst=(min(objs) if sense == "maximize" else max(objs)) if objs else None,
        spread=(max(objs) - min(objs)) if objs else None,
        stdev=statistics.stdev(objs) if len(objs) > 1 else None,
        bound=bound,
        gap=relative_gap(best, bound),
        time_median=statistics.median(times) if times else None,
        time_min=min(times) if times else None,
        time_max=max(times) if times else None,
        checks_passed=sum(c.passed for c in checks),
        checks_total=len(checks),
        errors=errors,
        flagged=flagged,
    )


# ----------------------------------------------------------------------------- contradictions
@dataclass
class Contradiction:
    """A claimed optimum or bound beaten by another run's recomputed objective."""

    claimant: str
    claimant_seed: int
    claim: str  # "optimal" (claimed an optimum) | "bound" (claimed a bound)
    claimed: float
    witness: str
    witness_seed: int
    witness_objective: float
    excess: float  # how far the witness beats the claim, in objective units

    def sentence(self, sense: str = "minimize") -> str:
        what = (
            "claimed optimum"
            if self.claim == "optimal"
            else ("claimed upper bound" if sense == "maximize" else "claimed lower bound")
        )
        return (
            f"{self.claimant} (seed {self.claimant_seed}) {what} {self.claimed:.10g} is contradicted by "
            f"{self.witness} (seed {self.witness_seed}), whose recomputed objective {self.witness_objective:.10g} "
            f"is better by {self.excess:.3g}"
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _witness_ok(r: Result) -> bool:
    """A run may contradict others when it has a finite objective and passed its feasibility checks."""
    return has_value(r) and not any((not c.passed) and "feas" in c.name.lower() for c in r.checks)


def find_contradictions(
    results: Sequence[Result], sense: str, atol: float = ATOL, rtol: float = RTOL
) -> list[Contradiction]:
    """Every (claim, witness) pair where a proven optimum or bound is beaten beyond tolerance.

    Claims: status OPTIMAL with an objective (nothing may be better), or a bound (no feasible
    objective may lie beyond it). Witnesses: any run, the claimant's other runs and itself included,
    with a recomputed finite objective. Only the strongest witness per claim is reported.
    """
    sign = 1.0 if sense == "maximize" else -1.0  # sign * (witness - claim) > 0 means the witness beats it
    witnesses = [r for r in results if _witness_ok(r)]
    if not witnesses:
        return []
    champion = max(witnesses, key=lambda r: sign * r.objective)
    out: list[Contradiction] = []
    for r in results:
        claims: list[tuple[str, float]] = []
        if r.status == Status.OPTIMAL and has_value(r):
            claims.append(("optimal", float(r.objective)))
        if r.bound is not None and math.isfinite(r.bound):
            claims.append(("bound", float(r.bound)))
        for claim, value in claims:
            excess = sign * (champion.objective - value)
            if excess > atol + rtol * max(1.0, abs(value)):
                out.append(
                    Contradiction(
                        r.backend,
                        r.seed,
                        claim,
                        value,
                        champion.backend,
                        champion.seed,
                        float(champion.objective),
                        float(excess),
                    )
                )
    return out


# ----------------------------------------------------------------------------- the comparison
@dataclass
class Comparison:
    """Everything a comparison report shows: the model, the configuration, every run's Result."""

    model: str  # model name
    path: str
    kind: str
    sense: str
    backends: list[str]
    results: list[Result]
    source: str = ""
    latex: str | None = None
    plan: str = ""
    refused: dict[str, str] = field(default_factory=dict)  # backend -> why it was not run
    repeats: int = 1
    time_limit: float | None = None
    seeds: list[int] = field(default_factory=list)
    device: str = "auto"
    params: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    atol: float = ATOL
    rtol: float = RTOL

    def __repr__(self) -> str:
        best = self.best_objective
        return (
            f"Comparison({self.model!r}, kind={self.kind!r}, backends={self.backends!r}, runs={len(self.results)}, "
            f"best={'None' if best is None else f'{best:.10g}'})"
        )

    def _repr_markdown_(self) -> str:
        from optlang import report

        return report.render(self, "md")

    def _repr_html_(self) -> str:
        from optlang import report

        return report.render(self, "html")

    def runs(self, backend: str) -> list[Result]:
        return sorted((r for r in self.results if r.backend == backend), key=lambda r: r.seed)

    def contradictions(self) -> list[Contradiction]:
        return find_contradictions(self.results, self.sense, self.atol, self.rtol)

    def summaries(self) -> list[BackendSummary]:
        flagged = {c.claimant for c in self.contradictions()}
        return [summarize(self.results, b, self.sense, b in flagged) for b in self.backends]

    @property
    def best_objective(self) -> float | None:
        return best_of([r.objective for r in self.results if has_value(r)], self.sense)

    @property
    def best_bound(self) -> float | None:
        return tightest_bound([r.bound for r in self.results if r.bound is not None], self.sense)

    def to_dict(self) -> dict[str, Any]:
        """The full JSON form: configuration, summaries, flags and every Result."""
        return {
            "format": "optlang-compare/1",
            "model": self.model,
            "path": self.path,
            "kind": self.kind,
            "sense": self.sense,
            "backends": list(self.backends),
            "refused": dict(self.refused),
            "repeats": self.repeats,
            "time_limit": self.time_limit,
            "seeds": list(self.seeds),
            "device": self.device,
            "params": _jsonable(self.params),
            "created": self.created,
            "atol": self.atol,
            "rtol": self.rtol,
            "best_objective": self.best_objective,
            "best_bound": self.best_bound,
            "summaries": [s.to_dict() for s in self.summaries()],
            "contradictions": [c.to_dict() for c in self.contradictions()],
            "source": self.source,
            "latex": self.latex,
            "plan": self.plan,
            "environment": self.environment,
            "results": [r.to_dict() for r in self.results],
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Comparison:
        """Rebuild from to_dict() output (summaries and flags are recomputed, not trusted)."""
        return Comparison(
            model=d["model"],
            path=d.get("path", ""),
            kind=d.get("kind", ""),
            sense=d.get("sense", "minimize"),
            backends=list(d.get("backends", [])),
            results=[Result.from_dict(r) for r in d.get("results", [])],
            source=d.get("source", ""),
            latex=d.get("latex"),
            plan=d.get("plan", ""),
            refused=dict(d.get("refused", {})),
            repeats=int(d.get("repeats", 1)),
            time_limit=d.get("time_limit"),
            seeds=list(d.get("seeds", [])),
            device=d.get("device", "auto"),
            params=dict(d.get("params", {})),
            environment=dict(d.get("environment", {})),
            created=d.get("created", ""),
            atol=float(d.get("atol", ATOL)),
            rtol=float(d.get("rtol", RTOL)),
        )


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def candidate_backends(model: Any, requested: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The backends to run (the named ones, or every one the planner accepts) and why others are not run."""
    from optlang.backends import registry
    from optlang.errors import OptionError

    refused: dict[str, str] = {}
    known = registry.names()
    if not requested:  # every registered backend that accepts the form, baselines included, by priority
        accepted = []
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
            raise PlanError(f"no backend can solve this {model.form.kind} model — {detail}", code="E802")
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
    time_limit: float | None = 10.0,
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
    """Run every applicable (or named) backend `repeats` times with seeds seed, seed+1, ... on one model."""
    import optlang
    from optlang.report.environment import environment

    path = str(Path(model_path))
    params, data = dict(params or {}), dict(data or {})
    model = optlang.load(path, params=params, data=data)
    names, refused = candidate_backends(model, backends)
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
    latex = None
    if hasattr(model, "latex"):
        try:
            latex = model.latex()
        except Exception as e:  # the math is a nicety: a failure is noted, never fatal
            latex = f"(LaTeX form unavailable: {e})"
    try:
        plan_text = model.plan(backend="auto").explain()
    except Exception as e:
        plan_text = f"(no automatic plan: {getattr(e, 'message', e)})"
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
        seeds=seeds,
        device=device,
        params=params,
        environment={**environment(device), "devices_used": sorted({r.device for r in results if r.device})},
        created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def _sense(model: Any, results: Sequence[Result]) -> str:
    form = getattr(model, "form", None)
    if form is not None and getattr(form, "sense", None):
        return form.sense
    return results[0].sense if results else "minimize"


# ----------------------------------------------------------------------------- CLI
def parse_assignments(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """NAME=VALUE pairs from -p/-d; values are JSON when they parse (numbers, lists), else strings."""
    from optlang.errors import OptionError

    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise OptionError(flag, f"'{item}' is not NAME=VALUE", hint=f"for example {flag} n=20")
        try:
            out[name.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[name.strip()] = value
    return out


def split_backends(text: str | None) -> list[str] | None:
    """'-b a,b -b c' → ['a', 'b', 'c']; None when not given (every applicable backend)."""
    if not text:
        return None
    items = text if isinstance(text, list) else [text]
    return [b.strip() for t in items for b in t.split(",") if b.strip()]


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by compare and bench: the CLI's common vocabulary (optlang/cli_common.py) plus the
    report and executor flags."""
    from optlang import cli_common as cc

    cc.add_input_flags(p)
    cc.add_backend_flag(p, "backends to run (comma list, repeatable; default: every one that accepts the model)")
    p.add_argument("--repeats", type=int, default=1, help="runs per backend, seeds SEED, SEED+1, ...")
    cc.add_run_flags(p, time_limit=10.0, seed_text="first seed")
    p.add_argument("--report", metavar="FILE", help="write the report here (.html, .md or .json)")
    p.add_argument(
        "--format",
        choices=("html", "md", "json"),
        help="report format (default: from the --report suffix); without --report, the report goes to stdout",
    )
    p.add_argument(
        "--executor",
        choices=("local", "dask", "inline"),
        default="local",
        help="local worker processes, a Dask cluster, or inline in this process",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (implies --executor dask)")
    p.add_argument(
        "-j",
        "--workers",
        type=int,
        default=1,
        help="parallel local workers (1: runs do not compete for the CPU, times stay fair)",
    )
    cc.add_output_flags(p)


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """-O pairs plus --dtype/--max-iter as the common options every run gets."""
    options = parse_assignments(args.option, "-O")
    if getattr(args, "dtype", None):
        options["dtype"] = args.dtype
    if getattr(args, "max_iter", None) is not None:
        options["max_iter"] = args.max_iter
    return options


def print_outputs(obj: Any, args: argparse.Namespace, notes: Sequence[str]) -> None:
    """The console table and notes, plus the report: --json (or --format without --report) puts exactly
    one document on stdout and everything human on stderr; otherwise the table is the stdout product."""
    from optlang import report
    from optlang.cli_common import console, write_stdout

    fmt = "json" if args.json else args.format
    machine = args.json or (args.format is not None and not args.report)
    con = console(stderr=machine)
    if not (machine and args.quiet):
        con.print(report.rich_table(obj))
    note = console(stderr=True)
    for line in notes:
        note.print(line)
    if args.report:
        file_fmt = report_format(args.report, args.format)
        report.write(obj, args.report, file_fmt)
        note.print(f"report written to {args.report} ({file_fmt})")
    if machine:
        write_stdout(report.render(obj, fmt))


def add_parser(subparsers: Any) -> None:
    """Register `optlang compare` on the CLI's subparsers."""
    from optlang.cli_common import new_command

    p = new_command(
        subparsers,
        "compare",
        "run several backends on one model and report",
        "Run every applicable backend (or the named ones) with the same "
        "budget and seeds; print a table and write a report.",
    )
    p.add_argument("model", help="the .opt model file")
    add_common_arguments(p)
    p.set_defaults(func=run)


def report_format(path: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    suffix = Path(path).suffix.lower() if path else ""
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(suffix, "html")


def run(args: argparse.Namespace) -> int:
    """CLI entry: 0 = done, 1 = no run produced a solution, 6 = a claimed optimum or bound is contradicted."""
    from optlang.cli_common import backend_list

    c = compare(
        args.model,
        backends=backend_list(args),
        repeats=args.repeats,
        time_limit=args.time_limit,
        seed=args.seed,
        device=args.device,
        params=parse_assignments(args.param, "-p"),
        data=parse_assignments(args.data, "-d"),
        options=run_options(args),
        executor=args.executor,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=not args.quiet and not args.json,
    )
    flags = c.contradictions()
    notes = [f"[dim]not run: {name} — {reason}[/dim]" for name, reason in c.refused.items()]
    notes += [f"[bold red]CONTRADICTION[/bold red] {f.sentence(c.sense)}" for f in flags]
    print_outputs(c, args, notes)
    if not c.results or not any(r.status.has_solution for r in c.results):
        return 1
    return 6 if flags else 0
