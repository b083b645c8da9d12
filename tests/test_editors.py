"""Editor support cannot drift from the language: the Pygments lexer and the TextMate grammar list
exactly the lark grammar's keywords and the callable functions, highlight every shipped model without
error tokens, and the committed tmLanguage file is what the generator writes."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import import_module
from pathlib import Path

import pytest
from pygments.token import Error, Keyword, Name, Operator

from optlang import editors
from optlang.editors import textmate
from optlang.editors.pygments_lexer import OptlangLexer
from optlang.grammar.parser import KEYWORDS as PARSER_KEYWORDS
from optlang.ir.atoms import AMBIGUITY_FUNCS, ATOMS, GENERATORS

ROOT = Path(__file__).resolve().parents[1]
GRAMMAR = (ROOT / "optlang" / "grammar" / "optlang.lark").read_text(encoding="utf-8")
MODELS = sorted((ROOT / "models").glob("*.opt"))


def grammar_words() -> set[str]:
    """Every word the lark grammar spells out: quoted literals plus the two-word terminals."""
    words = set(re.findall(r'"([a-z][a-z_]*)"', GRAMMAR))
    for rx in re.findall(r"^(?:MAXOVER|SUBJECT_TO)\.\d+: /(.*)/$", GRAMMAR, re.M):
        words |= set(re.findall(r"[a-z]+", rx.replace("\\b", "").replace("\\t", "")))
    return words


def test_word_lists_match_the_grammar() -> None:
    listed = set(editors.DECLARATIONS) | set(editors.KEYWORDS) | set(editors.DOMAINS)
    two = {w for pair in editors.TWO_WORD for w in pair.split()}
    assert listed | two == grammar_words() | {"subject", "to", "max", "over"}
    assert listed <= grammar_words()
    assert set(PARSER_KEYWORDS) <= listed  # the parser's reserved words are all highlighted


def test_function_list_matches_the_registry() -> None:
    """Every name a model may call is highlighted as a function, and nothing else (operators are not)."""
    callable_names = {n for n, s in ATOMS.items() if s.user} | set(GENERATORS) | set(AMBIGUITY_FUNCS)
    assert set(editors.FUNCTIONS) == callable_names and len(editors.FUNCTIONS) == len(callable_names)
    lexer = OptlangLexer()
    for name in sorted(callable_names):
        tokens = [(t, v) for t, v in lexer.get_tokens(f"{name}(x)") if v.strip()]
        assert tokens[0] == (Name.Builtin, name), (name, tokens[:2])
    assert not any(s.user for s in ATOMS.values() if s.infix)


def test_committed_textmate_grammar_is_generated() -> None:
    committed = (ROOT / "editors" / "optlang.tmLanguage.json").read_text(encoding="utf-8")
    assert committed == textmate.render(), "run: python -m optlang.editors.textmate > editors/optlang.tmLanguage.json"
    g = json.loads(committed)
    assert g["scopeName"] == "source.optlang" and g["fileTypes"] == ["opt"]


def _tm_scopes(line: str) -> list[tuple[str, str]]:
    """A small TextMate matcher (first pattern that matches at the leftmost position wins; a pattern with
    `captures` gives one scope per captured group)."""
    pats = [(re.compile(p["match"]), p) for p in textmate.grammar()["patterns"]]
    out, pos = [], 0
    while pos < len(line):
        best = None
        for rx, pat in pats:
            m = rx.search(line, pos)
            if m and m.end() > m.start() and (best is None or m.start() < best[0].start()):
                best = (m, pat)
        if best is None:
            break
        m, pat = best
        if "captures" in pat:
            out += [(m.group(int(g)), c["name"]) for g, c in sorted(pat["captures"].items())]
        else:
            out.append((m.group(), pat["name"]))
        pos = m.end()
    return out


@pytest.mark.parametrize("word", sorted(grammar_words()))
def test_every_grammar_word_is_highlighted_by_both(word: str) -> None:
    text = {"subject": "subject to", "to": "subject to", "max": "max over"}.get(word, word)
    toks = [(t, v) for t, v in OptlangLexer().get_tokens(text + "\n") if v.strip()]
    assert toks[0][0] in Keyword, (word, toks)
    scopes = _tm_scopes(text)
    assert scopes and scopes[0][1].split(".")[0] in ("keyword", "storage", "constant"), (word, scopes)


def test_functions_highlighted_only_when_called() -> None:
    toks = dict((v, t) for t, v in OptlangLexer().get_tokens("let sumx = sum(x) + sumsq\n"))
    assert toks["sum"] in Name.Builtin and toks["sumx"] is Name and toks["sumsq"] is Name
    assert ("sum", "support.function.optlang") in _tm_scopes("let a = sum(x)")


def test_named_constants_highlighted_as_whole_words() -> None:
    toks = dict((v, t) for t, v in OptlangLexer().get_tokens("let a = pi * pipe\n"))
    assert toks["pi"] in Name.Constant and toks["pipe"] is Name
    assert ("pi", "constant.language.optlang") in _tm_scopes("let a = pi * x")


@pytest.mark.parametrize("backend", ["weighted-sum", "sdp-cvxpy", "specann"])
def test_textmate_reads_a_solver_blocks_backend_as_one_name(backend: str) -> None:
    scopes = _tm_scopes(f"solver {backend} {{ points = 15 }}")
    assert scopes[:2] == [("solver", "keyword.control.optlang"), (backend, "entity.name.type.optlang")], scopes
    assert ("points", "variable.other.optlang") in scopes  # the rest of the line as before


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_shipped_models_lex_without_errors(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    toks = list(OptlangLexer().get_tokens(text))
    assert not [v for t, v in toks if t is Error]
    expected = text if text.endswith("\n") else text + "\n"
    assert "".join(v for _, v in toks) == expected


def test_lexer_is_the_registered_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    target = project["project"]["entry-points"]["pygments.lexers"]["optlang"]
    module, cls = target.split(":")
    assert getattr(import_module(module), cls) is OptlangLexer
    assert {"optlang", "opt"} <= set(OptlangLexer.aliases) and "*.opt" in OptlangLexer.filenames


def test_pygmentize_finds_the_lexer_through_the_entry_point(tmp_path: Path) -> None:
    """What `pip install` writes (a dist-info with the pyproject's entry point) is enough for
    `pygmentize -l optlang` and for guessing the lexer of a .opt file."""
    import os
    import subprocess
    import sys

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dist = tmp_path / f"optlang_dsl-{project['project']['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: optlang-dsl\nVersion: {project['project']['version']}\n"
    )
    target = project["project"]["entry-points"]["pygments.lexers"]["optlang"]
    (dist / "entry_points.txt").write_text(f"[pygments.lexers]\noptlang = {target}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    model = ROOT / "models" / "robust_game.opt"
    code = "from pygments.cmdline import main; import sys; sys.exit(main(sys.argv))"
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-c", code, *args]  # sys.argv[0] is "-c", as pygmentize's own
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)

    out = run("-l", "optlang", "-f", "html", str(model))
    assert out.returncode == 0, out.stderr
    assert '<span class="kd">param</span>' in out.stdout and '<span class="nb">tanh</span>' in out.stdout
    assert run("-N", str(model)).stdout.strip() == "optlang"


def test_solver_block_backend_name_is_one_token() -> None:
    """`solver weighted-sum`: the backend's name, hyphen included, is one name (not name, minus, name)."""
    text = "solver weighted-sum { points = 5 }\nlet d = a-b\n"
    toks = [(t, v) for t, v in OptlangLexer().get_tokens(text) if v.strip()]
    assert toks[:2] == [(Keyword, "solver"), (Name.Class, "weighted-sum")]
    assert ("-", Operator) in [(v, t) for t, v in toks]  # a - b elsewhere is still a subtraction
