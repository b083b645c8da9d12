"""Reports of comparisons and suites: HTML (self-contained, inline SVG), Markdown, JSON, console tables.

`render(obj, fmt)` takes a compare.Comparison or a bench.BenchReport; `write` puts it in a file.
Results → plotted series in panels.py, matplotlib drawing (inline SVG) in plots.py, maths in maths.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FORMATS = ("html", "md", "json")


def is_bench(obj: Any) -> bool:
    """A bench.BenchReport (told by its profile/table methods, so report/ never imports bench)."""
    return callable(getattr(obj, "backend_table", None)) and callable(getattr(obj, "profile", None))


def render(obj: Any, fmt: str = "html") -> str:
    """The report text of a Comparison or BenchReport in one of FORMATS."""
    from optlang.report import html, json_report, markdown

    if fmt == "json":
        return json_report.render(obj)
    bench = is_bench(obj)
    if fmt == "html":
        return html.render_bench(obj) if bench else html.render_comparison(obj, getattr(obj, "command", "compare"))
    if fmt == "md":
        return markdown.render_bench(obj) if bench else markdown.render_comparison(obj)
    from optlang.errors import OptionError

    raise OptionError("format", f"unknown report format '{fmt}'", hint="use html, md or json")


def write(obj: Any, path: str | Path, fmt: str = "html") -> Path:
    """Render and write the report (UTF-8); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    from optlang.guard import atomic_write_text

    atomic_write_text(p, render(obj, fmt))  # a kill mid-write never leaves half a report
    return p


def rich_table(obj: Any) -> Any:
    """A rich Table for the console: the summary of a Comparison, the backend table of a BenchReport."""
    from rich.table import Table

    from optlang.report import fmt

    if is_bench(obj):
        t = Table(title=f"bench {obj.suite}: {len(obj.models)} models, {len(obj.rows)} runs")
        for h in ("backend", "models", "reached best", "fastest", "ρ(1)", "ρ(2)", "ρ(10)", "median gap", "errors"):
            t.add_column(h, justify="left" if h == "backend" else "right")
        for r in obj.backend_table():
            t.add_row(
                r["backend"],
                str(r["models"]),
                str(r["reached_best"]),
                str(r["fastest"]),
                f"{r['rho_1']:.2f}",
                f"{r['rho_2']:.2f}",
                f"{r['rho_10']:.2f}",
                fmt.pct(r["median_gap"]),
                str(r["error_runs"]),
            )
        return t
    t = Table(title=f"{obj.model} ({obj.kind}, {obj.sense}): {obj.repeats} repeat(s)")
    for h in ("backend", "ok", "status", "best", "median", "bound", "gap", "time", "checks", "flag"):
        t.add_column(h, justify="left" if h in ("backend", "status", "flag") else "right", overflow="fold")
    for s in obj.summaries():  # compact: the report has spread and time ranges
        t.add_row(
            s.backend,
            f"{s.solved}/{s.runs}",
            s.status_text or fmt.DASH,
            fmt.num(s.best, 6),
            fmt.num(s.median, 6),
            fmt.num(s.bound, 6),
            fmt.pct(s.gap),
            fmt.seconds(s.time_median),
            s.checks_text,
            "[bold red]CONTRADICTED[/bold red]" if s.flagged else "",
        )
    return t


def _register_display() -> None:
    """Give Comparison its notebook display (_repr_html_/_repr_markdown_) through compare.comparison.DISPLAY."""
    from optlang.compare.comparison import DISPLAY

    DISPLAY["html"] = lambda c: render(c, "html")
    DISPLAY["md"] = lambda c: render(c, "md")


_register_display()
