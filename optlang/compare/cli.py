"""The `optlang compare` subcommand: flags, the console table, the report file, the exit code."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from optlang.compare.orchestrate import compare


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
    """Flags shared by compare and bench."""
    p.add_argument(
        "-b",
        "--backends",
        action="append",
        metavar="A,B,C",
        help="backends to run (comma-separated, repeatable); default: every one that accepts the model",
    )
    p.add_argument("--repeats", type=int, default=1, help="runs per backend, seeds SEED, SEED+1, ... (default 1)")
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds per run (default: the model's own time_limit, else 10)",
    )
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--device", default="auto", choices=("cpu", "cuda", "auto"), help="where torch runs (default auto)")
    p.add_argument("-p", "--param", action="append", metavar="NAME=VALUE", help="override a param")
    p.add_argument("-d", "--data", action="append", metavar="NAME=PATH", help="override a data/graph source")
    p.add_argument(
        "-O",
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="an option for every run (common ones such as max_iter, or one all named backends know)",
    )
    p.add_argument("--format", choices=("html", "md", "json"), help="report format (default: from --report suffix)")
    p.add_argument(
        "--executor",
        choices=("local", "dask", "inline"),
        default="local",
        help="local worker processes (default), a Dask cluster, or inline in this process",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (implies --executor dask)")
    p.add_argument(
        "-j",
        "--workers",
        type=int,
        default=1,
        help="parallel local workers (default 1: runs do not compete for the CPU, times stay fair)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_parser(subparsers: Any) -> None:
    """Register `optlang compare` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "compare",
        help="run several backends on one model and report",
        description="Run every applicable backend (or the named ones) with the same "
        "budget and seeds; print a table and write a report.",
    )
    p.add_argument("model", help="the .opt model file")
    add_common_arguments(p)
    p.add_argument("--report", metavar="FILE", help="write the report here (.html, .md or .json)")
    p.set_defaults(func=run)


def report_format(path: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    suffix = Path(path).suffix.lower() if path else ""
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(suffix, "html")


def run(args: argparse.Namespace) -> int:
    """CLI entry: 0 = done, 1 = no run produced a solution, 6 = a claimed optimum or bound is contradicted."""
    from rich.console import Console

    from optlang import report

    console = Console(stderr=False)
    c = compare(
        args.model,
        backends=split_backends(args.backends),
        repeats=args.repeats,
        time_limit=args.time_limit,
        seed=args.seed,
        device=args.device,
        params=parse_assignments(args.param, "-p"),
        data=parse_assignments(args.data, "-d"),
        options=parse_assignments(args.option, "-O"),
        executor=args.executor,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=not args.no_progress,
    )
    console.print(report.rich_table(c))
    for name, reason in c.refused.items():
        console.print(f"[dim]not run: {name} — {reason}[/dim]")
    flags = c.contradictions()
    for f in flags:
        console.print(f"[bold red]CONTRADICTION[/bold red] {f.sentence(c.sense)}")
    if args.report:
        fmt = report_format(args.report, args.format)
        report.write(c, args.report, fmt)
        console.print(f"report written to {args.report} ({fmt})")
    elif args.format:
        console.print(report.render(c, args.format), markup=False, highlight=False)
    if not c.results or not any(r.status.has_solution for r in c.results):
        return 1
    return 6 if flags else 0


def write_solve_report(model: Any, result: Any, args: argparse.Namespace, stream: Any) -> None:
    """`optlang solve --report FILE`: a one-run report, format from the suffix (.html, .md, .json)."""
    from optlang import report
    from optlang.compare.orchestrate import of_solve

    c = of_solve(model, result, args.model, parse_assignments(args.param, "-p"), args.time_limit)
    fmt = report_format(args.report, None)
    report.write(c, args.report, fmt)
    print(f"report written to {args.report} ({fmt})", file=stream)
