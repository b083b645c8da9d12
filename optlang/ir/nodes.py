"""IR nodes: frozen, typed, located. Every operator and built-in function is an `Op` on an atom.

Const holds numpy/scipy values (sparse stays sparse); Var names a decision variable; Op applies
an atom of ir/atoms.py to argument nodes with static keyword values (slices, seeds, axes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

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
    """A readable rendering of an IR expression (for plans, reports, round-trip tests)."""
    from optlang.ir.atoms import ATOMS

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
    if spec.infix:
        if len(node.args) == 1:
            return f"{spec.infix}{_paren(node.args[0])}"
        return f"{_paren(node.args[0])} {spec.infix} {_paren(node.args[1])}"
    if node.atom == "transpose":
        return f"{_paren(node.args[0])}.T"
    if node.atom == "index":
        return f"{_paren(node.args[0])}[{node.static.get('text', '...')}]"
    inner = ", ".join(to_text(a) for a in node.args)
    kws = ", ".join(f"{k} = {v}" for k, v in node.static.items() if k != "text")
    return f"{node.atom}({inner}{', ' + kws if kws else ''})"


def _paren(node: Node) -> str:
    text = to_text(node)
    if isinstance(node, Op) and node.atom in ("add", "sub", "mul", "div", "matmul"):
        return f"({text})"
    return text
