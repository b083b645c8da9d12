"""A small SVG plotting module: line charts with bands, step curves, scatter, strip and bar charts.

Pure string generation (no matplotlib): every chart is one self-contained `<svg>` element that
can be inlined in an HTML report. Axes support linear and logarithmic scales with readable ticks.
Nothing here knows about optlang results; `report.panels` turns results into series.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

# Okabe–Ito: distinguishable under the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


def color(i: int) -> str:
    """The i-th palette colour (cycling)."""
    return PALETTE[i % len(PALETTE)]


@dataclass
class Series:
    """One named curve: points, an optional min–max band, a colour and a dash style."""

    name: str
    xs: Sequence[float]
    ys: Sequence[float]
    color: str = PALETTE[0]
    dash: str = ""  # SVG stroke-dasharray, "" = solid
    lo: Sequence[float] | None = None  # band lower edge (same xs)
    hi: Sequence[float] | None = None  # band upper edge
    step: bool = False  # draw as a post-step function (value holds until the next x)
    markers: bool = False


@dataclass
class Scale:
    """Maps data values to pixels along one axis, linear or log10/log2."""

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool = False
    base: float = 10.0

    def _t(self, v: float) -> float:
        return math.log(v, self.base) if self.log else v

    def __call__(self, v: float) -> float:
        a, b = self._t(self.lo), self._t(self.hi)
        if b == a:
            return (self.p0 + self.p1) / 2
        return self.p0 + (self._t(v) - a) / (b - a) * (self.p1 - self.p0)

    def ticks(self, n: int = 5) -> list[float]:
        if self.log:
            return log_ticks(self.lo, self.hi, self.base)
        return nice_ticks(self.lo, self.hi, n)


@dataclass
class Axes:
    """Plot geometry and the two scales; `frame()` draws axes, ticks, grid, labels and the legend."""

    width: int = 640
    height: int = 340
    left: int = 72
    right: int = 16
    top: int = 34
    bottom: int = 48
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    x: Scale = field(default_factory=lambda: Scale(0, 1, 0, 1))
    y: Scale = field(default_factory=lambda: Scale(0, 1, 0, 1))

    def set_limits(
        self,
        xlo: float,
        xhi: float,
        ylo: float,
        yhi: float,
        logx: bool = False,
        logy: bool = False,
        xbase: float = 10.0,
    ) -> None:
        self.x = Scale(xlo, xhi, self.left, self.width - self.right, logx, xbase)
        self.y = Scale(ylo, yhi, self.height - self.bottom, self.top, logy)

    def frame(self) -> list[str]:
        out: list[str] = []
        x0, x1 = self.left, self.width - self.right
        y0, y1 = self.height - self.bottom, self.top
        xt = self.x.ticks()
        for t, label in zip(xt, fmt_ticks(xt), strict=True):
            px = self.x(t)
            if x0 - 0.5 <= px <= x1 + 0.5:
                out.append(f'<line class="grid" x1="{px:.1f}" y1="{y1}" x2="{px:.1f}" y2="{y0}"/>')
                out.append(f'<text class="tick" x="{px:.1f}" y="{y0 + 16}" text-anchor="middle">{label}</text>')
        yt = self.y.ticks()
        for t, label in zip(yt, fmt_ticks(yt), strict=True):
            py = self.y(t)
            if y1 - 0.5 <= py <= y0 + 0.5:
                out.append(f'<line class="grid" x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}"/>')
                out.append(f'<text class="tick" x="{x0 - 6}" y="{py + 4:.1f}" text-anchor="end">{label}</text>')
        out.append(f'<rect class="frame" x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}"/>')
        if self.title:
            out.append(
                f'<text class="title" x="{(x0 + x1) / 2:.1f}" y="20" text-anchor="middle">{escape(self.title)}</text>'
            )
        if self.xlabel:
            out.append(
                f'<text class="label" x="{(x0 + x1) / 2:.1f}" y="{self.height - 8}" '
                f'text-anchor="middle">{escape(self.xlabel)}</text>'
            )
        if self.ylabel:
            cy = (y0 + y1) / 2
            out.append(
                f'<text class="label" x="14" y="{cy:.1f}" text-anchor="middle" '
                f'transform="rotate(-90 14 {cy:.1f})">{escape(self.ylabel)}</text>'
            )
        return out

    def wrap(self, body: list[str], legend: list[tuple[str, str, str]] | None = None) -> str:
        """The complete `<svg>` element: frame, clipped body, legend entries (name, colour, dash)."""
        key = "\n".join([self.title, self.xlabel, self.ylabel, *body]).encode()
        cid = "c" + hashlib.sha1(key).hexdigest()[:10]  # deterministic, unique per chart content
        x0, y1 = self.left, self.top
        w, h = self.width - self.right - self.left, self.height - self.bottom - self.top
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img" aria-label="{escape(self.title or "plot")}">',
            f"<title>{escape(self.title or 'plot')}</title>",
            STYLE,
            f'<clipPath id="{cid}"><rect x="{x0}" y="{y1}" width="{w}" height="{h}"/></clipPath>',
            *self.frame(),
            f'<g clip-path="url(#{cid})">',
            *body,
            "</g>",
        ]
        if legend:  # outside the frame, in the right margin the chart reserved with reserve_legend()
            parts.extend(_legend(legend, self.width - 4, self.top))
        parts.append("</svg>")
        return "\n".join(parts)


STYLE = (
    "<style>"
    ".grid{stroke:#e3e3e3;stroke-width:1}.frame{fill:none;stroke:#888;stroke-width:1}"
    ".tick{font:11px sans-serif;fill:#444}.label{font:12px sans-serif;fill:#222}"
    ".title{font:bold 13px sans-serif;fill:#111}.legend{font:11px sans-serif;fill:#222}"
    ".empty{font:13px sans-serif;fill:#777}"
    "</style>"
)


def legend_width(names: Sequence[str]) -> float:
    """Pixels a legend with these entry names needs."""
    return max((len(n) for n in names), default=0) * 6.6 + 34


def reserve_legend(ax: Axes, names: Sequence[str]) -> None:
    """Widen the right margin so the legend sits beside the plot, never over the data."""
    ax.right = int(legend_width(names)) + 14


def _legend(entries: list[tuple[str, str, str]], xr: float, y: float) -> list[str]:
    width = legend_width([n for n, _, _ in entries])
    out = [
        f'<rect x="{xr - width:.1f}" y="{y:.1f}" width="{width:.1f}" height="{16 * len(entries) + 6}" '
        f'fill="white" fill-opacity="0.85" stroke="#ccc"/>'
    ]
    for i, (name, col, dash) in enumerate(entries):
        yy = y + 13 + 16 * i
        da = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{xr - width + 6:.1f}" y1="{yy - 4:.1f}" x2="{xr - width + 24:.1f}" y2="{yy - 4:.1f}" '
            f'stroke="{col}" stroke-width="2.5"{da}/>'
        )
        out.append(f'<text class="legend" x="{xr - width + 28:.1f}" y="{yy:.1f}">{escape(name)}</text>')
    return out


# ----------------------------------------------------------------------------- ticks
def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2, 5 × 10^k steps) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return ticks


def log_ticks(lo: float, hi: float, base: float = 10.0) -> list[float]:
    """Powers of `base` inside [lo, hi] (at least the two ends when the range is narrow)."""
    if lo <= 0 or hi <= 0:
        return []
    a, b = math.floor(math.log(lo, base) + 1e-9), math.ceil(math.log(hi, base) - 1e-9)
    ticks = [base**k for k in range(a, b + 1) if lo * (1 - 1e-9) <= base**k <= hi * (1 + 1e-9)]
    if len(ticks) < 2:
        ticks = sorted({lo, hi})
    while len(ticks) > 9:
        ticks = ticks[::2]
    return ticks


def fmt_tick(v: float) -> str:
    """Short tick label: 3 significant digits, engineering-ish suffix-free."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e4 or a < 1e-3:
        return f"{v:.3g}"
    return f"{v:.4g}"


def fmt_ticks(ticks: list[float]) -> list[str]:
    """Labels for a whole axis: as short as fmt_tick, with more digits until neighbours differ."""
    labels = [fmt_tick(t) for t in ticks]
    digits = 4
    while len(set(labels)) < len(labels) and digits < 15:
        digits += 1
        labels = ["0" if t == 0 else f"{t:.{digits}g}" for t in ticks]
    return labels


def _limits(values: list[float], log: bool = False, pad: float = 0.05) -> tuple[float, float]:
    vals = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not vals:
        return (1.0, 10.0) if log else (0.0, 1.0)
    lo, hi = min(vals), max(vals)
    if log:
        if hi / lo < 1.0001:
            return lo / 2, hi * 2
        widen = (hi / lo) ** pad  # the same padding, in decades
        return lo / widen, hi * widen
    if hi == lo:
        d = abs(lo) * 0.05 or 1.0
        return lo - d, hi + d
    d = (hi - lo) * pad
    return lo - d, hi + d


def _path(points: list[tuple[float, float]], step: bool) -> str:
    if not points:
        return ""
    cmds = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
    for x1, y1 in points[1:]:
        if step:
            cmds.append(f"H{x1:.1f}V{y1:.1f}")
        else:
            cmds.append(f"L{x1:.1f},{y1:.1f}")
    return "".join(cmds)


def empty(title: str, message: str, width: int = 640, height: int = 120) -> str:
    """A placeholder chart saying why there is nothing to plot."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'{STYLE}<text class="title" x="{width / 2}" y="22" text-anchor="middle">{escape(title)}</text>'
        f'<text class="empty" x="{width / 2}" y="{height / 2 + 10}" text-anchor="middle">{escape(message)}</text>'
        "</svg>"
    )


# ----------------------------------------------------------------------------- charts
def line_chart(
    series: Sequence[Series],
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    logx: bool = False,
    logy: bool = False,
    xbase: float = 10.0,
    xlim: tuple[float, float] | None = None,
    ylim: tuple[float, float] | None = None,
    width: int = 640,
    height: int = 340,
) -> str:
    """Curves with optional shaded min–max bands; log axes drop non-positive points."""
    pts = [s for s in series if len(s.xs)]
    if not pts:
        return empty(title, "no data to plot", width)
    ax = Axes(width=width, height=height, title=title, xlabel=xlabel, ylabel=ylabel)
    reserve_legend(ax, [s.name for s in pts])
    xs = [float(x) for s in pts for x in s.xs]
    ys = [float(y) for s in pts for y in s.ys]
    for s in pts:
        ys += [float(v) for v in (s.lo or [])] + [float(v) for v in (s.hi or [])]
    xl = xlim or _limits(xs, logx, pad=0.03)
    yl = ylim or _limits(ys, logy)
    ax.set_limits(*xl, *yl, logx=logx, logy=logy, xbase=xbase)

    def ok(x: float, y: float) -> bool:
        return math.isfinite(x) and math.isfinite(y) and (x > 0 or not logx) and (y > 0 or not logy)

    body: list[str] = []
    for s in pts:
        if s.lo is not None and s.hi is not None:
            band = [
                (ax.x(x), ax.y(lo), ax.y(hi))
                for x, lo, hi in zip(s.xs, s.lo, s.hi, strict=False)
                if ok(x, lo) and ok(x, hi)
            ]
            if len(band) >= 2:
                upper = [(x, h) for x, _, h in band]
                lower = [(x, lo) for x, lo, _ in reversed(band)]
                if s.step:
                    upper, lower = _stepify(upper), _stepify(lower[::-1])[::-1]
                d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in upper + lower) + " Z"
                body.append(f'<path d="{d}" fill="{s.color}" fill-opacity="0.16" stroke="none"/>')
    for s in pts:
        p = [(ax.x(x), ax.y(y)) for x, y in zip(s.xs, s.ys, strict=False) if ok(x, y)]
        if not p:
            continue
        da = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        if len(p) == 1:
            body.append(f'<circle cx="{p[0][0]:.1f}" cy="{p[0][1]:.1f}" r="3.5" fill="{s.color}"/>')
        else:
            body.append(
                f'<path d="{_path(p, s.step)}" fill="none" stroke="{s.color}" stroke-width="2"{da}>'
                f"<title>{escape(s.name)}</title></path>"
            )
        if s.markers:
            body.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{s.color}"/>' for x, y in p)
    legend = [(s.name, s.color, s.dash) for s in pts]
    return ax.wrap(body, legend)


def _stepify(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for i, (x, y) in enumerate(points):
        if i:
            out.append((x, points[i - 1][1]))
        out.append((x, y))
    return out


def scatter_chart(
    groups: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    width: int = 640,
    height: int = 340,
    connect: bool = False,
) -> str:
    """Points per named group (e.g. a Pareto front per backend); `connect` joins them sorted by x."""
    groups = [g for g in groups if len(g[1])]
    if not groups:
        return empty(title, "no points to plot", width)
    ax = Axes(width=width, height=height, title=title, xlabel=xlabel, ylabel=ylabel)
    reserve_legend(ax, [g[0] for g in groups])
    xs = [float(x) for _, gx, _ in groups for x in gx]
    ys = [float(y) for _, _, gy in groups for y in gy]
    ax.set_limits(*_limits(xs), *_limits(ys))
    body: list[str] = []
    shapes = ("circle", "square", "diamond", "triangle")
    for i, (name, gx, gy) in enumerate(groups):
        col = color(i)
        pts = sorted(
            (ax.x(float(x)), ax.y(float(y)))
            for x, y in zip(gx, gy, strict=False)
            if math.isfinite(x) and math.isfinite(y)
        )
        if connect and len(pts) > 1:
            body.append(
                f'<path d="{_path(pts, False)}" fill="none" stroke="{col}" stroke-width="1" stroke-opacity="0.5"/>'
            )
        body.extend(_marker(shapes[i % len(shapes)], x, y, col, name) for x, y in pts)
    return ax.wrap(body, [(n, color(i), "") for i, (n, _, _) in enumerate(groups)])


def _marker(shape: str, x: float, y: float, col: str, name: str) -> str:
    t = f"<title>{escape(name)}</title>"
    if shape == "square":
        return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="{col}" fill-opacity="0.8">{t}</rect>'
    if shape == "diamond":
        return (
            f'<path d="M{x:.1f},{y - 4:.1f} L{x + 4:.1f},{y:.1f} L{x:.1f},{y + 4:.1f} L{x - 4:.1f},{y:.1f} Z" '
            f'fill="{col}" fill-opacity="0.8">{t}</path>'
        )
    if shape == "triangle":
        return (
            f'<path d="M{x:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 3:.1f} L{x - 4:.1f},{y + 3:.1f} Z" '
            f'fill="{col}" fill-opacity="0.8">{t}</path>'
        )
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.2" fill="{col}" fill-opacity="0.8">{t}</circle>'


def strip_chart(
    groups: Sequence[tuple[str, Sequence[float]]],
    title: str = "",
    ylabel: str = "",
    reference: float | None = None,
    reference_label: str = "",
    width: int = 640,
    height: int = 300,
) -> str:
    """One column of dots per group (values over repeats), with a median tick and an optional reference line."""
    groups = [g for g in groups if len(g[1])]
    if not groups:
        return empty(title, "no values to plot", width)
    ax = Axes(width=width, height=height, title=title, ylabel=ylabel, bottom=56)
    vals = [float(v) for _, g in groups for v in g] + ([reference] if reference is not None else [])
    ax.set_limits(0, len(groups), *_limits(vals, pad=0.12))
    ax.x = _CategoryScale(len(groups), ax.left, ax.width - ax.right)
    body: list[str] = []
    if reference is not None and math.isfinite(reference):
        py = ax.y(reference)
        body.append(
            f'<line x1="{ax.left}" y1="{py:.1f}" x2="{ax.width - ax.right}" y2="{py:.1f}" stroke="#999" '
            f'stroke-dasharray="5,4"><title>{escape(reference_label)}</title></line>'
        )
    for i, (name, g) in enumerate(groups):
        cx = ax.x(i + 0.5)
        col = color(i)
        vs = sorted(float(v) for v in g if math.isfinite(v))
        for j, v in enumerate(vs):
            jitter = ((j * 7919) % 11 - 5) * 2.2  # deterministic spread so equal values stay visible
            body.append(
                f'<circle cx="{cx + jitter:.1f}" cy="{ax.y(v):.1f}" r="3.5" fill="{col}" fill-opacity="0.7">'
                f"<title>{escape(name)}: {v:.10g}</title></circle>"
            )
        if vs:
            med = vs[len(vs) // 2] if len(vs) % 2 else 0.5 * (vs[len(vs) // 2 - 1] + vs[len(vs) // 2])
            body.append(
                f'<line x1="{cx - 18:.1f}" y1="{ax.y(med):.1f}" x2="{cx + 18:.1f}" y2="{ax.y(med):.1f}" '
                f'stroke="#222" stroke-width="2"/>'
            )
    svg = ax.wrap(body)
    labels = "".join(
        f'<text class="tick" x="{ax.x(i + 0.5):.1f}" y="{ax.height - ax.bottom + 16}" '
        f'text-anchor="middle">{escape(name)}</text>'
        for i, (name, _) in enumerate(groups)
    )
    return svg.replace("</svg>", labels + "</svg>")


class _CategoryScale(Scale):
    """Category positions 0..n along x; no numeric ticks (labels are drawn by the chart)."""

    def __init__(self, n: int, p0: float, p1: float) -> None:
        super().__init__(0, n, p0, p1)

    def ticks(self, n: int = 5) -> list[float]:
        return []


def bar_chart(
    categories: Sequence[str],
    groups: Sequence[tuple[str, Sequence[float]]],
    title: str = "",
    ylabel: str = "",
    width: int = 640,
    height: int = 300,
) -> str:
    """Grouped bars: one group of bars per category, one bar per named series."""
    groups = [g for g in groups if len(g[1])]
    if not groups or not categories:
        return empty(title, "no values to plot", width)
    ax = Axes(width=width, height=height, title=title, ylabel=ylabel, bottom=56)
    reserve_legend(ax, [g[0] for g in groups])
    vals = [float(v) for _, g in groups for v in g if math.isfinite(float(v))] + [0.0]
    lo, hi = min(vals), max(vals)
    ax.set_limits(0, len(categories), *_limits([lo, hi], pad=0.08))
    ax.x = _CategoryScale(len(categories), ax.left, ax.width - ax.right)
    body: list[str] = []
    slot = (ax.width - ax.right - ax.left) / len(categories)
    bw = slot * 0.8 / len(groups)
    zero = ax.y(0.0)
    for gi, (name, g) in enumerate(groups):
        for ci, v in enumerate(g):
            v = float(v)
            if not math.isfinite(v):
                continue
            x = ax.left + ci * slot + slot * 0.1 + gi * bw
            y = ax.y(v)
            body.append(
                f'<rect x="{x:.1f}" y="{min(y, zero):.1f}" width="{max(bw - 1, 1):.1f}" '
                f'height="{abs(zero - y):.1f}" fill="{color(gi)}"><title>{escape(name)} '
                f"{escape(str(categories[ci]))}: {v:.6g}</title></rect>"
            )
    svg = ax.wrap(body, [(n, color(i), "") for i, (n, _) in enumerate(groups)])
    step = max(1, len(categories) // 12)
    labels = "".join(
        f'<text class="tick" x="{ax.x(i + 0.5):.1f}" y="{ax.height - ax.bottom + 16}" '
        f'text-anchor="middle">{escape(str(c))}</text>'
        for i, c in enumerate(categories)
        if i % step == 0
    )
    return svg.replace("</svg>", labels + "</svg>")
