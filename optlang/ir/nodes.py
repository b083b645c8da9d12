"""IR nodes: frozen, typed, located. Every operator and built-in function is an `Op` on an atom.

Const holds numpy/scipy values (sparse stays sparse); Var names a decision variable; Op applies
an atom of ir/atoms.py to argument nodes with static keyword values (slices, seeds, axes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from string import Template
from typing import Any

from optlang.ir.atoms import ATOMS, PRODUCT
from optlang.ir.types import Type
from optlang.source import Span


@dataclass(frozen=True, eq=False)
class Node:
    span: Span
    type: Type

    def children(self) -> tuple[Node, ...]:
        return ()

    def walk(self) -> Iterator[Node]:
        stack: list[Node] = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(n.children())


@dataclass(frozen=True, eq=False)
class Const(Node):
    value: Any = None  # float | np.ndarray | scipy.sparse matrix
    label: str = ""  # where it came from (param name, "D.X"), for printing


@dataclass(frozen=True, eq=False)
class Var(Node):
    name: str = ""


@dataclass(frozen=True, eq=False)
class Op(Node):
    atom: str = ""
    args: tuple[Node, ...] = ()
    static: dict[str, Any] = field(default_factory=dict)  # compile-time keyword values

    def children(self) -> tuple[Node, ...]:
        return self.args


def to_text(node: Node) -> str:
    """A readable rendering of an IR expression (for plans, reports, round-trip tests): each atom's
    `text` template (ir/atoms.py), else name(arguments, key = value)."""
    if isinstance(node, Const):
        if node.label:
            return node.label
        v = node.value
        if isinstance(v, (int, float)):
            return f"{v:g}"
        return f"<{node.type.describe()}>"
    if isinstance(node, Var):
        return node.name
    assert isinstance(node, Op)
    spec = ATOMS[node.atom]
    if spec.text:
        fields = {f"p{i}": _paren(a) for i, a in enumerate(node.args)}
        fields["text"] = spec.static_text(node.static) if spec.static_text else ""
        return Template(spec.text).substitute(fields)
    inner = ", ".join(to_text(a) for a in node.args)
    kws = ", ".join(f"{k} = {v}" for k, v in node.static.items())
    return f"{node.atom}({inner}{', ' + kws if kws else ''})"


def _paren(node: Node) -> str:
    """An operand's text, parenthesized when it is a sum or a product (or a lower level)."""
    text = to_text(node)
    if isinstance(node, Op) and ATOMS[node.atom].prec <= PRODUCT:
        return f"({text})"
    return text
