"""Constrained multi-objective test suites: Deb's CTP2–CTP8 (Deb, Pratap & Meyarivan, "Constrained test problems
for multi-objective evolutionary optimization", EMO 2001; five variables, g = 1 + Σ y) and Ma & Wang's MW1–MW3,
MW6, MW7, MW9, MW11, MW12 (Ma & Wang, "Evolutionary constrained multiobjective optimization: test suite
construction and performance comparisons", IEEE TEVC 2019; 15 variables, pymoo's definitions), written as `.opt`
models and solved as a user would (`optlang.parse(text).solve(seed)`), scored by hypervolume against exact fronts;
NSGA-II (pymoo, when installed) at the same evaluations (4 000, or `--set front_evals=N`).

Both suites' objectives depend on the position x and the distance function g ≥ 1 only, so the exact front is the
non-dominated feasible part of a dense (x, g) grid. What they probe: feasible sets that are thin slivers along the
front (MW9, MW11, MW12; CTP2's and CTP7's disconnected pieces), fronts of isolated points at the tips of narrow
feasible tunnels (CTP3, CTP4), infeasible bands that a local front lies above (CTP6, CTP8: a ray that stops on an
upper band's boundary is on a local front), a feasible set no random start hits (MW1: every one of 14 distance
variables within ~0.005 of its centre), and constraints whose size is ~1e4 where the random starts are and O(1) on
the front (MW9's and MW11's products of distances).
HV reference: the exact front's nadir + 10 % of its range.
Usage: .venv/bin/python benchmarks/mo_cmop.py [--seeds 0,1] [--only mw1] [--no-pymoo] [--check] [--set KEY=VALUE ...]
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

PI = math.pi
S2 = math.sqrt(2.0)
D = 15  # MW's variables

# CTP: (θ, a, b, c, d, e) of each constraint cos θ (f2 − e) − sin θ f1 ≥ a |sin(bπ (sin θ (f2 − e) + cos θ f1)^c)|^d
_CTP = {
    "ctp2": [(-0.2 * PI, 0.2, 10, 1, 6, 1)],
    "ctp3": [(-0.2 * PI, 0.1, 10, 1, 0.5, 1)],
    "ctp4": [(-0.2 * PI, 0.75, 10, 1, 0.5, 1)],
    "ctp5": [(-0.2 * PI, 0.1, 10, 2, 0.5, 1)],
    "ctp6": [(0.1 * PI, 40, 0.5, 1, 2, -2)],
    "ctp7": [(-0.05 * PI, 40, 5, 1, 6, 0)],
    "ctp8": [(0.1 * PI, 40, 0.5, 1, 2, -2), (-0.05 * PI, 40, 2, 1, 6, 0)],
}


def _ctp_model(name: str) -> str:
    hi = 20 if name in ("ctp6", "ctp8") else 1
    cons = []
    for th, a, b, c, d, e in _CTP[name]:
        u = f"({math.cos(th)!r} * (f2 - ({e})) - ({math.sin(th)!r}) * x)"
        v = f"({math.sin(th)!r} * (f2 - ({e})) + {math.cos(th)!r} * x)"
        cons.append(f"  {u} >= {a} * abs(sin({b * PI!r} * {v if c == 1 else f'{v}^{c}'}))^{d}")
    return (
        f"var x in [0, 1]\nvar y[4] in [0, {hi}]\nlet g = 1 + sum(y)\nlet f2 = g * (1 - sqrt(x / g))\n"
        "minimize {\n  f1: x\n  f2: f2\n}\nsubject to {\n" + "\n".join(cons) + "\n}\n"
    )


def _ctp_feasible(name: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def ok(f1: np.ndarray, f2: np.ndarray) -> np.ndarray:
        keep = np.ones(f1.shape, dtype=bool)
        for th, a, b, c, d, e in _CTP[name]:
            u = np.cos(th) * (f2 - e) - np.sin(th) * f1
            v = np.sin(th) * (f2 - e) + np.cos(th) * f1
            with np.errstate(invalid="ignore"):
                keep &= u >= a * np.abs(np.sin(b * PI * (v if c == 1 else v**c))) ** d - 1e-12
        return keep

    return ok


def _ctp_objectives(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x, g * (1 - np.sqrt(x / g))


_I = np.arange(1, D)
_G1 = (
    f"param c1 = [{', '.join(f'{v:.12g}' for v in 0.5 + _I / (2 * D))}]\nlet z = y^{D - 2}\n"
    "let g = 1 + sum(1 - exp(-10 * (z - c1)^2))\n"
)
_G2 = (
    f"param c2 = [{', '.join(f'{v:.12g}' for v in _I / D)}]\nlet z = 1 - exp(-10 * (y - c2)^2)\n"
    f"let g = 1 + sum({0.1 / D!r} * z^2 + 1.5 - 1.5 * cos({2 * PI!r} * z))\n"
)
_G3 = "let g = 1 + 2 * (y[0] + (x - 0.5)^2 - 1)^2 + sum(2 * (y[1:] + (y[0:13] - 0.5)^2 - 1)^2)\n"


def _la(a: float, b: float, d: float, t: np.ndarray) -> np.ndarray:
    return a * np.sin(b * PI * t) ** d


def _atan(f0: np.ndarray, f1: np.ndarray) -> np.ndarray:
    return np.arctan(f1 / np.maximum(f0, 1e-300))


_MW: dict[str, tuple[str, float, tuple[str, str], list[str], Callable, Callable]] = {
    "mw1": (
        _G1,
        1.0,
        ("x", "g - 0.85 * x"),
        [f"x + f1 - 1 - 0.5 * sin({2 * PI!r} * ({S2!r} * f1 - {S2!r} * x))^8 <= 0"],
        lambda x, g: (x, g - 0.85 * x),
        lambda a, b: a + b - 1 - _la(0.5, 2, 8, S2 * b - S2 * a) <= 1e-12,
    ),
    "mw2": (
        _G2,
        1.0,
        ("x", "g - x"),
        [f"x + f1 - 1 - 0.5 * sin({3 * PI!r} * ({S2!r} * f1 - {S2!r} * x))^8 <= 0"],
        lambda x, g: (x, g - x),
        lambda a, b: a + b - 1 - _la(0.5, 3, 8, S2 * b - S2 * a) <= 1e-12,
    ),
    "mw3": (
        _G3,
        1.0,
        ("x", "g - x"),
        [
            f"x + f1 - 1.05 - 0.45 * sin({0.75 * PI!r} * ({S2!r} * f1 - {S2!r} * x))^6 <= 0",
            f"0.85 - x - f1 + 0.3 * sin({0.75 * PI!r} * ({S2!r} * f1 - {S2!r} * x))^2 <= 0",
        ],
        lambda x, g: (x, g - x),
        lambda a, b: (
            (a + b - 1.05 - _la(0.45, 0.75, 6, S2 * b - S2 * a) <= 1e-12)
            & (0.85 - a - b + _la(0.3, 0.75, 2, S2 * b - S2 * a) <= 1e-12)
        ),
    ),
    "mw6": (
        _G2,
        1.1,
        ("g * x", "g * sqrt(1.21 - x^2)"),
        [
            "f0^2 / (1 + 0.15 * cos(6 * atan(f1 / f0)^4)^10)^2 + f1^2 / (1 + 0.75 * cos(6 * atan(f1 / f0)^4)^10)^2"
            " - 1 <= 0"
        ],
        lambda x, g: (g * x, g * np.sqrt(np.maximum(1.21 - x * x, 0))),
        lambda a, b: (
            a**2 / (1 + 0.15 * np.cos(6 * _atan(a, b) ** 4) ** 10) ** 2
            + b**2 / (1 + 0.75 * np.cos(6 * _atan(a, b) ** 4) ** 10) ** 2
            - 1
            <= 1e-12
        ),
    ),
    "mw7": (
        _G3,
        1.0,
        ("g * x", "g * sqrt(1 - x^2)"),
        [
            "f0^2 + f1^2 - (1.2 + abs(0.4 * sin(4 * atan(f1 / f0))^16))^2 <= 0",
            "(1.15 - 0.2 * sin(4 * atan(f1 / f0))^8)^2 - f0^2 - f1^2 <= 0",
        ],
        lambda x, g: (g * x, g * np.sqrt(np.maximum(1 - x * x, 0))),
        lambda a, b: (
            (a**2 + b**2 - (1.2 + np.abs(0.4 * np.sin(4 * _atan(a, b)) ** 16)) ** 2 <= 1e-12)
            & ((1.15 - 0.2 * np.sin(4 * _atan(a, b)) ** 8) ** 2 - a**2 - b**2 <= 1e-12)
        ),
    ),
    "mw9": (
        _G1,
        1.0,
        ("g * x", "g * (1 - x^0.6)"),
        [
            "minimum((1 - 0.64 * f0^2 - f1) * (1 - 0.36 * f0^2 - f1), "
            "(1.8225 - (f0 + 0.35)^2 - f1) * (1.3225 - (f0 + 0.15)^2 - f1)) <= 0"
        ],
        lambda x, g: (g * x, g * (1 - x**0.6)),
        lambda a, b: (
            np.minimum(
                (1 - 0.64 * a * a - b) * (1 - 0.36 * a * a - b),
                (1.8225 - (a + 0.35) ** 2 - b) * (1.3225 - (a + 0.15) ** 2 - b),
            )
            <= 1e-12
        ),
    ),
    "mw11": (
        _G3,
        S2,
        ("g * x", "g * sqrt(2 - x^2)"),
        [
            "-(3 - f0^2 - f1) * (3 - 2 * f0^2 - f1) <= 0",
            "(3 - 0.625 * f0^2 - f1) * (3 - 7 * f0^2 - f1) <= 0",
            "-(1.62 - 0.18 * f0^2 - f1) * (1.125 - 0.125 * f0^2 - f1) <= 0",
            "(2.07 - 0.23 * f0^2 - f1) * (0.63 - 0.07 * f0^2 - f1) <= 0",
        ],
        lambda x, g: (g * x, g * np.sqrt(np.maximum(2 - x * x, 0))),
        lambda a, b: (
            (-(3 - a * a - b) * (3 - 2 * a * a - b) <= 1e-12)
            & ((3 - 0.625 * a * a - b) * (3 - 7 * a * a - b) <= 1e-12)
            & (-(1.62 - 0.18 * a * a - b) * (1.125 - 0.125 * a * a - b) <= 1e-12)
            & ((2.07 - 0.23 * a * a - b) * (0.63 - 0.07 * a * a - b) <= 1e-12)
        ),
    ),
    "mw12": (
        _G1,
        1.0,
        ("g * x", f"g * (0.85 - 0.8 * x - 0.08 * abs(sin({3.2 * PI!r} * x)))"),
        [
            f"-(1 - 0.625 * f0 - f1 + 0.08 * sin({2 * PI!r} * (f1 - f0 / 1.6))) * "
            f"(1.4 - 0.875 * f0 - f1 + 0.08 * sin({2 * PI!r} * (f1 / 1.4 - f0 / 1.6))) <= 0",
            f"(1 - 0.8 * f0 - f1 + 0.08 * sin({2 * PI!r} * (f1 - f0 / 1.5))) * "
            f"(1.8 - 1.125 * f0 - f1 + 0.08 * sin({2 * PI!r} * (f1 / 1.8 - f0 / 1.6))) <= 0",
        ],
        lambda x, g: (g * x, g * (0.85 - 0.8 * x - 0.08 * np.abs(np.sin(3.2 * PI * x)))),
        lambda a, b: (
            (
                -(1 - 0.625 * a - b + 0.08 * np.sin(2 * PI * (b - a / 1.6)))
                * (1.4 - 0.875 * a - b + 0.08 * np.sin(2 * PI * (b / 1.4 - a / 1.6)))
                <= 1e-12
            )
            & (
                (1 - 0.8 * a - b + 0.08 * np.sin(2 * PI * (b - a / 1.5)))
                * (1.8 - 1.125 * a - b + 0.08 * np.sin(2 * PI * (b / 1.8 - a / 1.6)))
                <= 1e-12
            )
        ),
    ),
}


def _mw_model(name: str) -> str:
    gtext, xu, (o0, o1), cons = _MW[name][:4]
    return (
        f"var x in [0, {xu!r}]\nvar y[{D - 1}] in [0, {xu!r}]\n{gtext}let f0 = {o0}\nlet f1 = {o1}\n"
        "minimize {\n  o1: f0\n  o2: f1\n}\nsubject to {\n" + "\n".join("  " + c for c in cons) + "\n}\n"
    )


def model(name: str) -> str:
    """The `.opt` text of a problem."""
    return _ctp_model(name) if name in _CTP else _mw_model(name)


def exact_front(name: str) -> np.ndarray:
    """The non-dominated feasible points of a dense (x, g) grid: 4 001 x 20 001 (CTP; g ∈ [1, 3], or [1, 30]
    for CTP6/CTP8, denser near 1) or 6 001 x 3 001 (MW; g ∈ [1, 2])."""
    if name in _CTP:
        F, ok, xu = _ctp_objectives, _ctp_feasible(name), 1.0
        x = np.linspace(0, 1, 4001)
        G = 1 + np.linspace(0, 1, 20001) ** 3 * (29.0 if name in ("ctp6", "ctp8") else 2.0)
    else:
        F, ok, xu = _MW[name][4], _MW[name][5], _MW[name][1]
        x = np.linspace(0, xu, 6001)
        G = 1 + np.linspace(0, 1, 3001) ** 2
    parts = []
    for k in range(0, x.size, 100):
        X, Gg = np.meshgrid(x[k : k + 100], G, indexing="ij")
        with np.errstate(all="ignore"):
            a, b = F(X, Gg)
            keep = ok(a, b) & np.isfinite(a) & np.isfinite(b)
        P = np.stack([a[keep], b[keep]], 1)
        if P.size:
            parts.append(nondominated(P))
    return nondominated(np.concatenate(parts))


def run_pymoo(name: str, evals: int, seed: int) -> np.ndarray:
    """NSGA-II's non-dominated feasible F after `evals` evaluations (pymoo's own CTP/MW classes)."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.optimize import minimize
    from pymoo.problems.multi import ctp, mw
    from pymoo.termination import get_termination

    if name in _CTP:
        problem = getattr(ctp, name.upper())(n_var=5)
        if name in ("ctp6", "ctp8"):
            problem.xu[1:] = 20  # (pymoo's CTP6/8 already use 20; kept explicit)
    else:
        problem = getattr(mw, name.upper())()
    res = minimize(problem, NSGA2(pop_size=100), get_termination("n_eval", evals), seed=seed)
    return np.atleast_2d(res.F) if res.F is not None else np.zeros((0, 2))


PROBLEMS = [*_CTP, *_MW]


def check_model(name: str) -> tuple[float, float, int]:
    """Against pymoo's own class at 256 random points of the box (a fifth to a quarter of them near the
    distance variables' least, where the constraints bind): (the largest |F_model − F_pymoo|, and
    |G_model − G_pymoo| for MW, whose G is the same a − b; the share of points where the model's and
    pymoo's feasibility disagree — pymoo's CTP constraints are normalized differently, with the same
    sign; how many points pymoo calls feasible)."""
    from pymoo.problems.multi import ctp, mw

    from optlang.ir.evaluate import evaluate_np

    problem = getattr(ctp, name.upper())(n_var=5) if name in _CTP else getattr(mw, name.upper())()
    lo, hi = np.asarray(problem.xl, dtype=float), np.asarray(problem.xu, dtype=float)
    rng = np.random.default_rng(0)
    X = rng.uniform(lo, hi, (256, lo.size))
    if name in _CTP:  # a fifth of the points near g's least
        X[:50, 1:] = lo[1:] + 0.05 * rng.random((50, lo.size - 1)) * (hi[1:] - lo[1:])
    else:  # a quarter on the distance variables' least (g = 1), 1e-3 off: mixed feasibility
        gtext = _MW[name][0]
        for r in range(64):
            if gtext is _G1:
                y = (0.5 + _I / (2 * D)) ** (1 / (D - 2))
            elif gtext is _G2:
                y = _I / D
            else:  # G3's chain: y_i = 1 − (previous − ½)²
                y, prev = np.zeros(D - 1), X[r, 0]
                for i in range(D - 1):
                    y[i] = prev = 1 - (prev - 0.5) ** 2
            X[r, 1:] = np.clip(y + 1e-3 * rng.standard_normal(D - 1), lo[1:], hi[1:])
    out = problem.evaluate(X, return_values_of=["F", "G"])
    F_ref, G_ref = np.asarray(out[0]), np.atleast_2d(np.asarray(out[1]).reshape(X.shape[0], -1))
    ir = optlang.parse(model(name)).ir
    F, G = [], []
    for row in X:
        vals = {"x": row[0], "y": row[1:]}
        F.append([float(evaluate_np(e, vals)) for _, e in ir.objective.entries])
        G.append([float(evaluate_np(c.expr, vals)) for c in ir.constraints])
    Gm = np.array(G)
    dF = float(np.abs(np.array(F) - F_ref).max())
    if name in _MW:  # the same a − b as pymoo's G: compare the values themselves
        dF = max(dF, float(np.abs(Gm - G_ref).max()))
    agree = np.all(Gm <= 0, axis=1) == np.all(G_ref <= 0, axis=1)
    return dF, float(1 - agree.mean()), int(np.all(G_ref <= 0, axis=1).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-pymoo", action="store_true")
    ap.add_argument("--check", action="store_true", help="only compare each model with pymoo's class")
    ap.add_argument("--set", action="append", default=[], help="a paretom3 option KEY=VALUE (repeatable)")
    args = ap.parse_args()
    opts = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        try:
            opts[k] = ast.literal_eval(v) if v.lower() not in ("true", "false") else v.lower() == "true"
        except (ValueError, SyntaxError):
            opts[k] = v
    names = [s for s in args.only.split(",") if s] or PROBLEMS
    evals = int(opts.get("front_evals", 4000))
    if args.check:
        for name in names:
            dF, dG, n_ok = check_model(name)
            print(
                f"{name}: max |F_model - F_pymoo| (and |G| for MW) = {dF:.2e}, feasibility disagreeing on "
                f"{dG:.1%} of the points ({n_ok} of 256 feasible)"
            )
        return
    print("| problem | seed | method | status | evaluations | front size | HV / exact | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        R = exact_front(name)
        lo, hi = R.min(0), R.max(0)
        ref = hi + 0.1 * (hi - lo)
        exact = hypervolume(R, ref)
        for seed in [int(s) for s in args.seeds.split(",")]:
            t = time.perf_counter()
            res = optlang.parse(model(name)).solve(seed=seed, options=opts or None)
            secs = time.perf_counter() - t
            front = res.info.get("front") or []
            F = np.array([list(p["objectives"].values()) for p in front], dtype=np.float64)
            F = F[np.all(F < ref, axis=1)] if F.size else np.zeros((0, 2))
            hv = hypervolume(F, ref) / exact if F.size else 0.0
            bad = [c.name for c in res.checks if not c.passed]
            status = res.status.value + (f" (failed: {', '.join(bad)})" if bad else "")
            print(
                f"| {name} | {seed} | paretom3 | {status} "
                f"| {res.info.get('evaluations')} | {res.info.get('front_size', 0)} | {hv:.4f} | {secs:.2f} |",
                flush=True,
            )
            if args.no_pymoo:
                continue
            try:
                import pymoo  # noqa: F401
            except ImportError:
                continue
            t = time.perf_counter()
            G = run_pymoo(name, evals, seed)
            secs = time.perf_counter() - t
            G = G[np.all(G < ref, axis=1)] if G.size else G
            hv = hypervolume(G, ref) / exact if G.size else 0.0
            print(f"| {name} | {seed} | NSGA-II | — | {evals} | {G.shape[0]} | {hv:.4f} | {secs:.2f} |", flush=True)


if __name__ == "__main__":
    main()
