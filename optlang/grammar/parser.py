"""Parse .opt text into a lark tree; turn every lark failure into a located ParseError.

The grammar lives in optlang.lark (package data). A small postlexer drops newlines inside
( ) and [ ] so expressions continue over lines there; newlines inside { } separate entries.
Parse trees never leave this package and optlang/ir/lower.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from optlang.errors import ParseError
from optlang.grammar.mistakes import explain_character, explain_token
from optlang.source import Source, Span

KEYWORDS = frozenset(
    {
        "model",
        "param",
        "data",
        "graph",
        "var",
        "spin",
        "binary",
        "let",
        "minimize",
        "maximize",
        "maxcut",
        "robust",
        "within",
        "prefer",
        "solver",
        "in",
        "argmin",
        "over",
        "simplex",
        "ball",
    }
)

_OPEN = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_CHAR = {"LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "LBRACE": "{", "RBRACE": "}"}


class BracketPostLex:
    """Drops _NL tokens inside ( ) and [ ]; reports unbalanced brackets with their position."""

    always_accept = ("_NL",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        stack: list[Token] = []
        for tok in stream:
            if tok.type in _OPEN:
                stack.append(tok)
            elif tok.type in _CLOSE:
                if not stack:
                    raise _Bracket(tok, f"'{tok}' closes nothing")
                opener = stack.pop()
                if _OPEN[opener.type] != tok.type:
                    raise _Bracket(
                        tok, f"'{tok}' does not match '{opener}' opened at line {opener.line}, column {opener.column}"
                    )
            if tok.type == "_NL" and stack and stack[-1].type != "LBRACE":
                continue
            yield tok
        if stack:
            opener = stack[-1]
            raise _Bracket(opener, f"'{opener}' is never closed", eof=True)


class _Bracket(Exception):
    def __init__(self, tok: Token, message: str, eof: bool = False) -> None:
        super().__init__(message)
        self.tok = tok
        self.message = message
        self.eof = eof


def make_parser(**extra: Any) -> Lark:
    """The LALR parser of the shipped grammar; `extra` adds lark options (fmt adds a comment callback)."""
    return Lark.open_from_package(
        "optlang.grammar",
        "optlang.lark",
        parser="lalr",
        propagate_positions=True,
        postlex=BracketPostLex(),
        maybe_placeholders=True,
        cache=False,
        **extra,
    )


@cache
def _parser() -> Lark:
    return make_parser()


# Snippets that name common syntax errors (lark's match_examples).
_EXAMPLES: dict[str, list[str]] = {
    "an objective needs an expression: `minimize EXPR`": ["minimize\n", "maximize\n"],
    "a `var` needs a name: `var x[n]`": ["var [3]\n", "var\n"],
    "dimensions are written in brackets: `var x[n]`": ["var x(3)\n", "spin s(3)\n"],
    "`param` needs a value: `param NAME = EXPR`": ["param n\n", "param n =\n", "param = 3\n"],
    "a `spin` or `binary` variable needs its size: `spin s[n]`": ["spin s\n", "binary b\n"],
    "an operator is missing its right operand": ["minimize x +\n", "minimize x *\n", "let a = 2 *\n"],
    "`subject to` is followed by a block: `subject to { ... }`": ["subject to x <= 1\n"],
    "a domain is one of `in [lo, hi]`, `>= lo`, `<= hi`, `in simplex`, `in ball(r)`": [
        "var x[3] in 0\n",
        "var x[3] in box\n",
        "var x[3] in [0]\n",
    ],
}


def parse_tree(source: Source) -> Tree:
    """Parse a Source into a lark Tree, or raise ParseError at the offending position."""
    text = source.text
    if "\t" in text:
        text = text.replace("\t", " ")
    try:
        return _parser().parse(text + ("\n" if not text.endswith("\n") else ""))
    except _Bracket as b:
        span = Span(b.tok.line, b.tok.column, b.tok.line, b.tok.column + len(str(b.tok)))
        if b.eof:
            hint = "close it before the end of the statement"
        elif "closes nothing" in b.message:
            hint = f"remove it, or open a matching '{_CHAR[_CLOSE[b.tok.type]]}' before it"
        else:
            hint = "close the inner bracket first"
        raise ParseError(b.message, span, hint=hint, source=source, code="E103") from None
    except UnexpectedInput as e:
        raise _convert(e, source) from None


def _convert(e: UnexpectedInput, source: Source) -> ParseError:
    label = None
    try:
        label = e.match_examples(_parser().parse, _EXAMPLES, use_accepts=True)
    except Exception:  # match_examples re-parses snippets; never let it mask the real error
        label = None
    line = getattr(e, "line", None) or 1
    col = getattr(e, "column", None) or 1
    if isinstance(e, UnexpectedCharacters):
        ch = source.text.replace("\t", " ")[e.pos_in_stream] if e.pos_in_stream < len(source.text) else "?"
        known = explain_character(source.text.replace("\t", " "), e.pos_in_stream, line, col, source)
        if known is not None:
            return known
        return ParseError(
            f"unexpected character '{ch}'", Span(line, col, line, col + 1), source=source, hint=label, code="E101"
        )
    if isinstance(e, UnexpectedEOF):
        last = max(1, len(source.text.splitlines()))
        return ParseError("unexpected end of file", Span(last, 1, last, 2), source=source, hint=label, code="E102")
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    if tok.type == "$END":
        lines = source.text.splitlines() or [""]
        return ParseError(
            "unexpected end of file",
            Span(len(lines), max(1, len(lines[-1])), len(lines), max(2, len(lines[-1]) + 1)),
            source=source,
            hint=label,
            code="E102",
        )
    width = max(1, len(str(tok).split("\n")[0]))
    span = Span(tok.line, tok.column, tok.line, tok.column + width)
    shown = "end of line" if tok.type == "_NL" else f"'{tok}'"
    if str(tok) in KEYWORDS and "NAME" in e.expected:
        return ParseError(
            f"'{tok}' is a keyword and cannot be used as a name",
            span,
            source=source,
            hint="choose another name",
            code="E104",
        )
    known = explain_token(tok, source.text.replace("\t", " "), set(e.expected), span, source)
    if known is not None:
        return known
    expected = _describe_expected(e.expected)
    hint = label or (f"expected {expected}" if expected else None)
    return ParseError(f"unexpected {shown}", span, source=source, hint=hint, code="E100")


_NICE = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "_NL": "end of line",
    "RPAR": "')'",
    "RSQB": "']'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "LSQB": "'['",
    "LBRACE": "'{'",
    "EQUAL": "'='",
    "COLON": "':'",
    "COMMA": "','",
    "MINUS": "'-'",
    "PLUS": "'+'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "MAXOVER": "'max over'",
    "SUBJECT_TO": "'subject to'",
    "SEMICOLON": "';'",
    "$END": "end of file",
    "MORETHAN": "'>'",
    "LESSTHAN": "'<'",
    "CIRCUMFLEX": "'^'",
    "AT": "'@'",
    "DOT": "'.'",
}


def _describe_expected(expected: set[str]) -> str:
    """Lark's terminal names in words; a name with no plain reading ($END, __ANON_3) is left out."""
    names = sorted(
        {_NICE.get(t, t.lower().strip("_") if t.isupper() and "ANON" not in t else "") for t in expected} - {""}
    )
    if len(names) > 8:
        return ""
    return ", ".join(names)
