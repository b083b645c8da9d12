"""`optlang fmt`: idempotent, meaning-preserving (same parse tree and same IR) on every shipped model, every
docs snippet, the error fixtures that parse, and a seeded corpus of random expressions written with random
spacing and redundant parentheses; `--check` exits 1 exactly when a file would change."""

from __future__ import annotations

import contextlib
import io
import random
import re
from pathlib import Path

import pytest

import optlang
from benchmarks.fuzz import ir_signature
from optlang.cli import main
from optlang.errors import OptlangError
from optlang.fmt import canonical, format_text
from optlang.grammar.parser import parse_tree
from optlang.source import Source

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted((ROOT / "models").glob("*.opt"))
DOCS = [
    text
    for doc in sorted((ROOT / "docs").rglob("*.md"))
    for kind, text in re.findall(r"```(opt|opt-error)\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
]
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "errors").glob("*.opt"))


def _tree(text: str):
    return canonical(parse_tree(Source(text, "<t>", Path("."))))


def _assert_formats(text: str, base: Path | None = None) -> str:
    once = format_text(text)
    assert format_text(once) == once, "not idempotent"
    assert _tree(once) == _tree(text), "parse tree changed"
    if base is not None:
        try:
            before = optlang.parse(text, base_dir=base)
        except OptlangError:
            return once
        after = optlang.parse(once, base_dir=base)
        assert ir_signature(after) == ir_signature(before), "IR changed"
    return once


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_shipped_models_are_formatted_and_stable(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _assert_formats(text, path.parent) == text, "models/ are kept in the canonical layout"


def _parses(text: str) -> bool:
    try:
        parse_tree(Source(text, "<t>", Path(".")))
    except OptlangError:
        return False
    return True


@pytest.mark.parametrize("i", range(len(DOCS)))
def test_docs_snippets(i: int) -> None:
    if _parses(DOCS[i]):  # opt-error snippets with syntax errors: fmt refuses them (tested below)
        _assert_formats(DOCS[i], ROOT / "models")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_error_fixtures_that_parse(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return
    if _parses(text):
        _assert_formats(text, path.parent)


# ---------------------------------------------------------------------------- random corpus
def _rand_expr(rng: random.Random, depth: int) -> str:
    """A random expression over x (vector), a (vector param), k (scalar param), written sloppily."""
    sp = lambda: rng.choice(["", " ", "  "])  # noqa: E731
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(["x", "a", "k", "2", "0.5", "1e-3", ".25", "x[0]", "a[1:]", "x[:2]", "k"])
    r = rng.random()
    if r < 0.45:
        op = rng.choice(["+", "-", "*", "/", "+", "-"])
        s = f"{_rand_expr(rng, depth - 1)}{sp()}{op}{sp()}{_rand_expr(rng, depth - 1)}"
    elif r < 0.55:
        s = f"-{sp()}{_rand_expr(rng, depth - 1)}"
    elif r < 0.65:
        s = f"({_rand_expr(rng, depth - 1)})^{rng.choice(['2', '3', '-1', '(1+1)'])}"
    elif r < 0.85:
        f = rng.choice(["tanh", "exp", "sqrt", "abs", "relu"])
        s = f"{f}({sp()}{_rand_expr(rng, depth - 1)}{sp()})"
    else:
        s = f"{rng.choice(['max', 'min'])}({_rand_expr(rng, depth - 1)},{sp()}{_rand_expr(rng, depth - 1)})"
    return f"({sp()}{s}{sp()})" if rng.random() < 0.4 else s


def _rand_model(seed: int) -> str:
    rng = random.Random(seed)
    sep = lambda: rng.choice(["\n", "\n\n", " ; ", "\n\n\n"])  # noqa: E731
    parts = [
        rng.choice(["", "# a random model\n"]),
        f"param  k={rng.choice(['2', '0.5', '3'])}",
        sep(),
        "param a = [1,2, \n 3]" + rng.choice(["", "   # three"]),
        sep(),
        f"var x[3]{rng.choice(['', ' in [0,1]', '>=0', ' in simplex', ' in ball( 2 )'])}",
        sep(),
        f"minimize{rng.choice([' ', '   '])}sum({_rand_expr(rng, 4)})",
        rng.choice(["", "\nsolver auto {time_limit=1;seed = 2}", "\nsolver  gd { lr = 0.1,\n max_iter=5 } # gd"]),
        "\n",
    ]
    return "".join(parts)


@pytest.mark.parametrize("seed", range(60))
def test_random_corpus(seed: int) -> None:
    text = _rand_model(seed)
    try:
        parse_tree(Source(text, "<t>", Path(".")))
    except OptlangError:
        pytest.fail(f"the corpus generator wrote a bad model:\n{text}")
    _assert_formats(text, ROOT)


def test_layout_examples() -> None:
    text = (
        "# head\n\nmodel   m ;param n=3   # size\nvar x[n]in[0,1] ; var y >= -1\n\n\n"
        "minimize {   f1 : sum( ((x))^2 )   # first\n  # between\n  f2: -x[0]+y\n}\n"
        "prefer (f1-0.3)^2+(f2 - .3)^2\nsubject  to { x >= 0 ; sum(x) <= 2   # cap\n}\n"
        "solver    auto {time_limit=5,seed=1;\n  max_iter = 10}\n"
    )
    assert format_text(text) == (
        "# head\n\nmodel m\nparam n = 3  # size\nvar x[n] in [0, 1]\nvar y >= -1\n\n"
        "minimize {\n  f1: sum(x^2)  # first\n  # between\n  f2: -x[0] + y\n}\n"
        "prefer (f1 - 0.3)^2 + (f2 - .3)^2\nsubject to {\n  x >= 0\n  sum(x) <= 2  # cap\n}\n"
        "solver auto { time_limit = 5, seed = 1, max_iter = 10 }\n"
    )


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_check_write_and_diff(tmp_path: Path) -> None:
    ok = tmp_path / "ok.opt"
    ok.write_text("var x[2]\nminimize sumsq(x - 1)\n")
    messy = tmp_path / "messy.opt"
    messy.write_text("var x[2]\nminimize sumsq( x-1 )\n")
    assert _cli("fmt", "--check", str(ok))[0] == 0
    code, _, err = _cli("fmt", "--check", str(tmp_path))
    assert code == 1 and "would reformat" in err and str(messy) in err
    assert messy.read_text() == "var x[2]\nminimize sumsq( x-1 )\n", "--check changes nothing"
    code, out, _ = _cli("fmt", "--diff", str(messy))
    assert code == 0 and "+minimize sumsq(x - 1)" in out
    assert _cli("fmt", str(messy))[0] == 0 and messy.read_text() == ok.read_text()
    assert _cli("fmt", "--check", str(tmp_path))[0] == 0


def test_cli_bad_syntax_is_a_model_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.opt"
    bad.write_text("var x[2]\nminimize sum(x**2)\n")
    code, _, err = _cli("fmt", str(bad))
    assert code == 3 and "E106" in err and bad.read_text() == "var x[2]\nminimize sum(x**2)\n"


def test_shipped_models_pass_fmt_check() -> None:
    assert _cli("fmt", "--check", str(ROOT / "models"))[0] == 0


def test_attribute_of_an_integer_keeps_its_parentheses() -> None:
    """Found by the fmt round trip on benchmarks/fuzz.py's corpus: `(3).T` was printed `3.T`, which lexes as the
    number `3.` and a name, so fmt refused the file. Other numbers need no parentheses before `.T`."""
    text = "param w = (3).T\nparam v = (1.5).T + (1e5).T + (.5).T\nvar x[2]\nminimize sum(x^2) + w + v\n"
    once = _assert_formats(text, ROOT)
    assert once == "param w = (3).T\nparam v = 1.5.T + 1e5.T + .5.T\nvar x[2]\nminimize sum(x^2) + w + v\n"


def test_formatter_bug_is_reported_as_e113_not_as_a_syntax_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text the formatter would print wrongly never reaches the user, and the error does not point into it."""
    import optlang.fmt as fmt

    monkeypatch.setattr(fmt._Printer, "module", lambda self, tree: "param w = 3.T\n")
    with pytest.raises(OptlangError) as e:
        fmt.format_text("param w = (3).T\n")
    assert e.value.code == "E113"
