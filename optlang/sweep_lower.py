"""Lower a swept model once and substitute each point's values (instead of lowering every point).

A sweep's points differ only in the swept params. `Substitution.trace` lowers the first point while
recording how the swept values flow through the lowering: each read of a swept name (a `Const`), and
each constant folded from such constants (`0.5 * lam`, `1 - w`, `lam * x0`: the atom and its
arguments). When none of these is consumed at compile time — by a param, a domain, an option, a
shape, a generator — except as the radius of the ambiguity set, lowering another point gives the
same IR with only those values changed; otherwise `trace` says None and the sweep lowers every point
as before. `Substitution.model(point)` replaces the recorded constants with the point's values:
reads checked as the lowering checks an override, folded constants re-folded by the lowerer's own
`op` (same arithmetic, same errors), the radius checked as the lowering checks it; the model is then
classified again. The unswept parts of the IR are shared between points (read only).
`tests/test_sweep_lower.py` compares substituted models with re-lowered ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from lark import Token, Tree

from optlang.errors import ModelError
from optlang.ir.lower import Lowerer, real_number
from optlang.ir.nodes import Const, Node, Op


class _Tracer(Lowerer):
    """The lowerer, recording the constants that carry swept values and whether any is consumed."""

    def __init__(self, swept: set[str], *args: Any) -> None:
        super().__init__(*args)
        self.swept = swept
        self.reads: dict[int, tuple[str, Const]] = {}  # id -> (swept name, the Const read)
        self.folds: dict[int, tuple[Const, str, tuple[Node, ...], dict[str, Any], Any]] = {}  # id -> recipe
        self.order: list[int] = []  # ids of reads and folds in the order they were made
        self.consumed = False  # a swept value was used at compile time (not as a value in the IR)
        self.frames: list[bool] = []  # compile-time consumers open; True until their node is seen
        self.radius_tree: Tree | None = None
        self.radius_node: Const | None = None
        self.radius_span: Any = None

    def tracked(self, node: Node) -> bool:
        return id(node) in self.reads or id(node) in self.folds

    def _name(self, tok: Token) -> Node:
        node = super()._name(tok)
        if str(tok) in self.swept and isinstance(node, Const) and id(node) not in self.reads:
            self.reads[id(node)] = (str(tok), node)
            self.order.append(id(node))
        return node

    def op(self, atom: str, args: list[Node], span: Any, static: dict[str, Any] | None = None) -> Node:
        node = super().op(atom, args, span, static)
        if isinstance(node, Const) and any(self.tracked(a) for a in args):  # folded from a swept value
            self.folds[id(node)] = (node, atom, tuple(args), dict(static or {}), span)
            self.order.append(id(node))
        return node

    def expr(self, t: Any) -> Node:
        top = bool(self.frames) and self.frames[-1]
        if top:
            self.frames[-1] = False
        node = super().expr(t)
        if top and self.tracked(node):  # the node a compile-time consumer takes the value of
            if t is self.radius_tree and self.radius_tree is not None:
                self.radius_node = node  # type: ignore[assignment]
            else:
                self.consumed = True
        return node

    def _consume(self, fn: Any, *args: Any) -> Any:
        self.frames.append(True)
        try:
            return fn(*args)
        finally:
            self.frames.pop()

    def _compile_time(self, t: Tree, kind: str) -> Any:
        return self._consume(super()._compile_time, t, kind)

    def _static(self, t: Tree) -> Any:
        return self._consume(super()._static, t)

    def _const(self, t: Tree, what: str) -> Any:
        return self._consume(super()._const, t, what)

    def _robust(self, loss_t: Tree, amb_t: Tree, span: Any) -> Any:
        from optlang.source import Span

        for a in amb_t.children[1:] if isinstance(amb_t, Tree) else ():
            if isinstance(a, Tree) and a.data == "kwarg" and str(a.children[0]) == "radius" and len(a.children) == 2:
                self.radius_tree = a.children[1]
                self.radius_span = Span.of(amb_t.meta)
        return super()._robust(loss_t, amb_t, span)


def _replace(node: Node, new: Mapping[int, Const], memo: dict[int, Node]) -> Node:
    """The expression with the Const nodes in `new` (by id) replaced; untouched subtrees are kept as
    they are (shared), and a subtree reached twice (a `let`) is rebuilt once."""
    key = id(node)
    if key in memo:
        return memo[key]
    out: Node = node
    if key in new:
        out = new[key]
    elif isinstance(node, Op):
        args = tuple(_replace(a, new, memo) for a in node.args)
        if any(x is not y for x, y in zip(args, node.args, strict=True)):
            out = dataclasses.replace(node, args=args)
    memo[key] = out
    return out


@dataclasses.dataclass
class Substitution:
    """The first point's lowering and where the swept values sit in it."""

    ir: Any  # the IR lowered at the first point
    tracer: _Tracer
    spans: dict[str, Any]  # swept name -> span of its param statement (for the override checks)

    @classmethod
    def trace(cls, src: Any, tree: Tree, point: Mapping[str, float], params: dict, data: dict) -> Substitution | None:
        """Lower at `point`, recording the swept values' flow; None when one is consumed at compile time."""
        from optlang.errors import OptlangError
        from optlang.source import Span

        swept = set(point)
        tracer = _Tracer(swept, src, {**params, **point}, data)
        try:
            ir = tracer.run(tree)
        except OptlangError:
            return None  # the caller's own lowering reports it
        if tracer.consumed:
            return None
        for _, c in tracer.reads.values():
            if np.ndim(c.value) != 0:  # sweeps set scalars; anything else is lowered point by point
                return None
        for node, *_ in tracer.folds.values():
            if not isinstance(node.value, (float, np.ndarray)):  # sparse results: not substituted
                return None
        if tracer.radius_node is not None:
            amb = ir.objective.ambiguity
            if amb is None or amb.radius != float(tracer.radius_node.value):
                return None
        spans: dict[str, Any] = {}
        for st in tree.children:
            if isinstance(st, Tree) and st.data == "param_stmt" and str(st.children[0]) in swept:
                spans[str(st.children[0])] = Span.of(st.children[0])
        if set(spans) != swept:
            return None
        return cls(ir, tracer, spans)

    def model(self, point: Mapping[str, float], params: dict, data: dict) -> Any:
        """The model at `point`: the first point's IR with the swept values replaced, classified again."""
        from optlang.api import Model
        from optlang.compiler import classify

        ir, tr = self.ir, self.tracer
        # each value as the lowering reads an override (a finite number; a scalar's rank was checked at
        # the first point)
        vals = {k: tr._override_value(k, v, self.spans[k]) for k, v in point.items()}
        new: dict[int, Const] = {}
        for key in tr.order:
            if key in tr.reads:
                name, c = tr.reads[key]
                new[key] = dataclasses.replace(c, value=vals[name])
            else:  # re-folded by the lowerer's own op: the same arithmetic and checks as a lowering
                _, atom, args, static, span = tr.folds[key]
                args2 = [new.get(id(a), a) for a in args]
                node = Lowerer.op(tr, atom, args2, span, static)
                assert isinstance(node, Const)
                new[key] = node
        memo: dict[int, Node] = {}
        obj = ir.objective

        def sub(n: Node | None) -> Any:
            return None if n is None else _replace(n, new, memo)

        amb = obj.ambiguity
        if tr.radius_node is not None and amb is not None:
            # a scalar (a swept value or folded from one), checked as the lowering checks a radius
            value = new[id(tr.radius_node)].value
            r = real_number(value, tr.radius_span, "the radius", 0.0, np.inf, ModelError, "E508")
            amb = dataclasses.replace(amb, radius=r)
        objective = dataclasses.replace(
            obj,
            expr=sub(obj.expr),
            prefer=sub(obj.prefer),
            ambiguity=amb,
            ambiguity_by=sub(obj.ambiguity_by),
            entries=tuple((name, sub(e)) for name, e in obj.entries),
        )
        constraints = tuple(dataclasses.replace(c, expr=sub(c.expr)) for c in ir.constraints)
        lets = {k: sub(v) for k, v in ir.lets.items()}
        point_ir = dataclasses.replace(
            ir, objective=objective, constraints=constraints, lets=lets, params={**ir.params, **vals}
        )
        m = Model(point_ir, classify(point_ir))
        m.overrides = ({**params, **point}, dict(data))
        return m
