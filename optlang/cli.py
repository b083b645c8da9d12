"""The command line: `optlang check | plan | solve | compare | bench`. The only module that prints.

Exit codes (documented in docs/cli.md):
  0 success · 1 solved but no usable solution, or a certificate check failed · 2 usage error ·
  3 model or data error · 4 no backend can solve it / a forced backend refuses · 5 a backend failed ·
  6 (compare) a backend's claimed optimum or bound is contradicted by another's solution ·
  130 interrupted before any solution.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_NO_SOLUTION, EXIT_USAGE, EXIT_MODEL, EXIT_PLAN, EXIT_SOLVE, EXIT_INTERRUPT = 0, 1, 2, 3, 4, 5, 130


def _parse_assignments(items: list[str] | None, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise _Usage(f"{what} must be NAME=VALUE, got '{item}'")
        k, v = item.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise _Usage(f"'{k}' is not a valid name in {what} '{item}'")
        out[k] = _value(v.strip()) if what == "-p" else v.strip()
    return out


def _value(v: str) -> Any:
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        pass
    if v.startswith("["):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            raise _Usage(f"cannot read the list '{v}'") from None
    return v  # a path to load


class _Usage(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="optlang", description="Declarative optimization models: check, plan, solve, compare."
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("model", help="the .opt model file")
        sp.add_argument("-p", "--param", action="append", metavar="NAME=VALUE", help="override a param")
        sp.add_argument("-d", "--data", action="append", metavar="NAME=PATH", help="override a data or graph source")
        sp.add_argument("--json", action="store_true", help="machine-readable output on stdout")

    c = sub.add_parser("check", help="parse, type/shape check and classify; no solve")
    common(c)
    c.set_defaults(func=cmd_check)
    pl = sub.add_parser("plan", help="the problem kind, candidate backends, the chosen one and why")
    common(pl)
    pl.add_argument("-b", "--backend", default=None, help="check that this backend accepts the model")
    pl.add_argument("--time-limit", type=float, default=None, help="the budget exact methods are sized against")
    pl.set_defaults(func=cmd_plan)
    s = sub.add_parser("solve", help="solve the model")
    common(s)
    s.add_argument("-b", "--backend", default=None, help="backend name (default: the solver block, else auto)")
    s.add_argument("--device", default=None, choices=["cpu", "cuda", "auto"], help="where torch runs (default auto)")
    s.add_argument("--time-limit", type=float, default=None, help="seconds")
    s.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    s.add_argument("--dtype", default=None, choices=["float32", "float64"])
    s.add_argument("--max-iter", type=int, default=None)
    s.add_argument("-O", "--option", action="append", metavar="KEY=VALUE", help="a backend option")
    s.add_argument("-o", "--output", default=None, help="write the result as JSON to this file")
    s.add_argument("--quiet", action="store_true", help="no progress display")
    s.set_defaults(func=cmd_solve)
    for mod in ("optlang.compare", "optlang.bench"):
        try:
            module = __import__(mod, fromlist=["add_parser"])
        except ImportError:
            continue
        add = getattr(module, "add_parser", None)
        if add is not None:
            add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
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
        parser.print_help()
        return EXIT_USAGE
    from optlang.errors import DataError, ModelErrors, OptionError, OptlangError, PlanError

    try:
        return int(args.func(args))
    except _Usage as e:
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


def _print_error(e: Any, args: argparse.Namespace) -> None:
    if e.source is None and getattr(args, "model", None):
        from optlang.source import Source

        path = Path(args.model)
        try:
            e.with_source(Source(path.read_text(encoding="utf-8"), str(args.model), path.parent))
        except (OSError, UnicodeDecodeError):
            pass
    if getattr(args, "json", False):
        errors = getattr(e, "errors", [e])
        print(
            json.dumps(
                {
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
                },
                indent=2,
            )
        )
    sys.stderr.write(e.render() + "\n")


def _load(args: argparse.Namespace) -> Any:
    import optlang

    return optlang.load(
        args.model, params=_parse_assignments(args.param, "-p"), data=_parse_assignments(args.data, "-d")
    )


def cmd_check(args: argparse.Namespace) -> int:
    m = _load(args)
    if args.json:
        f = m.form
        print(
            json.dumps(
                {
                    "model": m.name,
                    "kind": m.kind,
                    "sense": f.sense,
                    "summary": f.describe(),
                    "variables": [
                        {"name": v.name, "kind": v.kind, "shape": list(v.shape), "domain": v.domain, "role": v.role}
                        for v in f.variables
                    ],
                },
                indent=2,
            )
        )
    else:
        from rich.console import Console

        con = Console(highlight=False, soft_wrap=True)
        con.print(f"[green]ok[/green] {args.model}: {m.kind} — {m.form.describe()}")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    m = _load(args)
    p = m.plan(args.backend, time_limit=args.time_limit)
    if args.json:
        print(
            json.dumps(
                {
                    "kind": p.kind,
                    "chosen": p.chosen,
                    "forced": p.forced,
                    "candidates": [
                        {"name": c.name, "accepted": c.accepted, "reason": c.reason, "auto": c.auto}
                        for c in p.candidates
                    ],
                },
                indent=2,
            )
        )
        return EXIT_OK
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console(highlight=False, soft_wrap=True)
    con.print(f"[bold]{m.name}[/bold]: {p.kind} — {m.form.describe()}")
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
    return EXIT_OK


class _Progress:
    """A live line (stderr) for solves longer than a second: time, objective, bound."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.start = time.perf_counter()
        self.live: Any = None
        self.last = 0.0

    def __call__(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < 1.0 or now - self.last < 0.2:
            return
        self.last = now
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        bound = row.get("bound")
        extra = "  ".join(
            f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
            for k, v in row.items()
            if k not in ("time", "objective", "bound") and isinstance(v, (int, float, str))
        )
        text = Text(
            f"  {row['time']:7.1f}s  objective {row['objective']:.8g}"
            + (f"  bound {bound:.8g}" if bound is not None else "")
            + (f"  {extra}" if extra else "")
        )
        if self.live is None:
            self.live = Live(text, console=Console(stderr=True), refresh_per_second=5, transient=True)
            self.live.start()
        else:
            self.live.update(text)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def cmd_solve(args: argparse.Namespace) -> int:
    m = _load(args)
    options = {}
    for item in args.option or []:
        if "=" not in item:
            raise _Usage(f"-O must be KEY=VALUE, got '{item}'")
        k, v = item.split("=", 1)
        options[k.strip()] = _value(v.strip())
    progress = _Progress(enabled=not args.quiet and not args.json and sys.stderr.isatty())
    try:
        r = m.solve(
            backend=args.backend,
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
        Path(args.output).write_text(r.to_json(), encoding="utf-8")
    if args.json:
        print(r.to_json())
    else:
        _print_result(r, m)
    if not r.status.has_solution:
        return EXIT_NO_SOLUTION if r.status.value != "interrupted" else EXIT_INTERRUPT
    return EXIT_OK if all(c.passed for c in r.checks) else EXIT_NO_SOLUTION


def _print_result(r: Any, m: Any) -> None:
    import numpy as np
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console(highlight=False, soft_wrap=True)
    color = "green" if r.ok else ("yellow" if r.status.has_solution else "red")
    con.print(f"[bold {color}]{r.status.value}[/]  {m.name} ({r.kind}) with [bold]{r.backend}[/] on {r.device}")
    t = Table(show_header=False, box=None)
    t.add_column(style="bold")
    t.add_column()
    if r.objective is not None:
        t.add_row("objective", f"{r.objective:.10g}" + ("  (maximize)" if r.sense == "maximize" else ""))
    if r.bound is not None:
        t.add_row("bound", f"{r.bound:.10g}")
    if r.gap is not None:
        t.add_row("gap", f"{r.gap:.4%}")
    t.add_row(
        "time",
        f"{r.timing.get('total', 0):.3f} s (compile {r.timing.get('compile', 0):.3f} s, "
        f"solve {r.timing.get('solve', 0):.3f} s)",
    )
    t.add_row("iterations", str(r.iterations))
    for name, v in r.values.items():
        arr = np.asarray(v)
        shown = np.array2string(arr.ravel()[:8], precision=4, separator=", ")
        more = f" … ({arr.size} values)" if arr.size > 8 else ""
        t.add_row(name, shown + more)
    for k, v in r.info.items():
        if isinstance(v, (int, float, str)) and k not in ("method",):
            t.add_row(k, f"{v:.6g}" if isinstance(v, float) else str(v))
    con.print(t)
    for c in r.checks:
        mark = "[green]✓[/]" if c.passed else "[red]✗[/]"
        con.print(f"  {mark} {escape(c.name)}: {escape(c.detail)}")


if __name__ == "__main__":
    sys.exit(main())
