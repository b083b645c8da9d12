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
import gc
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from scipy.spatial import Delaunay  # noqa: F401  (loaded before any timing, as pymoo's modules are)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.mo_problems import dtlz2_problem, dtlz_problem, zdt_front, zdt_problem  # noqa: E402
from optlang.backends.base import RunContext  # noqa: E402
from optlang.backends.multiobjective.metrics import das_dennis, hypervolume, igd, nondominated  # noqa: E402
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
    pm3_opts: dict = {}  # defaults: stop on the polish's stationarity, 800 iterations at most
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


PM3_SET: dict = {}  # paretom3 options for part 2 (--set)

FRONT_PROBLEMS = [
    # name, pymoo name, which, n, m
    ("zdt1", "zdt1", 1, 30, 2),
    ("zdt2", "zdt2", 2, 30, 2),
    ("zdt3", "zdt3", 3, 30, 2),
    ("dtlz1", "dtlz1", 1, 7, 3),
    ("dtlz2", "dtlz2", 2, 12, 3),
    ("dtlz7", "dtlz7", 7, 22, 3),
    ("dtlz2-5", "dtlz2", 2, 14, 5),
]


def reference_front(name: str, which: int, m: int) -> tuple[np.ndarray, float | None]:
    """Dense points of the analytic front, and its exact hypervolume where it has a closed form (else None)."""
    if name.startswith("zdt"):
        return zdt_front(which, 5000), None
    if which == 1:  # the simplex Σ f = 1/2
        W = das_dennis(40 if m == 3 else 8, m)
        return 0.5 * W, None
    if which == 2:
        W = das_dennis(40 if m == 3 else 8, m)
        return W / np.linalg.norm(W, axis=1, keepdims=True), None
    t = np.linspace(0.0, 1.0, 160)  # DTLZ7 (m = 3): g = 1, f3 = 2 h(f1, f2), non-dominated part of a grid
    f1, f2 = (a.ravel() for a in np.meshgrid(t, t))
    h = m - sum(f / 2.0 * (1 + np.sin(3 * np.pi * f)) for f in (f1, f2))
    return nondominated(np.stack([f1, f2, 2.0 * h], 1)), None


def hv_ref(R: np.ndarray) -> np.ndarray:
    """The reference point: the analytic front's nadir + 10 % of its range (1.1 for ZDT and DTLZ2)."""
    lo, hi = R.min(0), R.max(0)
    return hi + 0.1 * (hi - lo)


def hv_any(F: np.ndarray, ref: np.ndarray, rng_seed: int = 0, samples: int = 2_000_000) -> float:
    """Exact hypervolume (mo_metrics for 2–3 objectives, moocore above; Monte Carlo with a fixed seed if absent)."""
    F = np.asarray(F, dtype=np.float64)
    F = F[np.all(F < ref, axis=1)]
    if F.shape[1] <= 3:
        return hypervolume(F, ref) if F.size else 0.0
    if F.size == 0:
        return 0.0
    F = nondominated(F)
    try:  # exact, in C (installed with pymoo)
        import moocore

        return float(moocore.hypervolume(F, ref=ref))
    except ImportError:
        pass
    lo = F.min(0)
    rng = np.random.default_rng(rng_seed)
    hit = 0
    for _ in range(samples // 200_000):
        U = lo + rng.random((200_000, F.shape[1])) * (ref - lo)
        dom = np.zeros(U.shape[0], dtype=bool)
        for i0 in range(0, F.shape[0], 64):
            dom |= np.all(F[i0 : i0 + 64][None, :, :] <= U[:, None, :], axis=2).any(1)
        hit += int(dom.sum())
    return float(hit / samples * np.prod(ref - lo))


def exact_hv(name: str, which: int, m: int, R: np.ndarray, ref: np.ndarray) -> float:
    """HV of the exact front: closed forms for DTLZ1 (simplex) and DTLZ2 (sphere), dense fronts otherwise."""
    if name.startswith("dtlz") and which == 2:
        return float(np.prod(ref) - math.pi ** (m / 2) / math.gamma(m / 2 + 1) / 2**m)
    if name.startswith("dtlz") and which == 1:
        return float(np.prod(ref) - 0.5**m / math.factorial(m))
    return hv_any(R, ref)


def run_pymoo(algo: str, pname: str, n: int, m: int, evals: int, seed: int) -> tuple[np.ndarray, int, float]:
    """NSGA-II / NSGA-III / MOEA-D at `evals` evaluations; (the final non-dominated F, evaluations, seconds)."""
    from pymoo.algorithms.moo.moead import MOEAD
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem
    from pymoo.util.ref_dirs import get_reference_directions

    pp = get_problem(pname, n_var=n) if m == 2 else get_problem(pname, n_var=n, n_obj=m)
    parts = {2: 99, 3: 12, 5: 4}[m]  # 100, 91 and 70 directions
    dirs = get_reference_directions("das-dennis", m, n_partitions=parts)
    if algo == "NSGA-II":
        alg = NSGA2(pop_size=100)
    elif algo == "NSGA-III":
        alg = NSGA3(ref_dirs=dirs, pop_size=int(math.ceil(dirs.shape[0] / 4) * 4))
    else:
        alg = MOEAD(dirs, n_neighbors=15, prob_neighbor_mating=0.7)
    t = time.perf_counter()
    res = minimize(pp, alg, ("n_eval", evals), seed=seed, verbose=False)
    secs = time.perf_counter() - t
    F = res.opt.get("F") if res.opt is not None else np.zeros((0, m))
    return nondominated(np.asarray(F, dtype=np.float64)), int(res.algorithm.evaluator.n_eval), secs


COLLECT = True  # part 2: a full garbage collection (untimed) before each timed run (--no-collect: none)


def _timed(fn, *args):
    """(result, wall seconds, CPU seconds of this process) of fn(*args).

    Each run starts after a full garbage collection, outside the timing: with torch, scipy and pymoo
    loaded a full collection costs ~0.1-0.2 s, and without one it lands on whichever run happens to
    cross Python's threshold, billing one method for the objects that the runs before it left (seen:
    the same paretom3 solve 0.25 s or 0.45 s CPU depending on what ran before it). Each run still pays
    for the collections its own allocations trigger.
    """
    if COLLECT:
        gc.collect()
    t, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - t, time.process_time() - c


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def part2(quick: bool, have_pymoo: bool, seeds: list[int], only: list[str] | None = None) -> None:
    print("\n## Part 2: fronts at equal evaluations (HV: reference = analytic front's nadir + 10 % of its range;")
    print("exact: mo_metrics for 2–3 objectives, moocore for 5; IGD to the analytic front)\n")
    print(f"load average (1, 5, 15 min) at the start: {_load()}")
    print(f"full garbage collection before each timed run: {'yes' if COLLECT else 'no (--no-collect)'}\n")
    print("| problem | seed | method | evaluations | front size | HV | HV / exact | IGD | wall s | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary: dict[str, dict[str, list]] = {}
    for name, pname, which, n, m in FRONT_PROBLEMS:
        if only and name not in only:
            continue
        problem = zdt_problem(which, n) if name.startswith("zdt") else dtlz_problem(which, n, m)
        R, _ = reference_front(name, which, m)
        ref = hv_ref(R)
        hv_exact = exact_hv(name, which, m, R, ref)
        per = summary.setdefault(name, {})
        for seed in seeds:
            rows = []
            backend = ParetoM3()
            raw, secs, cpu = _timed(backend.solve, problem, backend.make_options(PM3_SET), RunContext(seed=seed))
            F = np.array([[p["objectives"][f"f{i + 1}"] for i in range(m)] for p in raw.info["front"]])
            evals = int(raw.info["evaluations"])
            rows.append((f"paretom3 ({raw.status.value})", evals, F, secs, cpu))
            ws = WeightedSum()
            wopts = ws.make_options(dict(points=20, iters=max(20, evals // 20)))
            wraw, wsecs, wcpu = _timed(ws.solve, problem, wopts, RunContext(seed=seed))
            Fw = np.array([[p["objectives"][f"f{i + 1}"] for i in range(m)] for p in wraw.info["front"]])
            rows.append(("weighted-sum", int(wraw.info["evaluations"]), Fw, wsecs, wcpu))
            if have_pymoo:
                for algo in ("NSGA-II", "NSGA-III", "MOEA/D"):
                    (Fp, ev, _), sp, cp = _timed(run_pymoo, algo, pname, n, m, evals, seed)
                    rows.append((algo, ev, Fp, sp, cp))
            for meth, ev, FF, secs, cpu in rows:
                hv = hv_any(FF, ref)
                per.setdefault(meth.split(" (")[0], []).append((hv / hv_exact, secs, cpu))
                d = igd(FF, R) if FF.size else float("nan")
                print(
                    f"| {name} | {seed} | {meth} | {ev} | {FF.shape[0]} | {hv:.4f} | {hv / hv_exact:.4f} | {d:.4f} "
                    f"| {secs:.2f} | {cpu:.2f} |",
                    flush=True,
                )
        print(f"| {name} | — | exact front | — | {R.shape[0]} | {hv_exact:.4f} | 1 | 0 | — | — |", flush=True)
    print(f"\nload average at the end: {_load()}")
    if not summary:
        return
    print(f"\nSeeds {', '.join(map(str, seeds))}: HV / exact as mean [min, max]; times are medians over the seeds")
    print("(wall and CPU seconds of the same process, one torch thread; pymoo runs right after paretom3).\n")
    cols = [c for c in ("paretom3", "NSGA-III", "MOEA/D", "NSGA-II") if any(c in v for v in summary.values())]
    print(
        "| problem | " + " | ".join(f"{c} HV/exact" for c in cols) + " | min over seeds of paretom3 / NSGA-III HV "
        "| paretom3 wall / CPU s | NSGA-III wall / CPU s | wall ratio | CPU ratio |"
    )
    print("|---|" + "---|" * (len(cols) + 5))
    for name, per in summary.items():
        cells = []
        for c in cols:
            v = np.array([r[0] for r in per[c]])
            cells.append(f"{v.mean():.4f} [{v.min():.4f}, {v.max():.4f}]")
        p3 = per["paretom3"]
        if "NSGA-III" in per:
            n3 = per["NSGA-III"]
            rat = [a[0] / b[0] if b[0] > 0 else (np.inf if a[0] > 0 else np.nan) for a, b in zip(p3, n3, strict=True)]
            rmin = "— (both 0)" if all(np.isnan(r) for r in rat) else f"{np.nanmin(rat):.3f}"
            w3, c3 = np.median([r[1] for r in n3]), np.median([r[2] for r in n3])
        else:
            rmin, w3, c3 = "—", np.nan, np.nan
        wp, cp = np.median([r[1] for r in p3]), np.median([r[2] for r in p3])
        print(
            f"| {name} | " + " | ".join(cells) + f" | {rmin} | {wp:.2f} / {cp:.2f} | {w3:.2f} / {c3:.2f} "
            f"| {wp / w3:.2f} | {cp / c3:.2f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed, smaller budgets (a few minutes)")
    ap.add_argument("--part", choices=["1", "2", "all"], default="all")
    ap.add_argument("--set", action="append", default=[], help="part 2: a paretom3 option KEY=VALUE (repeatable)")
    ap.add_argument("--no-pymoo", action="store_true", help="skip the pymoo columns")
    ap.add_argument("--seeds", default="0", help="part 2: comma-separated seeds of every method (default 0)")
    ap.add_argument("--only", default="", help="part 2: comma-separated problems (zdt1,...,dtlz2-5)")
    ap.add_argument("--no-collect", action="store_true", help="part 2: no garbage collection before each timed run")
    args = ap.parse_args()
    try:
        import pymoo  # noqa: F401

        have_pymoo = True
    except ImportError:
        have_pymoo = False
        print("pymoo is not installed: NSGA-II columns are skipped (pip install 'optlang-dsl[anchors]')")
    torch.set_num_threads(1)
    for kv in args.set:
        key, val = kv.split("=", 1)
        if val.lower() in ("true", "false"):
            PM3_SET[key] = val.lower() == "true"
            continue
        try:
            PM3_SET[key] = int(val)
        except ValueError:
            try:
                PM3_SET[key] = float(val)
            except ValueError:
                PM3_SET[key] = val
    have_pymoo = have_pymoo and not args.no_pymoo
    global COLLECT
    COLLECT = not args.no_collect
    seeds = [0] if args.quick else [0, 1]
    print(f"# multiobjective benchmark ({'quick' if args.quick else 'full'}), torch {torch.__version__}, CPU")
    if args.part in ("1", "all"):
        part1(args.quick, have_pymoo, seeds)
    if args.part in ("2", "all"):
        seeds2 = [int(x) for x in args.seeds.split(",") if x]
        part2(args.quick, have_pymoo, seeds2, [x for x in args.only.split(",") if x] or None)


if __name__ == "__main__":
    main()
