"""The command line: `optlang check | plan | solve | compare | bench`.

compare.py and bench.py add (and print for) their own subcommands; the rest prints only here.

Exit codes (documented in docs/cli.md):
  0 success · 1 solved but no usable solution, or a certificate check failed · 2 usage error ·
  3 model or data error · 4 no backend can solve it / a forced backend refuses · 5 a backend failed ·
  6 (compare) a backend's claimed optimum or bound is contradicted by another's solution ·
  70 internal error (a bug in optlang; guard.EXIT_INTERNAL) · 130 interrupted before any solution.
A solve that ends `diverged` or `unbounded` exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from optlang import guard
from optlang.cli_common import UsageError, parse_assignments

EXIT_OK, EXIT_NO_SOLUTION, EXIT_USAGE, EXIT_MODEL, EXIT_PLAN, EXIT_SOLVE, EXIT_INTERRUPT = 0, 1, 2, 3, 4, 5, 130


def build_parser() -> argparse.ArgumentParser:
    from optlang.cli_common import EPILOG, HelpFormatter

    p = argparse.ArgumentParser(
        prog="optlang",
        description="Declarative optimization models: check, plan, solve, compare, bench, fmt.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command")
    add_check_parser(sub)
    add_plan_parser(sub)
    add_solve_parser(sub)
    from optlang import bench, fmt, sweep  # a broken import here is a bug to see, not a subcommand to hide
    from optlang.compare import cli as compare_cli

    compare_cli.add_parser(sub)
    bench.add_parser(sub)
    fmt.add_parser(sub)
    sweep.add_parser(sub)
    return p


def add_check_parser(sub: Any) -> None:
    from optlang import cli_common as cc

    c = cc.new_command(sub, "check", "parse, type/shape check and classify; validate the solver block; no solve")
    c.add_argument("model", help="the .opt model file")
    cc.add_input_flags(c)
    guard.add_flags(c)
    cc.add_backend_flag(c, "also check that these backends exist and accept the model's solver options")
    cc.add_output_flags(c)
    c.set_defaults(func=cmd_check)


def add_plan_parser(sub: Any) -> None:
    from optlang import cli_common as cc

    pl = cc.new_command(sub, "plan", "the problem kind, candidate backends, the chosen one and why")
    pl.add_argument("model", help="the .opt model file")
    cc.add_input_flags(pl)
    guard.add_flags(pl)
    cc.add_backend_flag(
        pl,
        "force a backend, or a comma list: the first that accepts the model (default: the "
        "solver block's, else the planner's choice)",
    )
    pl.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the budget exact methods are sized against (default: the solver block's time_limit)",
    )
    cc.add_output_flags(pl)
    pl.set_defaults(func=cmd_plan)


def add_solve_parser(sub: Any) -> None:
    from optlang import cli_common as cc

    s = cc.new_command(sub, "solve", "solve the model and re-verify the answer")
    s.add_argument("model", help="the .opt model file")
    cc.add_input_flags(s)
    guard.add_flags(s)
    cc.add_backend_flag(
        s,
        "backend name, or a comma list: the first that accepts the model (default: the "
        "solver block's, else the planner's choice)",
    )
    cc.add_run_flags(s, time_limit=None)
    s.add_argument("-o", "--output", default=None, metavar="FILE", help="also write the result as JSON to FILE")
    s.add_argument("--report", metavar="FILE", default=None, help="write a report (.html, .md or .json) of this solve")
    cc.add_output_flags(s)
    s.set_defaults(func=cmd_solve)


def main(argv: list[str] | None = None) -> int:
    """The `optlang` entry point: returns the exit code (see EXIT_CODES in cli_common)."""
    from optlang.cli_common import quiet_broken_pipe

    try:
        return _main(argv)
    except BrokenPipeError:  # `optlang solve --json | head`: the reader left; exit quietly
        quiet_broken_pipe()
        return EXIT_OK


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0) if e.code in (0, None) else EXIT_USAGE
    if args.version:
        from optlang import __version__

        print(__version__)
        return EXIT_OK
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from optlang.errors import DataError, ModelErrors, OptionError, OptlangError, PlanError

    try:
        guard.apply_flags(args)
        return int(args.func(args))
    except guard.FlagError as e:
        sys.stderr.write(f"optlang: error: {e}\n")
        return EXIT_USAGE
    except UsageError as e:
        sys.stderr.write(f"optlang: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPT
    except PlanError as e:
        _print_error(e, args)
        return EXIT_PLAN
    except OptionError as e:
        _print_error(e, args)
        return EXIT_USAGE if e.span is None else EXIT_MODEL
    except (ModelErrors, DataError, OptlangError) as e:
        from optlang.api import SolveError

        _print_error(e, args)
        return EXIT_SOLVE if isinstance(e, SolveError) else EXIT_MODEL
    except BrokenPipeError:
        raise  # main() exits quietly: the reader of a pipe left
    except (Exception, RecursionError) as e:  # never a traceback: a bug gets its own exit code
        return guard.internal_error(e)


def _print_error(e: Any, args: argparse.Namespace) -> None:
    """The diagnostic on stderr; with --json also `{"errors": [...]}` on stdout (and nothing else there)."""
    from optlang.cli_common import write_stdout

    if e.source is None and getattr(args, "model", None):
        from optlang.source import Source

        path = Path(args.model)
        try:
            e.with_source(Source(path.read_text(encoding="utf-8"), str(args.model), path.parent))
        except (OSError, UnicodeDecodeError):
            pass
    if getattr(args, "json", False):
        errors = getattr(e, "errors", [e])
        doc = {
            "errors": [
                {
                    "code": x.code,
                    "message": x.message,
                    "line": x.line,
                    "column": x.column,
                    "hint": x.hint,
                    "text": x.render(),
                }
                for x in errors
            ]
        }
        write_stdout(json.dumps(doc, indent=2))
    sys.stderr.write(e.render() + "\n")


def _load(args: argparse.Namespace) -> Any:
    import optlang

    return optlang.load(
        args.model,
        params=parse_assignments(args.param, "-p"),
        data=parse_assignments(args.data, "-d"),
        allow_paths=guard.allow_paths(args),
    )


def _backends(args: argparse.Namespace) -> list[str] | None:
    from optlang.cli_common import backend_list

    return backend_list(args)


def cmd_check(args: argparse.Namespace) -> int:
    from optlang.cli_common import console, write_stdout

    m = _load(args)
    m.check_solver(_backends(args))
    if args.json:
        f = m.form
        doc = {
            "model": m.name,
            "kind": m.kind,
            "sense": f.sense,
            "summary": f.describe(),
            "variables": [
                {"name": v.name, "kind": v.kind, "shape": list(v.shape), "domain": v.domain, "role": v.role}
                for v in f.variables
            ],
            "solver": {"name": m.ir.solver.name, "options": m.solver_options} if m.ir.solver else None,
        }
        write_stdout(json.dumps(doc, indent=2, default=str))
    else:
        console().print(f"[green]ok[/green] {args.model}: {m.kind} — {m.form.describe()}")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from optlang.cli_common import console, write_stdout

    m = _load(args)
    p = m.plan(_backends(args), time_limit=args.time_limit)
    if args.json:
        doc = {
            "kind": p.kind,
            "chosen": p.chosen,
            "forced": p.forced,
            "candidates": [
                {"name": c.name, "accepted": c.accepted, "reason": c.reason, "auto": c.auto} for c in p.candidates
            ],
            "auto_options": {"options": list(p.auto_options), "note": p.auto_note},
        }
        write_stdout(json.dumps(doc, indent=2))
        return EXIT_OK
    con = console()
    con.print(f"[bold]{escape(m.name)}[/bold]: {p.kind} — {escape(m.form.describe())}")
    t = Table(show_header=True, header_style="bold")
    t.add_column("")
    t.add_column("backend")
    t.add_column("why")
    for c in p.candidates:
        mark = "[bold green]→[/]" if c.name == p.chosen else ("[green]✓[/]" if c.accepted else "[red]✗[/]")
        why = c.reason + ("" if c.auto or not c.accepted else " (baseline: only when named)")
        t.add_row(mark, c.name, escape(why))  # escape: "[cvxpy]" in a refusal is text, not rich markup
    con.print(t)
    con.print(f"chosen: [bold]{p.chosen}[/bold]" + (" (forced)" if p.forced else ""))
    if p.auto_options:
        con.print(f"auto options: {escape(p.auto_note)}")
    return EXIT_OK


def cmd_solve(args: argparse.Namespace) -> int:
    from optlang.cli_common import console, parse_options, write_stdout
    from optlang.display import Progress, print_result

    m = _load(args)
    options = parse_options(args.option)
    progress = Progress(enabled=not args.quiet and not args.json and sys.stderr.isatty())
    try:
        r = m.solve(
            backend=_backends(args),
            time_limit=args.time_limit,
            seed=args.seed,
            device=args.device,
            options=options,
            progress=progress,
            dtype=args.dtype,
            max_iter=args.max_iter,
        )
    finally:
        progress.close()
    if args.output:
        r.save(args.output)
    if args.report:  # the same report as compare, for one run (convergence, bound, checks, model)
        from optlang.compare.cli import write_solve_report

        write_solve_report(m, r, args, sys.stderr)
    if args.json:
        write_stdout(r.to_json())
    else:
        print_result(r, m.name, console(), verbose=args.verbose)
    if not r.status.has_solution or r.status.value in ("diverged", "unbounded"):
        return EXIT_NO_SOLUTION if r.status.value != "interrupted" else EXIT_INTERRUPT
    return EXIT_OK if all(c.passed for c in r.checks) else EXIT_NO_SOLUTION


if __name__ == "__main__":
    sys.exit(main())
