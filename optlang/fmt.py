"""`optlang fmt`: the canonical layout of a .opt file, printed from its parse tree.

One statement per line, single spaces around binary operators and `=`, `^` unspaced, parentheses only
where precedence needs them, one entry per line in `minimize { }` blocks and in `subject to { }` blocks of
several constraints; a solver block (and a one-constraint `subject to`) on one line when it fits;
blank lines kept (runs of them collapsed to one); comments kept where they stand
(a comment inside a multi-line expression moves above its statement). Lines are not wrapped.

Meaning is kept by construction and checked: the formatted text must parse to the same tree (tokens and
structure, positions aside), else `format_text` raises instead of returning it.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree

from optlang.errors import OptlangError
from optlang.grammar.parser import make_parser, parse_tree
from optlang.ir.atoms import ATOMS, POSTFIX, POWER, PRIMARY, UNARY
from optlang.source import Source

WIDTH = 100  # a solver block longer than this is written one option per line

_CONSTRAINT = {"con_le": "<=", "con_ge": ">=", "con_eq": "=="}


@dataclass
class _Comment:
    line: int
    column: int
    text: str


_comments: list[_Comment] = []


@cache
def _comment_parser() -> Lark:
    """The model grammar with a lexer callback that records comments (the normal parser drops them)."""
    return make_parser(
        lexer_callbacks={"COMMENT": lambda tok: _comments.append(_Comment(tok.line, tok.column, str(tok).rstrip()))},
    )


def format_text(text: str, path: str = "<string>") -> str:
    """The canonical text of a model; raises ParseError on bad syntax (nothing is printed for those)."""
    source = Source(text, path, Path("."))
    tree = parse_tree(source)  # the located ParseError for bad input
    _comments.clear()
    _comment_parser().parse(text.replace("\t", " ") + ("\n" if not text.endswith("\n") else ""))
    comments = sorted(_comments, key=lambda c: (c.line, c.column))
    _comments.clear()
    out = _Printer(comments).module(tree)
    try:  # a syntax error here would point into text the user never saw: report it as the formatter's bug
        check: Tree | None = parse_tree(Source(out, path, Path(".")))
    except OptlangError:
        check = None
    if check is None or canonical(check) != canonical(tree):  # never hand back text that means something else
        raise OptlangError(
            f"the formatter would change the meaning of {path}; the file is left as it is",
            None,
            hint="this is a bug in `optlang fmt`; please report it with the model",
            code="E113",
        )
    return out


def canonical(t: Any) -> Any:
    """A parse tree as nested tuples, positions dropped and `subject  to` / `max  over` spacing normalized:
    two texts with equal canonical trees are the same model."""
    if isinstance(t, Tree):
        return (str(t.data), tuple(canonical(c) for c in t.children))
    if isinstance(t, Token):
        return (t.type, " ".join(str(t).split()) if t.type in ("SUBJECT_TO", "MAXOVER") else str(t))
    return t


class _Printer:
    def __init__(self, comments: list[_Comment]) -> None:
        self.comments = comments
        self.lines: list[str] = []
        self.last_line = 0  # the source line of the last emitted item, for blank-line keeping

    # ------------------------------------------------------------------ layout
    def module(self, tree: Tree) -> str:
        stmts = [s for s in tree.children if isinstance(s, Tree)]
        for i, stmt in enumerate(stmts):
            self._statement(stmt, "", stmts[i + 1].meta.line if i + 1 < len(stmts) else None)
        self._comments_before(10**9, "")
        text = "\n".join(self.lines).strip("\n")
        return text + "\n" if text else ""

    def _emit(self, line: int, text: str) -> None:
        if self.lines and self.last_line and line - self.last_line > 1 and self.lines[-1] != "":
            self.lines.append("")
        self.lines.append(text)

    def _comments_before(self, line: int, indent: str) -> None:
        while self.comments and self.comments[0].line < line:
            c = self.comments.pop(0)
            self._emit(c.line, indent + c.text)
            self.last_line = c.line

    def _trailing(self, line: int, next_start: int | None = None) -> str:
        """A comment at the end of source line `line` (it stays at the end of the printed line), unless
        another statement or entry follows on that line (then the comment goes with the last one)."""
        if next_start == line:
            return ""
        if self.comments and self.comments[0].line == line:
            return "  " + self.comments.pop(0).text
        return ""

    def _statement(self, t: Tree, indent: str, next_start: int | None) -> None:
        start, end = t.meta.line, t.meta.end_line
        self._comments_before(start, indent)
        if t.data in ("subject_stmt", "obj_multi", "obj_multimax", "solver_stmt"):
            self._block(t, indent, next_start)
            return
        head = self.stmt(t)
        self._comments_before_end(start, end)
        self._emit(start, indent + head + self._trailing(end, next_start))
        self.last_line = end

    def _comments_before_end(self, start: int, end: int) -> None:
        """Comments inside a multi-line statement move above it (an expression is printed on one line)."""
        inner = [c for c in self.comments if start <= c.line < end]
        if inner:
            self.comments = [c for c in self.comments if c not in inner]
            at = len(self.lines)
            for c in inner:
                self.lines.insert(at, c.text)
                at += 1

    def _block(self, t: Tree, indent: str, next_start: int | None) -> None:
        start, end = t.meta.line, t.meta.end_line
        if t.data == "subject_stmt":
            head, entries = "subject to", [c for c in t.children[1:] if isinstance(c, Tree)]
            show = self.constraint
        elif t.data in ("obj_multi", "obj_multimax"):  # maximize { } parses, and lowering refuses it (E506)
            head = "minimize" if t.data == "obj_multi" else "maximize"
            entries = [c for c in t.children if isinstance(c, Tree)]
            show = self.entry
        else:
            head, entries = f"solver {t.children[0]}", [c for c in t.children[1:] if isinstance(c, Tree)]
            show = self.option
        if not entries:
            self._comments_before_end(start, end)
            self._emit(start, f"{indent}{head} {{}}" + self._trailing(end, next_start))
            self.last_line = end
            return
        inside = any(start <= c.line <= end for c in self.comments) and not (
            start == end and self.comments and self.comments[0].line == end
        )
        short = t.data == "solver_stmt" or (t.data == "subject_stmt" and len(entries) == 1)
        if short and not inside:
            one = f"{indent}{head} {{ " + ", ".join(show(e) for e in entries) + " }"
            if len(one) <= WIDTH:
                self._emit(start, one + self._trailing(end, next_start))
                self.last_line = end
                return
        self._emit(start, f"{indent}{head} {{" + (self._trailing(start) if start != entries[0].meta.line else ""))
        self.last_line = start
        inner = indent + "  "
        for i, e in enumerate(entries):
            self._comments_before(e.meta.line, inner)
            text = show(e)
            self._comments_before_end(e.meta.line, e.meta.end_line)
            following = entries[i + 1].meta.line if i + 1 < len(entries) else None
            trail = self._trailing(e.meta.end_line, following) if e.meta.end_line != end else ""
            self._emit(e.meta.line, inner + text + trail)
            self.last_line = e.meta.end_line
        self._comments_before(end, inner)
        self.lines.append(indent + "}" + self._trailing(end, next_start))
        self.last_line = end

    # ------------------------------------------------------------------ statements
    def stmt(self, t: Tree) -> str:
        d, c = t.data, t.children
        if d == "model_stmt":
            return f"model {c[0]}"
        if d in ("param_stmt", "data_stmt", "graph_stmt", "let_stmt"):
            return f"{d[:-5]} {c[0]} = {self.expr(c[1])}"
        if d in ("var_stmt", "spin_stmt", "binary_stmt"):
            out = f"{d[:-5]} {c[0]}"
            for part in c[1:]:
                if isinstance(part, Tree) and part.data == "dims":
                    out += "[" + ", ".join(self.expr(x) for x in part.children) + "]"
                elif isinstance(part, Tree):
                    out += " " + self.domain(part)
            return out
        if d in ("obj_minimize", "obj_maximize", "obj_maxcut"):
            return f"{d[4:]} {self.expr(c[0])}"
        if d == "obj_minimax":
            return f"minimize max over {self.names(c[1])}: {self.expr(c[2])}"
        if d == "obj_robust":
            return f"minimize robust {self.expr(c[0])} within {self.expr(c[1])}"
        if d == "prefer_stmt":
            return f"prefer {self.expr(c[0])}"
        raise AssertionError(f"unhandled statement {d}")

    def domain(self, t: Tree) -> str:
        c = t.children
        return {
            "dom_box": lambda: f"in [{self.expr(c[0])}, {self.expr(c[1])}]",
            "dom_lower": lambda: f">= {self.expr(c[0])}",
            "dom_upper": lambda: f"<= {self.expr(c[0])}",
            "dom_simplex": lambda: "in simplex",
            "dom_ball": lambda: f"in ball({self.expr(c[0])})",
        }[t.data]()

    def constraint(self, t: Tree) -> str:
        c = t.children
        if t.data in _CONSTRAINT:
            return f"{self.expr(c[0])} {_CONSTRAINT[t.data]} {self.expr(c[1])}"
        if t.data == "con_argmin":
            return f"{self.names(c[0])} in argmin {self.expr(c[1])}"
        return f"{self.names(c[0])} in argmin over {self.names(c[1])}: {self.expr(c[2])}"

    def entry(self, t: Tree) -> str:
        return f"{t.children[0]}: {self.expr(t.children[1])}"

    def option(self, t: Tree) -> str:
        return f"{t.children[0]} = {self._valued(t.children[1:])}"

    def _valued(self, parts: list[Any]) -> str:
        """A value, or `auto in [candidates]` (the candidates of a value chosen by validation)."""
        text = self.expr(parts[0])
        return text if len(parts) < 2 or parts[1] is None else f"{text} in {self.expr(parts[1])}"

    @staticmethod
    def names(t: Tree) -> str:
        return ", ".join(str(x) for x in t.children)

    # ------------------------------------------------------------------ expressions
    def expr(self, t: Any, need: int = 0) -> str:
        """The expression's text, parenthesized when its own precedence is below `need`."""
        text, prec = self._expr(t)
        return f"({text})" if prec < need else text

    def _expr(self, t: Any) -> tuple[str, int]:
        if isinstance(t, Token):
            return str(t), PRIMARY
        d, c = t.data, t.children
        spec = ATOMS.get(d)
        if spec is not None and spec.infix:  # an operator: the grammar names its rule after its atom
            ops = [self.expr(x, need) for x, need in zip(c, spec.operand_prec, strict=True)]
            if len(ops) == 1:
                return spec.infix + ops[0], spec.prec
            sep = "" if spec.prec == POWER else " "  # `^` unspaced, other binary operators spaced
            return f"{ops[0]}{sep}{spec.infix}{sep}{ops[1]}", spec.prec
        if d == "pos":  # unary plus is dropped by the lowering: no atom
            return "+" + self.expr(c[0], UNARY), UNARY
        if d == "subscript":
            return f"{self.expr(c[0], POSTFIX)}[" + ", ".join(self.index(i) for i in c[1:]) + "]", POSTFIX
        if d == "attr":
            base = self.expr(c[0], POSTFIX)
            if base.isdigit():  # `3.T` would lex as the number `3.` and a name: keep `(3).T`
                base = f"({base})"
            return f"{base}.{c[1]}", POSTFIX
        if d in ("number", "string", "name"):
            return str(c[0]), PRIMARY
        if d == "call":
            args = [a for a in c[1:] if a is not None]
            return f"{c[0]}(" + ", ".join(self.arg(a) for a in args) + ")", PRIMARY
        if d == "array":
            return "[" + ", ".join(self.expr(x) for x in c) + "]", PRIMARY
        raise AssertionError(f"unhandled expression {d}")

    def index(self, t: Any) -> str:
        if isinstance(t, Tree) and t.data == "slice":
            lo, hi = t.children
            return ("" if lo is None else self.expr(lo)) + ":" + ("" if hi is None else self.expr(hi))
        return self.expr(t)

    def arg(self, t: Any) -> str:
        if isinstance(t, Tree) and t.data == "kwarg":
            return f"{t.children[0]} = {self._valued(t.children[1:])}"
        return self.expr(t)


# ----------------------------------------------------------------------------- CLI
def add_parser(subparsers: Any) -> None:
    """Register `optlang fmt` on the CLI's subparsers."""
    from optlang.cli_common import new_command

    p = new_command(
        subparsers,
        "fmt",
        "rewrite .opt files in the canonical layout (meaning checked unchanged)",
        "Rewrite .opt files in place in the canonical layout; --check only reports (exit 1 when a file "
        "would change), --diff shows the change, '-' reads stdin and writes stdout.",
        epilog="exit codes:\n  0   formatted, or nothing to change\n  1   --check: a file would change\n"
        "  2   usage error\n  3   a file does not parse (the message points at file:line:col), or cannot be read",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help=".opt files or folders ('-' for stdin)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 when a file is not formatted")
    p.add_argument("--diff", action="store_true", help="print a unified diff instead of rewriting")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(func=run)


def _files(items: list[str]) -> list[Path]:
    out: list[Path] = []
    for item in items:
        p = Path(item)
        out.extend(sorted(p.rglob("*.opt")) if p.is_dir() else [p])
    return out


def run(args: argparse.Namespace) -> int:
    """0: formatted (or already so); 1: --check found a file to change; 3: a file did not parse."""
    if args.files == ["-"]:
        sys.stdout.write(format_text(sys.stdin.read(), "<stdin>"))
        return 0
    changed = failed = 0
    for path in _files(args.files):
        try:
            text = path.read_text(encoding="utf-8")
            new = format_text(text, str(path))
        except OptlangError as e:
            sys.stderr.write(e.render() + "\n")
            failed += 1
            continue
        except (OSError, UnicodeDecodeError) as e:
            sys.stderr.write(f"{path}: error: {e}\n")
            failed += 1
            continue
        if new == text:
            continue
        changed += 1
        if args.diff:
            sys.stdout.writelines(
                difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(path), f"{path} (formatted)")
            )
        if args.check:
            if not args.quiet:
                sys.stderr.write(f"would reformat {path}\n")
        elif not args.diff:
            path.write_text(new, encoding="utf-8")
            if not args.quiet:
                sys.stderr.write(f"reformatted {path}\n")
    if failed:
        return 3
    return 1 if args.check and changed else 0
