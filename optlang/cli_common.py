"""The CLI's shared vocabulary: one set of flags with one meaning across check | plan | solve | compare | bench,
the exit-code epilog every --help shows, and consoles that keep machine output clean.

Rules: stdout carries the command's product (the JSON document with --json, else the human summary); progress,
notes and diagnostics go to stderr; nothing is wrapped when the stream is not a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

EXIT_CODES = (
    (0, "success"),
    (1, "solved but no usable solution, or a certificate check failed (compare/bench: no run solved)"),
    (2, "usage error: unknown flag, bad NAME=VALUE, unknown option"),
    (3, "model or data error (the message points at file:line:col)"),
    (4, "no backend can solve the model, or a named backend refuses it"),
    (5, "a backend failed (a bug: please report it)"),
    (6, "compare: a claimed optimum or bound is contradicted by another backend's solution"),
    (130, "interrupted before any solution"),
)
EPILOG = "exit codes:\n" + "\n".join(f"  {code:<4}{text}" for code, text in EXIT_CODES)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's layout and appends `(default: X)` to every flag with a real default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or not action.option_strings
            or default is None
            or default is False
            or default == argparse.SUPPRESS
            or isinstance(default, list)
        ):
            return text
        return f"{text} (default: %(default)s)"


def new_command(
    sub: Any, name: str, help: str, description: str | None = None, epilog: str = EPILOG
) -> argparse.ArgumentParser:
    """A subcommand with the shared help layout and an exit-code epilog (the shared one by default)."""
    return sub.add_parser(
        name, help=help, description=description or help, epilog=epilog, formatter_class=HelpFormatter
    )


def add_input_flags(p: argparse.ArgumentParser) -> None:
    """-p/-d: override a model's param, data or graph by name."""
    p.add_argument("-p", "--param", action="append", metavar="NAME=VALUE", help="override a param (repeatable)")
    p.add_argument(
        "-d", "--data", action="append", metavar="NAME=PATH", help="override a data or graph source (repeatable)"
    )


def add_backend_flag(p: argparse.ArgumentParser, meaning: str) -> None:
    """-b/--backend NAME or A,B,C (repeatable); --backends is the same flag."""
    p.add_argument(
        "-b",
        "--backend",
        "--backends",
        dest="backends",
        action="append",
        metavar="NAME[,NAME...]",
        help=meaning,
    )


def add_run_flags(
    p: argparse.ArgumentParser,
    time_limit: float | None,
    seed_text: str = "random seed",
    time_text: str | None = None,
) -> None:
    """The budget and numerics of a run: --time-limit, --seed, --device, --dtype, --max-iter, -O.

    time_limit None means: the model's solver block decides (solve); then --seed and --device also
    default to the solver block's values. `time_text` replaces the time limit's default sentence
    (compare/bench: the model's own limit, else 10 s, with seed 0 and device auto)."""
    block = time_limit is None and time_text is None
    p.add_argument(
        "--time-limit",
        type=float,
        default=time_limit,
        metavar="SECONDS",
        help="wall-clock cap per run"
        + (
            f" ({time_text})"
            if time_text
            else ("" if time_limit is not None else " (default: the solver block's time_limit, else the backend's own)")
        ),
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None if block else 0,
        help=seed_text + (" (default: the solver block's seed, else 0)" if block else ""),
    )
    p.add_argument(
        "--device",
        default=None if block else "auto",
        choices=("cpu", "cuda", "auto"),
        help="where torch runs" + (" (default: the solver block's device, else auto)" if block else ""),
    )
    p.add_argument(
        "--dtype",
        default=None,
        choices=("float32", "float64"),
        help="floating type on the device (default: the solver block's dtype, else float32)",
    )
    p.add_argument(
        "--max-iter",
        type=int,
        default=None,
        metavar="N",
        help="iteration cap (default: the solver block's max_iter, else the backend's own)",
    )
    p.add_argument(
        "-O", "--option", action="append", metavar="KEY=VALUE", help="a backend option, as in a solver block"
    )


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """--json, -q/--quiet (= --no-progress), -v/--verbose."""
    p.add_argument("--json", action="store_true", help="one JSON document on stdout, nothing else there")
    p.add_argument(
        "-q", "--quiet", "--no-progress", dest="quiet", action="store_true", help="no progress display on stderr"
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="also show backend internals (always present in --json)"
    )


def backend_list(args: argparse.Namespace) -> list[str] | None:
    """'-b a,b -b c' → ['a', 'b', 'c']; None when no -b was given."""
    items = getattr(args, "backends", None)
    if not items:
        return None
    if isinstance(items, str):
        items = [items]
    names = [b.strip() for t in items for b in t.split(",") if b.strip()]
    return names or None


def console(stderr: bool = False) -> Any:
    """A rich Console on stdout or stderr: colour and width on a terminal; plain and unwrapped otherwise."""
    from rich.console import Console

    class PipeConsole(Console):
        """rich exits with status 1 when the reader of a pipe leaves (`optlang solve m.opt | head`);
        raise BrokenPipeError instead, which `cli.main` turns into a quiet exit 0 as for --json."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    stream = sys.stderr if stderr else sys.stdout
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if tty:
        return PipeConsole(file=stream, highlight=False, soft_wrap=True)
    return PipeConsole(file=stream, highlight=False, soft_wrap=True, width=100_000, color_system=None)


def write_stdout(text: str) -> None:
    """Machine output: exactly this text (and a newline) on stdout, never wrapped or styled."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def quiet_broken_pipe() -> None:
    """After a BrokenPipeError (`optlang solve --json | head`): point stdout at /dev/null so the
    interpreter's final flush does not print a second traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced by a StringIO (tests)
        pass


def parse_options(items: Sequence[str] | None) -> dict[str, Any]:
    """-O KEY=VALUE pairs (solve, compare, bench): true/false as in a solver block, else read as -p
    values are (`parse_value`: numbers, JSON lists, else the string)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, v = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-O must be KEY=VALUE, got '{item}'")
        text = v.strip()
        out[key.strip()] = text == "true" if text in ("true", "false") else parse_value(text)
    return out


class UsageError(Exception):
    """A command line that cannot be read (exit 2)."""


def parse_assignments(items: Sequence[str] | None, what: str) -> dict[str, Any]:
    """-p/-d NAME=VALUE pairs, the one reader for every subcommand (check, plan, solve, sweep, compare,
    bench): -p values are numbers, JSON lists or paths; -d values are paths."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"{what} must be NAME=VALUE, got '{item}'")
        k, v = item.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise UsageError(f"'{k}' is not a valid name in {what} '{item}'")
        out[k] = parse_value(v.strip()) if what == "-p" else v.strip()
    return out


def parse_value(v: str) -> Any:
    """A -p value: int, float, a JSON list, else a path to load."""
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
        except (json.JSONDecodeError, RecursionError):
            raise UsageError(f"cannot read the list '{v[:40]}'") from None
    return v  # a path to load
