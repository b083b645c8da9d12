"""Every `opt` snippet in docs/language.md parses and checks; every `opt-error` snippet fails with
the code named in its first comment; the README's Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import optlang

DOC = Path(__file__).resolve().parents[1] / "docs" / "language.md"
BLOCKS = re.findall(r"```(opt|opt-error)\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_doc_has_snippets() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_snippet(i: int) -> None:
    kind, text = BLOCKS[i]
    if kind == "opt":
        m = optlang.parse(text)
        m.plan()
        return
    code = re.match(r"# (E\d+)", text).group(1)
    with pytest.raises(optlang.OptlangError) as info:
        optlang.parse(text).plan()
    assert info.value.code == code


API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_api_doc_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every python block of docs/api.md runs, in order, in one namespace, from the repository root."""
    blocks = re.findall(r"```python\n(.*?)```", API_DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 10
    monkeypatch.chdir(API_DOC.parents[1])
    namespace: dict = {}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/api.md block {i + 1}", "exec"), namespace)  # noqa: S102
        except Exception as e:  # name the block that failed
            raise AssertionError(f"docs/api.md python block {i + 1} failed: {type(e).__name__}: {e}") from e


def test_api_doc_names_every_public_name() -> None:
    text = API_DOC.read_text(encoding="utf-8")
    for name in optlang.__all__:
        assert f"`optlang.{name}`" in text or f"optlang.{name}" in text, name
