"""Golden diagnostics: every bad model in tests/fixtures/errors renders exactly its .expected text,
exits non-zero from the CLI with a located message, and never shows a Python traceback."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

import optlang
from optlang.cli import main

ERRORS = Path(__file__).parent / "fixtures" / "errors"
CASES = sorted(p.stem for p in ERRORS.glob("*.opt"))
UPDATE = os.environ.get("OPTLANG_UPDATE_GOLDEN") == "1"


def _diagnostic(name: str) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["solve", str(ERRORS / f"{name}.opt"), "--time-limit", "2", "--quiet"])
    text = err.getvalue().replace(str(ERRORS) + os.sep, "").replace(str(ERRORS), ".")
    return code, "\n".join(line.rstrip() for line in text.strip().splitlines())


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", CASES)
def test_golden_diagnostic(name: str) -> None:
    code, text = _diagnostic(name)
    expected_path = ERRORS / f"{name}.expected"
    if UPDATE:
        expected_path.write_text(text + "\n", encoding="utf-8")
    assert code != 0
    assert "Traceback" not in text
    first = text.splitlines()[0]
    assert first.startswith(f"{name}.opt:"), first
    assert first.split(":")[1].isdigit() and first.split(":")[2].isdigit(), "diagnostic must carry line:col"
    assert text == expected_path.read_text(encoding="utf-8").strip()


def test_api_raises_optlang_error_with_position() -> None:
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse("var x[3]\nminimize sumsq(y)\n")
    e = info.value
    assert (e.line, e.column, e.code) == (2, 16, "E201")


def test_all_errors_reported_at_once() -> None:
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse("var x[3]\nvar x[2]\nparam a = zz\nminimize sumsq(y)\n")
    assert [e.code for e in info.value.errors] == ["E202", "E201", "E201"]


def test_usage_errors_have_their_own_exit_code() -> None:
    assert main(["solve"]) == 2
    assert main(["solve", str(ERRORS / "unknown_name.opt"), "-p", "oops"]) == 2


def test_missing_model_file() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["check", "definitely_missing.opt"]) == 3
    assert "model file not found" in err.getvalue()


def test_check_validates_solver_blocks() -> None:
    """`optlang check` (no solve) refuses an unknown backend, an unknown option and a mistyped one."""
    for name, code, words in (
        ("solver_unknown", 4, "did you mean 'specann'"),
        ("solver_typo", 3, "did you mean 'time_limit'"),
        ("solver_type", 3, "must be a positive integer, got 'lots'"),
    ):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["check", str(ERRORS / f"{name}.opt")]) == code, name
        assert words in err.getvalue(), err.getvalue()


def test_check_backend_flag_validates_names() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["check", str(ERRORS / "unknown_name.opt").replace("unknown_name", "solver_typo"), "-b", "nael"]) == 4
        )
    assert "did you mean 'neal'" in err.getvalue()


def test_cut_of_declared_spins_is_maxcut() -> None:
    """`spin s[G.n]; maximize cut(G, s)` is the long form of `maxcut G` (docs/language.md)."""
    long = optlang.parse("graph G = torus(3, 4, seed = 1)\nspin s[G.n]\nmaximize cut(G, s)\n")
    short = optlang.parse("graph G = torus(3, 4, seed = 1)\nmaxcut G\n")
    assert long.kind == short.kind == "maxcut"
    assert optlang.parse("graph G = torus(3, 4, seed = 1)\nspin s[G.n]\nmaximize cut(G, s) + 1\n").kind == "ising"


def test_no_grammar_internals_in_any_message() -> None:
    """Lark's terminal names never reach a user (`expected $end` was one)."""
    internals = ("$END", "$end", "__ANON", "_NL", "RBRACE", "LSQB", "NAME", "NUMBER", "SEMICOLON", "Token(")
    for expected in ERRORS.glob("*.expected"):
        text = expected.read_text(encoding="utf-8")
        assert not [w for w in internals if w in text], expected.name


def test_every_syntax_error_has_a_hint() -> None:
    for expected in ERRORS.glob("*.expected"):
        text = expected.read_text(encoding="utf-8")
        if "error[E10" in text:
            assert "= hint:" in text, expected.name
