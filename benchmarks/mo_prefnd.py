"""Random several-variable preference models whose exact answer is a one-dimensional problem: how often
paretom3's preferred point is right, and whether its status ever claims more than it found.

Families (n = 2…8 variables, two objectives):
- `seg`: f1 = T1(‖x − a‖²), f2 = T2(‖x − b‖²) with T strictly increasing (identity, square root —
  `norm2`, a kink at a —, log(1 + ·), square); the Pareto set is the segment [a, b].
- `wquad`: f_k = T_k(Σ w_k (x − c_k)²) with positive weights; the Pareto set is the curve
  x(λ) = (λ w1 a + (1 − λ) w2 b) / (λ w1 + (1 − λ) w2), λ ∈ [0, 1].
- `seg3` (not in the default mix; `--family seg3`): three objectives T_k(‖x − c_k‖²) with the third
  centre on the segment [c1, c2] (at 1/4, 1/2 or 3/4), so the Pareto set is still that segment.
- `zdt`: x ∈ [0, 1]ⁿ, f1 = x₀, g = 1 + 9·mean(x₁…) or 1 + ‖x₁… − c‖², f2 = g·(1 − √(f1/g)) or
  g·(1 − (f1/g)²); the Pareto set is x₁… = argmin g, x₀ ∈ [0, 1] (preferences that do not reward a
  weakly-Pareto point at f1 = 0 only: a target for f2 of at most 1).
- `zdtabs` (not in the default mix; `--family zdtabs`): `zdt` with g = 1 + 9·mean|x₁… − c|, so the
  Pareto set lies on the kinks of every |x_i − c_i| (ZDT1 with an L1 distance, as WFG's s_linear).
Preferences: distance of F to a point, a weighted sum, a target for x (`seg`, `wquad`), a target for f1.
The exact answer minimizes the preference over the Pareto set's parametrization (200 001-point grid,
then a bounded scalar refinement). A run is a hit when its preference value is within 1e-4 (relative
above 1) of the exact one and x lies within 1e-4 of the Pareto set; a `converged` miss is a false claim.
`--prefs cheb,l1` draws nonsmooth preferences instead: the Chebyshev achievement max_k w_k (f_k − r_k)
(the reference-point method's) and Σ_k |f_k − r_k|.
`--free` writes `seg`, `wquad` and `seg3` with free variables (`var x[n]`, no box), as a user might.
Usage: .venv/bin/python benchmarks/mo_prefnd.py [--seed 0] [--n 30] [--family seg,wquad,zdt] [--prefs cheb,l1] [--free]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

import optlang

Vec = np.ndarray
# strictly increasing transforms of a squared distance s: (language template, numpy)
TRANSFORMS: list[tuple[str, Callable[[Vec], Vec]]] = [
    ("{s}", lambda s: s),
    ("sqrt({s})", np.sqrt),
    ("log(1 + {s})", np.log1p),
    ("({s})^2", lambda s: s**2),
]


@dataclass
class Case:
    """One model: its source, the Pareto set's parametrization t ∈ [0, 1] → x(t), and numpy F and φ."""

    src: str
    curve: Callable[[Vec], Vec]  # (k,) → (k, n)
    F: Callable[[Vec], tuple[Vec, ...]]  # (k, n) → f1, f2, … each (k,)
    phi: Callable[[tuple[Vec, ...], Vec], Vec]  # (f1, f2, …), X → (k,)
    dist: Callable[[Vec], float]  # distance of one x to the Pareto set
    label: str


def _vec(v: Vec) -> str:
    return "[" + ", ".join(f"{float(t):.2f}" for t in v) + "]"


BOX = " in [-3, 3]"  # the seg / wquad / seg3 variables' domain; `--free`: none (free variables)
# `--prefs`: replaces every family's preference kinds (e.g. "cheb,l1": nonsmooth preferences)
KINDS_OVERRIDE: list[str] = []


def _preference(
    rnd: random.Random, n: int, kinds: list[str], r2_max: float = 1.5, m: int = 2
) -> tuple[str, Callable[[tuple[Vec, ...], Vec], Vec], str]:
    kind = rnd.choice(KINDS_OVERRIDE or kinds)
    r = [round(rnd.uniform(0, 1.5), 2), round(rnd.uniform(0, r2_max), 2)]
    r += [round(rnd.uniform(0, 1.5), 2) for _ in range(m - 2)]
    if kind == "cheb":  # the reference-point method's achievement: a kink where two pieces meet
        w = [round(rnd.uniform(0.5, 2.0), 2) for _ in range(m)]
        src = f"{w[0]} * (f1 - {r[0]})"
        for k in range(1, m):
            src = f"maximum({src}, {w[k]} * (f{k + 1} - {r[k]}))"
        return src, lambda F, X: np.max([w[k] * (F[k] - r[k]) for k in range(m)], axis=0), kind
    if kind == "l1":
        src = " + ".join(f"abs(f{k + 1} - {r[k]})" for k in range(m))
        return src, lambda F, X: sum(np.abs(F[k] - r[k]) for k in range(m)), kind
    if kind == "dist":
        src = " + ".join(f"(f{k + 1} - {r[k]})^2" for k in range(m))
        return src, lambda F, X: sum((F[k] - r[k]) ** 2 for k in range(m)), kind
    if kind == "lin":
        src = "f1 + " + " + ".join(f"{r[k - 1]} * f{k + 1}" for k in range(1, m))
        return src, lambda F, X: F[0] + sum(r[k - 1] * F[k] for k in range(1, m)), kind
    if kind == "f1":
        return f"(f1 - {r[0]})^2", lambda F, X: (F[0] - r[0]) ** 2, kind
    c = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]), 2)
    return f"sumsq(x - {_vec(c)})", lambda F, X: ((X - c) ** 2).sum(-1), kind


def _distance_to_curve(curve: Callable[[Vec], Vec], x: Vec) -> float:
    T = np.linspace(0.0, 1.0, 20_001)
    d = np.linalg.norm(curve(T) - x, axis=1)
    k = int(np.argmin(d))
    lo, hi = T[max(k - 1, 0)], T[min(k + 1, T.size - 1)]
    r = minimize_scalar(
        lambda t: float(np.linalg.norm(curve(np.array([t]))[0] - x)),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return min(float(d[k]), float(r.fun))


def _draw(rnd: random.Random, family: str) -> Case:
    n = rnd.choice([2, 3, 5, 8])
    if family == "seg3":
        # three centres on a line (the third at a quarter, half or three quarters of [a, b], all on a
        # 0.01 grid): the Pareto set of three increasing transforms of squared distances is [a, b]
        a = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]) / 0.04) * 0.04
        b = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]) / 0.04) * 0.04
        c3 = a + rnd.choice([0.25, 0.5, 0.75]) * (b - a)
        cs = [a, b, c3]
        picks = [rnd.choice(TRANSFORMS) for _ in range(3)]
        exprs = [t.format(s=f"sumsq(x - {_vec(c)})") for (t, _), c in zip(picks, cs, strict=True)]

        def F3(X: Vec, cs: list[Vec] = cs, picks: list = picks) -> tuple[Vec, ...]:
            return tuple(T(((X - c) ** 2).sum(-1)) for (_, T), c in zip(picks, cs, strict=True))

        def seg(T: Vec, a: Vec = a, b: Vec = b) -> Vec:
            return a + T[:, None] * (b - a)

        pref, phi, kind = _preference(rnd, n, ["dist", "lin", "x", "f1"], m=3)
        body = "\n".join(f"  f{k + 1}: {e}" for k, e in enumerate(exprs))
        src = f"var x[{n}]{BOX}\nminimize {{\n{body}\n}}\nprefer {pref}\n"
        return Case(src, seg, F3, phi, lambda x, seg=seg: _distance_to_curve(seg, x), f"seg3 n={n} {kind}")
    if family in ("seg", "wquad"):
        a = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]), 2)
        b = np.round(np.array([rnd.uniform(-2, 2) for _ in range(n)]), 2)
        if family == "seg":
            w1 = w2 = np.ones(n)
            s1, s2 = f"sumsq(x - {_vec(a)})", f"sumsq(x - {_vec(b)})"
        else:
            w1 = np.round(np.array([rnd.uniform(0.3, 3) for _ in range(n)]), 2)
            w2 = np.round(np.array([rnd.uniform(0.3, 3) for _ in range(n)]), 2)
            s1, s2 = f"sum({_vec(w1)} * (x - {_vec(a)})^2)", f"sum({_vec(w2)} * (x - {_vec(b)})^2)"
        (t1, T1), (t2, T2) = rnd.choice(TRANSFORMS), rnd.choice(TRANSFORMS)
        if t1 == "sqrt({s})" and family == "seg":
            t1s = f"norm2(x - {_vec(a)})"
        else:
            t1s = t1.format(s=s1)
        e1, e2 = t1s, t2.format(s=s2)

        def curve(T: Vec, a: Vec = a, b: Vec = b, w1: Vec = w1, w2: Vec = w2) -> Vec:
            L = T[:, None]
            return (L * w1 * a + (1 - L) * w2 * b) / (L * w1 + (1 - L) * w2)

        def F(X: Vec, a: Vec = a, b: Vec = b, w1: Vec = w1, w2: Vec = w2, T1=T1, T2=T2) -> tuple[Vec, Vec]:
            return T1((w1 * (X - a) ** 2).sum(-1)), T2((w2 * (X - b) ** 2).sum(-1))

        pref, phi, kind = _preference(rnd, n, ["dist", "lin", "x", "f1"])
        src = f"var x[{n}]{BOX}\nminimize {{\n  f1: {e1}\n  f2: {e2}\n}}\nprefer {pref}\n"
        return Case(src, curve, F, phi, lambda x, curve=curve: _distance_to_curve(curve, x), f"{family} n={n} {kind}")
    # zdt (zdtabs: g on the kinks of |x_i − c_i|)
    lin = rnd.random() < 0.5
    c = np.round(np.array([rnd.uniform(0.1, 0.9) for _ in range(n - 1)]), 2)
    g_src = "1 + 9 * mean(x[1:])" if lin else f"1 + sumsq(x[1:] - {_vec(c)})"
    g_min = np.zeros(n - 1) if lin else c
    if family == "zdtabs":
        lin, g_src, g_min = False, f"1 + 9 * mean(abs(x[1:] - {_vec(c)}))", c
    convex = rnd.random() < 0.5
    f2_src = "g * (1 - sqrt(x[0] / g))" if convex else "g * (1 - (x[0] / g)^2)"

    def g_np(X: Vec, lin: bool = lin, c: Vec = c, kinked: bool = family == "zdtabs") -> Vec:
        R = X[..., 1:]
        if kinked:
            return 1 + 9 * np.abs(R - c).mean(-1)
        return 1 + 9 * R.mean(-1) if lin else 1 + ((R - c) ** 2).sum(-1)

    def Fz(X: Vec, convex: bool = convex) -> tuple[Vec, Vec]:
        f1, g = X[..., 0], g_np(X)
        return f1, g * (1 - np.sqrt(f1 / g)) if convex else g * (1 - (f1 / g) ** 2)

    def curve_z(T: Vec, g_min: Vec = g_min) -> Vec:
        return np.concatenate([T[:, None], np.broadcast_to(g_min, (T.size, g_min.size))], 1)

    # r2 ≤ 1: a target for f2 above the front's top would make a weakly-Pareto point of the face f1 = 0
    # (any x₁…, f2 = g ≥ 1) better than every Pareto point, and the claim is weak Pareto optimality
    pref, phi, kind = _preference(rnd, n, ["dist", "lin", "f1"], r2_max=1.0)
    src = f"var x[{n}] in [0, 1]\nlet g = {g_src}\nminimize {{\n  f1: x[0]\n  f2: {f2_src}\n}}\nprefer {pref}\n"
    return Case(
        src,
        curve_z,
        Fz,
        phi,
        lambda x, g_min=g_min: float(np.linalg.norm(x[1:] - g_min)),
        f"zdt n={n} {'abs' if family == 'zdtabs' else 'lin' if lin else 'sq'} "
        f"{'convex' if convex else 'concave'} {kind}",
    )


def _exact(case: Case) -> tuple[float, Vec]:
    T = np.linspace(0.0, 1.0, 200_001)
    X = case.curve(T)
    P = case.phi(case.F(X), X)
    k = int(np.argmin(P))

    def along(t: float) -> float:
        x = case.curve(np.array([t]))
        return float(case.phi(case.F(x), x)[0])

    r = minimize_scalar(
        along, bounds=(T[max(k - 2, 0)], T[min(k + 2, T.size - 1)]), method="bounded", options={"xatol": 1e-13}
    )
    if float(r.fun) < float(P[k]):
        return float(r.fun), case.curve(np.array([float(r.x)]))[0]
    return float(P[k]), X[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--family", default="seg,wquad,zdt")
    ap.add_argument("--show", action="store_true", help="print each model's source")
    ap.add_argument("--free", action="store_true", help="seg / wquad / seg3 with free variables (no box)")
    ap.add_argument("--prefs", default="", help="preference kinds for every family (dist, lin, f1, x, cheb, l1)")
    args = ap.parse_args()
    global BOX
    BOX = "" if args.free else BOX
    KINDS_OVERRIDE[:] = [k for k in args.prefs.split(",") if k]
    rnd = random.Random(args.seed)
    families = args.family.split(",")
    hits = false_claims = 0
    print("| case | model | status | preference error | distance to the Pareto set | seconds |")
    print("|---|---|---|---|---|---|")
    for i in range(args.n):
        case = _draw(rnd, families[i % len(families)])
        best, _ = _exact(case)
        t = time.perf_counter()
        res = optlang.parse(case.src).solve(seed=i)
        secs = time.perf_counter() - t
        x = np.asarray(res.values["x"], dtype=np.float64).reshape(1, -1)
        err = float(case.phi(case.F(x), x)[0]) - best
        d = case.dist(x[0])
        hit = err <= 1e-4 * max(1.0, abs(best)) and d <= 1e-4
        hits += hit
        false_claims += (not hit) and res.status.value == "converged"
        print(f"| {i} | {case.label} | {res.status.value} | {err:.1e} | {d:.1e} | {secs:.1f} |", flush=True)
        if args.show or not hit:
            print("```\n" + case.src + "```")
    print(f"\nhits {hits} / {args.n}; misses claimed converged: {false_claims}")


if __name__ == "__main__":
    main()
