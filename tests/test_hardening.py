"""Hostile inputs end in a located OptlangError (code, line, column) or a result, never a traceback:
constant folding, argument validation, nesting, memory estimates, strict data, confinement,
signals, atomic outputs and exit codes (issue 22)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import optlang
from optlang import data as D
from optlang import guard, memory
from optlang.cli import main
from optlang.errors import DataError, OptlangError
from optlang.ir.lower import MAX_NESTING

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "t.csv").write_text("a,b,y\n1,2,3\n4,5,6\n", encoding="utf-8")
    return tmp_path


def _err(text: str, base: Path | str = ".", **kw: object) -> OptlangError:
    with pytest.raises(OptlangError) as info:
        optlang.parse(text, base_dir=base, **kw)  # type: ignore[arg-type]
    e = info.value
    for x in e.errors:
        assert x.span is not None or x.code == "E701", f"unlocated {x.code}: {x.message}"
    assert "error[" in e.render()
    return e


ROBUST = 'data D = load("t.csv", target = "y")\nvar w[2]\nminimize robust mean((D.X @ w - D.y)^2) within '

# (model text, expected code, expected line) — each from the list of crashing inputs
CASES = {
    "transpose of a literal folds": None,
    "division by zero": ("param a = 1 / 0\nvar x\nminimize x^2", "E607", 1),
    "axis on a scalar variable": ("var x\nminimize sum(x, axis = 0)", "E305", 2),
    "axis on a scalar constant": ("param a = sum(3, axis = 0)\nvar x\nminimize x^2", "E305", 1),
    "radius is a string": (ROBUST + 'chi2(radius = "a")', "E508", 3),
    "radius is a vector": (ROBUST + "chi2(radius = ones(2))", "E508", 3),
    "bins overflows": (ROBUST + "target_conditional(chi2, radius = 1, bins = 1e400)", "E111", 3),
    "bins too many": (ROBUST + "target_conditional(chi2, radius = 1, bins = 1e9)", "E508", 3),
    "p overflows": (ROBUST + "wasserstein(radius = 1, p = 1e400)", "E111", 3),
    "p not 1 or 2": (ROBUST + "wasserstein(radius = 1, p = 3)", "E508", 3),
    "divergence is an array": (ROBUST + "target_conditional(D.X, radius = 1)", "E508", 3),
    "target_conditional without targets": (
        "param X = randn(20, 1, seed = 1)\nparam y = randn(20, seed = 2)\nvar w\n"
        "minimize robust mean((X[:, 0] * w - y)^2) within target_conditional(chi2, radius = 0.1, bins = 4)",
        "E508",
        4,
    ),
    "randn of a string": ('param A = randn("a", 3)\nvar x\nminimize x^2', "E606", 1),
    "torus beyond any size": ("graph G = torus(1e308, 3)\nmaxcut G", "E606", 1),
    "erdos_renyi beyond any size": ("graph G = erdos_renyi(4e9, 0)\nmaxcut G", "E606", 1),
    "erdos_renyi p a string": ('graph G = erdos_renyi(10, "a")\nmaxcut G', "E606", 1),
    "negative seed": ("param A = randn(3, seed = -1)\nvar x\nminimize x^2", "E606", 1),
    "load target a number": ('data D = load("t.csv", target = 1)\nvar x\nminimize x^2', "E604", 1),
    "unknown string escape": ('data D = load("t\\x.csv", target = "y")\nvar x\nminimize x^2', "E110", 1),
    "number overflows": ("var x\nminimize x + 1e400", "E111", 2),
    "sparse dimension": ("graph G = torus(3, 3)\nvar x[adjacency(G)]\nminimize sum(x)", "E301", 2),
    "weights not a string": ("graph G = torus(3, 3, weights = 1)\nmaxcut G", "E606", 1),
}


@pytest.mark.parametrize("name", [k for k, v in CASES.items() if v is not None])
def test_crashing_inputs_are_located_errors(name: str, folder: Path) -> None:
    text, code, line = CASES[name]  # type: ignore[misc]
    e = _err(text, folder)
    assert (e.code, e.line) == (code, line), e.render()


def test_folding_is_total_where_it_has_a_value() -> None:
    m = optlang.parse("param a = (3).T\nparam b = [1, 2].T\nvar x\nminimize (x - a)^2 + sum(b)")
    assert m.ir.params["a"] == 3.0 and list(m.ir.params["b"]) == [1.0, 2.0]
    m = optlang.parse("graph G = torus(3, 3)\nparam A = 2 ^ adjacency(G)\nvar x\nminimize x^2")
    A = m.ir.params["A"]
    assert A.shape == (9, 9) and A.max() == 2.0 and A.min() == 1.0
    # elementwise product of two sparse matrices is elementwise, not a matrix product
    m = optlang.parse("graph G = torus(3, 3)\nparam A = adjacency(G) * adjacency(G)\nvar x\nminimize x^2")
    B = m.ir.params["A"]
    assert sp.issparse(B) and B.nnz == 36 and B.max() == 1.0


def test_strings_keep_non_ascii_and_the_grammars_escapes(tmp_path: Path) -> None:
    (tmp_path / "é ü.csv").write_text("a,y\n1,2\n3,4\n", encoding="utf-8")
    m = optlang.parse('data D = load("é ü.csv", target = "y")\nvar w\nminimize mean((D.X @ [w] - D.y)^2)', tmp_path)
    assert m.ir.tables["D"].n == 2
    (tmp_path / 'q"t.csv').write_text("a,y\n1,2\n", encoding="utf-8")
    m = optlang.parse('data D = load("q\\"t.csv", target = "y")\nvar w\nminimize mean((D.X @ [w] - D.y)^2)', tmp_path)
    assert m.ir.tables["D"].n == 1


@pytest.mark.parametrize(
    "body",
    [
        "-" * (MAX_NESTING + 5) + "x",
        "sum(" + "[" * (MAX_NESTING + 5) + "x" + "]" * (MAX_NESTING + 5) + ")",
        "abs(" * 5000 + "x" + ")" * 5000,
        "sum(" + "[" * 10000 + "x" + "]" * 10000 + ")",
        "x^" * 3000 + "1",
    ],
)
def test_deep_nesting_is_refused_cleanly(body: str) -> None:
    e = _err(f"var x\nminimize {body}")
    assert e.code == "E109" and e.line == 2


def test_parentheses_are_not_nesting() -> None:
    m = optlang.parse("var x\nminimize " + "(" * 10000 + "x^2" + ")" * 10000)
    assert m.kind == "smooth"


def test_nesting_up_to_the_limit_lowers_and_solves() -> None:
    d = MAX_NESTING - 4
    for body in ("-" * d + "x", "abs(" * d + "x" + ")" * d, "(" * d + "x" + ")" * d):
        m = optlang.parse(f"var x[2] in [-1, 1]\nminimize sum({body})")
        r = m.solve(max_iter=5)
        assert r.objective is not None and np.isfinite(r.objective)
        assert m.latex()


def test_long_sums_and_products_are_balanced_and_exact() -> None:
    n = 3000
    terms = " - ".join(f"{i % 5}*x[{i % 3}]" for i in range(n))
    m = optlang.parse(f"var x[3]\nminimize ({terms})^2")
    x = np.array([0.5, -1.0, 2.0])
    coef = np.zeros(3)
    for i in range(n):
        coef[i % 3] += (i % 5) * (1 if i == 0 else -1)
    want = float(coef @ x) ** 2
    assert abs(_eval(m, x) - want) <= 1e-9 * max(1.0, want)
    prod = " * ".join(f"s[{i}]" for i in range(600))
    e = _err(f"spin s[600]\nminimize {prod}")
    assert e.code == "E401"


def _eval(m: optlang.Model, x: np.ndarray) -> float:
    from optlang.ir.evaluate import evaluate_np

    return float(evaluate_np(m.ir.objective.expr, {"x": x}))


@pytest.mark.parametrize(
    "text,what",
    [
        ("param A = eye(1e6)\nvar x\nminimize x^2", "eye"),
        ("graph G = torus(300, 300)\nparam A = adjacency(G) + 1\nvar x\nminimize x^2", "'+'"),
        ("param A = randn(1e5, 1) * randn(1e5)\nvar x\nminimize x^2", "'*'"),
        ("var x[1e9]\nminimize sum(x^2)", "variable 'x'"),
        ("var x[1e5]\nparam c = randn(1e5, 1)\nminimize sum(c * x)", "'*'"),
        ("param A = randn(30000, 30000)\nvar x\nminimize x^2", "randn"),
        ("graph G = random_regular(5e7, 2)\nmaxcut G", "random_regular"),
    ],
)
def test_memory_estimates_refuse_before_allocating(text: str, what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTLANG_MEMORY_LIMIT", "1G")
    e = _err(text)
    assert e.code == "E610" and what in e.message, e.render()


def test_memory_limit_sizes_and_flag(tmp_path: Path) -> None:
    assert memory.parse_size("8G") == 8_000_000_000 and memory.parse_size("2GiB") == 2 << 30
    assert memory.parse_size("1e6") == 1_000_000
    with pytest.raises(ValueError):
        memory.parse_size("10x")
    model = tmp_path / "m.opt"
    model.write_text("param A = randn(1000, 1000)\nvar x\nminimize x^2\n")
    assert _cli(["check", str(model), "--memory-limit", "1MB"])[0] == 3
    assert _cli(["check", str(model), "--memory-limit", "1GB"])[0] == 0
    assert _cli(["check", str(model), "--memory-limit", "lots"])[0] == 2
    memory.set_limit(None)


def _cli(argv: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(argv)
    finally:
        memory.set_limit(None)
    return code, err.getvalue() + out.getvalue()


def test_random_regular_is_bounded_and_regular() -> None:
    g = D.random_regular(100_000, 5, 0, "unit", None)  # P(simple pairing) ≈ e^-6: the repair path
    assert np.all(np.diff(g.W.indptr) == 5) and g.W.diagonal().sum() == 0
    assert abs(g.W - g.W.T).max() == 0
    for n, d in ((10, 9), (12, 7), (30, 3)):
        g = D.random_regular(n, d, 1, "unit", None)
        assert np.all(np.diff(g.W.indptr) == d)


def test_erdos_renyi_pairs_decode_exactly_for_large_n() -> None:
    for n in (5, 1000, 200_000_000, D.MAX_NODES):
        pairs = n * (n - 1) // 2
        rows = np.array([0, 1, n // 3, n // 2, n - 3, n - 2], dtype=np.int64)
        starts = rows * n - rows * (rows + 1) // 2
        idx = np.concatenate([starts, starts + (n - rows - 2), [pairs - 1]])  # first and last of each row
        i, j = D.pair_decode(idx, n)
        assert np.all(i < j) and np.all(j < n)
        np.testing.assert_array_equal(i * n - i * (i + 1) // 2 + (j - i - 1), idx)


# ------------------------------------------------------------------ strict data
@pytest.mark.parametrize(
    "name,content,needle",
    [
        ("nan.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 nan\n", "NaN"),
        ("c.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1.0 2.0\n", "complex"),
        ("frac.txt", "3 2\n1 2 1\n2.5 3 1\n", "line 3"),
        ("cols.txt", "3 2\n1 2 1\n2 3 1 9\n", "line 3"),
        ("nanw.txt", "3 2\n1 2 1\n2 3 nan\n", "line 3"),
        ("big.txt", "3 1\n1 2 1e308\n", "magnitude"),
        ("huge.txt", "1000000000000 1\n1 2\n", "nodes"),
        ("n39.json", '{"n": 3.9, "edges": [[0, 1, 1]]}', "whole number"),
        ("nlist.json", '{"n": [3], "edges": [[0, 1, 1]]}', "whole number"),
        ("fracid.json", '{"n": 3, "edges": [[0.5, 1, 1]]}', "whole number"),
        ("deep.json", "[" * 100000 + "]" * 100000, "nested"),
    ],
)
def test_bad_graph_files_are_refused_with_the_reason(tmp_path: Path, name: str, content: str, needle: str) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    e = _err(f'graph G = load("{name}")\nmaxcut G', tmp_path)
    assert e.code.startswith("E6") and needle in e.message, e.render()


@pytest.mark.parametrize(
    "content,needle",
    [
        ("a,y\n1,2\nnan,3\n", "line 3"),
        ("a,y\n1,2\n3,4,5\n", "line 3"),
        ("a,y\n1,2\nAPI_KEY sk-live-0123456789abcdefghijklmnop,3\n", "non-numeric"),
        ("a,y\n1,2\n1+2j,3\n", "non-numeric"),
    ],
)
def test_bad_csv_is_refused_with_the_line_and_a_short_snippet(tmp_path: Path, content: str, needle: str) -> None:
    (tmp_path / "d.csv").write_text(content, encoding="utf-8")
    e = _err('data D = load("d.csv", target = "y")\nvar w\nminimize mean((D.X @ [w] - D.y)^2)', tmp_path)
    assert needle in e.message and "0123456789abcdefghijklmnop" not in e.render()


def test_structured_complex_and_object_arrays_are_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "s.npy", np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]))
    np.save(tmp_path / "c.npy", np.ones(3, dtype=complex))
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "d.json").write_text('{"a": 1}')
    (tmp_path / "r.json").write_text("[[1, 2], [3]]")
    for f in ("s.npy", "c.npy", "o.npy", "d.json", "r.json"):
        e = _err(f'param c = load("{f}")\nvar x\nminimize x^2', tmp_path)
        assert e.code in ("E602", "E603"), e.render()


def test_npz_decompressed_size_is_checked_from_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np.savez_compressed(tmp_path / "z.npz", M=np.zeros((2000, 2000)))  # ~32 MB decompressed, tiny on disk
    assert (tmp_path / "z.npz").stat().st_size < 100_000
    monkeypatch.setenv("OPTLANG_MEMORY_LIMIT", "20MB")
    e = _err('param c = load("z.npz")\nvar x\nminimize x^2', tmp_path)
    assert e.code == "E610" and "decompressed" in e.message


def test_mtx_header_is_checked_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "h.mtx").write_text("%%MatrixMarket matrix array real general\n100000 100000\n1\n")
    monkeypatch.setenv("OPTLANG_MEMORY_LIMIT", "1G")
    e = _err('param c = load("h.mtx")\nvar x\nminimize x^2', tmp_path)
    assert e.code == "E610"


def test_overrides_keep_the_declared_rank_and_report_once(folder: Path) -> None:
    text = "param c = [1, 2, 3]\nvar x[3]\nminimize sum((x - c)^2)"
    e = _err(text, params={"c": [[1, 2, 3]]})
    assert e.code == "E702" and "matrix" in e.message
    assert optlang.parse(text, params={"c": [4, 5, 6]}).ir.params["c"].tolist() == [4, 5, 6]
    for bad in ({"a": 1}, [[1, 2], [3]], [1, "a"], None, 1 + 2j):
        assert _err(text, params={"c": bad}).code == "E702"
    e = _err("graph G = torus(3, 3)\nmaxcut G", data={"G": "no/such/file.txt"})
    assert len(e.errors) == 1 and e.code == "E601"
    assert "current folder" in (e.hint or "")


def test_malformed_cli_lists_are_usage_errors(folder: Path) -> None:
    model = folder / "m.opt"
    model.write_text("param c = [1, 2]\nvar x[2]\nminimize sum((x - c)^2)\n")
    assert _cli(["check", str(model), "-p", "c=[1, 2"])[0] == 2
    assert _cli(["check", str(model), "-p", "c=" + "[" * 100000])[0] == 2
    assert _cli(["check", str(model), "-p", "c=[[1,2,3]]"])[0] == 3
    code, text = _cli(["check", str(model), "-p", 'c={"a": 1}'])
    assert code == 3 and "Traceback" not in text


# ------------------------------------------------------------------ files
def test_load_is_confined_to_the_model_folder(tmp_path: Path) -> None:
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "secret.csv").write_text("a,y\n1,2\n")
    (inner / "sub").mkdir()
    (inner / "sub" / "ok.csv").write_text("a,y\n1,2\n")
    body = "\nvar w\nminimize mean((D.X @ [w] - D.y)^2)"
    for path in ("../secret.csv", str(tmp_path / "secret.csv"), "sub/../../secret.csv"):
        e = _err(f'data D = load("{path}", target = "y"){body}', inner)
        assert e.code == "E611"
    assert optlang.parse(f'data D = load("sub/ok.csv", target = "y"){body}', inner).ir.tables["D"].n == 1
    m = optlang.parse(f'data D = load("../secret.csv", target = "y"){body}', inner, allow_paths=[tmp_path])
    assert m.ir.tables["D"].n == 1
    model = inner / "m.opt"
    model.write_text(f'data D = load("../secret.csv", target = "y"){body}\n')
    assert _cli(["check", str(model)])[0] == 3
    assert _cli(["check", str(model), "--allow-path", str(tmp_path)])[0] == 0


def test_markdown_report_escapes_model_text() -> None:
    from optlang.report.markdown import _esc, _fence, _text

    hostile = "<img src=x onerror=alert(1)> *b* [l](j) |"
    assert "<img" not in _text(hostile) and "<img" not in _esc(hostile)
    assert "\\*b\\*" in _text(hostile) and "\\|" in _esc(hostile)
    fence = _fence("```\n<script>")
    assert fence[0] == "````" and fence[-1] == "````"


# ------------------------------------------------------------------ outputs, signals, exit codes
def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    guard.atomic_write_text(out, '{"old": 1}')

    with pytest.raises(TypeError):
        guard.atomic_write_text(out, 12345)  # type: ignore[arg-type]
    assert json.loads(out.read_text()) == {"old": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    guard.atomic_append_line(tmp_path / "r.jsonl", '{"a": 1}')
    guard.atomic_append_line(tmp_path / "r.jsonl", '{"a": 2}')
    assert (tmp_path / "r.jsonl").read_text().splitlines() == ['{"a": 1}', '{"a": 2}']


def test_internal_errors_exit_70_without_a_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = tmp_path / "m.opt"
    model.write_text("var x\nminimize x^2\n")

    def boom(*a: object, **k: object) -> None:
        raise TypeError("an internal bug")

    monkeypatch.setattr(optlang, "load", boom)
    code, text = _cli(["check", str(model)])
    assert code == guard.EXIT_INTERNAL == 70
    assert "internal error" in text and "Traceback" not in text


def test_unbounded_is_detected_and_exits_one(tmp_path: Path) -> None:
    model = tmp_path / "u.opt"
    model.write_text("var x\nminimize x\n")
    out = tmp_path / "r.json"
    code, _ = _cli(["solve", str(model), "--quiet", "-o", str(out), "--max-iter", "200"])
    assert json.loads(out.read_text())["status"] == "unbounded" and code == 1
    r = optlang.parse("var x in [-1, 1]\nminimize x").solve(max_iter=200)
    assert r.status.value != "unbounded"


def test_the_clock_starts_at_load(tmp_path: Path) -> None:
    m = optlang.parse("var x[200]\nminimize sum((x - 1)^4) + sum(x)^2", path="clock.opt")
    time.sleep(0.3)
    r = m.solve(time_limit=0.2)
    assert r.status.value == "time_limit"
    r2 = m.solve(time_limit=30)  # a later solve counts from its own call
    assert r2.status.value != "time_limit"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_returns_the_incumbent_as_interrupted(tmp_path: Path) -> None:
    model = tmp_path / "m.opt"
    model.write_text("graph G = erdos_renyi(400, 0.05, seed = 1)\nmaxcut G\n")
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "optlang.cli", "solve", str(model), "-b", "neal", "--time-limit", "60"]
    p = subprocess.Popen([*cmd, "--quiet", "-o", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    time.sleep(8.0)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=max(1.0, deadline - time.time()))
    finally:
        if p.poll() is None:
            p.kill()
    result = json.loads(out.read_text())
    assert result["status"] == "interrupted" and result["objective"] is not None
    assert p.returncode == 0


def test_load_errors_are_data_errors_not_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "empty.npy").write_bytes(b"\x93NUMPY garbage")
    (tmp_path / "empty.npz").write_bytes(b"PK\x03\x04 garbage")
    for f in ("empty.npy", "empty.npz"):
        e = _err(f'param c = load("{f}")\nvar x\nminimize x^2', tmp_path)
        assert isinstance(e, DataError) and e.code == "E602", e.render()


def test_lobpcg_breakdown_returns_the_last_good_block() -> None:
    import torch

    from optlang.backends.ising.specann.eigen import lobpcg

    A = torch.diag(torch.arange(1.0, 11.0, dtype=torch.float64))
    calls = {"n": 0}

    def op(X: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        return A @ X if calls["n"] < 3 else X * float("nan")  # the operator breaks down mid-solve

    X0 = torch.randn(10, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r = lobpcg(op, X0, max_iter=50, tol=1e-12)
    assert bool(torch.isfinite(r.vectors).all()) and r.values.shape == (2,)
    r0 = lobpcg(lambda X: X * float("nan"), X0, max_iter=5)
    assert r0.iterations == 0 and bool(torch.isfinite(r0.vectors).all())


@pytest.mark.parametrize(
    "opt,key",
    [
        ("seed = 1e30", "seed"),
        ("seed = -1", "seed"),
        ("seed = 0.5", "seed"),
        ("max_iter = -5", "max_iter"),
        ('tol = "a"', "tol"),
        ("time_limit = 0", "time_limit"),
        ("dtype = 3", "dtype"),
    ],
)
def test_common_options_are_validated_at_their_line(opt: str, key: str) -> None:
    m = optlang.parse(f"var x[2]\nminimize sum((x - 1)^2)\nsolver gd {{ {opt} }}")
    with pytest.raises(OptlangError) as info:
        m.solve()
    assert info.value.code == "E702" and info.value.line == 3 and key in info.value.message


def test_model_text_has_a_size_limit() -> None:
    from optlang.ir.lower import MAX_SOURCE_CHARS

    with pytest.raises(OptlangError) as info:
        optlang.parse("var x\nminimize x^2\n" + "#" * MAX_SOURCE_CHARS)
    assert info.value.code == "E112" and "load()" in (info.value.hint or "")


@pytest.mark.parametrize(
    "opt,key",
    [
        ("lr = -1", "lr"),
        ("front_delta = 0", "front_delta"),
        ("front_beta2 = 1", "front_beta2"),
        ("merit_iters = 0", "merit_iters"),
        ("front_verify = 2", "front_verify"),
        ("starts = 0", "starts"),
    ],
)
def test_paretom3_option_ranges_are_checked_at_their_line(opt: str, key: str) -> None:
    """A value outside an option's meaning is refused before any work (it used to run: lr = -1 ended
    `converged`, merit_iters = 0 made the merit check vacuous), pointing at the option's own line."""
    head = "var x[2] in [0, 1]\nminimize {\n  f1: x[0]\n  f2: 1 - x[0] + x[1]\n}\n"
    m = optlang.parse(head + f"solver paretom3 {{ {opt} }}")
    with pytest.raises(OptlangError) as info:
        m.solve()
    assert info.value.code == "E700" and info.value.line == 6 and key in info.value.message


def test_non_finite_option_values_are_refused_for_every_backend() -> None:
    from optlang.backends import registry
    from optlang.errors import OptionError

    with pytest.raises(OptionError, match="finite"):
        registry.get("gd").make_options({"lr": float("nan")})
    with pytest.raises(OptionError, match="finite"):
        registry.get("specann").make_options({"t_end": float("inf")})


def test_batched_sweep_checks_paretom3_options_at_their_line() -> None:
    """The batched multiobjective sweep reads its options from the solver block itself: a value out of
    range is refused there too (merit_iters = -5 used to run with a vacuous merit check), located."""
    src = (
        "param w = 0.5\nvar x[3] in [0, 1]\nminimize {\n  f1: x[0]\n  f2: 1 - x[0] + sum(x[1:])\n}\n"
        "prefer w * f1 + (1 - w) * f2\nsolver paretom3 { merit_iters = -5 }"
    )
    with pytest.raises(OptlangError) as info:
        optlang.parse(src).sweep({"w": [0.4, 0.6]})
    assert info.value.code == "E700" and info.value.line == 8 and "merit_iters" in info.value.message


def test_option_ranges_and_choices_are_checked_by_optlang_check() -> None:
    """Declared ranges and choices (Backend.option_ranges / option_choices) are checked with the types, so
    `optlang check` refuses them at their line before any solve; so are the candidates of `auto`."""
    src = "var x[2] in [0, 1]\nminimize {\n  f1: x[0]\n  f2: 1 - x[0] + x[1]\n}\nsolver paretom3 { OPT }"
    for opt, key in (("tau = 0", "tau"), ('guard = "off"', "guard"), ("lr = auto in [0.1, -0.1]", "lr")):
        with pytest.raises(OptlangError) as info:
            optlang.parse(src.replace("OPT", opt)).check_solver()
        assert info.value.code == "E700" and info.value.line == 6 and key in info.value.message
    optlang.parse(src.replace("OPT", "lr = auto in [0.01, 0.1]")).check_solver()  # in range: accepted


def test_front_budget_is_checked_by_optlang_check() -> None:
    """front_evals against the model's objectives (3 per stage-0 direction) is refused by `optlang check`
    at its line, before any solve; a preference model ignores the front budget."""
    front = "var x[3] in [0, 1]\nminimize {\n  f1: x[0]\n  f2: 1 - x[0] + sum(x[1:])\n}\n"
    with pytest.raises(OptlangError) as info:
        optlang.parse(front + "solver paretom3 { front_evals = 100 }").check_solver()  # 40 directions: 120
    assert info.value.code == "E700" and info.value.line == 6 and "below the 120" in info.value.message
    optlang.parse(front + "solver paretom3 { front_evals = 120 }").check_solver()
    optlang.parse(front + "prefer f1 + f2\nsolver paretom3 { front_evals = 100 }").check_solver()
