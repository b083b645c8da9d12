"""Fuzz the front end with hypothesis: models generated from the grammar (with hostile leaves) and
mutations of the shipped models must end in a located OptlangError or a Model — never a traceback,
a MemoryError or an unlocated diagnostic. benchmarks/fuzz.py runs the same idea at 10^5 inputs.
The same corpus (and benchmarks/fuzz.py's generator) also goes through `optlang fmt`: every input
that parses must format to stable text with the same parse tree and, when it lowers, the same IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import optlang
from benchmarks.fuzz import FMT_GOOD, Fuzzer, fmt_roundtrip, seed_corpus
from benchmarks.fuzz import mutate as bench_mutate

ROOT = Path(__file__).resolve().parents[1]

NUMBERS = st.sampled_from(["0", "1", "2", "3", "0.5", ".5", "1e-3", "10", "1e308", "1e400", "4e9", "1e9", "7", "-1"])
STRINGS = st.sampled_from(['"t.csv"', '"g.txt"', '"a.npy"', '"\\x"', '"é.csv"', '"../t.csv"', '"y"', '"unit"', '""'])
NAMES = st.sampled_from(["x", "y", "c", "n", "A", "G", "D", "s"])
UNARY = st.sampled_from(["abs", "sqrt", "exp", "log", "square", "relu", "sum", "mean", "sumsq", "norm2", "max"])
BINARY = st.sampled_from(["maximum", "minimum", "dot", "quad", "cut"])
GENS = st.sampled_from(["zeros", "ones", "eye", "randn", "rand"])
OPS = st.sampled_from(["+", "-", "*", "/", "@", "^"])


def _leaf() -> st.SearchStrategy[str]:
    return st.one_of(
        NUMBERS,
        NAMES,
        STRINGS,
        st.builds(lambda g: f"adjacency({g})", NAMES),
        st.builds(lambda t, f: f"{t}.{f}", NAMES, st.sampled_from(["X", "y", "n", "T"])),
    )


EXPR = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(lambda a, o, b: f"{a} {o} {b}", inner, OPS, inner),
        st.builds(lambda f, a: f"{f}({a})", UNARY, inner),
        st.builds(lambda f, a, k: f"{f}({a}, axis = {k})", st.sampled_from(["sum", "mean"]), inner, NUMBERS),
        st.builds(lambda f, a, b: f"{f}({a}, {b})", BINARY, inner, inner),
        st.builds(lambda g, a, b: f"{g}({a}, {b})", GENS, _leaf(), _leaf()),
        st.builds(lambda xs: "[" + ", ".join(xs) + "]", st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda a, i: f"{a}[{i}]", inner, st.sampled_from(["0", "-1", "1:2", ":", "0, :", "1e400"])),
        st.builds(lambda a: f"({a}).T", inner),
        st.builds(lambda a: f"-{a}", inner),
        st.builds(lambda s, k: f"load({s}{k})", STRINGS, st.sampled_from(["", ", key = 1", ', target = "y"'])),
        st.builds(lambda xs: " + ".join(xs), st.lists(_leaf(), min_size=2, max_size=40)),
    ),
    max_leaves=12,
)

STATEMENT = st.one_of(
    st.builds(lambda n, e: f"param {n} = {e}", NAMES, EXPR),
    st.builds(lambda n, d: f"var {n}[{d}]", NAMES, _leaf()),
    st.builds(lambda n, a, b: f"var {n} in [{a}, {b}]", NAMES, _leaf(), _leaf()),
    st.builds(lambda n, d, a, b: f"var {n}[{d}] in [{a}, {b}]", NAMES, _leaf(), EXPR, EXPR),  # per-element bounds
    st.builds(lambda n, d, s, a: f"var {n}[{d}] {s} {a}", NAMES, _leaf(), st.sampled_from([">=", "<="]), EXPR),
    st.builds(lambda n, d: f"spin {n}[{d}]", NAMES, _leaf()),
    st.builds(lambda n, e: f"let {n} = {e}", NAMES, EXPR),
    st.builds(
        lambda n, g, a, b: f"graph {n} = {g}({a}, {b})",
        NAMES,
        st.sampled_from(["erdos_renyi", "random_regular", "torus"]),
        _leaf(),
        _leaf(),
    ),
    st.builds(lambda n, s: f"graph {n} = load({s})", NAMES, STRINGS),
    st.builds(lambda n, s, t: f"data {n} = load({s}, target = {t})", NAMES, STRINGS, _leaf()),
    st.builds(lambda s, e: f"{s} {e}", st.sampled_from(["minimize", "maximize"]), EXPR),
    st.builds(lambda g: f"maxcut {g}", NAMES),
    st.builds(
        lambda e, a, k, v: f"minimize robust mean({e}) within {a}(radius = {v}{k})",
        EXPR,
        st.sampled_from(["chi2", "kl", "wasserstein", "target_conditional"]),
        st.sampled_from(["", ", p = 2", ", p = 1e400", ", bins = 3", ', bins = "a"', ", edges = 1"]),
        _leaf(),
    ),
    st.builds(lambda a, b: f"subject to {{ {a} <= {b} }}", EXPR, EXPR),
)

MODEL = st.builds(lambda stmts: "\n".join(stmts), st.lists(STATEMENT, min_size=1, max_size=6))

_SOURCES = [
    p.read_text(encoding="utf-8")
    for folder in (ROOT / "models", ROOT / "tests" / "fixtures" / "compare")
    for p in sorted(folder.glob("*.opt"))
]
_TOKENS = ["(", ")", "[", "]", "{", "}", ",", ";", "\n", "+", "-", "*", "/", "@", "^", ".T", "1e400", "1e308", '"\\x"']
_TOKENS += ["axis = 0", "eye(", "load(", "adjacency(G)", "é", "\xff", "max over", "argmin", "robust", "0", "-1"]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "dup"]))
        if op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 8)) :]
        elif op == "insert":
            text = text[:pos] + draw(st.sampled_from(_TOKENS)) + text[pos:]
        elif op == "replace":
            text = text[:pos] + draw(st.sampled_from(_TOKENS)) + text[pos + 1 :]
        else:
            end = pos + draw(st.integers(1, 20))
            text = text[:end] + text[pos:end] * draw(st.integers(1, 3)) + text[end:]
    return text


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fuzzdata")
    (base / "t.csv").write_text("a,b,y\n1,2,3\n4,5,6\n7,8,9\n", encoding="utf-8")
    (base / "g.txt").write_text("3 3\n1 2 1\n2 3 1.5\n1 3 -1\n", encoding="utf-8")
    np.save(base / "a.npy", np.arange(6.0).reshape(2, 3))
    return base


def _check(text: str, base: Path) -> None:
    try:
        m = optlang.parse(text, base_dir=base)
        m.plan()
    except optlang.OptlangError as e:
        for x in e.errors:
            assert x.span is not None or x.code == "E701", f"unlocated {x.code}: {x.message}\n{text}"
        assert "error[" in e.render()


FUZZ = settings(
    max_examples=1500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


@FUZZ
@given(text=MODEL)
def test_generated_models_end_in_a_model_or_a_located_error(
    text: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPTLANG_MEMORY_LIMIT", "200MB")
    _check(text, data_dir)


@FUZZ
@given(text=mutated())
def test_mutated_models_end_in_a_model_or_a_located_error(
    text: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPTLANG_MEMORY_LIMIT", "200MB")
    _check(text, data_dir)


# ---------------------------------------------------------------------------- fmt round trip
_BENCH_CORPUS = seed_corpus()
FMT_SOURCES = {
    "grammar": MODEL,
    "mutated": mutated(),
    "bench-generator": st.randoms(use_true_random=False).map(lambda r: Fuzzer(r).model()),
    "bench-mutated": st.randoms(use_true_random=False).map(lambda r: bench_mutate(r, r.choice(_BENCH_CORPUS))),
}
FMT_FUZZ = settings(FUZZ, max_examples=150)


@pytest.mark.parametrize("source", list(FMT_SOURCES))
def test_fmt_round_trips_on_the_fuzz_corpus(source: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For each input that parses: fmt(text) parses, fmt is idempotent, the canonical parse tree is kept
    and, when the original lowers, the formatted text lowers to an equal IR (benchmarks.fuzz.fmt_roundtrip)."""
    monkeypatch.setenv("OPTLANG_MEMORY_LIMIT", "200MB")
    checked: list[str] = []

    @FMT_FUZZ
    @given(text=FMT_SOURCES[source])
    def roundtrip(text: str) -> None:
        outcome, formatted = fmt_roundtrip(text, data_dir)
        assert outcome in FMT_GOOD, f"{outcome}\n--- input:\n{text}\n--- formatted:\n{formatted}"
        checked.append(outcome)

    roundtrip()
    assert any(o != "fmt skip (no parse)" for o in checked), "the corpus never reached the formatter"
