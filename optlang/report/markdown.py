"""The Markdown renderer: the same tables, flags, source, math and environment as the HTML report.

Plots do not travel in Markdown; the convergence plot is summarized by each backend's time to its
best objective, and the kind panels by their numbers (cut values, front sizes, region tables).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from optlang.report import fmt, panels

if TYPE_CHECKING:
    from optlang.compare.comparison import Comparison

BenchReport = Any  # bench.BenchReport, told apart by report.is_bench: bench imports report/, never the reverse


def _esc(v: Any) -> str:
    """A table cell: HTML escaped (a model's text is untrusted), pipes and newlines neutralised."""
    return _text(v).replace("|", "\\|")


_MD_SPECIAL = re.compile(r"([\\`*_\[\]#!~])")


def _text(v: Any) -> str:
    """Text from a model (names, messages) outside code blocks: no HTML, no Markdown markup, one line."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(v), quote=False)).replace("\r", " ").replace("\n", " ")


def _fence(text: str, lang: str = "") -> list[str]:
    """A fenced code block that the text cannot close (the fence outgrows any backtick run in it)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured pipe table (first column left-aligned, the rest right-aligned)."""
    out = [
        "| " + " | ".join(_esc(h) for h in header) + " |",
        "| " + " | ".join(":---" if i == 0 else "---:" for i in range(len(header))) + " |",
    ]
    out += ["| " + " | ".join(_esc(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def render_comparison(c: Comparison) -> str:
    """The comparison report as Markdown."""
    tl = "none" if c.time_limit is None else f"{c.time_limit:g} s"
    if c.time_limit_source:
        tl += f" (from {c.time_limit_source})"
    out = [
        f"# optlang {c.command} — {_text(c.model)}",
        "",
        f"kind **{c.kind}** · {c.sense} · repeats **{c.repeats}** (seeds {', '.join(map(str, c.seeds))}) · "
        f"time limit **{tl}** · device **{c.device}** · {c.created}",
        "",
    ]
    flags = c.contradictions()
    if flags:
        out += ["## Contradictions", ""] + [f"- **CONTRADICTION**: {_text(f.sentence(c.sense))}" for f in flags] + [""]
    elif c.results:
        out += [
            "No contradictions: every claimed optimum and bound is consistent with every run's recomputed objective.",
            "",
        ]
    sums = c.summaries()
    out += [
        "## Summary",
        "",
        table(fmt.SUMMARY_HEADER, [fmt.summary_row(s) for s in sums]),
        "",
        f"Best known objective: **{fmt.num(c.best_objective)}**; tightest claimed bound: **{fmt.num(c.best_bound)}**.",
        "",
    ]
    for s in sums:
        out += [f"- error ({_text(s.backend)}): {_text(e)}" for e in s.errors]
    out += [f"- not run ({_text(b)}): {_text(r)}" for b, r in c.refused.items()]
    out += [
        "",
        "## Convergence",
        "",
        table(
            (
                "backend",
                "history rows (all runs)",
                "own reports left out (not the model's objective)",
                "median time to own best (incumbent)",
            ),
            _convergence_rows(c),
        ),
        "",
    ]
    panel = _panel(c)
    if panel:
        out += panel
    vals = panels.validations(c)
    if vals:
        out += ["## Validation (auto)", ""]
        for v in vals:
            line = f"**{_text(v.run)}**: chosen {_text(panels.chosen_text(v))} ({_text(v.how or '?')})"
            line += f"; {_text(v.method)}"
            if v.threshold is not None:
                line += f"; admissible: validation mean loss ≤ {fmt.num(v.threshold, 6)}"
            out += [line, "", table(*panels.validation_rows(v)), ""]
    opts = panels.auto_options_all(c)
    if opts:
        out += ["## Validation (auto options)", ""]
        for o in opts:
            line = f"**{_text(o.run)}**: rule: {_text(o.rule_text)}; chosen {_text(panels.auto_options_chosen_text(o))}"
            line += f" ({_text(o.how or '?')}); {_text(o.method)}; {_text(o.criterion)}"
            if o.execution:
                line += f"; candidates run {_text(o.execution)}"
            out += [line, "", table(*panels.auto_option_rows(o)), ""]
    out += [
        "## All runs",
        "",
        table(
            ("backend", "seed", "status", "objective", "bound", "time", "checks"),
            [
                (
                    r.backend,
                    r.seed,
                    r.status.value,
                    fmt.num(r.objective),
                    fmt.num(r.bound),
                    fmt.seconds(r.timing.get("total")),
                    r.info.get("error")
                    or "; ".join(f"{'ok' if ch.passed else 'FAIL'} {ch.name}" for ch in r.checks)
                    or fmt.DASH,
                )
                for r in c.results
            ],
        ),
        "",
    ]
    if c.plan:
        out += ["## Plan", "", *_fence(c.plan), ""]
    out += ["## Model source", "", _text(c.path), "", *_fence(c.source or "(source not available)"), ""]
    if c.latex:
        out += ["## Mathematical form", "", *_fence(c.latex, "latex"), ""]
    out += ["## Environment", "", table(("item", "value"), [(k, fmt.cell(v)) for k, v in c.environment.items()]), ""]
    return "\n".join(out)


def _convergence_rows(c: Comparison) -> list[list[str]]:
    rows = []
    for b in c.backends:
        runs = c.runs(b)
        times = sorted(
            next(t for t, v in panels.objective_trace(r, c.sense)[0] if v == r.objective)
            for r in runs
            if panels.has_value(r)
        )
        med = times[len(times) // 2] if times else None
        left_out = sum(len(panels.objective_trace(r, c.sense)[1]) for r in runs)
        rows.append([b, str(sum(len(r.history) for r in runs)), str(left_out), fmt.seconds(med)])
    return rows


def _panel(c: Comparison) -> list[str]:
    out: list[str] = []
    if c.kind in ("maxcut", "ising"):
        label = "cut" if c.kind == "maxcut" else "energy"
        per_seed = [
            (b, ", ".join(fmt.num(r.objective) for r in c.runs(b) if panels.has_value(r)) or fmt.DASH)
            for b in c.backends
        ]
        out += [
            f"## {label.capitalize()} distribution over repeats",
            "",
            table(("backend", f"{label} per seed"), per_seed),
            "",
        ]
    if panels.has_front(c):
        fh = c.front_hypervolumes()
        out += [
            "## Pareto front",
            "",
            table(
                ("backend", "front points (all repeats)", "hypervolume (median)", "objectives"),
                [
                    (
                        b,
                        sum(len(panels.front_points(r)[1]) for r in c.runs(b)),
                        fmt.num(fh.median(b), 6) if fh is not None and fh.median(b) is not None else fmt.DASH,
                        ", ".join(
                            next((panels.front_points(r)[0] for r in c.runs(b) if panels.front_points(r)[0]), [])
                        ),
                    )
                    for b in c.backends
                ],
            ),
            "",
            *([panels.hypervolume_sentence(fh), ""] if fh is not None else []),
        ]
    if panels.has_regions(c):
        out += ["## Per-region errors", ""]
        for b in c.backends:
            r = panels.best_run(c, b)
            rows = panels.region_rows(r) if r else []
            if r is not None and rows:
                cols = list(rows[0])
                out += [
                    f"**{b}** (seed {r.seed})",
                    "",
                    table(cols, [[fmt.cell(row.get(k)) for k in cols] for row in rows]),
                    "",
                ]
    return out


def render_bench(b: BenchReport) -> str:
    """The suite summary as Markdown (profile values at τ = 1, 2, 10 instead of the plot)."""
    out = [
        f"# optlang bench — {_text(b.suite)}",
        "",
        f"{len(b.models)} models · backends {', '.join(b.backends)} · seeds {', '.join(map(str, b.seeds))} · "
        f"time limit {'none' if b.time_limit is None else f'{b.time_limit:g} s'} · device {b.device} · "
        f"{len(b.rows)} runs · {b.created}",
        "",
        "## Backends",
        "",
    ]
    out.append(table(fmt.BENCH_COLUMNS, fmt.bench_rows(b.backend_table())))
    out += [
        "",
        "ρ(τ): share of the models it ran on where the backend reached the best objective found within τ × the "
        "fastest backend's time (Dolan–Moré).",
        "",
        "## Models",
        "",
        table(["model", "kind", "best known", *b.backends], b.model_table()),
        "",
        "cells: best / median objective over seeds (median total time).",
        "",
    ]
    errs = [
        (b.model(mid).name, r.backend, r.seed, r.info.get("error", ""))
        for mid, r in b.rows
        if r.status.value == "error"
    ]
    if errs:
        out += ["## Errors", "", table(("model", "backend", "seed", "error"), errs), ""]
    out += ["## Environment", "", table(("item", "value"), [(k, fmt.cell(v)) for k, v in b.environment.items()]), ""]
    return "\n".join(out)
