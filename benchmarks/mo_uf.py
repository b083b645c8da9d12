"""The CEC 2009 unconstrained problems UF1–UF8 (Zhang et al., "Multiobjective optimization test instances
for the CEC 2009 special session", 2009), 30 variables, written as `.opt` models and solved as a user would
(`optlang.parse(text).solve(seed)`), scored by hypervolume against their analytic fronts; NSGA-II and
NSGA-III (pymoo, when installed) at the same evaluations (4 000, or `--set front_evals=N`).

What they probe that the other tables do not: Pareto sets that are curves through the whole box
(x_j = sin(6π x₁ + jπ/n): every distance variable moves with the position), a position variable raised to a
small power (UF7: x₁^{1/5}; UF3's Pareto set x_j = x₁^{0.5 (1 + 3 (j − 2)/(n − 2))}), multimodal distances
(UF3, UF6: non-separable, Π cos(20π y_j/√j); UF5: cos(4π y_j)), a distance function that flattens away
from its minimum (UF4: |t| / (1 + e^{2|t|}), deceptive: descent from |t| > 0.64 runs to the box), a front of
21 points (UF5) and one of three pieces (UF6), and three objectives on a sphere with a curved Pareto set
(UF8).
HV reference: 1.1 in each objective (every front lies in [0, 1]^m).
Usage: .venv/bin/python benchmarks/mo_uf.py [--seeds 0,1] [--only uf1,uf4] [--no-pymoo] [--set KEY=VALUE ...]
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

N = 30
PI = "3.141592653589793"
_J = np.arange(2, N + 1)  # the distance variables' 1-based indices
_J1 = (_J % 2 == 1).astype(np.float64)  # odd j ≥ 3
_J2 = 1.0 - _J1  # even j


def _vec(a: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:g}" for v in a) + "]"


def _two(pos1: str, pos2: str, y: str, dist: str, box: str, extra: str = "") -> str:
    """A two-objective UF model: f_k = pos_k + the mean `dist` of y over J_k (the report's 2/|J_k| Σ …)."""
    d1 = dist.replace("MASK", "J1").replace("COUNT", f"{int(_J1.sum())}")
    d2 = dist.replace("MASK", "J2").replace("COUNT", f"{int(_J2.sum())}")
    return (
        f"param pi = {PI}\nparam j = {_vec(_J)}\nparam J1 = {_vec(_J1)}\nparam J2 = {_vec(_J2)}\n"
        f"var x0 in [0, 1]\nvar x[{N - 1}] in {box}\n{extra}let y = {y}\n"
        f"minimize {{\n  f1: {pos1} + {d1}\n  f2: {pos2} + {d2}\n}}\n"
    )


_SIN = f"x - sin(6 * pi * x0 + j * pi / {N})"
_SQ = "2 / COUNT * sum(MASK * y^2)"
_COS = "2 / COUNT * (4 * sum(MASK * y^2) - 2 * prod(MASK * cos(20 * pi * y / sqrt(j)) + 1 - MASK) + 2)"
_UF2Y = (
    f"x - (0.3 * x0^2 * cos(24 * pi * x0 + 4 * j * pi / {N}) + 0.6 * x0)"
    f" * (J1 * cos(6 * pi * x0 + j * pi / {N}) + J2 * sin(6 * pi * x0 + j * pi / {N}))"
)
_UF3Y = f"x - x0^(0.5 * (1 + 3 * (j - 2) / {N - 2}))"
_H4 = "2 / COUNT * sum(MASK * abs(y) / (1 + exp(2 * abs(y))))"
_H5 = "2 / COUNT * sum(MASK * (2 * y^2 - cos(4 * pi * y) + 1))"

_UF8 = f"""param pi = {PI}
param j = {_vec(np.arange(3, N + 1))}
param J1 = {_vec(((np.arange(3, N + 1) - 1) % 3 == 0).astype(float))}
param J2 = {_vec(((np.arange(3, N + 1) - 2) % 3 == 0).astype(float))}
param J3 = {_vec((np.arange(3, N + 1) % 3 == 0).astype(float))}
var a in [0, 1]
var b in [0, 1]
var x[{N - 2}] in [-2, 2]
let y = x - 2 * b * sin(2 * pi * a + j * pi / {N})
minimize {{
  f1: cos(0.5 * pi * a) * cos(0.5 * pi * b) + 2 / 9 * sum(J1 * y^2)
  f2: cos(0.5 * pi * a) * sin(0.5 * pi * b) + 2 / 9 * sum(J2 * y^2)
  f3: sin(0.5 * pi * a) + 2 / 10 * sum(J3 * y^2)
}}
"""


def _np_uf(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """F(X) in numpy (float64), X = (x₁, …, x_n) in the report's order: the same functions as the models."""

    def f(X: np.ndarray) -> np.ndarray:
        x0, x = X[:, :1], X[:, 1:]
        if name == "uf8":
            a, b, z = X[:, 0], X[:, 1], X[:, 2:]
            jj = np.arange(3, N + 1)
            y = z - 2 * b[:, None] * np.sin(2 * np.pi * a[:, None] + jj * np.pi / N)
            m = [((jj - 1) % 3 == 0), ((jj - 2) % 3 == 0), (jj % 3 == 0)]
            d = [2 * (y[:, k] ** 2).sum(1) / k.sum() for k in m]
            c = np.cos(0.5 * np.pi * a)
            return np.stack(
                [
                    c * np.cos(0.5 * np.pi * b) + d[0],
                    c * np.sin(0.5 * np.pi * b) + d[1],
                    np.sin(0.5 * np.pi * a) + d[2],
                ],
                1,
            )
        s = 6 * np.pi * x0 + _J * np.pi / N
        if name == "uf2":
            amp = 0.3 * x0**2 * np.cos(24 * np.pi * x0 + 4 * _J * np.pi / N) + 0.6 * x0
            y = x - amp * np.where(_J1 > 0, np.cos(s), np.sin(s))
        elif name == "uf3":
            y = x - x0 ** (0.5 * (1 + 3 * (_J - 2) / (N - 2)))
        else:
            y = x - np.sin(s)
        if name == "uf4":
            h = np.abs(y) / (1 + np.exp(2 * np.abs(y)))
        elif name == "uf5":
            h = 2 * y**2 - np.cos(4 * np.pi * y) + 1
        else:
            h = y**2
        d = []
        for m in (_J1 > 0, _J2 > 0):
            if name in ("uf3", "uf6"):
                pc = np.prod(np.cos(20 * np.pi * y[:, m] / np.sqrt(_J[m])), axis=1)
                d.append(2 / m.sum() * (4 * (y[:, m] ** 2).sum(1) - 2 * pc + 2))
            else:
                d.append(2 / m.sum() * h[:, m].sum(1))
        t = X[:, 0]
        if name == "uf4":
            p1, p2 = t, 1 - t**2
        elif name == "uf5":
            k = (1 / 20 + 0.1) * np.abs(np.sin(20 * np.pi * t))
            p1, p2 = t + k, 1 - t + k
        elif name == "uf6":
            k = np.maximum(0, 2 * (1 / 4 + 0.1) * np.sin(4 * np.pi * t))
            p1, p2 = t + k, 1 - t + k
        elif name == "uf7":
            p1, p2 = t**0.2, 1 - t**0.2
        else:
            p1, p2 = t, 1 - np.sqrt(t)
        return np.stack([p1 + d[0], p2 + d[1]], 1)

    return f


_t = np.linspace(0.0, 1.0, 20001)


def _sphere(n: int = 300) -> np.ndarray:
    a, b = np.meshgrid(np.linspace(0, math.pi / 2, n), np.linspace(0, math.pi / 2, n))
    return np.stack([np.cos(a) * np.cos(b), np.cos(a) * np.sin(b), np.sin(a)], -1).reshape(-1, 3)


def _uf6_front() -> np.ndarray:
    """UF6's front: f₂ = 1 − f₁ at f₁ = 0 and on [¼, ½] and [¾, 1] (N = 2)."""
    t = np.r_[0.0, np.linspace(0.25, 0.5, 10001), np.linspace(0.75, 1.0, 10001)]
    return np.stack([t, 1 - t], 1)


# name -> (model text, analytic front, lower / upper bounds of (x₁, …, x_n) for pymoo)
_LO2 = np.r_[0.0, np.full(N - 1, -1.0)]
PROBLEMS: dict[str, tuple[str, np.ndarray, np.ndarray, np.ndarray]] = {
    "uf1": (_two("x0", "1 - sqrt(x0)", _SIN, _SQ, "[-1, 1]"), np.stack([_t, 1 - np.sqrt(_t)], 1), _LO2, np.ones(N)),
    "uf2": (_two("x0", "1 - sqrt(x0)", _UF2Y, _SQ, "[-1, 1]"), np.stack([_t, 1 - np.sqrt(_t)], 1), _LO2, np.ones(N)),
    "uf3": (
        _two("x0", "1 - sqrt(x0)", _UF3Y, _COS, "[0, 1]"),
        np.stack([_t, 1 - np.sqrt(_t)], 1),
        np.zeros(N),
        np.ones(N),
    ),
    "uf4": (
        _two("x0", "1 - x0^2", _SIN, _H4, "[-2, 2]"),
        np.stack([_t, 1 - _t**2], 1),
        np.r_[0.0, np.full(N - 1, -2.0)],
        np.r_[1.0, np.full(N - 1, 2.0)],
    ),
    "uf5": (
        _two("x0 + K", "1 - x0 + K", _SIN, _H5, "[-1, 1]", "let K = (1 / 20 + 0.1) * abs(sin(20 * pi * x0))\n"),
        np.stack([np.arange(21) / 20, 1 - np.arange(21) / 20], 1),
        _LO2,
        np.ones(N),
    ),
    "uf6": (
        _two("x0 + K", "1 - x0 + K", _SIN, _COS, "[-1, 1]", "let K = relu(2 * (1 / 4 + 0.1) * sin(4 * pi * x0))\n"),
        _uf6_front(),
        _LO2,
        np.ones(N),
    ),
    "uf7": (_two("x0^0.2", "1 - x0^0.2", _SIN, _SQ, "[-1, 1]"), np.stack([_t, 1 - _t], 1), _LO2, np.ones(N)),
    "uf8": (_UF8, _sphere(), np.r_[0.0, 0.0, np.full(N - 2, -2.0)], np.r_[1.0, 1.0, np.full(N - 2, 2.0)]),
}


def run_pymoo(name: str, algo: str, evals: int, seed: int) -> np.ndarray:
    """The non-dominated F of NSGA-II / NSGA-III after `evals` evaluations."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize
    from pymoo.util.ref_dirs import get_reference_directions

    _, front, lo, hi = PROBLEMS[name]
    m, fn = front.shape[1], _np_uf(name)

    class P(Problem):
        def __init__(self) -> None:
            super().__init__(n_var=N, n_obj=m, xl=lo, xu=hi)

        def _evaluate(self, X: np.ndarray, out: dict, *args: object, **kwargs: object) -> None:
            out["F"] = fn(X)

    dirs = get_reference_directions("das-dennis", m, n_partitions=99 if m == 2 else 12)
    alg = NSGA2(pop_size=100) if algo == "NSGA-II" else NSGA3(ref_dirs=dirs, pop_size=int(math.ceil(len(dirs) / 4) * 4))
    res = minimize(P(), alg, ("n_eval", evals), seed=seed, verbose=False)
    return nondominated(np.asarray(res.opt.get("F"), dtype=np.float64))


def check_model(name: str) -> float:
    """Largest |F_model − F_numpy| over 64 random points: the `.opt` text and the numpy F must agree."""
    from optlang.ir.evaluate import evaluate_np

    text, _, lo, hi = PROBLEMS[name]
    X = np.random.default_rng(0).uniform(lo, hi, (64, N))
    ir = optlang.parse(text).ir
    names = list(ir.variables)
    got = []
    for row in X:
        cut = len(names) - 1
        vals = {v: row[i] for i, v in enumerate(names[:cut])} | {names[-1]: row[cut:]}
        got.append([float(evaluate_np(e, vals)) for _, e in ir.objective.entries])
    return float(np.abs(np.array(got) - _np_uf(name)(X)).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-pymoo", action="store_true")
    ap.add_argument("--check", action="store_true", help="only compare each model with its numpy F")
    ap.add_argument("--set", action="append", default=[], help="a paretom3 option KEY=VALUE (repeatable)")
    args = ap.parse_args()
    opts = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        try:
            opts[k] = ast.literal_eval(v) if v.lower() not in ("true", "false") else v.lower() == "true"
        except (ValueError, SyntaxError):
            opts[k] = v
    names = [s for s in args.only.split(",") if s] or list(PROBLEMS)
    evals = int(opts.get("front_evals", 4000))
    if args.check:
        for name in names:
            print(name, f"max |F_model - F_numpy| = {check_model(name):.2e}")
        return
    print("| problem | seed | method | status | evaluations | front size | HV / exact | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        text, R, _, _ = PROBLEMS[name]
        ref = np.full(R.shape[1], 1.1)
        exact = hypervolume(nondominated(R), ref)
        for seed in [int(s) for s in args.seeds.split(",")]:
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
            if args.no_pymoo:
                continue
            try:
                import pymoo  # noqa: F401
            except ImportError:
                continue
            for algo in ("NSGA-II", "NSGA-III"):
                t = time.perf_counter()
                G = run_pymoo(name, algo, evals, seed)
                secs = time.perf_counter() - t
                G = G[np.all(G < ref, axis=1)]
                hv = hypervolume(G, ref) / exact if G.size else 0.0
                print(f"| {name} | {seed} | {algo} | — | {evals} | {G.shape[0]} | {hv:.4f} | {secs:.2f} |", flush=True)


if __name__ == "__main__":
    main()
