"""Random constrained multi-objective models against brute force: is every returned front point
feasible, is "no feasible point" said only where none exists, and how much of the true front is found?

Each model: x in [-1, 1]^n (n = 1 or 2, so that the feasible set can be enumerated), 2 or 3 objectives
‖x − c_i‖², and one or two constraints drawn from a half-plane a·x ≤ b, the outside of a disc
‖x‖² ≥ r (nonconvex: often a disconnected feasible set) and a line a·x = b (2-D, one at most); the
half-planes and the line hold at a random point, except in 1 model of 8 where they are shifted by 2. Brute force: the
non-dominated points of a 2 001 (n = 1) or 801² (n = 2) grid of the feasible set, or of 200 001 points of
the line. Scores: HV of the returned front over the brute-force front's (reference: its nadir + 10 % of
its range, at least 1e-6) and IGD (mean distance from a brute-force front point to the returned front,
over 1 + the front's range). NSGA-II (pymoo, constraint-dominance) runs at the same evaluations
when installed.
Usage: .venv/bin/python benchmarks/mo_constrained.py [--seed 0] [--n 40] [--evals 1500] [--no-pymoo]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import optlang
from optlang.backends.multiobjective.metrics import hypervolume, nondominated

Constraint = tuple[str, np.ndarray | None, float]


def draw(rng: np.random.Generator) -> tuple[str, int, list[np.ndarray], list[Constraint]]:
    """One random model: its text, n, the objectives' centres and the constraints."""
    n, m = int(rng.integers(1, 3)), int(rng.integers(2, 4))
    centres = [rng.uniform(-1, 1, n).round(2) for _ in range(m)]
    objs = [
        f"f{i + 1}: sumsq(x - [{', '.join(map(str, c))}])" if n > 1 else f"f{i + 1}: (x[0] - {c[0]})^2"
        for i, c in enumerate(centres)
    ]
    cons: list[Constraint] = []
    lines = []
    p0 = rng.uniform(-1, 1, n)  # the half-planes and the line hold here (unless shifted: 1 in 8 models)
    shift = 2.0 if rng.random() < 0.125 else 0.0
    kinds = [str(rng.choice(["half-plane", "disc", "line"])) for _ in range(int(rng.integers(1, 3)))]
    if kinds.count("line") > 1 or (n == 1 and "line" in kinds):
        kinds = [k for k in kinds if k != "line"] + (["line"] if n > 1 else [])  # one line, and only in 2-D
        kinds = kinds or ["disc"]
    for kind in kinds:
        a = rng.uniform(-1, 1, n).round(2)
        if kind == "half-plane":
            b = round(float(a @ p0 + rng.uniform(0, 0.5) - shift), 2)
            lines.append(f"dot([{', '.join(map(str, a))}], x) <= {b}")
            cons.append((kind, a, b))
        elif kind == "disc":
            r = round(float(rng.uniform(0.2, 1.0)), 2)
            lines.append(f"sumsq(x) >= {r}")
            cons.append((kind, None, r))
        else:
            b = round(float(a @ p0 + shift), 2)
            lines.append(f"dot([{', '.join(map(str, a))}], x) == {b}")
            cons.append((kind, a, b))
    text = (
        f"var x[{n}] in [-1, 1]\nminimize {{\n  "
        + "\n  ".join(objs)
        + "\n}\nsubject to {\n  "
        + "\n  ".join(lines)
        + "\n}\n"
    )
    return text, n, centres, cons


def feasible_mask(S: np.ndarray, cons: list[Constraint], tol: float = 0.0) -> np.ndarray:
    ok = np.all(np.abs(S) <= 1 + tol, axis=1)
    for kind, a, b in cons:
        if kind == "half-plane":
            assert a is not None
            ok &= S @ a <= b + tol
        elif kind == "disc":
            ok &= (S**2).sum(1) >= b - tol
        else:
            assert a is not None
            ok &= np.abs(S @ a - b) <= max(tol, 1e-9)
    return ok


def brute_front(n: int, centres: list[np.ndarray], cons: list[Constraint]) -> np.ndarray:
    """The non-dominated objective vectors of a dense sample of the feasible set ((0, m) when empty)."""
    line = [(a, b) for kind, a, b in cons if kind == "line"]
    if line:  # 2-D only: a₀x₀ + a₁x₁ = b, parametrized by the coordinate with the larger coefficient
        a, b = line[0]
        assert a is not None
        u = np.linspace(-1, 1, 200001)
        S = np.c_[u, (b - a[0] * u) / a[1]] if abs(a[1]) >= abs(a[0]) else np.c_[(b - a[1] * u) / a[0], u]
    else:
        g = np.linspace(-1, 1, 2001 if n == 1 else 801)
        S = g[:, None] if n == 1 else np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    S = S[feasible_mask(S, cons)]
    if S.shape[0] == 0:
        return np.zeros((0, len(centres)))
    return nondominated(np.stack([((S - c) ** 2).sum(1) for c in centres], 1))


def scores(F: np.ndarray, R: np.ndarray) -> tuple[float, float]:
    """(HV of F over R's — NaN for a one-point R, where it measures rounding —, IGD of F to R normalized
    by 1 + R's range)."""
    lo, hi = R.min(0), R.max(0)
    ref = hi + np.maximum(0.1 * (hi - lo), 1e-6)
    inside = F[np.all(F < ref, axis=1)] if F.size else F
    hv = hypervolume(inside, ref) / hypervolume(R, ref) if inside.size else 0.0
    hv = float("nan") if R.shape[0] == 1 else hv
    d = np.sqrt(((R[:, None, :] - F[None, :, :]) ** 2).sum(-1)).min(1) if F.size else np.full(len(R), np.inf)
    return hv, float(d.mean() / (1 + float((hi - lo).max())))


def nsga2(n: int, centres: list[np.ndarray], cons: list[Constraint], evals: int, seed: int) -> np.ndarray:
    """NSGA-II's feasible non-dominated objective vectors after `evals` evaluations."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize

    ineq = [c for c in cons if c[0] != "line"]
    eq = [c for c in cons if c[0] == "line"]

    class P(Problem):
        def __init__(self) -> None:
            super().__init__(n_var=n, n_obj=len(centres), n_ieq_constr=len(ineq), n_eq_constr=len(eq), xl=-1, xu=1)

        def _evaluate(self, X: np.ndarray, out: dict, *args: object, **kwargs: object) -> None:
            out["F"] = np.stack([((X - c) ** 2).sum(1) for c in centres], 1)
            g = [X @ a - b if kind == "half-plane" else b - (X**2).sum(1) for kind, a, b in ineq]  # type: ignore[operator]
            if g:
                out["G"] = np.stack(g, 1)
            if eq:
                out["H"] = np.stack([X @ a - b for _, a, b in eq], 1)  # type: ignore[operator]

    res = minimize(P(), NSGA2(pop_size=100), ("n_eval", evals), seed=seed, verbose=False)
    if res.X is None:
        return np.zeros((0, len(centres)))
    X = np.atleast_2d(res.X)
    X = X[feasible_mask(X, cons, tol=1e-4)]  # pymoo's own equality tolerance is 1e-4
    return nondominated(np.stack([((X - c) ** 2).sum(1) for c in centres], 1)) if X.size else np.zeros((0, 0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--evals", type=int, default=1500)
    ap.add_argument("--no-pymoo", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    use_pymoo = not args.no_pymoo
    if use_pymoo:
        try:
            import pymoo  # noqa: F401
        except ImportError:
            use_pymoo = False
    print("| # | n | m | constraints | brute front | status | front | HV ratio | IGD ", end="")
    print("| NSGA-II HV ratio | NSGA-II IGD |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    hv_all, hv_ns, infeasible_points, false_errors, missed_errors = [], [], 0, 0, 0
    for i in range(args.n):
        text, n, centres, cons = draw(rng)
        R = brute_front(n, centres, cons)
        t = time.perf_counter()
        res = optlang.parse(text).solve(seed=i, options={"front_evals": args.evals})
        _ = time.perf_counter() - t
        kinds = "+".join(c[0] for c in cons)
        if res.status.value == "error":
            false_errors += int(R.shape[0] > 0)
            print(f"| {i} | {n} | {len(centres)} | {kinds} | {R.shape[0]} | error | 0 | — | — | — | — |")
            continue
        X = np.array([np.ravel(p["values"]["x"]) for p in res.info["front"]])
        F = np.array([list(p["objectives"].values()) for p in res.info["front"]])
        infeasible_points += int((~feasible_mask(X, cons, tol=1e-5)).sum())
        if R.shape[0] == 0:
            missed_errors += 1
            print(f"| {i} | {n} | {len(centres)} | {kinds} | 0 | {res.status.value} | {len(F)} | — | — | — | — |")
            continue
        hv, ig = scores(F, R)
        hv_all.append(hv)
        cols = ["—", "—"]
        if use_pymoo:
            G = nsga2(n, centres, cons, args.evals, i)
            h2, i2 = scores(G, R) if G.size else (0.0, float("inf"))
            hv_ns.append(h2)
            cols = [f"{h2:.4f}", f"{i2:.2e}"]
        print(
            f"| {i} | {n} | {len(centres)} | {kinds} | {R.shape[0]} | {res.status.value} | {len(F)} "
            f"| {hv:.4f} | {ig:.2e} | {cols[0]} | {cols[1]} |",
            flush=True,
        )
    a = np.array([h for h in hv_all if np.isfinite(h)])
    print(
        f"\nfeasible models with a front of 2+ points: {a.size}; HV ratio median {np.median(a):.4f}, "
        f"≥ 0.99 on {(a >= 0.99).sum()}, "
        f"≥ 0.95 on {(a >= 0.95).sum()}; returned points breaking a constraint (1e-5): {infeasible_points}; "
        f"'no feasible point' where brute force found one: {false_errors}; a front where none exists: {missed_errors}"
    )
    if hv_ns:
        b = np.array([h for h in hv_ns if np.isfinite(h)])
        print(f"NSGA-II: HV ratio median {np.median(b):.4f}, ≥ 0.99 on {(b >= 0.99).sum()}, ≥ 0.95 on ", end="")
        print(f"{(b >= 0.95).sum()}")


if __name__ == "__main__":
    main()
