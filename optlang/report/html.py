"""The HTML renderer: one self-contained file (inline CSS and SVG, no scripts, no external assets)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from optlang.report import fmt, panels, svg

if TYPE_CHECKING:
    from optlang.bench import BenchReport
    from optlang.compare.comparison import Comparison

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;margin:0;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:18px 28px 40px;background:#fff;box-shadow:0 0 12px #0001}
h1{font-size:22px;margin:6px 0 2px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
.meta{color:#555;margin:0 0 8px}.meta b{color:#222}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d8d8d8;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f1f3f5;text-align:center}td.name,th.name{text-align:left;font-weight:600}
td.text,table.kv td{text-align:left}tr.flagged td{background:#fff1f0}td.best{background:#e8f6ec;font-weight:600}
.flag{color:#b00020;font-weight:700}.ok{color:#1b7f3b;font-weight:600}
.alert{border:1px solid #e0a0a0;background:#fff4f4;padding:8px 12px;border-radius:4px}
.alert li{margin:3px 0}.note{color:#666;font-size:12.5px}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:10px;overflow:auto;font-size:12.5px;line-height:1.35}
svg.plot{display:block;margin:8px 0;max-width:100%;height:auto;background:#fff}
details summary{cursor:pointer;color:#0550ae}
"""


def _page(title: str, body: list[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="optlang">',
            f"<title>{escape(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body><main>",
            *body,
            "</main></body>",
            "</html>",
            "",
        ]
    )


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    cls: str = "",
    name_cols: int = 1,
    row_classes: Sequence[str] | None = None,
    cell_classes: Sequence[Sequence[str]] | None = None,
) -> str:
    """An HTML table; the first `name_cols` columns are left-aligned labels, cells are escaped."""
    out = [f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
    out += [
        f'<th class="name">{escape(h)}</th>' if i < name_cols else f"<th>{escape(h)}</th>" for i, h in enumerate(header)
    ]
    out.append("</tr></thead><tbody>")
    for ri, row in enumerate(rows):
        rc = row_classes[ri] if row_classes and row_classes[ri] else ""
        out.append(f'<tr class="{rc}">' if rc else "<tr>")
        for ci, v in enumerate(row):
            classes = ["name"] if ci < name_cols else []
            if cell_classes and cell_classes[ri][ci]:
                classes.append(cell_classes[ri][ci])
            c = f' class="{" ".join(classes)}"' if classes else ""
            out.append(f"<td{c}>{escape(str(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def kv_table(items: dict[str, Any]) -> str:
    return table(("item", "value"), [(k, fmt.cell(v)) for k, v in items.items()], cls="kv")


# ----------------------------------------------------------------------------- compare
def render_comparison(c: Comparison) -> str:
    """The full comparison report as one HTML document."""
    body: list[str] = [f"<h1>optlang compare — {escape(c.model)}</h1>", _meta(c)]
    flags = c.contradictions()
    body.append('<section id="flags">')
    if flags:
        body.append(
            '<div class="alert"><b class="flag">Contradictions found</b> — a claimed optimum or bound is '
            "beaten by another run's recomputed objective:<ul>"
        )
        body += [f"<li>{escape(f.sentence(c.sense))}</li>" for f in flags]
        body.append("</ul></div>")
    elif c.results:
        body.append(
            '<p class="ok">No contradictions: every claimed optimum and bound is consistent with every '
            f"run's recomputed objective (tolerance {c.atol:g} + {c.rtol:g}·|value|).</p>"
        )
    body.append("</section>")

    body.append('<section id="summary"><h2>Summary</h2>')
    sums = c.summaries()
    best = c.best_objective
    rows = [fmt.summary_row(s) for s in sums]
    cells = [
        [
            "",
            "",
            "",
            "best" if (s.best is not None and best is not None and s.best == best) else "",
            "",
            "",
            "",
            "",
            "",
            "",
            "flag" if s.flagged else "",
        ]
        for s in sums
    ]
    body.append(
        table(
            fmt.SUMMARY_HEADER,
            rows,
            cls="summary",
            row_classes=["flagged" if s.flagged else "" for s in sums],
            cell_classes=cells,
        )
    )
    body.append(
        f'<p class="note">best = best objective over repeats ({c.sense}); spread = max − min; bound = the '
        "tightest bound the backend claimed; gap = |bound − best| / max(1, |best|); time = median [min–max] "
        "total seconds; checks = certificate checks passed / run. Best known objective: "
        f"<b>{escape(fmt.num(best))}</b>; tightest claimed bound: <b>{escape(fmt.num(c.best_bound))}</b>.</p>"
    )
    errors = [(s.backend, e) for s in sums for e in s.errors]
    if errors:
        body.append(
            "<p><b>Errors</b></p><ul>"
            + "".join(f"<li><b>{escape(b)}</b>: {escape(e)}</li>" for b, e in errors)
            + "</ul>"
        )
    if c.refused:
        body.append(
            "<p><b>Not run</b></p><ul>"
            + "".join(f"<li><b>{escape(b)}</b>: {escape(r)}</li>" for b, r in c.refused.items())
            + "</ul>"
        )
    body.append("</section>")

    body.append('<section id="convergence"><h2>Convergence</h2>')
    body.append(panels.convergence_svg(c))
    body.append(
        '<p class="note">Solid: objective reported during the run (median over repeats, band = min–max); '
        "dashed: bound. Times are seconds since each solve started.</p></section>"
    )

    panel = _kind_panel(c)
    if panel:
        body.append(f'<section id="panel"><h2>{escape(_panel_title(c))}</h2>{panel}</section>')

    body.append(
        '<section id="runs"><h2>All runs</h2><details><summary>every run '
        f"({len(c.results)})</summary>{_runs_table(c)}</details></section>"
    )
    if c.plan:
        body.append(f'<section id="plan"><h2>Plan</h2><pre>{escape(c.plan)}</pre></section>')
    body.append(
        f'<section id="model"><h2>Model source</h2><p class="note">{escape(c.path)}'
        f"{' with ' + escape(fmt.cell(c.params)) if c.params else ''}</p>"
        f"<pre>{escape(c.source or '(source not available)')}</pre></section>"
    )
    if c.latex:
        body.append(
            '<section id="math"><h2>Mathematical form</h2><p class="note">LaTeX source</p>'
            f"<pre>{escape(c.latex)}</pre></section>"
        )
    body.append(f'<section id="environment"><h2>Environment</h2>{kv_table(c.environment)}</section>')
    return _page(f"optlang compare — {c.model}", body)


def _meta(c: Comparison) -> str:
    tl = "none" if c.time_limit is None else f"{c.time_limit:g} s"
    seeds = ", ".join(str(s) for s in c.seeds)
    return (
        f'<p class="meta">kind <b>{escape(c.kind)}</b> · {escape(c.sense)} · backends '
        f"<b>{escape(', '.join(c.backends) or 'none')}</b> · repeats <b>{c.repeats}</b> (seeds {escape(seeds)}) · "
        f"time limit <b>{escape(tl)}</b> · device <b>{escape(c.device)}</b> · {escape(c.created)}</p>"
    )


def _panel_title(c: Comparison) -> str:
    if c.kind in ("maxcut", "ising"):
        return "Cut distribution over repeats" if c.kind == "maxcut" else "Energy distribution over repeats"
    if panels.has_front(c):
        return "Pareto front"
    if panels.has_regions(c):
        return "Per-region errors"
    return "Objective over repeats"


def _kind_panel(c: Comparison) -> str:
    parts: list[str] = []
    if panels.has_front(c):
        s = panels.front_svg(c)
        if s:
            parts.append(s)
        counts = [(b, str(sum(len(panels.front_points(r)[1]) for r in c.runs(b)))) for b in c.backends]
        parts.append(table(("backend", "front points (all repeats)"), counts))
    if panels.has_regions(c):
        s = panels.regions_svg(c)
        if s:
            parts.append(s)
        for b in c.backends:
            r = panels.best_run(c, b)
            rows = panels.region_rows(r) if r else []
            if rows:
                cols = list(rows[0])
                parts.append(f"<p><b>{escape(b)}</b> (seed {r.seed}) — per-region statistics</p>")
                parts.append(table(cols, [[fmt.cell(row.get(k)) for k in cols] for row in rows], name_cols=1))
    if c.kind in ("maxcut", "ising") or not parts:
        if any(panels.has_value(r) for r in c.results) and (c.repeats > 1 or c.kind in ("maxcut", "ising")):
            parts.insert(0, panels.distribution_svg(c))
    return "\n".join(parts)


def _runs_table(c: Comparison) -> str:
    header = (
        "backend",
        "seed",
        "status",
        "objective",
        "bound",
        "gap",
        "backend objective",
        "time",
        "iterations",
        "device",
        "checks",
    )
    rows = []
    for r in c.results:
        checks = (
            "; ".join(
                f"{'✓' if ch.passed else '✗'} {ch.name}" + (f" ({ch.detail})" if ch.detail else "") for ch in r.checks
            )
            or fmt.DASH
        )
        if r.info.get("error"):
            checks = f"error: {r.info['error']}"
        rows.append(
            [
                r.backend,
                str(r.seed),
                r.status.value,
                fmt.num(r.objective),
                fmt.num(r.bound),
                fmt.pct(r.gap),
                fmt.num(r.backend_objective),
                fmt.seconds(r.timing.get("total")),
                str(r.iterations),
                r.device,
                checks,
            ]
        )
    cells = [["", "", "", "", "", "", "", "", "", "", "text"] for _ in rows]
    return table(header, rows, cls="runs", cell_classes=cells)


# ----------------------------------------------------------------------------- bench
def profile_svg(b: BenchReport, metric: str, width: int = 760) -> str:
    """ρ_s(τ) step curves of one metric on a log2 τ axis."""
    prof = b.profile(metric)
    series = [
        svg.Series(name, [p[0] for p in pts], [p[1] for p in pts], svg.color(i), step=True)
        for i, (name, pts) in enumerate(prof.curves.items())
    ]
    what = "time to reach the best objective" if metric == "time" else "objective gap (+1e-6)"
    return svg.line_chart(
        series,
        title=f"Performance profile — {what}",
        xlabel="τ (ratio to the best backend, log2)",
        ylabel="ρ(τ): share of models within τ",
        logx=True,
        xbase=2.0,
        xlim=(1.0, prof.tau_max),
        ylim=(-0.02, 1.05),
        width=width,
    )


def render_bench(b: BenchReport) -> str:
    """The suite summary: profiles, backend table, model × backend table, environment."""
    n_models = len(b.models)
    body = [
        f"<h1>optlang bench — {escape(b.suite)}</h1>",
        f'<p class="meta"><b>{n_models}</b> models · backends <b>{escape(", ".join(b.backends) or "none")}</b> · '
        f"seeds {escape(', '.join(map(str, b.seeds)))} · time limit "
        f"<b>{escape('none' if b.time_limit is None else f'{b.time_limit:g} s')}</b> · device "
        f"<b>{escape(b.device)}</b> · {len(b.rows)} runs · {escape(b.created)}</p>",
    ]
    body.append('<section id="profile"><h2>Performance profiles (Dolan–Moré)</h2>')
    body.append(profile_svg(b, "time"))
    body.append(profile_svg(b, "gap"))
    body.append(
        '<p class="note">Time profile: for each model, a backend\'s cost is the lower median over seeds of the '
        "time its run first reported an objective within tolerance (relative 1e-4; exact for ising/maxcut) of "
        "the best objective any backend found (∞ when it never did); ρ(τ) is the share of the models it ran on "
        "where its cost is within a factor τ of the fastest. Gap profile: the same with the relative objective "
        "gap + 1e-6.</p></section>"
    )
    body.append('<section id="summary"><h2>Backends</h2>')
    body.append(table(fmt.BENCH_COLUMNS, fmt.bench_rows(b.backend_table()), cls="summary"))
    body.append("</section>")
    body.append('<section id="models"><h2>Models</h2>')
    body.append(table(["model", "kind", "best known", *b.backends], b.model_table(), cls="models", name_cols=2))
    body.append('<p class="note">cells: best / median objective over seeds (median total time).</p></section>')
    errs = [
        (m.name, r.backend, r.seed, r.info.get("error", ""))
        for mid, r in b.rows
        for m in [b.model(mid)]
        if r.status.value == "error"
    ]
    if errs:
        body.append(
            '<section id="errors"><h2>Errors</h2>'
            + table(
                ("model", "backend", "seed", "error"),
                [(m, bk, str(s), str(e)) for m, bk, s, e in errs],
                cell_classes=[["", "", "", "text"]] * len(errs),
            )
            + "</section>"
        )
    body.append(f'<section id="environment"><h2>Environment</h2>{kv_table(b.environment)}</section>')
    return _page(f"optlang bench — {b.suite}", body)
