"""Process safety for the command line: exit codes, atomic output files, the hardening flags,
and the one place an unexpected exception becomes a short message and its own exit code.

cli.py calls this module in a few lines; signals during a solve are turned into the run's
`interrupted` flag by backends.base.interrupt_to_flag (SIGINT and SIGTERM alike).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from optlang import memory

# sysexits.h EX_SOFTWARE: an internal error (a bug in optlang), never confused with the documented
# 1 (no usable solution), 3 (model or data error) or 5 (a backend failed).
EXIT_INTERNAL = 70
DEBUG_ENV = "OPTLANG_DEBUG"


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write to a temporary file beside `path`, flush it to disk, then rename it over `path`.

    A kill at any moment leaves either the old file or the new one, never a truncated one.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding=encoding) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_append_line(path: str | Path, line: str, encoding: str = "utf-8") -> None:
    """Append one line (JSONL) atomically: the old content plus the line, renamed into place."""
    target = Path(path)
    old = target.read_text(encoding=encoding) if target.exists() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    atomic_write_text(target, old + line.rstrip("\n") + "\n", encoding=encoding)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """--memory-limit and --allow-path, shared by check, plan and solve."""
    parser.add_argument(
        "--memory-limit",
        default=None,
        metavar="SIZE",
        help=f"refuse models whose data would need more memory (e.g. 8G; default ${memory.ENV} or 80%% of RAM)",
    )
    parser.add_argument(
        "--allow-path",
        action="append",
        default=None,
        metavar="DIR",
        help="let load() read files in this folder too (default: only the model's folder tree)",
    )


class FlagError(ValueError):
    """A hardening flag with a bad value (a usage error, exit 2)."""


def apply_flags(args: argparse.Namespace) -> None:
    """Install the process-wide settings the flags ask for; FlagError on a bad value."""
    size = getattr(args, "memory_limit", None)
    if size is not None:
        try:
            memory.set_limit(memory.parse_size(str(size)))
        except ValueError as e:
            raise FlagError(f"--memory-limit: {e}") from None


def allow_paths(args: argparse.Namespace) -> list[str]:
    return list(getattr(args, "allow_path", None) or [])


def internal_error(exc: BaseException) -> int:
    """A short report of a bug (no traceback unless OPTLANG_DEBUG=1), and EXIT_INTERNAL."""
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    loc = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
    msg = str(exc).splitlines()[0][:200] if str(exc) else ""
    sys.stderr.write(
        f"optlang: internal error{loc}: {type(exc).__name__}: {msg}\n"
        f"  = this is a bug in optlang, not in the model (exit {EXIT_INTERNAL}); "
        f"set {DEBUG_ENV}=1 for the traceback and please report it\n"
    )
    if os.environ.get(DEBUG_ENV) == "1":
        traceback.print_exception(exc)
    return EXIT_INTERNAL


def unbounded(objective: float | None, sense: str, values: dict[str, Any], history: Any) -> bool:
    """True when a solve ran off to −∞ (minimize) or +∞ (maximize): the objective is beyond 1e20 in
    the improving direction and the iterates grow (entries above 1e10, or |objective| still rising)."""
    import math

    import numpy as np

    if objective is None or not math.isfinite(objective):
        return False
    if (objective > -1e20) if sense != "maximize" else (objective < 1e20):
        return False
    big = any(np.size(v) and float(np.max(np.abs(v))) > 1e10 for v in values.values())
    objs = [abs(o) for _, o, *_ in history or () if o is not None and math.isfinite(o)]
    rising = len(objs) >= 2 and objs[-1] > objs[len(objs) // 2]
    return bool(big or rising)
