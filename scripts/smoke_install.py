"""A user's install, tested: run by `make smoke` (part of `make test`) with the Python of a fresh
venv that holds only the built wheel (no extras) and torch.

    python scripts/smoke_install.py --wheel dist/optlang_dsl-*.whl   # what the wheel must hold
    <fresh venv>/bin/python scripts/smoke_install.py --models models  # check/plan/solve every model

The wheel check: every non-Python file of the package in the source tree (the grammar, the GNN-SDP
weights, report assets, ...) is in the wheel, and so are the grammar and the weights by name.
The models check: `optlang check`, `plan` and `solve` (time limit capped) of every model in models/
end with no traceback, and either a result or a clean refusal (an error[...] message); backends of
absent extras are listed by `plan` with "needs optional package X (pip install 'optlang-dsl[EXTRA]')"
and a forced one is refused with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUST_SHIP = ("optlang/grammar/optlang.lark", "gnnsdp.safetensors", "gnnsdp.json")
EXIT_OK, EXIT_NO_SOLUTION, EXIT_PLAN = 0, 1, 4


def check_wheel(wheel: Path) -> list[str]:
    """Problems with the wheel's contents (empty when it holds every package data file)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    problems = [f"the wheel lacks {m}" for m in MUST_SHIP if not any(n.endswith(m) for n in names)]
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "optlang"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        tracked = [str(p.relative_to(ROOT)) for p in (ROOT / "optlang").rglob("*") if p.is_file()]
    for f in tracked:
        if f.endswith((".py", ".pyc")) or "__pycache__" in f:
            continue
        if f not in names:
            problems.append(f"the wheel lacks package data {f} (add it to [tool.setuptools.package-data])")
    return problems


def _run(exe: str, args: list[str], cwd: Path, timeout: float) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("OMP_NUM_THREADS", "1")
    try:
        p = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f} s"
    return p.returncode, p.stdout + p.stderr


def check_models(models: Path, time_limit: float) -> list[str]:
    """Problems found running check/plan/solve on every model with the installed `optlang`."""
    exe = shutil.which("optlang", path=str(Path(sys.executable).parent))
    if exe is None:
        return ["no `optlang` script next to this Python: is the wheel installed in this venv?"]
    import optlang  # the installed package, never the source tree

    if Path(optlang.__file__).resolve().is_relative_to(ROOT / "optlang"):
        return [f"optlang was imported from the source tree ({optlang.__file__}), not the installed wheel"]
    problems: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="optlang-smoke-"))
    shutil.copytree(models, work / "models")  # a copy: the models' data files travel with them
    print(f"{'model':<28} {'check':>6} {'plan':>6} {'solve':>6}  result")
    for model in sorted((work / "models").glob("*.opt")):
        row, outcome = [], ""
        for cmd in ("check", "plan", "solve"):
            args = [cmd, str(model)]
            out_json = work / f"{model.stem}.json"
            if cmd == "solve":
                args += ["--time-limit", str(time_limit), "--quiet", "-o", str(out_json)]
            t = time.perf_counter()
            rc, text = _run(exe, args, work, timeout=120 + 3 * time_limit)
            row.append(time.perf_counter() - t)
            if "Traceback" in text:
                problems.append(f"{cmd} {model.name}: a traceback\n{text[-2000:]}")
                outcome = "TRACEBACK"
                break
            if rc == EXIT_OK or (cmd == "solve" and rc == EXIT_NO_SOLUTION and out_json.exists()):
                if cmd == "solve":
                    d = json.loads(out_json.read_text())
                    failed = " checks failed" if rc else ""
                    outcome = f"{d['status']} {d['objective']!r:.14} ({d['backend']}){failed}"
                continue
            if rc == EXIT_PLAN and "error[" in text:
                outcome = "refused: " + text.strip().splitlines()[0][:70]
                break
            problems.append(f"{cmd} {model.name}: exit {rc} without a result or a clean refusal\n{text[-2000:]}")
            outcome = f"FAILED (exit {rc})"
            break
        print(f"{model.name:<28} " + " ".join(f"{x:6.2f}" for x in row) + "   " * (3 - len(row)) + f"  {outcome}")
    problems += check_optional(exe, work / "models")
    shutil.rmtree(work, ignore_errors=True)
    return problems


def check_optional(exe: str, models: Path) -> list[str]:
    """Backends of extras that are absent here refuse with the install sentence, in plan and solve."""
    import importlib.util

    problems = []
    model = models / "maxcut_petersen.opt"
    for backend, module, extra in (("neal", "dwave", "anchors"), ("sdp-cvxpy", "cvxpy", "cvxpy")):
        if importlib.util.find_spec(module) is not None:
            continue  # installed here: nothing to refuse
        sentence = f"pip install 'optlang-dsl[{extra}]'"
        rc, text = _run(exe, ["plan", str(model), "--json"], models, 120)  # JSON: no table wrapping
        try:
            reason = next(c["reason"] for c in json.loads(text)["candidates"] if c["name"] == backend)
        except (ValueError, KeyError, StopIteration):
            reason = ""
        if rc != EXIT_OK or not reason.startswith("needs optional package") or sentence not in reason:
            problems.append(f"plan does not list {backend} as needing [{extra}]:\n{text[-1500:]}")
        rc, text = _run(exe, ["solve", str(model), "-b", backend], models, 120)
        if rc != EXIT_PLAN or "Traceback" in text or sentence not in text.replace("\n", " "):
            problems.append(f"solve -b {backend} without [{extra}]: exit {rc}, not a clean refusal:\n{text[-1500:]}")
        else:
            print(f"solve -b {backend} (no [{extra}]): refused — " + text.strip().splitlines()[0][:90])
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path, help="check this wheel's contents")
    ap.add_argument("--models", type=Path, help="run check/plan/solve on every model in this folder")
    ap.add_argument("--time-limit", type=float, default=3.0, help="cap on each solve (s)")
    a = ap.parse_args()
    problems: list[str] = []
    if a.wheel:
        problems += check_wheel(a.wheel)
        print(f"wheel {a.wheel.name}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    if a.models:
        problems += check_models(a.models, a.time_limit)
    for p in problems:
        print("SMOKE FAILURE:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
