"""The line test: a preferred point's coordinates scanned across their whole box, one at a time.

Every test that certifies a preferred point is local (the polish's stationarity, the end and neighbours
tests, Benson's problem), and so is the coarse front that guards them when it sits on a local front: on
DTLZ1 and DTLZ3 with two objectives (a Rastrigin g over the distance variables, 11⁵ and 11¹⁰ local fronts)
every drawn preference was certified `converged` 5–5 700 above its least φ. The test evaluates the point
with one box coordinate at a time moved to each of `points` evenly spaced values of its box (the box's
middle among them when `points` is odd); a row no worse in every objective and better in one (Pareto
domination, exact in float64 beyond rounding) refutes the point — a proof, not a sample's hint, that it is
not Pareto optimal. From the refutations it builds a restart: every refuted coordinate moved at once to
its best value (the largest scaled sum of improvements), else the single best row. A multimodal g that is
a sum over its coordinates, as these are, is then solved coordinate by coordinate; for others the test is
still a sound refutation. Cost: `points` evaluations per box coordinate, in one batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from optlang.backends.common import FlatVariables
from optlang.backends.multiobjective.end_test import ROUNDING, PointEval
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class LineRefutation:
    """Rows that dominate the point (0: not refuted), the restart built from them, and the cost."""

    dominating: int  # rows of the scan that dominate the point
    restart: dict[str, np.ndarray] | None  # the combined (or single best) point; None when not refuted
    gain: float  # its scaled sum of improvements over the point
    evaluations: int


def _lines(
    problem: MultiObjectiveProblem, values: dict[str, np.ndarray], points: int
) -> tuple[FlatVariables, np.ndarray, PointEval, np.ndarray, float, np.ndarray, np.ndarray] | None:
    """(fl, z, the evaluator, F(z), φ(z), the line points Z, the coordinate each row moves) of the lines
    through `values`: every box coordinate at `points` evenly spaced values of its box; None when the test
    cannot run (a point that is not finite, no finite box coordinate: simplex and ball entries never move)."""
    fl = FlatVariables(problem.variables)
    z = fl.flat(values)
    movable = np.flatnonzero(np.isfinite(fl.lo) & np.isfinite(fl.hi) & (fl.grp < 0) & (fl.bgrp < 0))
    if points < 2 or movable.size == 0 or not np.all(np.isfinite(z)):
        return None
    ev = PointEval(problem, fl)
    F0_rows, phi0_rows = ev(z)
    Z = np.repeat(z[None], movable.size * points, axis=0)
    cols = np.repeat(movable, points)
    Z[np.arange(Z.shape[0]), cols] = (
        fl.lo[cols] + np.tile(np.linspace(0.0, 1.0, points), movable.size) * (fl.hi[cols] - fl.lo[cols])
    ).clip(fl.lo[cols], fl.hi[cols])
    return fl, z, ev, F0_rows[0], float(phi0_rows[0]), Z, cols


def _split(fl: FlatVariables, flat: np.ndarray) -> dict[str, np.ndarray]:
    return {k: t.numpy().copy() for k, t in fl.split(torch.as_tensor(flat, dtype=torch.float64)).items()}


def line_refutation(
    problem: MultiObjectiveProblem, values: dict[str, np.ndarray], points: int = 41
) -> LineRefutation | None:
    """The line test at `values` (module docstring): `dominating` = 0 when no row dominates the point;
    None when it cannot run (`_lines`)."""
    lines = _lines(problem, values, points)
    if lines is None or not np.all(np.isfinite(lines[3])):
        return None
    fl, z, ev, F0, _, Z, cols = lines
    sig = 1.0 + np.abs(F0)
    F, _ = ev(Z)
    evaluations = 1 + Z.shape[0]
    ok = np.all(np.isfinite(F), axis=1)
    dom = ok & np.all(F <= F0, axis=1) & np.any(F < F0 - ROUNDING * sig, axis=1)
    if not dom.any():
        return LineRefutation(0, None, 0.0, evaluations)
    gain = np.where(dom, ((F0 - F) / sig).sum(axis=1), -np.inf)
    best_row = int(np.argmax(gain))
    combined = z.copy()
    for j in np.unique(cols[dom]).tolist():
        mine = np.flatnonzero(cols == j)
        combined[j] = Z[mine[int(np.argmax(gain[mine]))], j]
    restart, restart_gain = Z[best_row], float(gain[best_row])
    Fc = ev(combined)[0][0]
    evaluations += 1
    if np.all(np.isfinite(Fc)) and np.all(Fc <= F0) and float(((F0 - Fc) / sig).sum()) > restart_gain:
        restart, restart_gain = combined, float(((F0 - Fc) / sig).sum())
    return LineRefutation(int(dom.sum()), _split(fl, restart), restart_gain, evaluations)


def line_lower(
    problem: MultiObjectiveProblem, values: dict[str, np.ndarray], points: int = 41
) -> tuple[dict[str, np.ndarray] | None, int]:
    """(the point of least φ on the coordinate lines of `values` that the point does not dominate, when
    that φ is lower than the point's by more than 1e-6 (1 + |φ|); evaluations). After a restart the answer's
    position coordinates start where the refuted answer's were, and a certificate there is local along the
    front too (DTLZ3 with a Chebyshev preference: certified 0.18 above its least); such a point is where
    the solve may start once more."""
    lines = _lines(problem, values, points)
    if lines is None:
        return None, 0
    fl, _, ev, F0, phi0, Z, _ = lines
    F, phi = ev(Z)
    evaluations = 1 + Z.shape[0]
    ok = np.all(np.isfinite(F), axis=1) & np.isfinite(phi)
    dominated = np.all(F0 <= F, axis=1) & np.any(F0 < F, axis=1)
    cand = ok & ~dominated & (phi < phi0 - 1e-6 * (1.0 + abs(phi0)))
    if not np.isfinite(phi0) or not cand.any():
        return None, evaluations
    return _split(fl, Z[int(np.argmin(np.where(cand, phi, np.inf)))]), evaluations
