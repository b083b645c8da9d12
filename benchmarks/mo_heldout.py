"""Front problems outside the main multi-objective table, written as `.opt` models and solved as a user
would (`optlang.parse(text).solve(seed)`), scored by hypervolume against their analytic fronts; NSGA-II
and NSGA-III (pymoo, when installed) at the same evaluations (4 000, or `--set front_evals=N`).

They probe what the main table does not: a multimodal g (ZDT4; DTLZ3, DTLZ1's g on DTLZ2's sphere), a
non-uniform, multimodal f1 (ZDT6), a concave front reached through flattening exponentials
(Fonseca–Fleming), Pareto sets on the kinks of |x − ½| (ZDT1 and DTLZ2 with Σ|x_i − ½| distances) and
Kursawe's cusps |x|^0.8 (a disconnected front; reference: a 201³ grid), a degenerate curve in three
objectives (DTLZ5, and DTLZ6 whose g = Σ x^0.1 is steep at its minimum), a biased density (DTLZ4,
x^100), one scalar variable (Schaffer N1), a convex pair of quadratics (and the same pair of free variables at
x ≈ 1000, and two squared distances 2–3 from the origin with free and half-open variables), and general
constraints (a front
on the boundary of x₀² + x₁² ≥ 1; Deb's CONSTR, half on a constraint's boundary; the classic constrained
fronts BNH, SRN, TNK (a wavy boundary in four pieces) and OSY (six constraints, five pieces)), fronts
whose ends no axis ray aims at (three squared distances in the plane, free variables; a mean–variance
portfolio on the simplex; two distances from a ball) and inverted fronts (−DTLZ2, whose Pareto set has a
copy in each corner of the distance variables' box, and an inverted DTLZ1 plane with DTLZ2's g).
HV reference: the analytic front's nadir + 10 % of its range (1.1 for DTLZ4 and DTLZ2-abs).
Usage: .venv/bin/python benchmarks/mo_heldout.py [--seeds 0,1] [--no-pymoo] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import ast
import math
import time
from collections.abc import Callable

import numpy as np

import optlang
from optlang.backends.multiobjective.metrics import hypervolume, nondominated

H = "1.5707963267948966"
PI = "3.141592653589793"
C3 = 1 / math.sqrt(3)


def _dense2(f1: np.ndarray, f2: np.ndarray) -> np.ndarray:
    return nondominated(np.stack([f1, f2], 1))


def _sphere(n: int = 200) -> np.ndarray:
    a, b = np.meshgrid(np.linspace(0, math.pi / 2, n), np.linspace(0, math.pi / 2, n))
    return np.stack([np.cos(a) * np.cos(b), np.cos(a) * np.sin(b), np.sin(a)], -1).reshape(-1, 3)


def _dtlz(alpha: int, pos: str) -> str:
    return f"""param h = {H}
var x[12] in [0, 1]
let g = sumsq(x[2:] - 0.5)
{pos}
minimize {{
  f1: (1 + g) * cos(h * a) * cos(h * b)
  f2: (1 + g) * cos(h * a) * sin(h * b)
  f3: (1 + g) * sin(h * a)
}}
"""


_t = np.linspace(0.0, 1.0, 20001)
_f6 = np.linspace(0.2807753191, 1.0, 20001)
_s = np.linspace(-C3, C3, 20001)
_th = np.linspace(0.0, math.pi / 2, 20001)


def _bnh() -> np.ndarray:
    """Binh–Korn's Pareto set: x = y ∈ [0, 3], then y = 3, x ∈ [3, 5]."""
    a, b = np.linspace(0, 3, 20001), np.linspace(3, 5, 20001)
    x, y = np.r_[a, b], np.r_[a, np.full_like(b, 3.0)]
    return nondominated(np.stack([4 * x**2 + 4 * y**2, (x - 5) ** 2 + (y - 5) ** 2], 1))


def _srn() -> np.ndarray:
    """Chankong–Haimes' front. ∇f₁ ∥ −∇f₂ only on x = −2.5, so every Pareto point lies on that line or on
    a constraint's boundary (the circle x² + y² = 225, the line x = 3y − 10): the non-dominated points of
    dense feasible samples of the three are the front (the literature's x = −2.5, y ∈ [2.5, 14.79] misses
    the part on the circle)."""
    y = np.linspace(-20, 20, 400001)
    t = np.linspace(0, 2 * math.pi, 400001)
    P = np.concatenate(
        [
            np.stack([np.full_like(y, -2.5), y], 1),
            np.stack([3 * y - 10, y], 1),
            15 * np.stack([np.cos(t), np.sin(t)], 1),
        ]
    )
    ok = (P[:, 0] ** 2 + P[:, 1] ** 2 <= 225 + 1e-9) & (P[:, 0] - 3 * P[:, 1] + 10 <= 1e-9) & (np.abs(P) <= 20).all(1)
    x, yy = P[ok, 0], P[ok, 1]
    return nondominated(np.stack([2 + (x - 2) ** 2 + (yy - 1) ** 2, 9 * x - (yy - 1) ** 2], 1))


def _tnk() -> np.ndarray:
    """Tanaka's front: minimizing (x, y) puts every Pareto point on a constraint's boundary — the wavy
    r² = 1 + 0.1 cos(16 θ) (θ = atan(x/y)) or the circle (x − ½)² + (y − ½)² = ½; the non-dominated points
    of dense feasible samples of both."""
    t = np.linspace(1e-9, math.pi / 2, 400001)
    r = np.sqrt(1 + 0.1 * np.cos(16 * t))
    a = np.linspace(0, 2 * math.pi, 400001)
    P = np.concatenate(
        [np.stack([r * np.sin(t), r * np.cos(t)], 1), 0.5 + math.sqrt(0.5) * np.stack([np.cos(a), np.sin(a)], 1)]
    )
    x, y = P[:, 0], P[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        c1 = x**2 + y**2 - 1 - 0.1 * np.cos(16 * np.arctan(x / y)) >= -1e-9
    ok = c1 & ((x - 0.5) ** 2 + (y - 0.5) ** 2 <= 0.5 + 1e-9) & (x > 0) & (y > 0)
    return nondominated(P[ok])


def _osy_f(X: np.ndarray) -> np.ndarray:
    f1 = -(25 * (X[:, 0] - 2) ** 2 + (X[:, 1] - 2) ** 2 + (X[:, 2] - 1) ** 2 + (X[:, 3] - 4) ** 2 + (X[:, 4] - 1) ** 2)
    return np.stack([f1, (X**2).sum(1)], 1)


def _osy() -> np.ndarray:
    """Osyczka–Kundu's front: five pieces (Deb, Multi-Objective Optimization using Evolutionary Algorithms,
    2001, §10.3: x₄ = x₆ = 0 throughout)."""
    t = np.linspace(0, 1, 20001)
    z, o = np.zeros_like(t), np.ones_like(t)
    pieces = [
        np.stack([5 * o, o, 1 + 4 * t, z, 5 * o, z], 1),  # AB
        np.stack([5 * o, o, 1 + 4 * t, z, o, z], 1),  # BC
        np.stack([4.056 + 0.944 * t, (2.056 + 0.944 * t) / 3, o, z, o, z], 1),  # CD
        np.stack([z, 2 * o, 1 + 2.732 * t, z, o, z], 1),  # DE
        np.stack([t, 2 - t, o, z, o, z], 1),  # EF
    ]
    return nondominated(np.concatenate([_osy_f(X) for X in pieces]))


def _distances_f(X: np.ndarray) -> np.ndarray:
    return np.stack([(X**2).sum(1), ((X - [1, 0]) ** 2).sum(1), ((X - [0, 1]) ** 2).sum(1)], 1)


def _kursawe_f(X: np.ndarray) -> np.ndarray:
    f1 = sum(-10 * np.exp(-0.2 * np.sqrt(X[:, i] ** 2 + X[:, i + 1] ** 2)) for i in range(2))
    return np.stack([f1, (np.abs(X) ** 0.8 + 5 * np.sin(X**3)).sum(1)], 1)


def _kursawe() -> np.ndarray:
    """Kursawe's front has no closed form: the non-dominated points of a 201³ grid of the box [−5, 5]³
    (it holds x = 0, the isolated end (−20, 0), exactly; a solver can beat the grid elsewhere: ratio > 1)."""
    ax = np.linspace(-5.0, 5.0, 201)
    out = []
    for a in ax:
        B, C = np.meshgrid(ax, ax, indexing="ij")
        out.append(nondominated(_kursawe_f(np.stack([np.full(B.size, a), B.ravel(), C.ravel()], 1))))
    return nondominated(np.concatenate(out))


def _simplex(n: int = 300) -> np.ndarray:
    """The Das–Dennis points of level n on the simplex Σ f = 1 (a dense linear front)."""
    return np.array([[i, j, n - i - j] for i in range(n + 1) for j in range(n + 1 - i)], dtype=np.float64) / n


def _distances3() -> np.ndarray:
    """Three squared distances in the plane to (0, 0), (1, 0), (0, 1): the Pareto set is their triangle."""
    g = np.linspace(0, 1, 401)
    A, B = np.meshgrid(g, g)
    X = np.stack([A[A + B <= 1], B[A + B <= 1]], 1)
    return np.stack([(X**2).sum(1), ((X - [1, 0]) ** 2).sum(1), ((X - [0, 1]) ** 2).sum(1)], 1)


_PF_B = np.random.default_rng(31).standard_normal((12, 3)).round(4)
_PF_MU = (0.1 * np.random.default_rng(32).random(12)).round(4)


def _portfolio() -> np.ndarray:
    """The mean–variance front of `portfolio` (12 assets on the simplex): the least variance at target
    returns, each a convex QP solved by CLARABEL (cvxpy's interior-point solver; a solve it does not call
    optimal is left out): 2 001 targets evenly between the least and the largest mean, then targets halfway
    between neighbouring front points farther apart than 1e-4 of the front's box, until none is (near the
    largest mean the variance rises steeply: 0.59 → 0.73 over two even targets). It was SLSQP from the
    previous target's weights on the even targets only: SLSQP failed on some targets (variance up to 0.034
    too high), and risk + 135.5 loss, least between two even targets, looked 1.4e-3 lower at the exact
    answer than on that "exact" front."""
    import cvxpy as cp

    C = _PF_B @ _PF_B.T + 0.01 * np.eye(12)
    w, r = cp.Variable(12), cp.Parameter()
    prob = cp.Problem(cp.Minimize(cp.quad_form(w, C)), [w >= 0, cp.sum(w) == 1, _PF_MU @ w >= r])

    def solve(targets: np.ndarray) -> list[list[float]]:
        rows = []
        for t in targets:
            r.value = t
            prob.solve(solver="CLARABEL")
            if prob.status == "optimal":
                v = np.clip(w.value, 0, None) / np.clip(w.value, 0, None).sum()
                rows.append([v @ C @ v, -_PF_MU @ v, t])
        return rows

    P = np.array(solve(np.linspace(_PF_MU.min(), _PF_MU.max(), 2001)))
    for _ in range(12):
        P = P[np.argsort(P[:, 2])]
        box = np.ptp(P[:, :2], axis=0)
        gap = np.linalg.norm(np.diff(P[:, :2], axis=0) / box, axis=1) > 1e-4
        if not gap.any():
            break
        P = np.concatenate([P, np.array(solve(0.5 * (P[:-1, 2] + P[1:, 2])[gap]))])
    return nondominated(P[:, :2])


def _matrix(A: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{v:g}" for v in row) + "]" for row in A) + "]"


# name -> (model text, analytic front, its exact HV where it has a closed form, else None: the dense front's)
PROBLEMS: dict[str, tuple[str, np.ndarray | Callable[[], np.ndarray], float | None]] = {
    "zdt4": (
        f"var x0 in [0, 1]\nvar y[9] in [-5, 5]\nlet g = 1 + 90 + sum(y^2 - 10 * cos(4 * {PI} * y))\n"
        "minimize {\n  f1: x0\n  f2: g * (1 - sqrt(x0 / g))\n}\n",
        _dense2(_t, 1 - np.sqrt(_t)),
        None,
    ),
    "zdt6": (
        f"var x[10] in [0, 1]\nlet f = 1 - exp(-4 * x[0]) * sin(6 * {PI} * x[0])^6\n"
        "let g = 1 + 9 * mean(x[1:])^0.25\nminimize {\n  f1: f\n  f2: g * (1 - (f / g)^2)\n}\n",
        _dense2(_f6, 1 - _f6**2),
        None,
    ),
    "schaffer": (
        "var x in [-10, 10]\nminimize {\n  f1: x^2\n  f2: (x - 2)^2\n}\n",
        _dense2((2 * _t) ** 2, (2 * _t - 2) ** 2),
        None,
    ),
    "fonseca": (
        f"var x[3] in [-4, 4]\nparam c = {C3!r}\n"
        "minimize {\n  f1: 1 - exp(-sum((x - c)^2))\n  f2: 1 - exp(-sum((x + c)^2))\n}\n",
        _dense2(1 - np.exp(-3 * (_s - C3) ** 2), 1 - np.exp(-3 * (_s + C3) ** 2)),
        None,
    ),
    "quadratics": (
        "var x[2] in [-3, 3]\nminimize {\n  f1: x[0]^2 + x[1]^2\n  f2: (x[0] - 1)^2 + (x[1] - 1)^2\n}\n",
        _dense2(2 * _t**2, 2 * (1 - _t) ** 2),
        None,
    ),
    "distances-free": (  # free variables, a front 2–3 from the starts near 0 (stage 0 starts between the ends)
        "var x[2]\nminimize {\n  f1: (x[0] - 3)^2 + x[1]^2\n  f2: x[0]^2 + (x[1] - 3)^2\n}\n",
        _dense2(18 * _t**2, 18 * (1 - _t) ** 2),
        None,
    ),
    "distances-half": (  # the same with variables bounded below only
        "var x[2] >= 0\nminimize {\n  f1: (x[0] - 3)^2 + x[1]^2\n  f2: x[0]^2 + (x[1] - 3)^2\n}\n",
        _dense2(18 * _t**2, 18 * (1 - _t) ** 2),
        None,
    ),
    "quadratics-far": (  # free variables far from the origin: the step unit must follow the front, not |x|
        "var x[2]\nminimize {\n  f1: sumsq(x - [1000, 1000])\n  f2: sumsq(x - [1001, 1000])\n}\n",
        _dense2(_t**2, (1 - _t) ** 2),
        None,
    ),
    "dtlz3": (
        _dtlz(1, "let a = x[0]\nlet b = x[1]").replace(
            "sumsq(x[2:] - 0.5)", f"100 * (10 + sum((x[2:] - 0.5)^2 - cos(20 * {PI} * (x[2:] - 0.5))))"
        ),
        _sphere(),
        None,
    ),
    "dtlz4": (_dtlz(100, "let a = x[0]^100\nlet b = x[1]^100"), _sphere(), 1.1**3 - math.pi / 6),
    "dtlz5": (
        _dtlz(1, "let a = x[0]\nlet b = (1 + 2 * g * x[1]) / (2 * (1 + g))"),
        np.stack([np.cos(_th) / math.sqrt(2), np.cos(_th) / math.sqrt(2), np.sin(_th)], 1),
        None,
    ),
    "dtlz6": (
        _dtlz(1, "let a = x[0]\nlet b = (1 + 2 * g * x[1]) / (2 * (1 + g))").replace(
            "sumsq(x[2:] - 0.5)", "sum(x[2:]^0.1)"
        ),
        np.stack([np.cos(_th) / math.sqrt(2), np.cos(_th) / math.sqrt(2), np.sin(_th)], 1),
        None,
    ),
    # kinks: Pareto sets on the kinks of |·| (front mode's `front_kink_snap`), and Kursawe's cusps |x|^0.8
    "zdt1-abs": (
        "var x[10] in [0, 1]\nlet g = 1 + 9 * mean(abs(x[1:] - 0.5))\n"
        "minimize {\n  f1: x[0]\n  f2: g * (1 - sqrt(x[0] / g))\n}\n",
        _dense2(_t, 1 - np.sqrt(_t)),
        None,
    ),
    "dtlz2-abs": (
        _dtlz(1, "let a = x[0]\nlet b = x[1]").replace("sumsq(x[2:] - 0.5)", "sum(abs(x[2:] - 0.5))"),
        _sphere(),
        1.1**3 - math.pi / 6,
    ),
    "kursawe": (
        "var x[3] in [-5, 5]\nminimize {\n  f1: sum(-10 * exp(-0.2 * sqrt(x[:2]^2 + x[1:]^2)))\n"
        "  f2: sum(abs(x)^0.8 + 5 * sin(x^3))\n}\n",
        _kursawe,  # computed when the problem runs (~4 s): not at every import
        None,
    ),
    # fronts whose ends no axis ray aims at (each objective's least value holds the others near their
    # largest): the ends by SLSQP (`front_extremes`); and inverted fronts
    "distances3": (
        "var x[2]\nminimize {\n  f1: sumsq(x)\n  f2: sumsq(x - [1, 0])\n  f3: sumsq(x - [0, 1])\n}\n",
        _distances3,
        None,
    ),
    "portfolio": (
        f"param B = {_matrix(_PF_B)}\nparam mu = [{', '.join(f'{v:g}' for v in _PF_MU)}]\nvar w[12] in simplex\n"
        "minimize {\n  risk: sumsq(B.T @ w) + 0.01 * sumsq(w)\n  loss: -dot(mu, w)\n}\n",
        _portfolio,
        None,
    ),
    "ball2": (
        "var x[3] in ball(1)\nminimize {\n  f1: sumsq(x - [2, 0, 0])\n  f2: sumsq(x - [0, 2, 0])\n}\n",
        _dense2((np.cos(_th) - 2) ** 2 + np.sin(_th) ** 2, np.cos(_th) ** 2 + (np.sin(_th) - 2) ** 2),
        None,
    ),
    "minus-dtlz2": (
        _dtlz(1, "let a = x[0]\nlet b = x[1]")
        .replace("f1: (1", "f1: -(1")
        .replace("f2: (1", "f2: -(1")
        .replace("f3: (1", "f3: -(1"),
        -3.5 * _sphere(),
        None,
    ),
    "dtlz1-inv": (
        _dtlz(1, "let a = x[0]\nlet b = x[1]")
        .replace("(1 + g) * cos(h * a) * cos(h * b)", "0.5 * (1 + g) * (1 - a * b)")
        .replace("(1 + g) * cos(h * a) * sin(h * b)", "0.5 * (1 + g) * (1 - a * (1 - b))")
        .replace("(1 + g) * sin(h * a)", "0.5 * (1 + g) * a"),
        0.5 - 0.5 * _simplex(),
        None,
    ),
    # general constraints (front mode's exact penalty and feasibility steps)
    "quarter-circle": (
        "var x[2] in [0, 1]\nminimize {\n  f1: x[0],\n  f2: x[1]\n}\nsubject to { x[0]^2 + x[1]^2 >= 1 }\n",
        np.stack([np.cos(_th), np.sin(_th)], 1),
        None,
    ),
    "constr": (
        "var x in [0.1, 1]\nvar y in [0, 5]\nminimize {\n  f1: x,\n  f2: (1 + y) / x\n}\n"
        "subject to {\n  y + 9 * x >= 6\n  -y + 9 * x >= 1\n}\n",
        _dense2(
            np.r_[np.linspace(7 / 18, 2 / 3, 20001), np.linspace(2 / 3, 1, 20001)],
            np.r_[
                (7 - 9 * np.linspace(7 / 18, 2 / 3, 20001)) / np.linspace(7 / 18, 2 / 3, 20001),
                1 / np.linspace(2 / 3, 1, 20001),
            ],
        ),
        None,
    ),
    # four classic constrained fronts (Deb 2001): a convex front, a straight Pareto set, a wavy boundary
    # in four pieces, and six constraints whose front runs along five different ones
    "bnh": (
        "var x in [0, 5]\nvar y in [0, 3]\nminimize {\n  f1: 4 * x^2 + 4 * y^2\n  f2: (x - 5)^2 + (y - 5)^2\n}\n"
        "subject to {\n  (x - 5)^2 + y^2 <= 25\n  (x - 8)^2 + (y + 3)^2 >= 7.7\n}\n",
        _bnh(),
        None,
    ),
    "srn": (
        "var x in [-20, 20]\nvar y in [-20, 20]\nminimize {\n  f1: 2 + (x - 2)^2 + (y - 1)^2\n"
        "  f2: 9 * x - (y - 1)^2\n}\nsubject to {\n  x^2 + y^2 <= 225\n  x - 3 * y + 10 <= 0\n}\n",
        _srn(),
        None,
    ),
    "tnk": (
        "var x in [1e-9, pi]\nvar y in [1e-9, pi]\nminimize {\n  f1: x\n  f2: y\n}\n"
        "subject to {\n  x^2 + y^2 - 1 - 0.1 * cos(16 * atan(x / y)) >= 0\n  (x - 0.5)^2 + (y - 0.5)^2 <= 0.5\n}\n",
        _tnk(),
        None,
    ),
    "osy": (
        "var a in [0, 10]\nvar b in [0, 10]\nvar c in [1, 5]\nvar d in [0, 6]\nvar e in [1, 5]\nvar f in [0, 10]\n"
        "minimize {\n  f1: -(25 * (a - 2)^2 + (b - 2)^2 + (c - 1)^2 + (d - 4)^2 + (e - 1)^2)\n"
        "  f2: a^2 + b^2 + c^2 + d^2 + e^2 + f^2\n}\nsubject to {\n  a + b >= 2\n  a + b <= 6\n  b - a <= 2\n"
        "  a - 3 * b <= 2\n  (c - 3)^2 + d <= 4\n  (e - 3)^2 + f >= 4\n}\n",
        _osy(),
        None,
    ),
}

# the constraints g(X) <= 0 (columns) of the constrained problems, for pymoo
CONSTRAINTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "quarter-circle": lambda X: np.stack([1 - X[:, 0] ** 2 - X[:, 1] ** 2], 1),
    "constr": lambda X: np.stack([6 - X[:, 1] - 9 * X[:, 0], 1 + X[:, 1] - 9 * X[:, 0]], 1),
    "bnh": lambda X: np.stack(
        [(X[:, 0] - 5) ** 2 + X[:, 1] ** 2 - 25, 7.7 - (X[:, 0] - 8) ** 2 - (X[:, 1] + 3) ** 2], 1
    ),
    "srn": lambda X: np.stack([X[:, 0] ** 2 + X[:, 1] ** 2 - 225, X[:, 0] - 3 * X[:, 1] + 10], 1),
    "tnk": lambda X: np.stack(
        [
            1 + 0.1 * np.cos(16 * np.arctan(X[:, 0] / X[:, 1])) - X[:, 0] ** 2 - X[:, 1] ** 2,
            (X[:, 0] - 0.5) ** 2 + (X[:, 1] - 0.5) ** 2 - 0.5,
        ],
        1,
    ),
    "osy": lambda X: np.stack(
        [
            2 - X[:, 0] - X[:, 1],
            X[:, 0] + X[:, 1] - 6,
            X[:, 1] - X[:, 0] - 2,
            X[:, 0] - 3 * X[:, 1] - 2,
            (X[:, 2] - 3) ** 2 + X[:, 3] - 4,
            4 - (X[:, 4] - 3) ** 2 - X[:, 5],
        ],
        1,
    ),
}


def _np_problem(name: str) -> tuple[int, int, np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]] | None:
    """(n_var, n_obj, lower, upper, F(X)) of the problems pymoo runs here."""
    if name == "fonseca":
        return (
            3,
            2,
            np.full(3, -4.0),
            np.full(3, 4.0),
            lambda X: np.stack([1 - np.exp(-((X - C3) ** 2).sum(1)), 1 - np.exp(-((X + C3) ** 2).sum(1))], 1),
        )
    if name == "quarter-circle":
        return 2, 2, np.zeros(2), np.ones(2), lambda X: X.copy()
    if name == "constr":
        return (
            2,
            2,
            np.array([0.1, 0.0]),
            np.array([1.0, 5.0]),
            lambda X: np.stack([X[:, 0], (1 + X[:, 1]) / X[:, 0]], 1),
        )
    if name == "bnh":
        return (
            2,
            2,
            np.zeros(2),
            np.array([5.0, 3.0]),
            lambda X: np.stack([4 * X[:, 0] ** 2 + 4 * X[:, 1] ** 2, (X[:, 0] - 5) ** 2 + (X[:, 1] - 5) ** 2], 1),
        )
    if name == "srn":
        return (
            2,
            2,
            np.full(2, -20.0),
            np.full(2, 20.0),
            lambda X: np.stack([2 + (X[:, 0] - 2) ** 2 + (X[:, 1] - 1) ** 2, 9 * X[:, 0] - (X[:, 1] - 1) ** 2], 1),
        )
    if name == "tnk":
        return 2, 2, np.full(2, 1e-9), np.full(2, math.pi), lambda X: X.copy()
    if name == "osy":
        return 6, 2, np.array([0.0, 0, 1, 0, 1, 0]), np.array([10.0, 10, 5, 6, 5, 10]), _osy_f
    if name == "schaffer":
        return 1, 2, np.array([-10.0]), np.array([10.0]), lambda X: np.stack([X[:, 0] ** 2, (X[:, 0] - 2) ** 2], 1)
    if name == "quadratics-far":  # pymoo needs a box: one of width 10 around the front
        c = np.array([1000.0, 1000.0])
        return 2, 2, c - 5, c + 5, lambda X: np.stack([((X - c) ** 2).sum(1), ((X - c - [1, 0]) ** 2).sum(1)], 1)
    if name == "quadratics":
        return 2, 2, np.full(2, -3.0), np.full(2, 3.0), lambda X: np.stack([(X**2).sum(1), ((X - 1) ** 2).sum(1)], 1)
    if name in ("distances-free", "distances-half"):  # pymoo needs a box: [-2, 5]² (or [0, 7]²) around the segment
        lo_d = -2.0 if name == "distances-free" else 0.0
        a, b = np.array([3.0, 0.0]), np.array([0.0, 3.0])
        return (
            2,
            2,
            np.full(2, lo_d),
            np.full(2, lo_d + 7),
            lambda X: np.stack([((X - a) ** 2).sum(1), ((X - b) ** 2).sum(1)], 1),
        )
    if name == "zdt4":

        def f(X: np.ndarray) -> np.ndarray:
            g = 91 + (X[:, 1:] ** 2 - 10 * np.cos(4 * np.pi * X[:, 1:])).sum(1)
            return np.stack([X[:, 0], g * (1 - np.sqrt(X[:, 0] / g))], 1)

        lo = np.r_[0.0, np.full(9, -5.0)]
        return 10, 2, lo, np.r_[1.0, np.full(9, 5.0)], f
    if name == "kursawe":
        return 3, 2, np.full(3, -5.0), np.full(3, 5.0), _kursawe_f
    if name in ("portfolio", "ball2"):  # a simplex and a ball: not a box for pymoo
        return None
    if name == "distances3":  # pymoo needs a box: one holding the triangle with room on every side
        return 2, 3, np.full(2, -2.0), np.full(2, 3.0), _distances_f
    if name == "dtlz1-inv":

        def fi(X: np.ndarray) -> np.ndarray:
            g, a, b = ((X[:, 2:] - 0.5) ** 2).sum(1), X[:, 0], X[:, 1]
            return 0.5 * (1 + g)[:, None] * np.stack([1 - a * b, 1 - a * (1 - b), a], 1)

        return 12, 3, np.zeros(12), np.ones(12), fi
    if name == "zdt1-abs":

        def fa(X: np.ndarray) -> np.ndarray:
            g = 1 + 9 * np.abs(X[:, 1:] - 0.5).mean(1)
            return np.stack([X[:, 0], g * (1 - np.sqrt(X[:, 0] / g))], 1)

        return 10, 2, np.zeros(10), np.ones(10), fa
    if name == "zdt6":

        def f6(X: np.ndarray) -> np.ndarray:
            f = 1 - np.exp(-4 * X[:, 0]) * np.sin(6 * np.pi * X[:, 0]) ** 6
            g = 1 + 9 * X[:, 1:].mean(1) ** 0.25
            return np.stack([f, g * (1 - (f / g) ** 2)], 1)

        return 10, 2, np.zeros(10), np.ones(10), f6
    alpha = 100 if name == "dtlz4" else 1

    def fd(X: np.ndarray) -> np.ndarray:
        g = (X[:, 2:] ** 0.1).sum(1) if name == "dtlz6" else ((X[:, 2:] - 0.5) ** 2).sum(1)
        if name == "dtlz2-abs":
            g = np.abs(X[:, 2:] - 0.5).sum(1)
        if name == "dtlz3":
            g = 100 * (10 + ((X[:, 2:] - 0.5) ** 2 - np.cos(20 * np.pi * (X[:, 2:] - 0.5))).sum(1))
        a = X[:, 0] ** alpha
        b = X[:, 1] ** alpha if name == "dtlz4" else (1 + 2 * g * X[:, 1]) / (2 * (1 + g))
        h = math.pi / 2
        r = 1 + g
        return np.stack([r * np.cos(h * a) * np.cos(h * b), r * np.cos(h * a) * np.sin(h * b), r * np.sin(h * a)], 1)

    if name == "minus-dtlz2":
        return 12, 3, np.zeros(12), np.ones(12), lambda X: -fd(X)
    return 12, 3, np.zeros(12), np.ones(12), fd


def run_pymoo(name: str, algo: str, evals: int, seed: int) -> np.ndarray:
    """The non-dominated F of NSGA-II / NSGA-III after `evals` evaluations."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize
    from pymoo.util.ref_dirs import get_reference_directions

    spec = _np_problem(name)
    assert spec is not None
    n, m, lo, hi, fn = spec

    class P(Problem):
        def __init__(self) -> None:
            super().__init__(
                n_var=n,
                n_obj=m,
                n_ieq_constr=CONSTRAINTS[name](lo[None]).shape[1] if name in CONSTRAINTS else 0,
                xl=lo,
                xu=hi,
            )

        def _evaluate(self, X: np.ndarray, out: dict, *args: object, **kwargs: object) -> None:
            out["F"] = fn(X)
            if name in CONSTRAINTS:
                out["G"] = CONSTRAINTS[name](X)

    dirs = get_reference_directions("das-dennis", m, n_partitions=99 if m == 2 else 12)
    alg = NSGA2(pop_size=100) if algo == "NSGA-II" else NSGA3(ref_dirs=dirs, pop_size=int(math.ceil(len(dirs) / 4) * 4))
    res = minimize(P(), alg, ("n_eval", evals), seed=seed, verbose=False)
    return nondominated(np.asarray(res.opt.get("F"), dtype=np.float64))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-pymoo", action="store_true")
    ap.add_argument("--set", action="append", default=[], help="a paretom3 option KEY=VALUE (repeatable)")
    args = ap.parse_args()
    opts = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        if v.lower() in ("true", "false"):
            opts[k] = v.lower() == "true"
            continue
        try:
            opts[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            opts[k] = v
    names = [s for s in args.only.split(",") if s] or list(PROBLEMS)
    pymoo_evals = int(opts.get("front_evals", 4000))  # equal evaluations when the budget is set
    seeds = [int(s) for s in args.seeds.split(",")]
    print("| problem | seed | method | status | evaluations | front size | HV / exact | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        text, front, hv_exact = PROBLEMS[name]
        R = front() if callable(front) else front
        lo_, hi_ = R.min(0), R.max(0)
        ref = np.full(3, 1.1) if name in ("dtlz4", "dtlz2-abs") else hi_ + 0.1 * (hi_ - lo_)
        exact = hv_exact if hv_exact is not None else hypervolume(R, ref)
        for seed in seeds:
            t = time.perf_counter()
            res = optlang.parse(text).solve(seed=seed, options=opts or None)
            secs = time.perf_counter() - t
            keys = list(res.info["front"][0]["objectives"]) if res.info["front"] else []
            F = np.array([[p["objectives"][k] for k in keys] for p in res.info["front"]], dtype=np.float64)
            F = F[np.all(F < ref, axis=1)] if F.size else F
            hv = hypervolume(F, ref) / exact if F.size else 0.0
            print(
                f"| {name} | {seed} | paretom3 | {res.status.value} | {res.info['evaluations']} "
                f"| {res.info['front_size']} | {hv:.4f} | {secs:.2f} |",
                flush=True,
            )
            if args.no_pymoo or _np_problem(name) is None:  # (pymoo takes box domains only)
                continue
            try:
                import pymoo  # noqa: F401
            except ImportError:
                continue
            for algo in ("NSGA-II", "NSGA-III"):
                t = time.perf_counter()
                G = run_pymoo(name, algo, pymoo_evals, seed)
                secs = time.perf_counter() - t
                G = G[np.all(G < ref, axis=1)]
                hv = hypervolume(G, ref) / exact if G.size else 0.0
                row = f"| {name} | {seed} | {algo} | — | {pymoo_evals} | {G.shape[0]} | {hv:.4f} | {secs:.2f} |"
                print(row, flush=True)


if __name__ == "__main__":
    main()
