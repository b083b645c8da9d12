"""The TextMate grammar of .opt files (VS Code, GitHub-style highlighters), generated from the same word
lists as the Pygments lexer: `python -m optlang.editors.textmate > editors/optlang.tmLanguage.json`."""

from __future__ import annotations

import json
from typing import Any

from optlang.editors import DECLARATIONS, DOMAINS, FUNCTIONS, KEYWORDS, NAMED_CONSTANTS


def _alt(items: tuple[str, ...]) -> str:
    return "|".join(sorted(items, key=lambda w: (-len(w), w)))


def grammar() -> dict[str, Any]:
    """The grammar as a JSON-ready dict (scope source.optlang)."""
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "optlang",
        "scopeName": "source.optlang",
        "fileTypes": ["opt"],
        "patterns": [
            {"name": "comment.line.number-sign.optlang", "match": "#.*$"},
            {"name": "string.quoted.double.optlang", "match": '"([^"\\\\\\n]|\\\\.)*"'},
            {"name": "keyword.control.optlang", "match": "\\b(subject[ \\t]+to|max[ \\t]+over)\\b"},
            {  # the backend a solver block names, hyphens included (weighted-sum, sdp-cvxpy): one name
                "match": "\\b(solver)[ \\t]+([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)",
                "captures": {"1": {"name": "keyword.control.optlang"}, "2": {"name": "entity.name.type.optlang"}},
            },
            {"name": "storage.type.optlang", "match": f"\\b({_alt(DECLARATIONS)})\\b"},
            {"name": "keyword.control.optlang", "match": f"\\b({_alt(KEYWORDS)})\\b"},
            {"name": "constant.language.optlang", "match": f"\\b({_alt(DOMAINS)})\\b"},
            {"name": "support.function.optlang", "match": f"\\b({_alt(FUNCTIONS)})(?=\\s*\\()"},
            {"name": "constant.language.optlang", "match": f"\\b({_alt(NAMED_CONSTANTS)})\\b"},
            {"name": "constant.numeric.optlang", "match": "\\b(\\d+\\.\\d*|\\.\\d+|\\d+)([eE][+-]?\\d+)?\\b"},
            {"name": "keyword.operator.optlang", "match": "<=|>=|==|[-+*/^@=:]"},
            {"name": "variable.other.optlang", "match": "\\b[A-Za-z_][A-Za-z0-9_]*\\b"},
        ],
    }


def render() -> str:
    return json.dumps(grammar(), indent=2) + "\n"


if __name__ == "__main__":
    print(render(), end="")
