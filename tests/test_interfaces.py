"""The interfaces a user meets: one flag vocabulary, machine output alone on stdout, no wrapping off a
terminal, quiet broken pipes, the progress line in the user's sense, the summary (internals behind
--verbose), captured solver warnings, and the API's views, reprs, overrides and Result files."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import optlang
from optlang.cli import build_parser, main
from optlang.cli_common import HelpFormatter
from optlang.display import Progress

ROOT = Path(__file__).resolve().parents[1]
SMOOTH = str(ROOT / "models" / "smooth_box.opt")
PETERSEN = str(ROOT / "models" / "maxcut_petersen.opt")
COMMANDS = ("check", "plan", "solve", "compare", "bench")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# ----------------------------------------------------------------------------- flags
def _subparser(name: str):
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices[name]


@pytest.mark.parametrize("name", COMMANDS)
def test_one_flag_vocabulary(name: str) -> None:
    sub = _subparser(name)
    flags = {s: a for a in sub._actions for s in a.option_strings}
    for flag in ("-b", "--backend", "--backends", "--json", "-q", "--quiet", "--no-progress", "-v", "-p", "-d"):
        assert flag in flags, (name, flag)
    assert flags["-b"].dest == "backends" and flags["--no-progress"] is flags["--quiet"]
    help_text = sub.format_help()
    assert "exit codes:" in help_text and "130" in help_text and "  4   no backend" in help_text
    if name in ("solve", "compare", "bench"):
        for flag in ("--time-limit", "--seed", "--device", "--dtype", "--max-iter", "-O"):
            assert flag in flags, (name, flag)
        for a in sub._actions:  # every run flag says its default
            if a.option_strings and a.option_strings[-1] in ("--time-limit", "--seed", "--device", "--dtype"):
                assert "default" in HelpFormatter("optlang")._get_help_string(a), a.option_strings
    assert "exit codes:" in build_parser().format_help()


def test_help_shows_defaults() -> None:
    text = " ".join(_subparser("compare").format_help().split())
    assert "the model's own time_limit, else 10" in text and "(default: auto)" in text and "(default: local)" in text
    text = " ".join(_subparser("solve").format_help().split())
    assert "the solver block's time_limit" in text and "else float32" in text


def test_backend_list_in_solve_and_plan() -> None:
    code, out, _ = _run("plan", SMOOTH, "-b", "tcdro,gd", "--json")
    assert code == 0 and json.loads(out)["chosen"] == "gd"
    code, out, _ = _run("solve", SMOOTH, "-b", "tcdro", "-b", "gd", "--json")
    assert code == 0 and json.loads(out)["backend"] == "gd"
    code, out, err = _run("solve", SMOOTH, "-b", "tcdro,dro-cvxpy", "--json")
    assert code == 4 and "cannot solve this model" in err and "errors" in json.loads(out)


# ----------------------------------------------------------------------------- machine output
@pytest.mark.parametrize("name", ("check", "plan", "solve"))
def test_json_is_the_only_stdout(name: str) -> None:
    code, out, _ = _run(name, SMOOTH, "--json", "-q")
    assert code == 0 and isinstance(json.loads(out), dict)


def test_json_errors_on_stdout_diagnostic_on_stderr() -> None:
    code, out, err = _run("check", str(ROOT / "tests" / "fixtures" / "errors" / "pow_star.opt"), "--json")
    assert code == 3 and json.loads(out)["errors"][0]["code"] == "E106" and "error[E106]" in err


@pytest.mark.parametrize("flags", (["--json"], ["--format", "json"]))
def test_compare_json_stdout_is_valid_json(flags: list[str]) -> None:
    code, out, err = _run("compare", PETERSEN, "-b", "bruteforce", "--executor", "inline", "--time-limit", "1", *flags)
    assert code == 0
    doc = json.loads(out)  # the whole stdout is one JSON document
    assert doc["model"] == "maxcut_petersen" and "bruteforce" in err  # the table went to stderr


def test_compare_json_with_report_file(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    code, out, err = _run(
        "compare", PETERSEN, "-b", "bruteforce", "--executor", "inline", "--json", "--report", str(report)
    )
    assert code == 0 and json.loads(out)["model"] == "maxcut_petersen"
    assert report.read_text().startswith("#") and "report written" in err


def test_markdown_rows_are_not_wrapped() -> None:
    long_model = ROOT / "models" / "maxcut_petersen.opt"
    code, out, _ = _run(
        "compare",
        str(long_model),
        "-b",
        "bruteforce,localsearch",
        "--executor",
        "inline",
        "--time-limit",
        "0.5",
        "--format",
        "md",
    )
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert rows and all(line.rstrip().endswith("|") for line in rows)
    assert max(len(line) for line in rows) > 80  # wider than a default terminal, kept on one line


def test_plain_output_is_not_wrapped_off_a_terminal() -> None:
    code, out, _ = _run("plan", PETERSEN)
    assert code == 0
    line = next(x for x in out.splitlines() if "specann" in x)
    assert len(line) > 80 and "\x1b[" not in out  # one row per backend, no colour codes in a pipe


def test_broken_pipe_exits_quietly(tmp_path: Path) -> None:
    big = tmp_path / "big.opt"
    big.write_text("var x[20000] in [0, 1]\nminimize sumsq(x - 0.5)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        f"{sys.executable} -m optlang.cli solve {big} --json | head -c 100",
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.stdout.startswith("{") and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_broken_pipe_of_the_text_summary_exits_zero(tmp_path: Path) -> None:
    """rich's own broken-pipe handler exits 1; the text summary piped into `head -1` must exit 0 quietly."""
    model = tmp_path / "m.opt"
    model.write_text("var x[3000] in [0, 1]\nminimize sumsq(x - 0.5)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m optlang.cli solve {model} --verbose | head -1; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_broken_pipe_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    class Closed(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["check", SMOOTH, "--json"]) == 0


# ----------------------------------------------------------------------------- summary and progress
def test_summary_puts_users_quantities_first_and_hides_internals() -> None:
    code, out, _ = _run("solve", PETERSEN, "-b", "bruteforce", "-q")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("optimal") and lines[1].split()[:2] == ["objective", "12"]
    code, out_v, _ = _run("solve", PETERSEN, "-b", "specann", "--time-limit", "0.5", "-q")
    assert "t_start" not in out_v and "hidden: --verbose shows them" in out_v
    code, out_v, _ = _run("solve", PETERSEN, "-b", "specann", "--time-limit", "0.5", "-q", "--verbose")
    assert "t_start" in out_v
    code, out_j, _ = _run("solve", PETERSEN, "-b", "specann", "--time-limit", "0.5", "--json")
    assert "t_start" in json.loads(out_j)["info"]


def test_progress_rows_are_in_the_users_sense() -> None:
    rows: list[dict] = []
    r = optlang.load(PETERSEN).solve(backend="bruteforce", progress=rows.append)
    assert r.sense == "maximize" and rows and all(row["objective"] > 0 for row in rows)
    assert rows[-1]["objective"] == r.objective == 12 and rows[-1]["bound"] == 12
    assert all(h.objective > 0 for h in r.history)


def test_progress_line_clock_and_gap() -> None:
    p = Progress(enabled=False)
    p.start -= 2.5  # as if started 2.5 s ago: the clock runs without any report
    assert p.line().strip().startswith("2.5s")
    p({"time": 0.1, "objective": 39.0, "bound": 40.0})
    line = p.line()
    assert "objective 39" in line and "bound 40" in line and "gap 2.564%" in line  # |40 - 39| / 39, as Result.gap
    p.close()


# ----------------------------------------------------------------------------- warnings
def test_solver_warnings_go_to_the_log(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture) -> None:
    from optlang.backends import registry

    cls = type(registry.get("gd"))
    original = cls.solve

    def noisy(self, problem, options, ctx):  # type: ignore[no-untyped-def]
        for _ in range(3):
            warnings.warn("Solution may be inaccurate. Try another solver.", UserWarning, stacklevel=1)
        return original(self, problem, options, ctx)

    monkeypatch.setattr(cls, "solve", noisy)
    r = optlang.load(SMOOTH).solve()
    assert r.log == ("UserWarning: Solution may be inaccurate. Try another solver. (×3)",)
    assert "inaccurate" not in capfd.readouterr().err
    assert optlang.Result.from_json(r.to_json()).log == r.log
    code, out, _ = _run("solve", SMOOTH, "-q")
    assert "1 solver message(s)" in out


# ----------------------------------------------------------------------------- API
def test_result_repr_save_load_and_to_json(tmp_path: Path) -> None:
    r = optlang.load(SMOOTH).solve()
    assert repr(r).count("\n") == 0 and "plan" not in repr(r) and len(repr(r)) < 160
    path = tmp_path / "sub" / "r.json"
    r.to_json(path)
    assert optlang.Result.load(path).objective == r.objective
    with pytest.raises(TypeError, match="indent"):
        r.to_json(4)  # type: ignore[arg-type]
    assert r.to_json(indent=None).count("\n") == 0
    r.save(tmp_path / "s.json")
    back = optlang.Result.load(tmp_path / "s.json")
    assert back.history == r.history and back.history[0].time == r.history[0][0]
    code, _, _ = _run("solve", SMOOTH, "-q", "-o", str(tmp_path / "cli.json"))
    assert code == 0 and optlang.Result.load(tmp_path / "cli.json").backend == "gd"


def test_notebook_reprs() -> None:
    m = optlang.load(PETERSEN)
    r = m.solve(backend="bruteforce")
    for obj in (m, m.plan(), r):
        assert obj._repr_markdown_().count("|") > 4 and obj._repr_html_().startswith("<table>")
    assert "graph P" in m._repr_markdown_() and "10 nodes, 15 edges" in m._repr_markdown_()


def test_views_are_read_only() -> None:
    m = optlang.parse("param n = 3\nparam A = randn(3, 3, seed = 1)\nvar x[n] in [0, 1]\nminimize quad(x, A @ A.T)\n")
    assert m.params["n"] == 3.0 and m.params["A"].shape == (3, 3)
    assert m.variables["x"].describe() == "real [3] in [0, 1]"
    with pytest.raises(TypeError):
        m.params["n"] = 4  # type: ignore[index]
    with pytest.raises(TypeError):
        m.variables["y"] = None  # type: ignore[index]


@pytest.mark.parametrize(
    "value",
    [
        nx.petersen_graph(),
        nx.to_scipy_sparse_array(nx.petersen_graph()),
        sp.csr_matrix(nx.to_numpy_array(nx.petersen_graph())),
        nx.to_numpy_array(nx.petersen_graph()),
        Path(ROOT / "models" / "petersen.mtx"),
        str(ROOT / "models" / "petersen.mtx"),
    ],
    ids=["networkx", "sparray", "csr", "numpy", "Path", "str"],
)
@pytest.mark.parametrize("where", ["params", "data"])
def test_graph_overrides(value: object, where: str) -> None:
    m = optlang.parse("graph G = torus(3, 3, seed = 1)\nmaxcut G\n", **{where: {"G": value}})
    assert (m.graphs["G"].n, m.graphs["G"].m) == (10, 15)
    assert m.solve(backend="bruteforce").objective == 12


def test_weighted_networkx_graph_keeps_weights() -> None:
    g = nx.Graph()
    g.add_edge("a", "b", weight=2.0)
    g.add_edge("b", "c", weight=3.0)
    m = optlang.parse("graph G = torus(3, 3, seed = 1)\nmaxcut G\n", params={"G": g})
    assert m.solve(backend="bruteforce").objective == 5.0


def test_table_and_bad_overrides() -> None:
    text = 'data D = load("train.csv", target = "y")\nvar w[D.p]\nminimize mean((D.X @ w - D.y)^2)\n'
    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20.0)
    m = optlang.parse(text, base_dir=ROOT / "models", data={"D": (X, y)})
    assert m.data["D"].X.shape == (20, 3) and m.variables["w"].shape == (3,)
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse("graph G = torus(3, 3, seed = 1)\nmaxcut G\n", data={"G": {"a": 1}})
    assert info.value.code == "E701" and "networkx graph" in info.value.message
    assert len(info.value.errors) == 1  # one clear error, not two contradictory ones


def test_common_option_types() -> None:
    """max_iter = 1e3 is an integer (it crashed gd); 2.5 and "lots" are refused at their line, by check and solve."""
    ok = optlang.parse("var x[2]\nminimize sumsq(x)\nsolver gd { max_iter = 1e3 }\n")
    ok.check_solver()
    assert ok.solve().ok
    for bad in ("2.5", '"lots"', "-1"):
        m = optlang.parse(f"var x[2]\nminimize sumsq(x)\nsolver gd {{ max_iter = {bad} }}\n")
        for call in (m.check_solver, m.solve):
            with pytest.raises(optlang.OptlangError) as info:
                call()
            assert info.value.code == "E702" and info.value.line == 3
    with pytest.raises(optlang.OptlangError) as info:
        optlang.load(SMOOTH).solve(options={"time_limit": "5s"})
    assert info.value.code == "E702" and "positive number of seconds" in info.value.message
