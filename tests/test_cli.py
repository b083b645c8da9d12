"""The command line: check/plan/solve output, --json, -o result.json keys, overrides, exit codes."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from optlang.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_check_and_plan_json() -> None:
    code, out, _ = _run("check", str(ROOT / "models" / "smooth_box.opt"), "--json")
    assert code == 0 and json.loads(out)["kind"] == "smooth"
    code, out, _ = _run("plan", str(ROOT / "models" / "smooth_box.opt"), "--json")
    d = json.loads(out)
    assert code == 0 and d["chosen"] == "gd" and any(c["name"] == "gd" and c["accepted"] for c in d["candidates"])


def test_solve_writes_result_json(tmp_path) -> None:
    out_file = tmp_path / "r.json"
    code, out, _ = _run("solve", str(ROOT / "models" / "smooth_box.opt"), "-o", str(out_file), "--seed", "3")
    assert code == 0 and "objective" in out
    d = json.loads(out_file.read_text())
    for key in ("status", "objective", "bound", "gap", "values", "backend", "plan", "timing", "history", "checks"):
        assert key in d
    assert d["values"]["x"] == [0.5, d["values"]["x"][1]] and d["seed"] == 3


def test_param_override_and_forced_backend_refusal() -> None:
    code, out, _ = _run("solve", str(ROOT / "models" / "portfolio.opt"), "-p", "n=5", "--json")
    assert code == 0 and len(json.loads(out)["values"]["w"]) == 5
    code, _, err = _run("solve", str(ROOT / "models" / "smooth_box.opt"), "-b", "tcdro")
    assert code == 4 and "cannot solve this model" in err


def test_unknown_backend_option_is_a_usage_error() -> None:
    code, _, err = _run("solve", str(ROOT / "models" / "smooth_box.opt"), "-O", "lrr=1")
    assert code == 2 and "did you mean 'lr'" in err


def test_version_and_help() -> None:
    assert _run("--version")[0] == 0
    assert _run()[0] == 2


def test_p_values_read_the_same_in_solve_and_compare(tmp_path) -> None:
    """-p has one reader (cli_common.parse_assignments) in every subcommand: `k=007` is the number 7 in
    solve and in compare alike (compare once read values as JSON, so `007` became a file name), and
    -O values are read the same way too."""
    model = tmp_path / "m.opt"
    model.write_text("param k = 1\nvar x in [-10, 10]\nminimize (x - k)^2\n", encoding="utf-8")
    code, out, _ = _run("solve", str(model), "-p", "k=007", "-b", "gd", "-O", "max_iter=300", "--json", "--seed", "0")
    assert code == 0, out
    solved = json.loads(out)
    assert abs(solved["values"]["x"] - 7.0) < 1e-3
    argv = ["compare", str(model), "-p", "k=007", "-b", "gd", "-O", "max_iter=300", "--executor", "inline"]
    code, out, _ = _run(*argv, "--device", "cpu", "--json", "--no-progress")
    assert code == 0, out
    compared = json.loads(out)
    assert compared["params"] == {"k": 7}
    (run,) = compared["results"]
    assert abs(run["values"]["x"] - solved["values"]["x"]) < 1e-6


def test_option_booleans_read_as_in_a_solver_block() -> None:
    """-O key=true/false is a boolean, as `key = true` in a solver block (it was the string 'true' in solve)."""
    from optlang.cli_common import parse_options

    assert parse_options(["local_search=false", "n=3", "lr=1e-2", "name=abc", "xs=[1, 2]"]) == {
        "local_search": False,
        "n": 3,
        "lr": 0.01,
        "name": "abc",
        "xs": [1, 2],
    }
    petersen = str(ROOT / "models" / "maxcut_petersen.opt")
    code, out, err = _run("solve", petersen, "-b", "gnnsdp", "-O", "local_search=false", "--json", "--seed", "0")
    assert code == 0, err
    assert json.loads(out)["status"] in ("optimal", "feasible", "time_limit")
