"""The HTML renderer: one self-contained file (inline CSS and SVG, no scripts, no external assets)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from optlang.report import fmt, maths, panels, plots

if TYPE_CHECKING:
    from optlang.compare.comparison import Comparison

BenchReport = Any  # bench.BenchReport, told apart by report.is_bench: bench imports report/, never the reverse

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;margin:0;background:#fafafa}
main{max-width:1180px;margin:0 auto;padding:18px 28px 40px;background:#fff;box-shadow:0 0 12px #0001}
h1{font-size:22px;margin:6px 0 2px;overflow-wrap:anywhere}
h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
.meta{color:#555;margin:0 0 8px;overflow-wrap:anywhere}.meta b{color:#222}
.scroll{max-width:100%;overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d8d8d8;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f1f3f5;text-align:center}td.name,th.name{text-align:left;font-weight:600;white-space:nowrap}
td.text,table.kv td{text-align:left;overflow-wrap:anywhere}tr.flagged td{background:#fff1f0}
td.best{background:#e8f6ec;font-weight:600}
.flag{color:#b00020;font-weight:700}.ok{color:#1b7f3b;font-weight:600}
.alert{border:1px solid #e0a0a0;background:#fff4f4;padding:8px 12px;border-radius:4px;overflow-wrap:anywhere}
.alert li{margin:3px 0}.note{color:#666;font-size:12.5px}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:10px;font-size:12.5px;line-height:1.35;
white-space:pre-wrap;overflow-wrap:anywhere;max-width:100%}
svg.plot{display:block;margin:8px 0;width:100%;max-width:100%;height:auto;background:#fff}
div.fig>svg.plot{min-width:600px}
table.summary td,table.runs td{white-space:nowrap}table.runs td.text{white-space:normal;min-width:18em}
svg.maths{display:block;margin:6px 0;max-width:100%;height:auto}
.swatch{display:inline-block;width:1.1em;margin-right:.25em;text-align:center}.swatch::before{content:attr(data-g)}
details summary{cursor:pointer;color:#0550ae}
@media (max-width:640px){main{padding:10px 10px 30px}body{font-size:13px}h1{font-size:18px}}
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
    swatches: dict[str, tuple[str, str]] | None = None,
) -> str:
    """An HTML table; the first `name_cols` columns are left-aligned labels, cells are escaped.

    swatches: first-column value -> (colour, marker glyph), drawn before the name as in the plots.
    """
    out = ['<div class="scroll">', f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
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
            mark = ""
            if ci == 0 and swatches and str(v) in swatches:
                col, glyph = swatches[str(v)]
                mark = f'<span class="swatch" style="color:{col}" data-g="{glyph}" aria-hidden="true"></span>'
            out.append(f"<td{c}>{mark}{escape(str(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def figure(svg_text: str | None) -> str:
    """A plot in a box that scrolls sideways on a narrow screen instead of shrinking its text away."""
    return f'<div class="scroll fig">{svg_text}</div>' if svg_text else ""


def kv_table(items: dict[str, Any]) -> str:
    return table(("item", "value"), [(k, fmt.cell(v)) for k, v in items.items()], cls="kv")


# ----------------------------------------------------------------------------- compare
def render_comparison(c: Comparison, command: str = "compare") -> str:
    """The full comparison report as one HTML document (`command` "solve" for a single solve's report)."""
    st = plots.styles(c.backends)
    body: list[str] = [f"<h1>optlang {command} — {escape(c.model)}</h1>", _meta(c)]
    flags = c.contradictions()
    body.append('<section id="flags">')
    if flags:
        body.append(
            '<div class="alert"><b class="flag">Contradictions found</b> — a claimed optimum or bound is '
            "beaten by another run's recomputed objective, or a claimed status by the run's own gap:<ul>"
        )
        body += [f"<li>{escape(f.sentence(c.sense))}</li>" for f in flags]
        body.append("</ul></div>")
    elif c.results:
        body.append(
            '<p class="ok">No contradictions: every claimed optimum and bound is consistent with every '
            f"run's recomputed objective (tolerance {c.atol:g} + {c.rtol:g}·|value|), and no run claims "
            "<code>optimal</code> with a positive gap.</p>"
        )
    body.append("</section>")

    body.append('<section id="summary"><h2>Summary</h2>')
    sums = c.summaries()
    best = c.best_objective
    rows = [fmt.summary_row(s) for s in sums]
    cells = [
        ["", "", "", "best" if (s.best is not None and best is not None and s.best == best) else ""]
        + [""] * 6
        + ["flag" if s.flagged else ""]
        for s in sums
    ]
    body.append(
        table(
            fmt.SUMMARY_HEADER,
            rows,
            cls="summary",
            row_classes=["flagged" if s.flagged else "" for s in sums],
            cell_classes=cells,
            swatches={b: (st[b].color, st[b].glyph) for b in c.backends},
        )
    )
    body.append(
        f'<p class="note">best = best objective over repeats ({c.sense}), recomputed from the model; spread = '
        "max − min; bound = the tightest bound the backend claimed; gap = |bound − best| / max(1, |best|); time = "
        "median [min–max] total seconds; checks = certificate checks passed / run; a status never reads "
        "<code>optimal</code> next to a positive gap. Best known objective: "
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

    conv = panels.convergence(c)
    body.append('<section id="convergence"><h2>Convergence</h2>')
    body.append(figure(plots.convergence_svg(c, conv)))
    body.append(
        "<p class=\"note\">Solid: the incumbent objective of the user's model — a backend's reports are drawn "
        "only when its last report equals the objective recomputed from the model, as a running best, without "
        "reports beyond where the run ends (relaxation values); otherwise only the recomputed final value. "
        "Dashed, same colour: the bound, only when valid (its check passed and no run beats it). Lines are "
        "medians over repeats, bands min–max. Times are seconds since each solve started.</p></section>"
    )
    own = figure(plots.own_values_svg(c, conv))
    if own:
        body.append(
            "<section id=\"own\"><h2>Backends' own reported values — not the model's objective</h2>"
            '<p class="note">Relaxation values, surrogate or training losses a backend reported while it ran: '
            "left out of the convergence plot because they are not the model's objective. Each backend has its "
            f"own axis: these are different quantities.</p>{own}</section>"
        )

    panel = _kind_panel(c)
    if panel:
        body.append(f'<section id="panel"><h2>{escape(_panel_title(c))}</h2>{panel}</section>')

    vals = panels.validations(c)
    if vals:
        body.append(_validation_section(vals))
    opts = panels.auto_options_all(c)
    if opts:
        body.append(_auto_options_section(opts))

    body.append(
        '<section id="runs"><h2>All runs</h2><details><summary>every run '
        f"({len(c.results)})</summary>{_runs_table(c)}</details></section>"
    )
    if c.plan:
        body.append(f'<section id="plan"><h2>Plan</h2><pre>{escape(c.plan)}</pre></section>')
    if c.latex:
        body.append(_math_section(c.latex))
    body.append(
        f'<section id="model"><h2>Model source</h2><p class="note">{escape(c.path)}'
        f"{' with ' + escape(fmt.cell(c.params)) if c.params else ''}</p>"
        f"<pre>{escape(c.source or '(source not available)')}</pre></section>"
    )
    body.append(f'<section id="environment"><h2>Environment</h2>{kv_table(c.environment)}</section>')
    return _page(f"optlang {command} — {c.model}", body)


def _math_section(latex: str) -> str:
    """The rendered maths (mathtext SVG) with its LaTeX source one click away."""
    svg_text: str | None = None
    failed: list[str] = []
    if not latex.startswith("(LaTeX form unavailable"):
        try:
            svg_text, failed = maths.render_svg(latex)
        except Exception as e:  # the picture is a nicety: the source is still shown
            failed = [f"(rendering failed: {e})"]
    out = ['<section id="math"><h2>Mathematical form</h2>']
    if svg_text:
        out.append(svg_text)
    if failed:
        out.append(f'<p class="note">not drawn (shown in the source below): {escape("; ".join(failed))}</p>')
    out.append(f"<details><summary>LaTeX source</summary><pre>{escape(latex)}</pre></details></section>")
    return "".join(out)


def _meta(c: Comparison) -> str:
    tl = "none" if c.time_limit is None else f"{c.time_limit:g} s"
    if c.time_limit_source:
        tl += f" (from {c.time_limit_source})"
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
        s = figure(plots.front_svg(c))
        if s:
            parts.append(s)
        fh = c.front_hypervolumes()
        counts = [
            (
                b,
                str(sum(len(panels.front_points(r)[1]) for r in c.runs(b))),
                fmt.num(fh.median(b), 6) if fh is not None and fh.median(b) is not None else fmt.DASH,
                "; ".join(
                    ", ".join(f"{k} = {fmt.num(v, 6)}" for k, v in zip(*rp, strict=True))
                    for r in c.runs(b)
                    for rp in [panels.returned_point(r)]
                    if rp is not None
                )
                or fmt.DASH,
            )
            for b in c.backends
        ]
        parts.append(
            table(("backend", "front points (all repeats)", "hypervolume (median)", "returned point(s)"), counts)
        )
        if fh is not None:
            parts.append(f"<p>{escape(panels.hypervolume_sentence(fh))}</p>")
    if panels.has_regions(c):
        s = figure(plots.regions_svg(c))
        if s:
            parts.append(s)
        for b in c.backends:
            r = panels.best_run(c, b)
            rows = panels.region_rows(r) if r else []
            if r is not None and rows:
                cols = list(rows[0])
                parts.append(f"<p><b>{escape(b)}</b> (seed {r.seed}) — per-region statistics</p>")
                parts.append(table(cols, [[fmt.cell(row.get(k)) for k in cols] for row in rows], name_cols=1))
    if c.kind in ("maxcut", "ising") or not parts:
        if any(panels.has_value(r) for r in c.results) and (c.repeats > 1 or c.kind in ("maxcut", "ising")):
            parts.insert(0, figure(plots.distribution_svg(c)))
    return "\n".join(parts)


MAX_VALIDATION_PLOTS = 6  # runs past these get their candidates table only


def _validation_section(vals: Sequence[panels.Validation]) -> str:
    """Each `auto` run's candidates: the validation curve (mean and tail loss) and the scores table."""
    out = [
        '<section id="auto"><h2>Validation (auto)</h2><p class="note">Parameters written <code>auto</code> were '
        "chosen by validation on the training data alone: each candidate's held-out mean loss and tail loss; "
        "filled markers are admissible (mean loss within the threshold), hollow ones are not; the ring marks "
        "the choice.</p>"
    ]
    for k, v in enumerate(vals):
        out.append(
            f"<p><b>{escape(v.run)}</b> — chosen <b>{escape(panels.chosen_text(v))}</b> ({escape(v.how or '?')}); "
            f"{escape(v.method)}; {escape(v.criterion)}"
            + (f"; threshold {escape(fmt.num(v.threshold, 6))}" if v.threshold is not None else "")
            + "</p>"
        )
        if k < MAX_VALIDATION_PLOTS:
            out.append(figure(plots.validation_svg(v, key=f"auto{k}")))
        header, rows = panels.validation_rows(v)
        out.append(
            table(
                header,
                rows,
                cls="auto",
                row_classes=["" for _ in rows],
                cell_classes=[["best" if i == v.chosen else ""] * len(header) for i in range(len(rows))],
            )
        )
    if len(vals) > MAX_VALIDATION_PLOTS:
        out.append(f'<p class="note">plots of the first {MAX_VALIDATION_PLOTS} runs; the rest as tables.</p>')
    out.append("</section>")
    return "".join(out)


def _auto_options_section(vals: Sequence[panels.AutoOptions]) -> str:
    """Each run's `auto` optimizer options: the score of every candidate (the validation curve), the rule, a table."""
    out = [
        '<section id="auto-options"><h2>Validation (auto options)</h2><p class="note">Solver options written '
        "<code>auto</code>: each candidate's score, least wins; the ring marks the choice. With data rows the "
        "score is K-fold (or holdout) validation on the training data; without them it is the objective each "
        "candidate reached under an equal iteration budget, which is a tuning run, not statistical "
        "validation.</p>"
    ]
    for k, v in enumerate(vals):
        out.append(
            f"<p><b>{escape(v.run)}</b> — rule: <b>{escape(v.rule_text)}</b>; chosen "
            f"<b>{escape(panels.auto_options_chosen_text(v))}</b> ({escape(v.how or '?')}); {escape(v.method)}; "
            f"{escape(v.criterion)}" + (f"; candidates run {escape(v.execution)}" if v.execution else "") + "</p>"
        )
        if k < MAX_VALIDATION_PLOTS:
            out.append(figure(plots.auto_options_svg(v, key=f"opt{k}")))
        header, rows = panels.auto_option_rows(v)
        out.append(
            table(
                header,
                rows,
                cls="auto",
                cell_classes=[["best" if i == v.chosen else ""] * len(header) for i in range(len(rows))],
            )
        )
    if len(vals) > MAX_VALIDATION_PLOTS:
        out.append(f'<p class="note">plots of the first {MAX_VALIDATION_PLOTS} runs; the rest as tables.</p>')
    out.append("</section>")
    return "".join(out)


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
                r.status.value + (f" (claimed {r.info['status_claimed']})" if r.info.get("status_claimed") else ""),
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
def profile_svg(b: BenchReport, metric: str) -> str:
    """ρ_s(τ) step curves of one metric on a log2 τ axis."""
    prof = b.profile(metric)
    what = "time to reach the best objective" if metric == "time" else "objective gap (+1e-6)"
    return plots.profile_svg(prof.curves, prof.tau_max, what, order=b.backends)


def render_bench(b: BenchReport) -> str:
    """The suite summary: profiles, backend table, model × backend table, environment."""
    n_models = len(b.models)
    body = [
        f"<h1>optlang bench — {escape(b.suite)}</h1>",
        f'<p class="meta"><b>{n_models}</b> models · backends <b>{escape(", ".join(b.backends) or "none")}</b> · '
        f"seeds {escape(', '.join(map(str, b.seeds)))} · time limit "
        f"<b>{escape('each model’s own, else 10 s' if b.time_limit is None else f'{b.time_limit:g} s')}</b> · device "
        f"<b>{escape(b.device)}</b> · {len(b.rows)} runs · {escape(b.created)}</p>",
    ]
    body.append('<section id="profile"><h2>Performance profiles (Dolan–Moré)</h2>')
    body.append(figure(profile_svg(b, "time")))
    body.append(figure(profile_svg(b, "gap")))
    body.append(
        '<p class="note">Time profile: for each model, a backend\'s cost is the lower median over seeds of the '
        "time its run's incumbent objective (never a relaxation value) first came within tolerance "
        "(relative 1e-4; exact for ising/maxcut) of "
        "the best objective any backend found (∞ when it never did); ρ(τ) is the share of the models it ran on "
        "where its cost is within a factor τ of the fastest. Gap profile: the same with the relative objective "
        "gap + 1e-6.</p></section>"
    )
    body.append('<section id="summary"><h2>Backends</h2>')
    st = plots.styles(b.backends)
    swatches = {name: (st[name].color, st[name].glyph) for name in b.backends}
    body.append(table(fmt.BENCH_COLUMNS, fmt.bench_rows(b.backend_table()), cls="summary", swatches=swatches))
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
