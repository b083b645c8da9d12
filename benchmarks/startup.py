"""Start-up and time-limit benchmark: what a user waits for, measured as process wall time.

Part A: wall and CPU time of `python -c "import torch"` next to `optlang --version`, `check`, `plan` and
`solve` of a 16-variable QUBO (models/qubo_small.opt), each the median of --repeats fresh processes.
Goals (issue 15): plan < 1 s and the tiny solve < 1.5 s on the 2-core CI machine. On a shared,
loaded machine the wall time mostly measures the others' load; CPU time is what it would be idle.
Part B: every backend solves a model of its kind with `--time-limit 2` (anytime backends end
earlier when they prove optimality or stagnate); the table shows process wall time, the solve time
the Result records (process start, import and compile excluded), the overrun of that solve time
beyond the limit, the status and the stop reason. The cap: overrun ≤ 10% + 0.5 s.

    python benchmarks/startup.py [--repeats 3] [--parts A,B] [--only specann,gd] [--limit 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
QUBO16 = MODELS / "qubo_small.opt"

# one model per backend: the backend's own kind, sized so that a 2 s limit matters
BACKEND_MODELS = {
    "specann": "maxcut_torus.opt",
    "gnnsdp": "maxcut_torus.opt",
    "bnb": "maxcut_torus.opt",
    "bruteforce": "sk_glass.opt",
    "localsearch": "maxcut_torus.opt",
    "neal": "maxcut_torus.opt",
    "sdp-cvxpy": "maxcut_torus.opt",
    "sdp-bm": "maxcut_torus.opt",
    "sdbpg": "overparam_regression.opt",
    "penalty": "overparam_regression.opt",
    "adasgda": "robust_game.opt",
    "gda": "robust_game.opt",
    "paretom3": "zdt1_pref.opt",
    "weighted-sum": "zdt2_front.opt",
    "tcdro": "housing_tc.opt",
    "dro-cvxpy": "chi2_regression.opt",
    "erm": "chi2_regression.opt",
    "gd": "logistic.opt",
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _wall(cmd: list[str]) -> tuple[float, int, str]:
    dt, _, rc, out = _timed(cmd)
    return dt, rc, out


def _timed(cmd: list[str]) -> tuple[float, float, int, str]:
    """Process wall time and CPU time (user + sys: what the wall would be on an idle machine)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT)
    dt = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return dt, cpu, p.returncode, p.stdout + p.stderr


OPTLANG = [sys.executable, "-m", "optlang.cli"]


def part_a(repeats: int) -> None:
    rows = [
        ('python -c "pass" (interpreter)', [sys.executable, "-c", "pass"], None),
        ('python -c "import torch"', [sys.executable, "-c", "import torch"], None),
        ("optlang --version", [*OPTLANG, "--version"], None),
        ("optlang check qubo_small (16 vars)", [*OPTLANG, "check", str(QUBO16)], None),
        ("optlang plan qubo_small", [*OPTLANG, "plan", str(QUBO16)], 1.0),
        ("optlang solve qubo_small", [*OPTLANG, "solve", str(QUBO16), "--quiet"], 1.5),
    ]
    load = os.getloadavg()[0]
    print(f"Part A: process wall time and CPU time (user + sys), median of {repeats} (s); load average {load:.1f}")
    print(f"  {'command':<38} {'wall':>7} {'min':>7} {'cpu':>7}  goal (on the wall time)")
    for label, cmd, goal in rows:
        times, cpus = [], []
        for _ in range(repeats):
            dt, cpu, rc, out = _timed(cmd)
            if rc != 0:
                print(f"  {label}: exit {rc}\n{out}")
                break
            times.append(dt)
            cpus.append(cpu)
        if times:
            med = statistics.median(times)
            mark = "" if goal is None else (f"< {goal:g} s " + ("met" if med < goal else "MISSED"))
            print(f"  {label:<38} {med:7.2f} {min(times):7.2f} {statistics.median(cpus):7.2f}  {mark}")


def part_b(only: list[str] | None, limit: float) -> None:
    print(f"\nPart B: every backend with --time-limit {limit:g} (cap: limit + 10% + 0.5 s on the solve time)")
    print(f"  {'backend':<13} {'model':<25} {'wall':>6} {'solve':>6} {'overrun':>8}  {'status':<15} stop")
    worst = 0.0
    for name, model in BACKEND_MODELS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            cmd = [*OPTLANG, "solve", str(MODELS / model), "-b", name, "--time-limit", str(limit), "--quiet"]
            if model.startswith("maxcut"):  # their solver blocks ask for an extra SDP bound, on its own clock
                cmd += ["-O", "bound=none"]
            dt, rc, text = _wall([*cmd, "-o", str(out)])
            if not out.exists():  # exit 1 with a result means a failed check: the timing still counts
                last = text.strip().splitlines()[-1] if text.strip() else ""
                print(f"  {name:<13} {model:<25} {dt:6.2f}      —        —  exit {rc}: {last[:70]}")
                continue
            d = json.loads(out.read_text())
        solve = float(d.get("timing", {}).get("solve", float("nan")))
        over = solve - limit
        worst = max(worst, over)
        cap = 0.1 * limit + 0.5
        flag = "" if over <= cap else "  OVER CAP"
        stop = (d.get("info") or {}).get("stop", "")
        checks = "" if rc == 0 else f" (exit {rc}: a check failed)"
        print(f"  {name:<13} {model:<25} {dt:6.2f} {solve:6.2f} {over:+8.2f}  {d['status']:<15} {stop}{flag}{checks}")
    print(f"  worst overrun {worst:+.2f} s (cap +{0.1 * limit + 0.5:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parts", default="A,B")
    ap.add_argument("--only", default=None, help="comma-separated backends for part B")
    ap.add_argument("--limit", type=float, default=2.0)
    a = ap.parse_args()
    parts = a.parts.upper().split(",")
    if "A" in parts:
        part_a(a.repeats)
    if "B" in parts:
        part_b(a.only.split(",") if a.only else None, a.limit)


if __name__ == "__main__":
    main()
