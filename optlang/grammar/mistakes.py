"""Syntax mistakes people actually make, each with the fix to name (the parser's error table).

parser.py asks here first when lark reports an unexpected token or character; None means "no known
mistake", and the parser falls back to its generic "unexpected X; expected ..." message. Each entry has
a golden test in tests/fixtures/errors/.
"""

from __future__ import annotations

import difflib

from lark import Token

from optlang.errors import ParseError
from optlang.source import Source, Span

OPERATORS = "+-*/^@"
STATEMENTS = (
    "model", "param", "data", "graph", "var", "spin", "binary", "let",
    "minimize", "maximize", "maxcut", "prefer", "subject to", "solver",
)  # fmt: skip
_SHORT = {
    "min": "minimize",
    "max": "maximize",
    "minimise": "minimize",
    "maximise": "maximize",
    "st": "subject to",
    "s.t.": "subject to",
    "subjectto": "subject to",
    "constraints": "subject to",
    "variable": "var",
    "parameter": "param",
    "const": "param",
    "set": "param",
    "objective": "minimize",
}


def _err(message: str, span: Span, source: Source, hint: str, code: str = "E100") -> ParseError:
    return ParseError(message, span, source=source, hint=hint, code=code)


def _line_of(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def explain_token(tok: Token, text: str, expected: set[str], span: Span, source: Source) -> ParseError | None:
    """A named mistake at an unexpected token, or None."""
    start = tok.start_pos or 0
    before = text[:start].rstrip(" ")
    after = text[(tok.end_pos or start) :]
    ln = tok.line or 1
    line = _line_of(text, ln)
    col = tok.column or 1
    value = str(tok)
    at_statement_start = before == "" or before[-1] in "\n;"
    if value == "*" and before.endswith("*"):
        return _err(
            "`**` is not an operator",
            Span(ln, col - 1, ln, col + 1),
            source,
            "powers are written with ^: x^2 (and elementwise on vectors: sum(x^2))",
            "E106",
        )
    if tok.type == "_NL" and before and before[-1] in OPERATORS:
        op = before[-1]
        where = Span(ln, col - 1, ln, col)
        if not text[start:].strip():
            return _err(
                f"'{op}' is missing its right operand",
                where,
                source,
                f"complete the expression after '{op}', or remove the '{op}'",
                "E107",
            )
        return _err(
            f"the line ends with '{op}': an expression does not continue on the next line",
            where,
            source,
            f"wrap the whole expression in ( ) to continue it over lines — `minimize (a {op}` on this line, "
            "`b)` on the next: newlines inside ( ) and [ ] are ignored",
            "E107",
        )
    if (
        value in ("<=", ">=")
        and line.lstrip().startswith("var ")
        and (">=" in line[: col - 1] or "<=" in line[: col - 1])
    ):
        return _err(
            "a variable has one domain, and this is a second bound",
            span,
            source,
            "for both bounds write a box: var x[n] in [lo, hi]",
            "E108",
        )
    if tok.type == "NAME" and at_statement_start:
        word = value.lower()
        guess = _SHORT.get(word) or next(iter(difflib.get_close_matches(word, STATEMENTS, n=1, cutoff=0.7)), None)
        if value == "subject":
            return _err("`subject` must be followed by `to`", span, source, "write: subject to { ... }")
        hint = f"did you mean `{guess}`? " if guess else ""
        return _err(
            f"'{value}' does not start a statement",
            span,
            source,
            hint + "statements start with " + ", ".join(STATEMENTS),
        )
    if value == ":" and after.startswith("="):
        return _err("`:=` is not an operator", Span(ln, col, ln, col + 2), source, "declarations use =: param n = 3")
    if value == ":" and before.endswith("subject to"):
        return _err("no ':' after `subject to`", span, source, "write: subject to { x >= 0 }")
    if value == ":" and "EQUAL" in expected and line.lstrip().startswith("solver"):
        return _err("solver options are written `key = value`", span, source, "for example: solver gd { lr = 0.1 }")
    if value == "^" and before.endswith("."):
        return _err(
            "`.^` is not an operator",
            Span(ln, col - 1, ln, col + 1),
            source,
            "operators act elementwise already: x^2, x * y, x / y",
        )
    if value in ("*", "/") and before.endswith(".") and not before[:-1].rstrip().endswith(tuple("0123456789")):
        return _err(
            f"`.{value}` is not an operator",
            Span(ln, col - 1, ln, col + 1),
            source,
            f"operators act elementwise already: x {value} y; a matrix product is A @ x",
        )
    if value in ("spin", "binary", "simplex", "ball") and line.lstrip().startswith("var "):
        if value in ("spin", "binary"):
            import re

            m = re.match(r"\s*var\s+(\w+)\s*(\[[^\]]*\])?", line)
            decl = f"{m.group(1)}{m.group(2) or '[n]'}" if m else "s[n]"
            return _err(
                f"`{value}` is a declaration of its own, not a domain of `var`",
                span,
                source,
                f"declare it as: {value} {decl}",
            )
        return _err(f"a domain is written `in {value}`", span, source, f"for example: var p[n] in {value}")
    if value == "=" and after[:1] in ("<", ">"):
        op = "<=" if after.startswith("<") else ">="
        return _err(f"`={after[0]}` is not an operator", Span(ln, col, ln, col + 2), source, f"write {op}")
    if value == "=" and ("RBRACE" in expected or "_NL" in expected or "MORETHAN" in expected) and "{" in text[:start]:
        if not line.lstrip().startswith(("param", "let", "data", "graph", "solver")) and _in_subject_block(text, start):
            return _err(
                "a constraint compares with ==, <= or >=",
                span,
                source,
                "an equality constraint is written with ==: x[0] == 1",
            )
    if value == "for":
        return _err(
            "there are no comprehensions (`for`)",
            span,
            source,
            "write whole-vector expressions: sum(x^2), A @ x, dot(a, x), x[1:] - y",
        )
    if tok.type == "SUBJECT_TO" and not at_statement_start:
        return _err(
            "`subject to` starts a statement of its own",
            span,
            source,
            "put `subject to { ... }` on the next line (or after ';')",
        )
    if tok.type == "NAME" and start > 0 and text[start - 1].isdigit():
        number = before.split()[-1] if before.split() else ""
        return _err(
            f"'{number}{value}': numbers have no units",
            span,
            source,
            f"write the number alone: {number} (time limits are in seconds)",
        )
    if value == "within":
        return _err(
            "`within` belongs to a robust objective",
            span,
            source,
            "write: minimize robust mean(LOSS) within chi2(radius = 0.1)",
        )
    if tok.type == "NAME" and "COMMA" in expected and line.lstrip().startswith("solver"):
        return _err(
            f"a ',' or a new line is missing before '{value}'",
            span,
            source,
            "separate solver options with commas or newlines: solver gd { lr = 0.1, max_iter = 500 }",
        )
    if (
        tok.type in ("NUMBER", "NAME")
        and "COMMA" in expected
        and before
        and (before[-1].isalnum() or before[-1] in "_.)]")
    ):
        return _err(
            f"a ',' is missing before '{value}'",
            span,
            source,
            "separate the items with commas: [0, 1], f(a, b), x[i, j]",
        )
    return None


def _in_subject_block(text: str, pos: int) -> bool:
    """Is `pos` inside a `subject to { ... }` block (the nearest open brace follows `subject to`)?"""
    open_at = text.rfind("{", 0, pos)
    if open_at < 0 or text.rfind("}", 0, pos) > open_at:
        return False
    return " ".join(text[:open_at].split()).endswith("subject to")


def explain_character(text: str, pos: int, line: int, col: int, source: Source) -> ParseError | None:
    """A named mistake at a character the language does not have, or None."""
    ch = text[pos] if pos < len(text) else ""
    nxt = text[pos + 1] if pos + 1 < len(text) else ""
    one = Span(line, col, line, col + 1)
    if ch == "!" and nxt == "=":
        return _err(
            "`!=` is not supported", Span(line, col, line, col + 2), source, "constraints are ==, <= or >=", "E101"
        )
    if ch in "<>" and nxt != "=":
        return _err(
            f"strict inequality `{ch}` is not supported",
            one,
            source,
            f"write {ch}= (constraints are closed: x {ch}= 1)",
            "E101",
        )
    if ch == "'":
        return _err(
            "`'` is not an operator; strings use double quotes",
            one,
            source,
            'a transpose is x.T (and a string is "text")',
            "E101",
        )
    if ch == "&" or ch == "|":
        return _err(
            f"`{ch}` is not an operator",
            one,
            source,
            "several constraints go on separate lines of one subject to { ... } block",
            "E101",
        )
    if ch in "$?`~\\" or (ch and not ch.isprintable()) or (ch and ord(ch) > 127 and not ch.isalpha()):
        return _err(
            f"unexpected character '{ch}'",
            one,
            source,
            "the operators are + - * / ^ @ and == <= >=; names are letters, digits and _; # starts a comment",
            "E101",
        )
    if ch == "%":
        return _err("`%` is not an operator; comments start with #", one, source, "comments: # like this", "E101")
    return None
