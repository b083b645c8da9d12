"""The `optlang compare` subcommand: flags, the console table, the report file, the exit code."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from optlang.cli_common import parse_assignments, parse_options
from optlang.compare.orchestrate import compare


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by compare and bench: the CLI's common vocabulary (optlang/cli_common.py) plus the
    report and executor flags."""
    from optlang import cli_common as cc

    cc.add_input_flags(p)
    cc.add_backend_flag(p, "backends to run (comma list, repeatable; default: every one that accepts the model)")
    p.add_argument("--repeats", type=int, default=1, help="runs per backend, seeds SEED, SEED+1, ...")
    cc.add_run_flags(
        p, time_limit=None, seed_text="first seed", time_text="default: the model's own time_limit, else 10"
    )
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


def run_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of compare() and bench() read from the flags of `add_common_arguments`."""
    from optlang.cli_common import backend_list

    return {
        "backends": backend_list(args),
        "repeats": args.repeats,
        "time_limit": args.time_limit,
        "seed": args.seed if args.seed is not None else 0,
        "device": args.device or "auto",
        "params": parse_assignments(args.param, "-p"),
        "data": parse_assignments(args.data, "-d"),
        "options": run_options(args),
        "executor": args.executor,
        "scheduler": args.scheduler,
        "workers": args.workers,
        "progress": not args.quiet and not args.json,
    }


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """-O pairs plus --dtype/--max-iter as the common options every run gets."""
    options = parse_options(args.option)
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
    c = compare(args.model, **run_arguments(args))
    flags = c.contradictions()
    notes = [f"[dim]not run: {name} — {reason}[/dim]" for name, reason in c.refused.items()]
    notes += [f"[bold red]CONTRADICTION[/bold red] {f.sentence(c.sense)}" for f in flags]
    if (fh := c.front_hypervolumes()) is not None:  # fronts compare by one reference point, not by an objective
        ref = ", ".join(f"{v:.6g}" for v in fh.reference)
        per = ", ".join(f"{b} {m:.6g}" for b in c.backends if (m := fh.median(b)) is not None)
        notes.append(f"front hypervolume (median over repeats; reference ({ref}), larger is better): {per}")
    print_outputs(c, args, notes)
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
