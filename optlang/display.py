"""How results look to a person: the solve summary (user's quantities first), the live progress line,
and the notebook renderings (`_repr_markdown_` / `_repr_html_`) of Model, Plan and Result.

Nothing here computes: it formats what Result, Model and Plan already hold.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import numpy as np

MAX_SHOWN = 8


def fmt_num(x: float | None, digits: int = 10) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


def fmt_value(v: Any) -> str:
    """A variable's value, at most MAX_SHOWN entries: `0.5` or `[1, -1, 1] … (800 values)`."""
    if isinstance(v, (int, float)):
        return f"{v:.6g}"
    arr = np.asarray(v)
    if arr.ndim == 0:
        return f"{float(arr):.6g}"
    shown = np.array2string(arr.ravel()[:MAX_SHOWN], precision=4, separator=", ")
    return shown + (f" … ({arr.size} values, shape {tuple(arr.shape)})" if arr.size > MAX_SHOWN else "")


def user_rows(r: Any) -> list[tuple[str, str]]:
    """(label, text) rows in the user's terms: objective, bound, gap, time, iterations, values."""
    rows: list[tuple[str, str]] = []
    if r.objective is not None:
        rows.append(("objective", fmt_num(r.objective) + ("  (maximize)" if r.sense == "maximize" else "")))
    objectives = r.info.get("objectives")
    if isinstance(objectives, dict):
        for name, v in objectives.items():
            rows.append((f"objective {name}", fmt_num(v)))
    if r.bound is not None:
        rows.append(("bound", fmt_num(r.bound)))
    if r.gap is not None:
        rows.append(("gap", f"{r.gap:.4%}"))
    t = r.timing
    rows.append(
        ("time", f"{t.get('total', 0):.3f} s (compile {t.get('compile', 0):.3f} s, solve {t.get('solve', 0):.3f} s)")
    )
    rows.append(("iterations", str(r.iterations)))
    for name, v in r.values.items():
        rows.append((name, fmt_value(v)))
    if isinstance(r.info.get("error"), str):  # why a solve found nothing: never a hidden detail
        rows.append(("error", r.info["error"]))
    if isinstance(r.info.get("advice"), str):  # what may get a certified answer where this one is not
        rows.append(("advice", r.info["advice"]))
    return rows


def internal_rows(r: Any) -> list[tuple[str, str]]:
    """Backend internals (info scalars): shown with --verbose, always present in the JSON."""
    out = []
    for k, v in r.info.items():
        if k in ("method", "objectives", "error", "advice"):
            continue
        if isinstance(v, bool) or isinstance(v, (int, str)):
            out.append((k, str(v)))
        elif isinstance(v, float):
            out.append((k, f"{v:.6g}"))
    return out


def print_result(r: Any, model_name: str, con: Any, verbose: bool = False) -> None:
    """The human summary of a solve on a rich console."""
    from rich.markup import escape

    color = "green" if r.ok else ("yellow" if r.status.has_solution else "red")
    con.print(
        f"[bold {color}]{r.status.value}[/]  {escape(model_name)} ({r.kind}) with [bold]{r.backend}[/] on {r.device}"
    )
    rows = [(k, v, "bold") for k, v in user_rows(r)]
    internals = internal_rows(r)
    if verbose:
        rows += [(k, v, "dim") for k, v in internals]
    width = max(len(k) for k, _, _ in rows)
    for k, v, style in rows:  # aligned lines, no table padding: nothing trails in a pipe
        con.print(f" [{style}]{escape(k.ljust(width))}[/]  {escape(v)}")
    for c in r.checks:
        mark = "[green]✓[/]" if c.passed else "[red]✗[/]"
        con.print(f"  {mark} {escape(c.name)}: {escape(c.detail)}")
    log = getattr(r, "log", ())
    if log and verbose:
        for line in log:
            con.print(f"  [yellow]log[/] {escape(line)}")
    hidden = [f"{len(internals)} backend details"] if internals and not verbose else []
    if log and not verbose:
        hidden.append(f"{len(log)} solver message(s)")
    if hidden:
        con.print(f"[dim]({' and '.join(hidden)} hidden: --verbose shows them; --json always has them)[/]")


# ----------------------------------------------------------------------------- progress
class Progress:
    """A live stderr line for solves longer than a second: elapsed time (advancing on its own), the
    objective and bound in the user's sense (rows arrive already converted by Model.solve), and the gap."""

    def __init__(self, enabled: bool, delay: float = 1.0) -> None:
        self.enabled = enabled
        self.delay = delay
        self.start = time.perf_counter()
        self.row: dict[str, Any] | None = None
        self.live: Any = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        if enabled:  # the line appears after `delay` even when the backend has not reported yet
            self._timer = threading.Timer(delay, self._start_live)
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, row: dict[str, Any]) -> None:
        with self._lock:
            self.row = dict(row)

    def line(self) -> str:
        """The text of the line now: `  3.2s  objective 39  bound 40  gap 2.5%  (specann)`."""
        elapsed = time.perf_counter() - self.start
        with self._lock:
            row = dict(self.row or {})
        parts = [f"{elapsed:7.1f}s"]
        obj, bound = row.get("objective"), row.get("bound")
        if obj is not None:
            parts.append(f"objective {obj:.8g}")
        if bound is not None:
            parts.append(f"bound {bound:.8g}")
            if obj is not None:
                parts.append(f"gap {abs(bound - obj) / max(1.0, abs(obj)):.3%}")
        if "iteration" in row:
            parts.append(f"iteration {row['iteration']}")
        return "  " + "  ".join(parts)

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text(self.line())

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.live import Live

        with self._lock:
            if self.live is not None or not self.enabled:
                return
            self.live = Live(self, console=Console(stderr=True), refresh_per_second=4, transient=True)
            self.live.start()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self.enabled = False
            live, self.live = self.live, None
        if live is not None:
            live.stop()


# ----------------------------------------------------------------------------- notebooks
def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_table(rows: list[tuple[str, str]]) -> str:
    lines = ["| | |", "| --- | --- |"]
    lines += [f"| **{_md_escape(k)}** | {_md_escape(v)} |" for k, v in rows]
    return "\n".join(lines)


def _html_table(rows: list[tuple[str, str]], caption: str) -> str:
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows
    )
    return f"<table><caption style='text-align:left'>{html.escape(caption)}</caption>{body}</table>"


def result_rows(r: Any) -> list[tuple[str, str]]:
    rows = [("status", r.status.value), ("backend", f"{r.backend} on {r.device}")] + user_rows(r)
    rows += [(f"check {c.name}", ("✓ " if c.passed else "✗ ") + c.detail) for c in r.checks]
    return rows


def result_markdown(r: Any) -> str:
    return f"**{_md_escape(r.model or 'model')}** ({r.kind}): {r.status.value}\n\n" + _md_table(result_rows(r))


def result_html(r: Any) -> str:
    return _html_table(result_rows(r), f"{r.model or 'model'} ({r.kind}): {r.status.value}")


def model_rows(m: Any) -> list[tuple[str, str]]:
    rows = [("kind", m.kind), ("sense", m.form.sense), ("summary", m.form.describe())]
    for name, v in m.variables.items():
        rows.append((f"var {name}", v.describe()))
    for name, value in m.params.items():
        rows.append((f"param {name}", fmt_value(value) if not hasattr(value, "nnz") else f"sparse {value.shape}"))
    for name, g in m.graphs.items():
        rows.append((f"graph {name}", f"{g.n} nodes, {g.m} edges"))
    for name, t in m.ir.tables.items():
        rows.append((f"data {name}", f"{t.n} rows × {t.p} features" + (" + target" if t.y is not None else "")))
    if m.ir.solver:
        opts = ", ".join(f"{k} = {v!r}" for k, v in m.ir.solver.options.items())
        rows.append(("solver", m.ir.solver.name + (f" {{ {opts} }}" if opts else "")))
    return rows


def model_markdown(m: Any) -> str:
    return f"**{_md_escape(m.name)}**\n\n" + _md_table(model_rows(m))


def model_html(m: Any) -> str:
    return _html_table(model_rows(m), m.name)


def plan_rows(p: Any) -> list[tuple[str, str]]:
    rows = [("kind", p.kind), ("forced" if p.forced else "chosen", p.chosen)]
    for c in p.candidates:
        note = "" if c.auto or not c.accepted else " (baseline: only when named)"
        rows.append((("→ " if c.name == p.chosen else ("✓ " if c.accepted else "✗ ")) + c.name, c.reason + note))
    return rows


def plan_markdown(p: Any) -> str:
    return f"**plan**: {p.chosen}\n\n" + _md_table(plan_rows(p))


def plan_html(p: Any) -> str:
    return _html_table(plan_rows(p), f"plan: {p.chosen}")
