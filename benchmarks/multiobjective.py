"""Multi-objective benchmark: preferred points and fronts, ParetoM³ against its baselines.

Part 1 (preferred point): ZDT1 (f1 + f2), ZDT2 and DTLZ2 (distance to a reference point r; DTLZ2
with r inside and outside the unit sphere). For paretom3, weighted-sum and pymoo's NSGA-II followed by
picking the population point of best preference: the error in preference value against the exact
answer, the distance of the returned point to the Pareto set (g − 1 for ZDT, g for DTLZ2), and the
objective evaluations. A point "hits" when both are ≤ 1e-3; for NSGA-II the evaluations until its
population first holds a hitting point are reported, and the ratio NSGA-II / paretom3.
Part 2 (fronts): hypervolume (reference 1.1 in every objective) and IGD against the analytic front
for paretom3's front mode, the weighted-sum sweep and NSGA-II at the same number of evaluations.

Unit: one evaluation = the objective vector at one point (gradient included when computed); multiply
by the number of objectives for per-objective counts (the ratios do not change). The problems are
analytic (ZDT, DTLZ2): no data files are read. Usage: .venv/bin/python benchmarks/multiobjective.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize_scalar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optlang.backends.base import RunContext  # noqa: E402
from optlang.backends.multiobjective.metrics import dtlz2_front, dtlz2_problem, hypervolume, igd, zdt_front, zdt_problem  # noqa: E402
from optlang.backends.multiobjective.paretom3 import ParetoM3  # noqa: E402
from optlang.backends.multiobjective.weighted_sum import WeightedSum  # noqa: E402

TOL = 1e-3


def pareto_distance(name: str, x: np.ndarray) -> float:
    """Distance of a point to the Pareto set, in the problem's own terms (g − 1 for ZDT, g for DTLZ2)."""
    if name.startswith("zdt"):
        return float(9.0 * np.mean(x[1:]))
    return float(np.sum((x[2:] - 0.5) ** 2))


def preference_cases(n_zdt: int, n_dtlz: int) -> list[dict]:
    zdt2 = minimize_scalar(
        lambda t: (t - 0.6) ** 2 + (1 - t * t - 0.9) ** 2, bounds=(0, 1), method="bounded", options={"xatol": 1e-12}
    )
    cases = [
        dict(
            name="zdt1",
            label="ZDT1, f1 + f2",
            problem=zdt_problem(1, n_zdt, lambda a, b, x: a + b),
            pref=lambda F: F[:, 0] + F[:, 1],
            best=0.75,
            pymoo=("zdt1", n_zdt, 2),
        ),
        dict(
            name="zdt2",
            label="ZDT2, ‖F − (0.6, 0.9)‖²",
            best=float(zdt2.fun),
            pymoo=("zdt2", n_zdt, 2),
            problem=zdt_problem(2, n_zdt, lambda a, b, x: (a - 0.6) ** 2 + (b - 0.9) ** 2),
            pref=lambda F: (F[:, 0] - 0.6) ** 2 + (F[:, 1] - 0.9) ** 2,
        ),
    ]
    for r in ((0.2, 0.3, 0.4), (0.8, 0.8, 0.8)):
        rv = np.asarray(r)
        R = torch.as_tensor(rv)
        cases.append(
            dict(
                name="dtlz2",
                label=f"DTLZ2-3, ‖F − {r}‖²",
                pymoo=("dtlz2", n_dtlz, 3),
                problem=dtlz2_problem(n_dtlz, 3, lambda F, x, R=R: ((F - R.to(F)) ** 2).sum()),
                pref=lambda F, rv=rv: ((F - rv) ** 2).sum(1),
                best=float(np.sum((rv / np.linalg.norm(rv) - rv) ** 2)),
            )
        )
    return cases


def run_nsga(spec: tuple, pref, best: float, name: str, gens: int, seed: int) -> dict:
    """NSGA-II (pop 100) + pick of the population point of best preference, tracking the first hit."""
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.callback import Callback
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem

    pname, n, m = spec
    problem = get_problem(pname, n_var=n) if m == 2 else get_problem(pname, n_var=n, n_obj=m)

    class Track(Callback):
        def __init__(self) -> None:
            super().__init__()
            self.hit = None

        def notify(self, algorithm) -> None:
            pop = algorithm.pop
            F, X = pop.get("F"), pop.get("X")
            phi = pref(F)
            i = int(np.argmin(phi))
            if self.hit is None and abs(phi[i] - best) <= TOL and pareto_distance(name, X[i]) <= TOL:
                self.hit = algorithm.evaluator.n_eval

    cb = Track()
    t = time.perf_counter()
    res = minimize(problem, NSGA2(pop_size=100), ("n_gen", gens), seed=seed, callback=cb, verbose=False)
    F, X = res.pop.get("F"), res.pop.get("X")
    phi = pref(F)
    i = int(np.argmin(phi))
    return dict(
        err=float(phi[i] - best),
        dist=pareto_distance(name, X[i]),
        evals=int(res.algorithm.evaluator.n_eval),
        hit=cb.hit,
        time=time.perf_counter() - t,
    )


def run_backend(backend, problem, opts: dict, name: str, best: float, seed: int) -> dict:
    t = time.perf_counter()
    raw = backend.solve(problem, backend.make_options(opts), RunContext(seed=seed))
    x = raw.values["x"]
    err = raw.objective - best
    dist = pareto_distance(name, x)
    return dict(
        err=float(err),
        dist=dist,
        evals=int(raw.info["evaluations"]),
        time=time.perf_counter() - t,
        hit=raw.info["evaluations"] if abs(err) <= TOL and dist <= TOL else None,
        status=raw.status.value,
    )


def fmt_hit(h) -> str:
    return "—" if h is None else str(h)


def part1(quick: bool, have_pymoo: bool, seeds: list[int]) -> None:
    n_zdt, n_dtlz = 30, 12
    gens = 300 if quick else 500
    pm3_opts = dict(iters=800)
    ws_opts = dict(points=20, iters=300)
    print("\n## Part 1: preferred point (error = preference value − exact; dist = distance to the Pareto set)\n")
    print("| problem | method | seed | status | error | dist | evaluations | evals to hit 1e-3 | time s |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = []
    for case in preference_cases(n_zdt, n_dtlz):
        for seed in seeds:
            rows = {}
            rows["paretom3"] = run_backend(ParetoM3(), case["problem"], pm3_opts, case["name"], case["best"], seed)
            rows["weighted-sum"] = run_backend(
                WeightedSum(), case["problem"], ws_opts, case["name"], case["best"], seed
            )
            if have_pymoo:
                rows["NSGA-II + pick"] = run_nsga(case["pymoo"], case["pref"], case["best"], case["name"], gens, seed)
            for meth, r in rows.items():
                print(
                    f"| {case['label']} | {meth} | {seed} | {r.get('status', '—')} | {r['err']:+.2e} | {r['dist']:.1e} "
                    f"| {r['evals']} | {fmt_hit(r['hit'])} | {r['time']:.1f} |",
                    flush=True,
                )
            if have_pymoo:
                a, b = rows["paretom3"]["hit"], rows["NSGA-II + pick"]["hit"]
                ratio = "—" if a is None or b is None else f"{b / a:.1f}x"
                if a is not None and b is None:
                    ratio = f">{rows['NSGA-II + pick']['evals'] / a:.1f}x (NSGA-II never hit)"
                summary.append((case["label"], seed, ratio))
    if summary:
        print("\n| problem | seed | NSGA-II evaluations / paretom3 evaluations to hit 1e-3 |")
        print("|---|---|---|")
        for label, seed, ratio in summary:
            print(f"| {label} | {seed} | {ratio} |")


def part2(quick: bool, have_pymoo: bool, seed: int) -> None:
    pm3_opts = dict(front_points=10 if quick else 20, front_iters=150 if quick else 400)
    print("\n## Part 2: fronts (hypervolume with reference 1.1·1, IGD to the analytic front)\n")
    print("| problem | method | evaluations | front size | HV | IGD | time s |")
    print("|---|---|---|---|---|---|---|")
    specs = [("zdt1", 1), ("zdt2", 2), ("zdt3", 3), ("dtlz2", None)]
    for pname, which in specs:
        if which is not None:
            problem, m, ref_front, n = zdt_problem(which, 30), 2, zdt_front(which), 30
        else:
            problem, m, ref_front, n = dtlz2_problem(12, 3), 3, dtlz2_front(20), 12
        ref = np.full(m, 1.1)
        results = []
        t = time.perf_counter()
        raw = ParetoM3().solve(problem, ParetoM3().make_options(pm3_opts), RunContext(seed=seed))
        F = np.array([[p["objectives"][f"f{i + 1}"] for i in range(m)] for p in raw.info["front"]])
        evals = raw.info["evaluations"]
        results.append(
            (
                "paretom3 (front)",
                evals,
                raw.info["front_size"],
                hypervolume(F, ref),
                igd(F, ref_front),
                time.perf_counter() - t,
            )
        )
        t = time.perf_counter()
        ws = WeightedSum()
        wraw = ws.solve(problem, ws.make_options(dict(points=20, iters=max(20, evals // 20))), RunContext(seed=seed))
        Fw = np.array([[p["objectives"][f"f{i + 1}"] for i in range(m)] for p in wraw.info["front"]])
        results.append(
            (
                "weighted-sum",
                wraw.info["evaluations"],
                wraw.info["front_size"],
                hypervolume(Fw, ref),
                igd(Fw, ref_front),
                time.perf_counter() - t,
            )
        )
        if have_pymoo:
            from pymoo.algorithms.moo.nsga2 import NSGA2
            from pymoo.optimize import minimize
            from pymoo.problems import get_problem

            pp = get_problem(pname, n_var=n) if m == 2 else get_problem(pname, n_var=n, n_obj=3)
            t = time.perf_counter()
            res = minimize(pp, NSGA2(pop_size=100), ("n_gen", max(1, math.ceil(evals / 100))), seed=seed, verbose=False)
            Fn = res.opt.get("F")
            results.append(
                (
                    "NSGA-II",
                    int(res.algorithm.evaluator.n_eval),
                    Fn.shape[0],
                    hypervolume(Fn, ref),
                    igd(Fn, ref_front),
                    time.perf_counter() - t,
                )
            )
        for meth, ev, size, hv, d, secs in results:
            print(f"| {pname} | {meth} | {ev} | {size} | {hv:.4f} | {d:.4f} | {secs:.1f} |", flush=True)
        print(f"| {pname} | exact front | — | {ref_front.shape[0]} | {hypervolume(ref_front, ref):.4f} | 0 | — |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed, smaller budgets (a few minutes)")
    ap.add_argument("--part", choices=["1", "2", "all"], default="all")
    args = ap.parse_args()
    try:
        import pymoo  # noqa: F401

        have_pymoo = True
    except ImportError:
        have_pymoo = False
        print("pymoo is not installed: NSGA-II columns are skipped (pip install 'optlang-dsl[anchors]')")
    torch.set_num_threads(1)
    seeds = [0] if args.quick else [0, 1]
    print(f"# multiobjective benchmark ({'quick' if args.quick else 'full'}), torch {torch.__version__}, CPU")
    if args.part in ("1", "all"):
        part1(args.quick, have_pymoo, seeds)
    if args.part in ("2", "all"):
        part2(args.quick, have_pymoo, 0)


if __name__ == "__main__":
    main()
