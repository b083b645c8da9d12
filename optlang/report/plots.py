"""Report plots drawn with matplotlib and inlined as SVG (text as paths: no font or file is referenced).

One colour-blind-safe colour (Okabe–Ito) and marker per backend, fixed by the backend's place in the
report, so a backend looks the same in every panel. Lines are labelled directly at their right end
(labels spread apart so that 15 backends stay readable) instead of by a long legend. Nothing here
reads Results: panels.py turns them into series first.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.compare.stats import usable_objective
from optlang.report import panels

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

    from optlang.compare.comparison import Comparison

# Okabe & Ito (2008), without its yellow (too pale on white): distinguishable under the common
# colour-vision deficiencies. Past seven backends the colours repeat with another marker shape.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
GLYPHS = {"o": "●", "s": "■", "^": "▲", "D": "◆", "v": "▼", "P": "✚", "X": "✖"}  # the marker as text (tables)
WIDTH_IN = 9.0  # figure width in inches (SVG scales to the page; CSS caps it at 100%)
RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "path",
    "svg.hashsalt": "optlang",  # stable ids: the same report twice is the same file
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.7,
}


@dataclass(frozen=True)
class Style:
    """How one backend is drawn everywhere in a report."""

    color: str
    marker: str

    @property
    def glyph(self) -> str:
        return GLYPHS.get(self.marker, "●")


def styles(backends: Sequence[str]) -> dict[str, Style]:
    """One fixed (colour, marker) per backend, in report order; unique up to 49 backends."""
    return {
        b: Style(PALETTE[i % len(PALETTE)], MARKERS[(i // len(PALETTE)) % len(MARKERS)]) for i, b in enumerate(backends)
    }


def _rc(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Draw under the report's matplotlib settings, leaving the caller's rcParams untouched."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapped


def _figure(height: float, width: float = WIDTH_IN) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def to_svg(fig: Any, title: str) -> str:
    """The figure as an inline `<svg class="plot">` element with an accessible title."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = inline(text)
    text = re.sub(r"<svg ", '<svg class="plot" role="img" ', text, count=1)
    text = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)  # scale with the page
    from html import escape

    return text.replace(">", f"><title>{escape(title)}</title>", 1)


def _draw(height: float, width: float = WIDTH_IN) -> Any:
    return _figure(height, width)


def _axes(fig: Any, **kw: Any) -> Any:
    return fig.add_subplot(1, 1, 1, **kw)


def inline(svg_text: str) -> str:
    """A matplotlib SVG file as an element to inline: no XML prolog, DOCTYPE or RDF metadata block."""
    text = svg_text[svg_text.index("<svg") :]
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)


@_rc
def empty(title: str, message: str) -> str:
    fig = _draw(1.2)
    fig.text(0.01, 0.7, title, fontsize=11, weight="bold")
    fig.text(0.01, 0.25, message, fontsize=9.5, color="#555555")
    return to_svg(fig, title)


def spread(ys: Sequence[float], gap: float, lo: float = 0.0, hi: float = 1.0) -> list[float]:
    """Positions near `ys` (axes fractions, any order) at least `gap` apart, kept within [lo, hi] when they fit."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    pos = [min(max(ys[i], lo), hi) for i in order]
    for k in range(1, len(pos)):
        pos[k] = max(pos[k], pos[k - 1] + gap)
    overflow = pos[-1] - hi if pos else 0.0
    if overflow > 0:
        pos = [p - overflow for p in pos]
        for k in range(len(pos) - 2, -1, -1):
            pos[k] = min(pos[k], pos[k + 1] - gap)
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def direct_labels(
    ax: Any, ends: Sequence[tuple[str, float, float, str]], height_in: float, markers: dict[str, str] | None = None
) -> None:
    """Backend names at the right of the axes, spread apart, each joined to its line's end by a thin line
    and preceded by the backend's marker (colours repeat past seven backends; colour + marker do not)."""
    if not ends:
        return
    to_axes = ax.transData + ax.transAxes.inverted()
    fracs = [float(to_axes.transform((x, y))[1]) for _, x, y, _ in ends]
    axes_h_pt = height_in * 72 * 0.78
    gap = 11.5 / max(axes_h_pt, 1.0)
    pos = spread(fracs, gap, 0.0, 1.0)
    for (name, x, y, color), yp in zip(ends, pos, strict=True):
        if markers and name in markers:
            ax.plot([1.03], [yp], transform=ax.transAxes, marker=markers[name], color=color, ms=5, clip_on=False)
        ax.annotate(
            name,
            xy=(x, y),
            xycoords="data",
            xytext=(1.045, yp),
            textcoords="axes fraction",
            va="center",
            ha="left",
            fontsize=8.8,
            color=color,
            weight="bold",
            annotation_clip=False,
            arrowprops={"arrowstyle": "-", "color": color, "lw": 0.6, "alpha": 0.6, "shrinkA": 0, "shrinkB": 2},
        )


def _height(n_labels: int, base: float = 4.2) -> float:
    return max(base, 0.2 * n_labels + 1.4)


# ----------------------------------------------------------------------------- convergence
@_rc
def convergence_svg(c: Comparison, conv: panels.Convergence | None = None) -> str:
    """Incumbent objective (solid) and valid bound (dashed, same colour) per backend against time."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    conv = conv or panels.convergence(c)
    title = f"Convergence — {c.sense} the model's objective (median over repeats, band = min–max)"
    if not conv.lines:
        return empty(title, "no run reported a scalar objective or bound over time")
    st = styles(c.backends)
    labelled = sorted({ln.backend for ln in conv.lines}, key=c.backends.index)
    height = _height(len(labelled))
    fig = _draw(height)
    ax = _axes(fig)
    ys: list[float] = []
    ends: list[tuple[str, float, float, str]] = []
    for ln in conv.lines:
        s = st[ln.backend]
        solid = ln.quantity == "objective"
        every = max(1, len(ln.xs) // 6)
        ax.step(
            ln.xs,
            ln.ys,
            where="post",
            color=s.color,
            lw=1.8 if solid else 1.3,
            ls="-" if solid else (0, (5, 3)),
            marker=s.marker,
            markersize=4.5 if solid else 3.5,
            markevery=(every - 1, every) if len(ln.xs) > 1 else None,
            mfc=s.color if solid else "white",
            gid=f"{ln.quantity}:{ln.backend}",
        )
        if ln.lo is not None and ln.hi is not None:
            ax.fill_between(ln.xs, ln.lo, ln.hi, step="post", color=s.color, alpha=0.13, lw=0)
        ys += list(ln.ys) + list(ln.lo or []) + list(ln.hi or [])
        if solid:
            ends.append((ln.backend, ln.xs[-1], ln.ys[-1], s.color))
    if conv.logx:
        ax.set_xscale("log")
    else:
        ax.set_xlim(left=0.0)  # seconds since the solve started: the axis starts at the start
    lim = panels.robust_limits(ys)
    if lim:
        ax.set_ylim(*lim)
    ax.set_xlabel("time since the solve started (s)")
    ax.set_ylabel("objective (recomputed) / bound")
    ax.set_title(title, loc="left", pad=24)
    ax.legend(
        handles=[
            Line2D([], [], color="#333333", lw=1.8, label="incumbent objective"),
            Line2D([], [], color="#333333", lw=1.3, ls=(0, (5, 3)), label="valid bound"),
            Patch(color="#333333", alpha=0.13, label="min–max over repeats"),
        ],
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncol=3,
        frameon=False,
        fontsize=8.5,
    )
    direct_labels(ax, ends, height, {b: st[b].marker for b in st})
    return to_svg(fig, title)


@_rc
def own_values_svg(c: Comparison, conv: panels.Convergence | None = None) -> str | None:
    """Each backend's own reports left out of the convergence plot (relaxation values, surrogate losses).

    One small plot per backend with its own axis: these are different quantities, never on one axis.
    """
    conv = conv or panels.convergence(c)
    names = [b for b in c.backends if conv.own.get(b)]
    if not names:
        return None
    st = styles(c.backends)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    from matplotlib.ticker import MaxNLocator

    fig = _figure(2.3 * rows + 0.4)
    axes = fig.subplots(rows, cols, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(names):
            ax.set_visible(False)
            continue
        b = names[k]
        for pts in conv.own[b]:
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                color=st[b].color,
                marker=st[b].marker,
                ms=3.5,
                lw=1.1,
                gid=f"own:{b}",
            )
        ax.set_title(f"{b}: its own reported values", loc="left", fontsize=9, color=st[b].color)
        ax.tick_params(labelsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.ticklabel_format(axis="y", useOffset=False)
        if k % cols == 0:
            ax.set_ylabel("backend's value", fontsize=8.5)
        if k // cols == rows - 1:
            ax.set_xlabel("time (s)", fontsize=8.5)
    fig.tight_layout()
    return to_svg(fig, "backends' own reported values (not the model's objective)")


# ----------------------------------------------------------------------------- kind panels
def _valid_bound(c: Comparison) -> float | None:
    best = c.best_objective
    bounds = [r.bound for r in c.results if r.bound is not None and panels.bound_valid(r, best, c.sense)]
    from optlang.compare.stats import tightest_bound

    return tightest_bound(bounds, c.sense)


@_rc
def distribution_svg(c: Comparison) -> str:
    """Final objective (cut or energy) of every repeat, one column per backend, median bar, tightest valid bound."""
    label = "cut" if c.kind == "maxcut" else ("energy" if c.kind == "ising" else "objective")
    st = styles(c.backends)
    bound = _valid_bound(c)
    title = f"{label} of every repeat (bar = median" + (
        "; dashed = tightest valid bound)" if bound is not None else ")"
    )
    fig = _draw(3.8)
    ax = _axes(fig)
    for i, b in enumerate(c.backends):
        vals = [float(v) for r in c.runs(b) if (v := usable_objective(r)) is not None]
        if not vals:
            continue
        n = len(vals)
        xs = [i + (k - (n - 1) / 2) * min(0.5 / max(n, 1), 0.12) for k in range(n)]
        ax.scatter(xs, vals, color=st[b].color, marker=st[b].marker, s=30, zorder=3, gid=f"value:{b}")
        med = sorted(vals)[n // 2] if n % 2 else sum(sorted(vals)[n // 2 - 1 : n // 2 + 1]) / 2
        ax.plot([i - 0.3, i + 0.3], [med, med], color=st[b].color, lw=2.2)
    if bound is not None:
        ax.axhline(bound, color="#555555", ls=(0, (5, 3)), lw=1.1, label="tightest valid bound")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.02), frameon=False, fontsize=8.5)
    ax.set_xticks(range(len(c.backends)))
    ax.set_xticklabels(
        c.backends, rotation=30 if len(c.backends) > 6 else 0, ha="right" if len(c.backends) > 6 else "center"
    )
    for tick, b in zip(ax.get_xticklabels(), c.backends, strict=True):
        tick.set_color(st[b].color)
    ax.set_xlim(-0.6, len(c.backends) - 0.4)
    ax.set_ylabel(label)
    ax.set_title(title, loc="left", pad=22 if bound is not None else 6)
    return to_svg(fig, title)


@_rc
def front_svg(c: Comparison) -> str | None:
    """Objective space: every run's front (small markers) and the point each run returned (large, ringed)."""
    st = styles(c.backends)
    names: list[str] = []
    fig = _draw(4.6)
    ax = _axes(fig)
    drew = False
    preferred = "prefer" in (c.source or "") or any("preference" in r.info for r in c.results)
    for b in c.backends:
        xs: list[float] = []
        ys: list[float] = []
        rx: list[float] = []
        ry: list[float] = []
        for r in c.runs(b):
            n, pts = panels.front_points(r)
            if len(n) >= 2:
                names = names or n
                xs += [p[0] for p in pts]
                ys += [p[1] for p in pts]
            rp = panels.returned_point(r)
            if rp is not None:
                names = names or rp[0]
                rx.append(rp[1][0])
                ry.append(rp[1][1])
        if xs:
            ax.scatter(xs, ys, color=st[b].color, marker=st[b].marker, s=14, alpha=0.75, gid=f"front:{b}", label=b)
            drew = True
        if rx:
            ax.scatter(
                rx,
                ry,
                color=st[b].color,
                marker=st[b].marker,
                s=110,
                edgecolors="black",
                linewidths=1.3,
                zorder=4,
                gid=f"returned:{b}",
                label=None if xs else b,
            )
            drew = True
    if not drew or len(names) < 2:
        return None
    extra = f" (first two of {len(names)} objectives)" if len(names) > 2 else ""
    point = "preferred point" if preferred else "returned point"
    fronts = any(len(panels.front_points(r)[0]) >= 2 for r in c.results)
    title = f"Objective space{extra}: " + ("fronts (small) and " if fronts else "") + f"each run's {point}"
    title += " (large, black ring)" if fronts else ""
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(title, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8.5, title="backend")
    return to_svg(fig, title)


@_rc
def regions_svg(c: Comparison) -> str | None:
    """Grouped bars of the per-region metric of each backend's best run."""
    data = panels.regions(c)
    if data is None:
        return None
    metric, categories, series = data
    st = styles(c.backends)
    fig = _draw(3.8)
    ax = _axes(fig)
    k = len(series)
    w = 0.8 / max(k, 1)
    for j, (b, vals) in enumerate(series):
        xs = [i - 0.4 + w * (j + 0.5) for i in range(len(vals))]
        ax.bar(xs, vals, width=w * 0.95, color=st[b].color, label=b, gid=f"region:{b}")
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories)
    ax.set_xlabel("region")
    ax.set_ylabel(metric)
    title = f"per-region {metric} (best run of each backend)"
    ax.set_title(title, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8.5)
    return to_svg(fig, title)


@_rc
def profile_svg(
    curves: dict[str, list[tuple[float, float]]], tau_max: float, what: str, order: Sequence[str] | None = None
) -> str:
    """Performance-profile step curves ρ(τ) on a log2 τ axis, labelled at their right end.

    order: the report's backend order, which fixes each backend's colour and marker (as in its tables).
    """
    title = f"Performance profile — {what}"
    names = list(curves)
    if not names:
        return empty(title, "no backend reached any model's best objective")
    st = styles(list(order or []) + [b for b in names if b not in (order or [])])
    height = _height(len(names), 3.8)
    fig = _draw(height)
    ax = _axes(fig)
    ends = []
    for b in names:
        pts = curves[b]
        if not pts:
            continue
        xs = [p[0] for p in pts] + [tau_max]
        ys = [p[1] for p in pts] + [pts[-1][1]]
        ax.step(
            xs, ys, where="post", color=st[b].color, lw=1.8, marker=st[b].marker, ms=4, markevery=[0], gid=f"rho:{b}"
        )
        ends.append((b, tau_max, ys[-1], st[b].color))
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.0, max(tau_max, 2.0))
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("τ (ratio to the best backend, log2)")
    ax.set_ylabel("ρ(τ): share of models within τ")
    ax.set_title(title, loc="left")
    direct_labels(ax, ends, height, {b: st[b].marker for b in st})
    return to_svg(fig, title)


@_rc
def sweep_svg(xs: Sequence[float], ys: Sequence[float], title: str, xlabel: str, ylabel: str, logx: bool) -> str:
    """One column of a parameter sweep against the swept parameter (points joined, NaN gaps left open)."""
    fig = _draw(3.0)
    ax = _axes(fig)
    ax.plot(xs, ys, color=PALETTE[0], marker=MARKERS[0], ms=3.5, lw=1.6)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    return to_svg(fig, title)


# ----------------------------------------------------------------------------- validation (auto)
@_rc
def validation_svg(v: panels.Validation, key: str = "auto") -> str:
    """A run's `auto` candidates: validation mean loss (left, with the admissibility threshold) and tail
    loss (right) against the candidate; filled = admissible, hollow = not, black ring = the choice.

    key prefixes the series' SVG ids (`{key}:val_mse:admissible`, ...) so that several runs' plots can
    share one page."""
    from matplotlib.lines import Line2D

    fig = _figure(3.9)
    axes = fig.subplots(1, 2, sharex=True)
    n = len(v.xs)
    order = sorted(range(n), key=lambda i: v.xs[i])
    series = (("val_mse", v.mse, "validation mean loss"), ("val_tail", v.tail, "validation tail loss"))
    for j, (ax, (name, ys, label)) in enumerate(zip(axes, series, strict=True)):
        color, marker = PALETTE[j], MARKERS[j]
        if v.ticks is None and n > 1:  # one parameter varies: join the candidates in its order
            ax.plot([v.xs[i] for i in order], [ys[i] for i in order], color=color, lw=1.2, alpha=0.55)
        for adm, tag in ((True, "admissible"), (False, "not-admissible")):
            idx = [i for i in range(n) if v.admissible[i] == adm]
            if idx:
                ax.plot(
                    [v.xs[i] for i in idx],
                    [ys[i] for i in idx],
                    ls="none",
                    marker=marker,
                    ms=6.5,
                    color=color,
                    mfc=color if adm else "white",
                    mew=1.4,
                    gid=f"{key}:{name}:{tag}",
                )
        if v.chosen is not None:
            x = v.xs[v.chosen]
            ax.axvline(x, color="#999999", lw=0.8, ls=":")
            ax.plot(
                [x],
                [ys[v.chosen]],
                ls="none",
                marker="o",
                ms=15,
                mfc="none",
                mec="black",
                mew=1.4,
                gid=f"{key}:{name}:chosen",
            )
        if name == "val_mse" and v.threshold is not None and math.isfinite(v.threshold):
            ax.axhline(v.threshold, color="#555555", ls=(0, (5, 3)), lw=1.1, gid=f"{key}:threshold")
        if v.scale == "log":
            ax.set_xscale("log")
        elif v.scale == "symlog":
            ax.set_xscale("symlog", linthresh=min(x for x in v.xs if x > 0))
        if v.ticks is not None:
            ax.set_xticks(v.xs)
            ax.set_xticklabels(v.ticks, fontsize=7.5, rotation=0 if n <= 4 else 35, ha="center" if n <= 4 else "right")
        ax.set_xlabel(v.xlabel)
        ax.set_ylabel(label)
        ax.set_title(label, loc="left", fontsize=9.5, color=color)
    handles = [
        Line2D([], [], ls="none", marker="o", color="#333333", label="admissible"),
        Line2D([], [], ls="none", marker="o", color="#333333", mfc="white", label="not admissible"),
        Line2D([], [], ls="none", marker="o", ms=12, mfc="none", mec="black", label="chosen"),
    ]
    if v.threshold is not None:
        handles.append(Line2D([], [], color="#555555", ls=(0, (5, 3)), label="admissibility threshold (mean loss)"))
    fig.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(0.0, 1.0), ncol=len(handles), frameon=False, fontsize=8.5
    )
    title = f"Validation (auto) — {v.run}: chosen {panels.chosen_text(v)}"
    fig.suptitle(title, x=0.0, y=1.08, ha="left", fontsize=10.5)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return to_svg(fig, title)


# ----------------------------------------------------------------------------- auto options (lr = auto)
@_rc
def auto_options_svg(v: panels.AutoOptions, key: str = "opt") -> str:
    """A run's `auto` optimizer options: each candidate's score against the candidate (log x for a
    step-size grid), the choice ringed, the rule named in the title (validation or equal budget).

    Series ids: `{key}:score` (one marker per candidate with a finite score) and `{key}:chosen`."""
    fig = _draw(3.2)
    ax = _axes(fig)
    idx = sorted((i for i in range(len(v.xs)) if v.scores[i] is not None), key=lambda i: v.xs[i])
    xs = [v.xs[i] for i in idx]
    ys = [float(v.scores[i]) for i in idx]  # type: ignore[arg-type]
    if v.ticks is None and len(idx) > 1:
        ax.plot(xs, ys, color=PALETTE[0], lw=1.2, alpha=0.55)
    if idx:
        ax.plot(xs, ys, ls="none", marker=MARKERS[0], ms=6.5, color=PALETTE[0], gid=f"{key}:score")
    c = v.chosen
    if c is not None:
        ax.axvline(v.xs[c], color="#999999", lw=0.8, ls=":")
        score = v.scores[c]
        if score is not None:
            ax.plot(
                [v.xs[c]], [score], ls="none", marker="o", ms=15, mfc="none", mec="black", mew=1.4, gid=f"{key}:chosen"
            )
    if v.logx:
        ax.set_xscale("log")
    if v.ticks is not None:
        n = len(v.xs)
        ax.set_xticks(v.xs)
        ax.set_xticklabels(v.ticks, fontsize=7.5, rotation=0 if n <= 4 else 35, ha="center" if n <= 4 else "right")
    ax.set_xlabel(v.xlabel)
    ax.set_ylabel("validation score" if v.rule == "validation" else "objective reached")
    title = f"auto options — {v.run}: {v.rule_text}; chosen {panels.auto_options_chosen_text(v)} (ringed)"
    ax.set_title(title, loc="left")
    return to_svg(fig, title)
