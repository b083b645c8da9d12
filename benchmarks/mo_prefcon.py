"""Random preference models under general constraints whose exact answer is a one-dimensional problem:
how often paretom3's preferred point is right, and whether its status ever claims more than it found.

Families (two objectives; the language's `subject to`):
- `half`, `ball`, `plane`: f1 = T1(‖x − a‖²), f2 = T2(‖x − b‖²) (T strictly increasing: identity,
  log(1 + ·), square) in n = 2, 3 or 5 variables, with a half-space n·x ≤ β, a ball ‖x − c‖² ≤ r² or a
  hyperplane n·x = β that cuts the segment [a, b]. The feasible set K is convex, so the Pareto set is
  the projection of the segment onto K: x(t) = P_K(a + t (b − a)), t ∈ [0, 1].
- `constr`: Deb's CONSTR (f1 = x, f2 = (1 + y)/x, y + 9x ≥ 6, −y + 9x ≥ 1; the Pareto set follows the
  first constraint for x ∈ [7/18, 2/3] and the bound y = 0 after: a kink where one leaves and the other
  takes over).
- `zdtc`: ZDT-like in n = 3 or 5 variables (f1 = x₀, g = 1 + 9·mean(x₁…), f2 = g·(1 − √(f1/g)) or
  g·(1 − (f1/g)²)) with x₀ + x₁ ≥ s: the Pareto set is x₁ = max(0, s − x₀), the others 0, a kink at x₀ = s.
Preferences: distance of F to a point, a weighted sum, a target for f1, a target for x (not `constr`).
The exact answer minimizes the preference along the Pareto set's parametrization (200 001-point grid,
then a bounded scalar refinement). A run is a hit when its preference value is within 1e-4 (relative
above 1) of the exact one, x lies within 1e-4 of the Pareto set and keeps the constraints to 1e-6; a
`converged` miss is a false claim.
`--prefs cheb,l1` draws the Chebyshev achievement or Σ|f_k − r_k| instead (not for `constr`, whose
preferences are its own).
Usage: .venv/bin/python benchmarks/mo_prefcon.py [--seed 0] [--n 30] [--family half,ball,plane,constr,zdtc]
       [--prefs cheb,l1]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import mo_prefnd
import numpy as np
from mo_prefnd import TRANSFORMS, Case, Vec, _distance_to_curve, _exact, _preference, _vec

import optlang

BOX = 4.0  # variables in [-BOX, BOX]; a draw whose Pareto set leaves the box is drawn again


Projector = tuple[str, Callable[[Vec], Vec], Callable[[Vec], float]]


def _projector(rnd: random.Random, family: str, a: Vec, b: Vec) -> Projector:
    """The constraint's source, the projection onto K for (k, n) rows, and the violation of one x."""
    n = a.size
    t = rnd.uniform(0.25, 0.75)
    p = a + t * (b - a)
    if family == "ball":
        c = np.round(p + np.array([rnd.uniform(-0.5, 0.5) for _ in range(n)]), 2)
        r = round(float(np.linalg.norm(p - c)) + rnd.uniform(0.2, 0.8), 2)

        def proj_ball(X: Vec) -> Vec:
            d = X - c
            nd = np.linalg.norm(d, axis=1, keepdims=True)
            return np.where(nd > r, c + d * r / np.maximum(nd, 1e-300), X)

        src = f"sumsq(x - {_vec(c)}) <= {r**2:.6g}"
        return src, proj_ball, lambda x: max(0.0, float(((x - c) ** 2).sum()) - r**2)
    normal = np.round(np.array([rnd.uniform(-1, 1) for _ in range(n)]), 2)
    if not np.any(normal):
        normal[0] = 1.0
    beta = round(float(normal @ p), 2)
    nn = float(normal @ normal)
    if family == "plane":

        def proj_plane(X: Vec) -> Vec:
            return X - ((X @ normal - beta) / nn)[:, None] * normal

        return f"dot(x, {_vec(normal)}) == {beta}", proj_plane, lambda x: abs(float(x @ normal) - beta)

    def proj_half(X: Vec) -> Vec:
        return X - (np.maximum(X @ normal - beta, 0.0) / nn)[:, None] * normal

    return f"dot(x, {_vec(normal)}) <= {beta}", proj_half, lambda x: max(0.0, float(x @ normal) - beta)


def _draw_convex(rnd: random.Random, family: str) -> tuple[Case, Callable[[Vec], float]]:
    while True:
        n = rnd.choice([2, 3, 5])
        a = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]), 2)
        b = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]), 2)
        con, proj, viol = _projector(rnd, family, a, b)

        def curve(T: Vec, a: Vec = a, b: Vec = b, proj: Callable[[Vec], Vec] = proj) -> Vec:
            return proj(a[None] + T[:, None] * (b - a)[None])

        if np.abs(curve(np.linspace(0, 1, 101))).max() < BOX - 0.1:
            break
    picks = [rnd.choice([TRANSFORMS[0], *TRANSFORMS[2:]]) for _ in range(2)]  # no kink (√) here
    exprs = [t.format(s=f"sumsq(x - {_vec(c)})") for (t, _), c in zip(picks, (a, b), strict=True)]

    def F(X: Vec) -> tuple[Vec, ...]:
        return tuple(fn(((X - c) ** 2).sum(-1)) for (_, fn), c in zip(picks, (a, b), strict=True))

    pref, phi, kind = _preference(rnd, n, ["dist", "lin", "f1", "x"])
    src = (
        f"var x[{n}] in [-{BOX}, {BOX}]\nminimize {{\n  f1: {exprs[0]}\n  f2: {exprs[1]}\n}}\n"
        f"subject to {{ {con} }}\nprefer {pref}\n"
    )
    return Case(src, curve, F, phi, lambda x: _distance_to_curve(curve, x), f"{family} n={n} {kind}"), viol


def _draw_constr(rnd: random.Random) -> tuple[Case, Callable[[Vec], float]]:
    def curve(T: Vec) -> Vec:
        x = 7 / 18 + T * 11 / 18
        return np.stack([x, np.maximum(0.0, 6 - 9 * x)], 1)

    def F(X: Vec) -> tuple[Vec, ...]:
        return X[:, 0], (1 + X[:, 1]) / X[:, 0]

    kind = rnd.choice(["dist", "lin", "f1"])
    r1, r2 = round(rnd.uniform(0.3, 1.0), 2), round(rnd.uniform(1.0, 8.0), 2)
    if kind == "dist":
        pref, phi = f"(f1 - {r1})^2 + (f2 - {r2})^2", lambda G, X: (G[0] - r1) ** 2 + (G[1] - r2) ** 2
    elif kind == "lin":
        w = round(rnd.uniform(0.02, 0.5), 2)
        pref, phi = f"f1 + {w} * f2", lambda G, X: G[0] + w * G[1]
    else:
        pref, phi = f"(f1 - {r1})^2", lambda G, X: (G[0] - r1) ** 2
    src = (
        "var x in [0.1, 1]\nvar y in [0, 5]\nminimize {\n  f1: x\n  f2: (1 + y) / x\n}\n"
        f"subject to {{\n  y + 9 * x >= 6\n  -y + 9 * x >= 1\n}}\nprefer {pref}\n"
    )

    def viol(z: Vec) -> float:
        x, y = float(z[0]), float(z[1])
        return max(0.0, 6 - y - 9 * x, 1 + y - 9 * x)

    return Case(src, curve, F, phi, lambda z: _distance_to_curve(curve, z), f"constr {kind}"), viol


def _draw_zdtc(rnd: random.Random) -> tuple[Case, Callable[[Vec], float]]:
    n = rnd.choice([3, 5])
    s = round(rnd.uniform(0.2, 0.8), 2)
    concave = rnd.random() < 0.5

    def curve(T: Vec) -> Vec:
        X = np.zeros((T.size, n))
        X[:, 0] = T
        X[:, 1] = np.maximum(0.0, s - T)
        return X

    def F(X: Vec) -> tuple[Vec, ...]:
        g = 1 + 9 * X[:, 1:].mean(1)
        f1 = X[:, 0]
        return f1, g * (1 - (f1 / g) ** 2) if concave else g * (1 - np.sqrt(np.maximum(f1, 0) / g))

    f2 = "g * (1 - (x[0] / g)^2)" if concave else "g * (1 - sqrt(x[0] / g))"
    pref, phi, kind = _preference(rnd, n, ["dist", "lin", "f1"], r2_max=1.0)
    src = (
        f"var x[{n}] in [0, 1]\nlet g = 1 + 9 * mean(x[1:])\nminimize {{\n  f1: x[0]\n  f2: {f2}\n}}\n"
        f"subject to {{ x[0] + x[1] >= {s} }}\nprefer {pref}\n"
    )

    def viol(x: Vec) -> float:
        return max(0.0, s - float(x[0] + x[1]))

    shape = "concave" if concave else "convex"
    return Case(src, curve, F, phi, lambda x: _distance_to_curve(curve, x), f"zdtc {shape} n={n} {kind}"), viol


def _draw(rnd: random.Random, family: str) -> tuple[Case, Callable[[Vec], float]]:
    if family == "constr":
        return _draw_constr(rnd)
    if family == "zdtc":
        return _draw_zdtc(rnd)
    return _draw_convex(rnd, family)


def _point(res: optlang.Result, family: str) -> Vec:
    if family == "constr":
        return np.array([float(res.values["x"]), float(res.values["y"])])
    return np.asarray(res.values["x"], dtype=np.float64).reshape(-1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--family", default="half,ball,plane,constr,zdtc")
    ap.add_argument("--show", action="store_true", help="print each model's source")
    ap.add_argument("--prefs", default="", help="preference kinds for the drawn families (as mo_prefnd.py's)")
    args = ap.parse_args()
    mo_prefnd.KINDS_OVERRIDE[:] = [k for k in args.prefs.split(",") if k]
    rnd = random.Random(args.seed)
    families = args.family.split(",")
    hits = false_claims = 0
    print("| case | model | status | preference error | distance to the Pareto set | violation | seconds |")
    print("|---|---|---|---|---|---|---|")
    for i in range(args.n):
        family = families[i % len(families)]
        case, viol = _draw(rnd, family)
        best, _ = _exact(case)
        t = time.perf_counter()
        res = optlang.parse(case.src).solve(seed=i)
        secs = time.perf_counter() - t
        if not res.values:
            print(f"| {i} | {case.label} | {res.status.value} | — | — | — | {secs:.1f} |", flush=True)
            false_claims += res.status.value == "converged"
            print("```\n" + case.src + "```")
            continue
        x = _point(res, family)
        err = float(case.phi(case.F(x[None]), x[None])[0]) - best
        d, v = case.dist(x), viol(x)
        hit = abs(err) <= 1e-4 * max(1.0, abs(best)) and d <= 1e-4 and v <= 1e-6
        hits += hit
        false_claims += (not hit) and res.status.value == "converged"
        print(f"| {i} | {case.label} | {res.status.value} | {err:.1e} | {d:.1e} | {v:.1e} | {secs:.1f} |", flush=True)
        if args.show or not hit:
            print("```\n" + case.src + "```")
    print(f"\nhits {hits} / {args.n}; misses claimed converged: {false_claims}")


if __name__ == "__main__":
    main()
