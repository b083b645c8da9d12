"""The model IR: declarations, one objective, constraints, solver settings — all typed and located."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from optlang.data import DataTable, Graph
from optlang.ir.nodes import Node
from optlang.problem import Ambiguity, Domain
from optlang.source import Source, Span


@dataclass(frozen=True)
class VarDecl:
    name: str
    kind: str  # real | spin | binary
    shape: tuple[int, ...]
    domain: Domain
    span: Span


@dataclass(frozen=True)
class Objective:
    """form: minimize | maximize | maxcut | minimax | robust | multi."""

    form: str
    span: Span
    expr: Node | None = None  # scalar objective (minimize/maximize/maxcut/minimax); per-sample loss (robust)
    over: tuple[str, ...] = ()  # minimax: the maximizing variables
    ambiguity: Ambiguity | None = None
    ambiguity_by: Node | None = None  # target_conditional(by = ...)
    entries: tuple[tuple[str, Node], ...] = ()  # multi
    prefer: Node | None = None
    graph: str | None = None  # maxcut: the graph name


@dataclass(frozen=True)
class ConstraintDecl:
    """sense: <= | == (lhs - rhs, normalized so `a >= b` is `b - a <= 0`) or argmin."""

    sense: str
    span: Span
    expr: Node  # for <=/==: lhs - rhs; for argmin: the lower-level objective
    names: tuple[str, ...] = ()  # argmin: the variables it constrains
    over: tuple[str, ...] = ()  # argmin over: the lower-level variables (general bilevel)
    text: str = ""


@dataclass(frozen=True)
class SolverDecl:
    name: str
    options: dict[str, Any]
    span: Span
    option_spans: dict[str, Span] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelIR:
    """A lowered model: everything resolved to constants, variables and typed expressions."""

    name: str
    source: Source
    params: dict[str, Any]
    tables: dict[str, DataTable]
    graphs: dict[str, Graph]
    variables: dict[str, VarDecl]
    lets: dict[str, Node]
    objective: Objective
    constraints: tuple[ConstraintDecl, ...]
    solver: SolverDecl | None
