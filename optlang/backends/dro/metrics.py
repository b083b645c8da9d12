"""Regression metrics for imbalanced targets: MSE, tail MSE, relevance φ, SERA, per-region breakdowns.

Used by the DRO benchmark (benchmarks/dro_tail.py) and its tests;
no backend depends on them. Definitions (pinned, because packages disagree):
- tail MSE: the MSE on the samples whose target lies beyond the q-quantile (default: top decile)
  of a reference target sample (the training targets), or in the rarest target regions.
- relevance φ: the boxplot "extremes" relevance of Ribeiro & Moniz / UBL, with Tukey fences:
  Q1, median, Q3 by numpy's linear percentiles; fences Q1 − 1.5 IQR and Q3 + 1.5 IQR; adjacent
  values = the most extreme targets inside the fences. Control points (adj_lo, 1 if some target
  lies below the lower fence else 0), (median, 0), (adj_hi, 1 if some target lies above the upper
  fence else 0), joined by a monotone piecewise-cubic Hermite interpolant (PCHIP, Fritsch–Carlson)
  and constant beyond the end points. When no target lies outside the fences φ ≡ 0; pass control
  points then. (This is not the medcouple-adjusted boxplot; see docs/backends/tcdro.md.)
- SERA = ∫₀¹ Σ_{i: φ(y_i) ≥ t} (ŷ_i − y_i)² dt = Σ_i φ(y_i)(ŷ_i − y_i)² exactly (the identity
  ∫₀¹ 1[φ ≥ t] dt = φ); `sera_trapezoid` gives the packages' numerical integral for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.interpolate import PchipInterpolator


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).ravel()


def mse(y_true: Any, y_pred: Any) -> float:
    """Mean squared error."""
    e = _arr(y_pred) - _arr(y_true)
    return float(np.mean(e * e))


def tail_mask(y_true: Any, y_ref: Any | None = None, q: float = 0.9, side: str = "upper") -> np.ndarray:
    """Samples beyond the q-quantile of y_ref (default y_true): upper (y ≥ Q_q), lower (y ≤ Q_{1−q}), both."""
    y = _arr(y_true)
    ref = y if y_ref is None else _arr(y_ref)
    if side == "upper":
        return y >= np.quantile(ref, q)
    if side == "lower":
        return y <= np.quantile(ref, 1.0 - q)
    if side == "both":
        return (y >= np.quantile(ref, q)) | (y <= np.quantile(ref, 1.0 - q))
    raise ValueError(f"side must be upper, lower or both, not {side!r}")


def tail_mse(y_true: Any, y_pred: Any, y_ref: Any | None = None, q: float = 0.9, side: str = "upper") -> float:
    """MSE over the tail samples (default: targets in the top decile of the reference targets)."""
    m = tail_mask(y_true, y_ref, q, side)
    if not m.any():
        return float("nan")
    return mse(_arr(y_true)[m], _arr(y_pred)[m])


def rare_mask(y_true: Any, y_ref: Any, frac: float = 0.1, bins: int = 20) -> np.ndarray:
    """Samples in the rarest target regions: equal-width bins of y_ref sorted by count, the rarest
    bins taken until they hold at least `frac` of the reference samples."""
    y, ref = _arr(y_true), _arr(y_ref)
    edges = np.linspace(ref.min(), ref.max(), bins + 1)
    counts = np.histogram(ref, edges)[0]
    order = np.argsort(counts, kind="stable")
    chosen, held = [], 0
    for b in order:
        chosen.append(b)
        held += counts[b]
        if held >= frac * ref.size:
            break
    which = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, bins - 1)
    return np.isin(which, chosen)


def rare_mse(y_true: Any, y_pred: Any, y_ref: Any, frac: float = 0.1, bins: int = 20) -> float:
    """MSE over the samples whose targets fall in the rarest target regions (see rare_mask)."""
    m = rare_mask(y_true, y_ref, frac, bins)
    if not m.any():
        return float("nan")
    return mse(_arr(y_true)[m], _arr(y_pred)[m])


@dataclass(frozen=True)
class Relevance:
    """A relevance function φ: targets → [0, 1], monotone cubic Hermite through control points."""

    points: tuple[tuple[float, float], ...]

    def __call__(self, y: Any) -> np.ndarray:
        y = _arr(y)
        xs = np.array([p[0] for p in self.points])
        fs = np.array([p[1] for p in self.points])
        if xs.size == 1:
            return np.full(y.shape, fs[0])
        out = PchipInterpolator(xs, fs, extrapolate=False)(np.clip(y, xs[0], xs[-1]))
        return np.clip(out, 0.0, 1.0)


def boxplot_relevance(y_ref: Any, coef: float = 1.5) -> Relevance:
    """The boxplot 'extremes' φ of the reference targets (Tukey fences; see the module docstring)."""
    y = _arr(y_ref)
    q1, med, q3 = np.percentile(y, [25, 50, 75])
    iqr = q3 - q1
    lo_f, hi_f = q1 - coef * iqr, q3 + coef * iqr
    adj_lo = float(y[y >= lo_f].min())
    adj_hi = float(y[y <= hi_f].max())
    pts = [(adj_lo, 1.0 if np.any(y < lo_f) else 0.0), (float(med), 0.0), (adj_hi, 1.0 if np.any(y > hi_f) else 0.0)]
    uniq: list[tuple[float, float]] = []
    for x, f in pts:  # drop coincident control points (degenerate samples), keeping the larger φ
        if uniq and x <= uniq[-1][0]:
            uniq[-1] = (uniq[-1][0], max(uniq[-1][1], f))
        else:
            uniq.append((x, f))
    return Relevance(tuple(uniq))


def sera(y_true: Any, y_pred: Any, phi: Relevance | None = None, y_ref: Any | None = None) -> float:
    """SERA exactly: Σ φ(y_i)(ŷ_i − y_i)², φ = boxplot_relevance(y_ref or y_true) unless given."""
    y, p = _arr(y_true), _arr(y_pred)
    phi = phi or boxplot_relevance(y if y_ref is None else y_ref)
    return float(np.sum(phi(y) * (p - y) ** 2))


def sera_trapezoid(y_true: Any, y_pred: Any, phi: Relevance, step: float = 0.001) -> float:
    """SERA by the trapezoid rule over t ∈ [0, 1] (what the R and Python packages compute)."""
    y, p = _arr(y_true), _arr(y_pred)
    r, e2 = phi(y), (p - y) ** 2
    ts = np.linspace(0.0, 1.0, int(round(1.0 / step)) + 1)
    ser = np.array([np.sum(e2[r >= t]) for t in ts])
    return float(np.sum((ser[1:] + ser[:-1]) * np.diff(ts)) / 2.0)


def region_breakdown(y_true: Any, y_pred: Any, edges: Any, phi: Relevance | None = None) -> list[dict[str, float]]:
    """Per target region (lo, hi]: count, MSE, mean error (bias) and SERA share (first region closed)."""
    y, p = _arr(y_true), _arr(y_pred)
    e = _arr(edges)
    which = np.clip(np.searchsorted(e[1:-1], y, side="left"), 0, e.size - 2)
    rows = []
    for k in range(e.size - 1):
        m = which == k
        row = {
            "lo": float(e[k]),
            "hi": float(e[k + 1]),
            "n": int(m.sum()),
            "mse": mse(y[m], p[m]) if m.any() else float("nan"),
            "bias": float(np.mean(p[m] - y[m])) if m.any() else float("nan"),
        }
        if phi is not None:
            row["sera"] = float(np.sum(phi(y[m]) * (p[m] - y[m]) ** 2))
        rows.append(row)
    return rows


def shot_breakdown(
    y_true: Any, y_pred: Any, y_train: Any, bins: int = 20, many: int = 100, few: int = 20
) -> dict[str, float]:
    """MSE by training frequency of the target bin (LDS 'shot' groups: > many, < few, between)."""
    y, p, t = _arr(y_true), _arr(y_pred), _arr(y_train)
    edges = np.linspace(t.min(), t.max(), bins + 1)
    counts = np.histogram(t, edges)[0]
    which = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, bins - 1)
    c = counts[which]
    out = {}
    for name, m in (("many", c > many), ("median", (c <= many) & (c >= few)), ("few", c < few)):
        out[name] = mse(y[m], p[m]) if m.any() else float("nan")
    return out


def regression_report(y_true: Any, y_pred: Any, y_ref: Any, q: float = 0.9) -> dict[str, float]:
    """MSE, tail MSE (top 1 − q of y_ref), rare-region MSE and SERA (φ from y_ref) in one dict."""
    phi = boxplot_relevance(y_ref)
    return {
        "mse": mse(y_true, y_pred),
        "tail_mse": tail_mse(y_true, y_pred, y_ref, q),
        "rare_mse": rare_mse(y_true, y_pred, y_ref),
        "sera": sera(y_true, y_pred, phi),
    }
