"""The WFG toolkit (Huband, Hingston, Barone, While 2006) as `.opt` models, solved as a user would and
scored by hypervolume against the analytic fronts; NSGA-II and NSGA-III (pymoo's WFG, when installed) at
the same evaluations.

WFG1–9 with k = 4 position and l = 20 distance variables, x_i in [0, 2i] written as per-element bounds,
2 or 3 objectives. They probe what the other batteries do not: biased search spaces (b_poly's 0.02 power,
b_flat's flat region, b_param's exponent that depends on other variables), a deceptive distance
(s_decept), a multimodal one (s_multi, 30 basins per variable), non-separable reductions (r_nonsep:
|a_i − a_j| over all pairs, kinks along lines), and mixed, disconnected, linear-degenerate and concave
fronts scaled by 2, 4, 6. The analytic front: the shape functions over a position grid with the distance
term at 0, non-dominated (WFG3 with 3 objectives is degenerate: its second position is ½).
HV reference: the front's nadir + 10 % of its range. Every model agrees with pymoo's WFG at random points
(to 1e-9; WFG1 differs where pymoo's x / xu rounding of 0.35·xu is magnified by its 0.02 power).
Usage: .venv/bin/python benchmarks/mo_wfg.py [--problems 1,...,9] [--objectives 2,3] [--seeds 0]
       [--evals 4000] [--no-pymoo]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import optlang
from optlang.backends.multiobjective.metrics import hypervolume, nondominated

K, L = 4, 20
N = K + L
UB = 2.0 * np.arange(1, N + 1)


def _mat(A: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{v:.12g}" for v in row) + "]" for row in A) + "]"


def _vec(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:.12g}" for x in v) + "]"


def _s_linear(e: str, a: float = 0.35) -> str:
    """|y − A| / |⌊A − y⌋ + A| for y in [0, 1]: two relu pieces."""
    return f"(relu({a} - {e}) / {a} + relu({e} - {a}) / {1 - a:.12g})"


def _s_multi(e: str, a: float, b: float, c: float) -> str:
    t = f"(relu({c} - {e}) / {2 * c:.12g} + relu({e} - {c}) / {2 * (1 - c):.12g})"
    return f"((1 + cos({4 * a + 2:g} * pi * (0.5 - {t})) + {4 * b:g} * {t}^2) / {b + 2:g})"


def _s_decept(e: str, a: float, b: float, c: float) -> str:
    k1 = (1 - c + (a - b) / b) / (a - b)
    k2 = (1 - c + (1 - a - b) / b) / (1 - a - b)
    left, right = f"{k1:.12g} * relu({a - b:.12g} - {e})", f"{k2:.12g} * relu({e} - {a + b:.12g})"
    return f"(1 + (abs({e} - {a}) - {b}) / {b} - {left} - {right})"


def _b_flat(e: str, a: float, b: float, c: float) -> str:
    return f"({a} * minimum({e} / {b}, 1) + {1 - a:.12g} * relu({e} - {c}) / {1 - c:.12g})"


def _b_param_exponent(u: str) -> str:
    """B + (C − B)(A − (1 − 2u)|⌊½ − u⌋ + A|) with A = 0.98/49.98, B = 0.02, C = 50, as relu pieces."""
    a = 0.98 / 49.98
    return f"(0.02 + 49.98 * ({2 * a:.12g} * {u} + {1 - 2 * a:.12g} * relu(2 * {u} - 1)))"


def _nonsep(m: int, a: int) -> np.ndarray:
    """The rows e_j − e_{(1+j+k) mod m} of r_nonsep's |y_j − y_{(1+j+k) mod m}| terms."""
    rows = []
    for j in range(m):
        for k in range(a - 1):
            r = np.zeros(m)
            r[j] += 1
            r[(1 + j + k) % m] -= 1
            rows.append(r)
    return np.array(rows)


def _r_nonsep(name: str, m: int, lines: list[str]) -> str:
    val = math.ceil(m / 2)
    denom = m * val * (1 + 2 * m - 2 * val) / m
    if m == 1:
        return f"(sum({name}) / {denom:.12g})"
    lines.append(f"param N_{name} = {_mat(_nonsep(m, m))}")
    return f"((sum({name}) + sum(abs(N_{name} @ {name}))) / {denom:.12g})"


def _averages(rows: list[tuple[int, int]]) -> np.ndarray:
    """A matrix whose row r averages y[a:b] for (a, b) = rows[r]."""
    U = np.zeros((len(rows), N))
    for r, (a, b) in enumerate(rows):
        U[r, a:b] = 1.0 / (b - a)
    return U


def _transitions(p: int, m: int, out: list[str]) -> list[str]:
    """WFG p's transformations of y = x / ub as `let`s; returns the m reduced parameters t_1 … t_m."""
    gap = K // (m - 1)
    pos = [(i * gap, (i + 1) * gap) for i in range(m - 1)]
    if p == 1:
        w = 2 * np.arange(1, N + 1)
        out += [f"let a1 = {_s_linear(f'y[{K}:]')}", f"let a2 = {_b_flat('a1', 0.8, 0.75, 0.85)}"]
        out += ["let pp = y[:4]^0.02", "let pd = a2^0.02", f"param wp = {_vec(w[:K])}", f"param wd = {_vec(w[K:])}"]
        ts = [f"dot(pp[{a}:{b}], wp[{a}:{b}]) / {w[a:b].sum()}" for a, b in pos]
        return [*ts, f"dot(pd, wd) / {w[K:].sum()}"]
    if p in (2, 3):
        half = L // 2
        Pe, Po = np.zeros((half, L)), np.zeros((half, L))
        Pe[np.arange(half), 2 * np.arange(half)] = 1
        Po[np.arange(half), 2 * np.arange(half) + 1] = 1
        out += [f"let a1 = {_s_linear(f'y[{K}:]')}", f"param Pe = {_mat(Pe)}", f"param Po = {_mat(Po)}"]
        out.append("let q = (Pe @ a1 + Po @ a1 + 2 * abs(Pe @ a1 - Po @ a1)) / 3")
        return [*(f"mean(y[{a}:{b}])" for a, b in pos), "mean(q)"]
    if p in (4, 5):
        s = _s_multi("y", 30.0, 10.0, 0.35) if p == 4 else _s_decept("y", 0.35, 0.001, 0.05)
        out.append(f"let a1 = {s}")
        return [*(f"mean(a1[{a}:{b}])" for a, b in pos), f"mean(a1[{K}:])"]
    if p == 6:
        out.append(f"let a1 = {_s_linear(f'y[{K}:]')}")
        ts = []
        for i, (a, b) in enumerate(pos):
            out.append(f"let pz{i} = y[{a}:{b}]")
            ts.append(_r_nonsep(f"pz{i}", b - a, out))
        return [*ts, _r_nonsep("a1", L, out)]
    if p == 7:
        out += [f"param U = {_mat(_averages([(i + 1, N) for i in range(K)]))}", "let u = U @ y"]
        out += [f"let pos = y[:{K}]^{_b_param_exponent('u')}", f"let a1 = {_s_linear(f'y[{K}:]')}"]
        return [*(f"mean(pos[{a}:{b}])" for a, b in pos), "mean(a1)"]
    if p == 8:
        out += [f"param U = {_mat(_averages([(0, i) for i in range(K, N)]))}", "let u = U @ y"]
        out += [f"let d = y[{K}:]^{_b_param_exponent('u')}", f"let a1 = {_s_linear('d')}"]
        return [*(f"mean(y[{a}:{b}])" for a, b in pos), "mean(a1)"]
    # WFG9
    out += [f"param U = {_mat(_averages([(i + 1, N) for i in range(N - 1)]))}", "let u = U @ y"]
    out.append(f"let b1 = y[:{N - 1}]^{_b_param_exponent('u')}")
    out.append(f"let c1 = {_s_decept(f'b1[:{K}]', 0.35, 0.001, 0.05)}")
    out.append(f"let c2 = {_s_multi(f'b1[{K}:]', 30.0, 95.0, 0.35)}")
    out.append(f"let c3 = {_s_multi(f'y[{N - 1}]', 30.0, 95.0, 0.35)}")
    ts = []
    for i, (a, b) in enumerate(pos):
        out.append(f"let c1_{i} = c1[{a}:{b}]")
        ts.append(_r_nonsep(f"c1_{i}", b - a, out))
    Nm = _nonsep(L, L)
    val = math.ceil(L / 2)
    denom = L * val * (1 + 2 * L - 2 * val) / L
    out += [f"param N9a = {_mat(Nm[:, : L - 1])}", f"param N9b = {_vec(Nm[:, L - 1])}"]
    return [*ts, f"((sum(c2) + c3 + sum(abs(N9a @ c2 + N9b * c3))) / {denom:.12g})"]


def model(p: int, m: int) -> str:
    """WFG p with m objectives as `.opt` text, x_i in [0, 2i]."""
    out = [f"param ub = {_vec(UB)}", "var x[24] in [0, ub]", "let y = x / ub"]
    ts = _transitions(p, m, out)
    out += [f"let t{i + 1} = {t}" for i, t in enumerate(ts)]
    xs = [f"t{i + 1}" for i in range(m - 1)]
    if p == 3 and m > 2:  # A = (1, 0, …): every position after the first is degenerate at the front
        for i in range(1, m - 1):
            out.append(f"let xp{i + 1} = maximum(t{m}, 0) * (t{i + 1} - 0.5) + 0.5")
            xs[i] = f"xp{i + 1}"

    def h(k: int) -> str:  # the k-th shape function (1-based) of WFG p
        if p in (1, 2) and k == m:
            x0 = xs[0]
            if p == 1:
                return f"(1 - {x0} - cos(10 * pi * {x0} + 0.5 * pi) / (10 * pi))"
            return f"(1 - {x0} * cos(5 * pi * {x0})^2)"
        if p in (1, 2):
            parts = [f"(1 - cos(0.5 * pi * {xs[j]}))" for j in range(m - k)]
            return " * ".join(parts + ([f"(1 - sin(0.5 * pi * {xs[m - k]}))"] if k > 1 else []))
        if p == 3:
            return " * ".join([xs[j] for j in range(m - k)] + ([f"(1 - {xs[m - k]})"] if k > 1 else []))
        parts = [f"sin(0.5 * pi * {xs[j]})" for j in range(m - k)]
        return " * ".join(parts + ([f"cos(0.5 * pi * {xs[m - k]})"] if k > 1 else []))

    out.append("minimize {")
    out += [f"  f{k}: t{m} + {2 * k} * {h(k)}" for k in range(1, m + 1)]
    return "\n".join([*out, "}"]) + "\n"


def front(p: int, m: int) -> np.ndarray:
    """The analytic front: the shapes over a grid of positions with the distance term 0, non-dominated."""
    if m == 2:
        X = [np.linspace(0, 1, 200_001)]
    else:
        A, B = np.meshgrid(np.linspace(0, 1, 301), np.linspace(0, 1, 301))
        X = [A.ravel(), np.full(A.size, 0.5) if p == 3 else B.ravel()]
    cols = []
    for k in range(1, m + 1):
        if p in (1, 2) and k == m:
            x0 = X[0]
            hk = (
                1 - x0 - np.cos(10 * np.pi * x0 + 0.5 * np.pi) / (10 * np.pi)
                if p == 1
                else 1 - x0 * np.cos(5 * np.pi * x0) ** 2
            )
        else:
            hk = np.ones_like(X[0])
            for j in range(m - k):
                hk = hk * (
                    (1 - np.cos(0.5 * np.pi * X[j])) if p in (1, 2) else X[j] if p == 3 else np.sin(0.5 * np.pi * X[j])
                )
            if k > 1:
                x = X[m - k]
                hk = hk * (
                    (1 - np.sin(0.5 * np.pi * x)) if p in (1, 2) else (1 - x) if p == 3 else np.cos(0.5 * np.pi * x)
                )
        cols.append(2 * k * hk)
    return nondominated(np.stack(cols, 1))


def run_pymoo(p: int, m: int, algo: str, evals: int, seed: int) -> np.ndarray:
    """The non-dominated F of pymoo's NSGA-II / NSGA-III on pymoo's WFG p after `evals` evaluations."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem
    from pymoo.util.ref_dirs import get_reference_directions

    problem = get_problem(f"wfg{p}", n_var=N, n_obj=m, k=K)
    dirs = get_reference_directions("das-dennis", m, n_partitions=99 if m == 2 else 12)
    alg = NSGA2(pop_size=100) if algo == "NSGA-II" else NSGA3(ref_dirs=dirs, pop_size=int(math.ceil(len(dirs) / 4) * 4))
    res = minimize(problem, alg, ("n_eval", evals), seed=seed, verbose=False)
    return nondominated(np.asarray(res.opt.get("F"), dtype=np.float64))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="1,2,3,4,5,6,7,8,9")
    ap.add_argument("--objectives", default="2,3")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--evals", type=int, default=4000)
    ap.add_argument("--no-pymoo", action="store_true")
    args = ap.parse_args()
    options = None if args.evals == 4000 else {"front_evals": args.evals}
    print("| problem | objectives | seed | method | status | evaluations | front size | HV / exact | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in (int(s) for s in args.objectives.split(",")):
        for p in (int(s) for s in args.problems.split(",")):
            R = front(p, m)
            ref = R.max(0) + 0.1 * (R.max(0) - R.min(0))
            exact = hypervolume(R, ref)
            text = model(p, m)
            for seed in (int(s) for s in args.seeds.split(",")):
                t = time.perf_counter()
                res = optlang.parse(text).solve(seed=seed, options=options)
                secs = time.perf_counter() - t
                F = np.array([[q["objectives"][f"f{k}"] for k in range(1, m + 1)] for q in res.info["front"]])
                F = F[np.all(F < ref, axis=1)] if F.size else F
                hv = hypervolume(F, ref) / exact if F.size else 0.0
                print(
                    f"| WFG{p} | {m} | {seed} | paretom3 | {res.status.value} | {res.info['evaluations']} "
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
                    Fp = run_pymoo(p, m, algo, args.evals, seed)
                    secs = time.perf_counter() - t
                    Fp = Fp[np.all(Fp < ref, axis=1)]
                    hv = hypervolume(Fp, ref) / exact if Fp.size else 0.0
                    print(
                        f"| WFG{p} | {m} | {seed} | {algo} | — | {args.evals} | {len(Fp)} | {hv:.4f} | {secs:.2f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
