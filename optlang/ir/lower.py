"""Parse tree → typed IR. Explicit: a grammar rule without a handler here is an internal error.

Names resolve in order of declaration; params, generators and loads are evaluated at compile
time (constant folding), so the IR holds arrays, variables and typed operations only. Errors are
collected statement by statement (one per statement), then raised together as ModelErrors.
"""

from __future__ import annotations

import difflib
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from lark import Token, Tree

from optlang import data as D
from optlang import memory
from optlang.errors import (
    DataError,
    KindError,
    ModelError,
    ModelErrors,
    NameResolutionError,
    OptlangError,
    ParseError,
    ShapeError,
)
from optlang.grammar.parser import KEYWORDS, parse_tree
from optlang.ir.atoms import AMBIGUITY_FUNCS, ATOMS, CONSTANTS, GENERATORS, reduce_axis
from optlang.ir.model import ConstraintDecl, ModelIR, Objective, SolverDecl, VarDecl
from optlang.ir.nodes import Const, Node, Op, Var
from optlang.ir.types import BINARY, REAL, SPIN, Type
from optlang.problem import AUTO_GRIDS, Ambiguity, Auto, Domain
from optlang.source import Source, Span


class _Poison(Exception):
    """Raised when an expression uses a name whose declaration already failed (no new error)."""


# Brackets, calls, unary signs and powers may nest this deep (documented in docs/language.md §5);
# the lowering, evaluation and printing passes recurse once per level, well inside Python's stack.
# Long chains of + - and of * are not nesting: they are lowered as balanced trees (depth log2 n).
MAX_NESTING = 100
# Chains longer than this are balanced; shorter ones keep the left-to-right tree of the source.
BALANCE_FROM = 16
MAX_SOURCE_CHARS = 16 * 2**20  # a model is text a person could read; data belongs in files (load())
MAX_DIM = 2**40  # a dimension beyond this cannot be allocated anywhere; refused before the memory check


def lower_source(
    source: Source,
    params: dict[str, Any] | None = None,
    data: dict[str, Any] | None = None,
    allow_paths: Sequence[str | Path] | None = None,
) -> ModelIR:
    """Parse and lower a model; params/data override `param`/`data`/`graph` sources by name.

    load() reads only inside the model's folder and `allow_paths` (overrides may name any file).
    """
    if len(source.text) > MAX_SOURCE_CHARS:
        raise ParseError(
            f"the model text is {len(source.text) / 2**20:.1f} MB, more than the {MAX_SOURCE_CHARS // 2**20} MB "
            "a model may be",
            None,
            hint="put large data in files and read them with load()",
            source=source,
            code="E112",
        )
    tree = parse_tree(source)
    check_nesting(tree, source)
    try:
        return Lowerer(source, params or {}, data or {}, allow_paths).run(tree)
    except RecursionError:  # a backstop: check_nesting keeps every pass well inside the stack
        raise ParseError(
            f"the model nests expressions too deeply (the limit is {MAX_NESTING} levels)",
            None,
            source=source,
            code="E109",
        ) from None


def _chain(t: Any, ops: tuple[str, ...]) -> bool:
    return isinstance(t, Tree) and t.data in ops


def check_nesting(tree: Tree, source: Source) -> None:
    """Refuse expressions nested more than MAX_NESTING levels, at the first too-deep node (iterative)."""
    stack: list[tuple[Any, int]] = [(tree, 0)]
    while stack:
        t, depth = stack.pop()
        if not isinstance(t, Tree):
            continue
        if depth > MAX_NESTING:
            span = Span.of(t.meta)
            raise ParseError(
                f"expressions nest more than {MAX_NESTING} levels deep here",
                span,
                hint="split the expression with `let` names; long sums and products are fine",
                source=source,
                code="E109",
            )
        for i, c in enumerate(t.children):
            if not isinstance(c, Tree):
                continue
            flat = i == 0 and (
                (t.data in ("add", "sub") and c.data in ("add", "sub")) or (t.data == "mul" and c.data == "mul")
            )
            stack.append((c, depth if flat else depth + 1))


class Lowerer:
    def __init__(
        self,
        source: Source,
        overrides: dict[str, Any],
        data_overrides: dict[str, Any],
        allow_paths: Sequence[str | Path] | None = None,
    ) -> None:
        self.source = source
        self.roots = [Path(source.base_dir)] + [Path(p) for p in allow_paths or []]
        self.budget = memory.limit()
        self.overrides = dict(overrides)
        self.data_overrides = dict(data_overrides)
        self.errors: list[OptlangError] = []
        self.params: dict[str, Any] = {}
        # param values computed once for a whole sweep (their expressions use no swept name): see sweep.py
        self.reuse: dict[str, Any] = {}
        self.tables: dict[str, D.DataTable] = {}
        self.graphs: dict[str, D.Graph] = {}
        self.variables: dict[str, VarDecl] = {}
        self.lets: dict[str, Node] = {}
        self.decl_spans: dict[str, Span] = {}
        self.poisoned: set[str] = set()
        self.objectives: list[Objective] = []
        self.prefers: list[tuple[Node | None, Span, Tree]] = []
        self.constraints: list[ConstraintDecl] = []
        self.solvers: list[SolverDecl] = []
        self.name: str | None = None

    # ------------------------------------------------------------------ driver
    def run(self, tree: Tree) -> ModelIR:
        handlers = {
            "model_stmt": self.model_stmt,
            "param_stmt": self.param_stmt,
            "data_stmt": self.data_stmt,
            "graph_stmt": self.graph_stmt,
            "var_stmt": self.var_stmt,
            "spin_stmt": self.spin_stmt,
            "binary_stmt": self.binary_stmt,
            "let_stmt": self.let_stmt,
            "prefer_stmt": self.prefer_stmt,
            "subject_stmt": self.subject_stmt,
            "solver_stmt": self.solver_stmt,
        }
        for stmt in tree.children:
            if not isinstance(stmt, Tree):
                continue
            try:
                if stmt.data.startswith("obj_"):
                    self.objective(stmt)
                else:
                    handlers[stmt.data](stmt)
            except _Poison:
                pass
            except ModelErrors as e:
                self.errors.extend(e.errors)
            except OptlangError as e:
                self.errors.append(e)
        for unused in sorted(set(self.overrides) - set(self.params) - self.poisoned):
            self.errors.append(
                ModelError(
                    f"there is no param '{unused}' to override",
                    None,
                    hint=self._did_you_mean(unused, list(self.params)),
                    code="E701",
                )
            )
        known_sources = set(self.tables) | set(self.graphs)
        for unused in sorted(set(self.data_overrides) - known_sources - self.poisoned):  # poisoned: already told
            self.errors.append(
                ModelError(
                    f"there is no data or graph '{unused}' to override",
                    None,
                    hint=self._did_you_mean(unused, sorted(known_sources)),
                    code="E701",
                )
            )
        objective = self._finish_objective()
        if self.errors:
            for e in self.errors:
                e.with_source(self.source)
            raise self.errors[0] if len(self.errors) == 1 else ModelErrors(self.errors)
        assert objective is not None
        return ModelIR(
            name=self.name or Path(self.source.path).stem or "model",
            source=self.source,
            params=self.params,
            tables=self.tables,
            graphs=self.graphs,
            variables=self.variables,
            lets=self.lets,
            objective=objective,
            constraints=tuple(self.constraints),
            solver=self.solvers[0] if self.solvers else None,
        )

    # ------------------------------------------------------------------ declarations
    def _declare(self, tok: Token) -> str:
        name = str(tok)
        span = Span.of(tok)
        if name in KEYWORDS:
            raise NameResolutionError(
                f"'{name}' is a keyword and cannot be used as a name", span, hint="choose another name", code="E104"
            )
        if name in self.decl_spans:
            first = self.decl_spans[name]
            raise NameResolutionError(
                f"'{name}' is already defined (line {first.line})", span, hint="each name is declared once", code="E202"
            )
        if name in ATOMS and ATOMS[name].user or name in GENERATORS or name in AMBIGUITY_FUNCS:
            raise NameResolutionError(
                f"'{name}' is a built-in function and cannot be redefined",
                span,
                hint="choose another name",
                code="E203",
            )
        self.decl_spans[name] = span
        return name

    def model_stmt(self, t: Tree) -> None:
        if self.name is not None:
            raise ModelError("the model is named twice", Span.of(t.meta), code="E505")
        self.name = str(t.children[0])

    def param_stmt(self, t: Tree) -> None:
        tok, expr = t.children
        name = self._declare(tok)
        if name in self.data_overrides and name not in self.overrides:  # an override given under data=
            self.overrides[name] = self.data_overrides.pop(name)
        try:
            if name in self.overrides:
                value = self._override_value(name, self.overrides[name], Span.of(tok))
                self._check_override_rank(name, value, expr, Span.of(tok))
                self.params[name] = value
                return
            if name in self.reuse:  # a copy: points must not share arrays that a backend might write to
                value = self.reuse[name]
                self.params[name] = value.copy() if isinstance(value, np.ndarray) else value
                return
            value = self._compile_time(expr, "param")
            if isinstance(value, (D.Graph, D.DataTable)):
                what = "graph" if isinstance(value, D.Graph) else "data"
                raise KindError(
                    f"this makes a {what}: declare it with `{what} {name} = ...`", Span.of(expr.meta), code="E406"
                )
            self.params[name] = value
        except OptlangError:
            self.poisoned.add(name)
            raise

    def data_stmt(self, t: Tree) -> None:
        tok, expr = t.children
        name = self._declare(tok)
        self._take_source_override(name)
        try:
            if name in self.data_overrides:
                table = self._load_override(name, expr, "data")
            else:
                table = self._compile_time(expr, "data")
            if not isinstance(table, D.DataTable):
                raise KindError('`data` needs a table: load("file.csv", target = "y")', Span.of(expr.meta), code="E406")
            self.tables[name] = D.DataTable(name, table.X, table.y, table.columns, table.path)
        except OptlangError:
            self.poisoned.add(name)
            raise

    def graph_stmt(self, t: Tree) -> None:
        tok, expr = t.children
        name = self._declare(tok)
        self._take_source_override(name)
        try:
            if name in self.data_overrides:
                g = self._load_override(name, expr, "graph")
            else:
                g = self._compile_time(expr, "graph")
            if not isinstance(g, D.Graph):
                raise KindError(
                    '`graph` needs a graph: load("G1.txt"), erdos_renyi(...), random_regular(...), torus(...)',
                    Span.of(expr.meta),
                    code="E406",
                )
            self.graphs[name] = g
        except OptlangError:
            self.poisoned.add(name)
            raise

    def _take_source_override(self, name: str) -> None:
        """A graph or table given under params= (the API accepts either) is a data override."""
        if name in self.overrides and name not in self.data_overrides:
            self.data_overrides[name] = self.overrides.pop(name)

    def _load_override(self, name: str, expr: Tree, kind: str) -> Any:
        value = self.data_overrides[name]
        span = Span.of(expr.meta)
        if isinstance(value, (D.Graph, D.DataTable)):
            return value
        if isinstance(value, (str, Path)):
            kwargs: dict[str, Any] = {}
            if isinstance(expr, Tree) and expr.data == "call" and str(expr.children[0]) == "load":
                _, kwargs = self._call_args(expr)
            return D.load(
                str(value),
                Path("."),
                span,
                kind=kind,
                roots=None,
                base_label="the current folder (overrides name files from where optlang runs)",
                **{k: v for k, v in kwargs.items() if isinstance(v, str)},
            )
        if kind == "graph" and (sp.issparse(value) or isinstance(value, np.ndarray)):
            W = sp.csr_matrix(value, dtype=np.float64)
            if W.shape[0] != W.shape[1]:
                raise DataError(
                    f"override for graph '{name}' must be a square adjacency matrix, got shape {W.shape}",
                    span,
                    code="E701",
                )
            D.check_finite(W.data, f"override of '{name}'", span)
            upper, lower = sp.triu(W, k=1), sp.tril(W, k=-1)
            if upper.nnz and lower.nnz:  # both directions given: it must already be symmetric
                if abs(W - W.T).max() > 1e-12 * max(1.0, abs(W).max()):
                    raise DataError(
                        f"override for graph '{name}' is not symmetric",
                        span,
                        hint="give each edge once (upper or lower triangle) or a symmetric matrix",
                        code="E701",
                    )
                W = (upper + lower).tocsr()
                W.eliminate_zeros()
                return D.Graph(W)
            return D.Graph(D._symmetrize(W))  # each edge given once
        if kind == "data" and (isinstance(value, (tuple, list)) and len(value) == 2 or isinstance(value, np.ndarray)):
            X, y = (value, None) if isinstance(value, np.ndarray) else value
            X = np.asarray(X, dtype=np.float64)
            X = X.reshape(-1, 1) if X.ndim == 1 else X
            yv = None if y is None else np.asarray(y, dtype=np.float64).ravel()
            if X.ndim != 2 or (yv is not None and yv.shape[0] != X.shape[0]):
                raise DataError(
                    f"override for data '{name}' must be X (rows × features) or (X, y) with one y per row",
                    span,
                    code="E701",
                )
            D.check_finite(X, f"override of '{name}'", span)
            if yv is not None:
                D.check_finite(yv, f"override of '{name}'", span)
            return D.DataTable(name, X, yv)
        want = (
            "a path, a networkx graph, a scipy sparse or numpy adjacency matrix"
            if kind == "graph"
            else "a path, a numpy array X or a pair (X, y)"
        )
        raise DataError(f"override for '{name}' must be {want}, got {type(value).__name__}", span, code="E701")

    def _override_value(self, name: str, value: Any, span: Span) -> Any:
        if isinstance(value, Path):
            value = str(value)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return D.load(
                    value,
                    Path("."),
                    span,
                    kind="param",
                    roots=None,
                    base_label="the current folder (overrides name files from where optlang runs)",
                )
            D.check_finite(np.asarray(value), f"override of '{name}'", span)
            return value
        if sp.issparse(value):
            M = sp.csr_matrix(value)
            if M.dtype.kind not in "biuf":
                raise DataError(f"the override of '{name}' must hold real numbers", span, code="E702")
            M = M.astype(np.float64)
            D.check_finite(M, f"override of '{name}'", span)
            return M
        bad = isinstance(value, (bool, dict, set, bytes)) or value is None
        arr = None
        if not bad:
            try:
                raw = np.asarray(value)
                bad = raw.dtype.kind not in "biuf" or raw.ndim > 2
                arr = None if bad else raw.astype(np.float64)
            except (TypeError, ValueError, OverflowError, RecursionError):
                bad = True
        if bad or arr is None:
            raise DataError(
                f"the override of '{name}' must be a number, a vector or a matrix of real numbers",
                span,
                hint="e.g. -p c=3, -p c=[1,2,3], -p A=[[1,0],[0,1]] (rows of equal length), or a file path",
                code="E702",
            )
        D.check_finite(arr, f"override of '{name}'", span)
        return float(arr) if arr.ndim == 0 else arr

    def _check_override_rank(self, name: str, value: Any, expr: Tree, span: Span) -> None:
        """An override keeps the declared rank (scalar, vector, matrix) when the declaration can be
        evaluated cheaply (it loads no file); lengths may change, as overrides resize data."""
        calls = [str(t.children[0]) for t in expr.iter_subtrees() if isinstance(t, Tree) and t.data == "call"]
        if (
            isinstance(expr, Tree)
            and expr.data == "call"
            and str(expr.children[0]) in ("zeros", "ones", "randn", "rand")
        ):
            rank = len(
                [a for a in expr.children[1:] if a is not None and not (isinstance(a, Tree) and a.data == "kwarg")]
            )
        elif isinstance(expr, Tree) and expr.data == "call" and str(expr.children[0]) == "eye":
            rank = 2
        elif any(c == "load" or c in GENERATORS for c in calls):
            return  # evaluating it could be what the override avoids (a big file or array)
        else:
            try:
                declared = self._compile_time(expr, "param")
            except OptlangError:
                return
            rank = 2 if sp.issparse(declared) else int(np.ndim(declared))
        got = 2 if sp.issparse(value) else int(np.ndim(value))
        if rank != got:
            names = {0: "a scalar", 1: "a vector", 2: "a matrix"}
            raise DataError(
                f"the override of '{name}' is {names.get(got, f'{got}-D')}, but '{name}' is declared as "
                f"{names.get(rank, f'{rank}-D')}",
                span,
                hint="give a value of the declared shape",
                code="E702",
            )

    def _var_decl(self, t: Tree, kind: str) -> None:
        tok = t.children[0]
        dims = next((c for c in t.children[1:] if isinstance(c, Tree) and c.data == "dims"), None)
        dom_tree = next((c for c in t.children[1:] if isinstance(c, Tree) and c.data.startswith("dom_")), None)
        name = self._declare(tok)
        try:
            shape = self._dims(dims) if dims is not None else ()
            domain = self._domain(dom_tree, shape) if dom_tree is not None else Domain()
            if domain.kind == "simplex" and not shape:
                raise ModelError(
                    "a scalar cannot lie in a simplex",
                    Span.of(dom_tree.meta),
                    hint="declare a vector: var p[n] in simplex",
                    code="E503",
                )
            memory.check(
                memory.variable_bytes(shape),
                f"variable '{name}' ({' × '.join(map(str, shape)) or 'scalar'})",
                Span.of(t.meta),
                hint="declare a smaller variable; the limit is --memory-limit or OPTLANG_MEMORY_LIMIT",
            )
            self.variables[name] = VarDecl(name, kind, shape, domain, Span.of(t.meta))
        except OptlangError:
            self.poisoned.add(name)
            raise

    def var_stmt(self, t: Tree) -> None:
        self._var_decl(t, REAL)

    def spin_stmt(self, t: Tree) -> None:
        self._var_decl(t, SPIN)

    def binary_stmt(self, t: Tree) -> None:
        self._var_decl(t, BINARY)

    def let_stmt(self, t: Tree) -> None:
        tok, expr = t.children
        name = self._declare(tok)
        try:
            self.lets[name] = self.expr(expr)
        except OptlangError:
            self.poisoned.add(name)
            raise

    def _dims(self, t: Tree) -> tuple[int, ...]:
        out = []
        for child in t.children:
            n = self._const_int(child, "a dimension")
            if n < 1:
                raise ShapeError(f"a dimension must be at least 1, got {n}", Span.of(child.meta), code="E302")
            if n > MAX_DIM:
                raise ShapeError(f"a dimension of {n} is beyond any memory", Span.of(child.meta), code="E302")
            out.append(n)
        if len(out) > 2:
            raise ShapeError(f"variables have at most two dimensions, got {len(out)}", Span.of(t.meta), code="E302")
        return tuple(out)

    def _bound(self, t: Tree, shape: tuple[int, ...]) -> float | np.ndarray:
        """A box bound: a number, or a constant array of the variable's shape (one bound per element)."""
        v = self._const(t, "a bound")
        if sp.issparse(v) or not isinstance(v, (int, float, np.ndarray, np.number)):
            raise ShapeError("a bound must be a number or a constant array", Span.of(t.meta), code="E301")
        arr = np.asarray(v, dtype=np.float64)
        if np.any(np.isnan(arr)):
            raise ModelError("a bound is NaN", Span.of(t.meta), code="E503")
        if arr.ndim == 0:
            return float(arr)
        if arr.shape != shape:
            raise ShapeError(
                f"a bound of shape {Type(shape=arr.shape).describe()} does not fit the variable's shape "
                f"{Type(shape=shape).describe()}",
                Span.of(t.meta),
                hint="give one bound per element, or a single number for all",
                code="E301",
            )
        if np.all(arr == arr.flat[0]):  # the same bound everywhere: a scalar box
            return float(arr.flat[0])
        if np.any(np.isinf(arr)):
            raise ModelError(
                "a per-element bound must be finite in every element",
                Span.of(t.meta),
                hint="leave that side out (`>= lo`, `<= hi`), or give a finite bound",
                code="E503",
            )
        return arr

    def _domain(self, t: Tree, shape: tuple[int, ...] = ()) -> Domain:
        span = Span.of(t.meta)
        if t.data == "dom_box":
            lo, hi = (self._bound(c, shape) for c in t.children)
            bad = np.asarray(lo) > np.asarray(hi)
            if np.any(bad):
                if np.ndim(bad) == 0:
                    raise ModelError(f"empty domain: lower bound {lo:g} is above upper bound {hi:g}", span, code="E503")
                i = np.unravel_index(int(np.argmax(bad)), shape)
                at = ", ".join(map(str, i))
                lo_i, hi_i = float(np.broadcast_to(lo, shape)[i]), float(np.broadcast_to(hi, shape)[i])
                raise ModelError(
                    f"empty domain: at element [{at}] the lower bound {lo_i:g} is above the upper bound {hi_i:g}",
                    span,
                    code="E503",
                )
            return Domain.box(lo, hi)
        if t.data == "dom_lower":
            return Domain.box(self._bound(t.children[0], shape), np.inf)
        if t.data == "dom_upper":
            return Domain.box(-np.inf, self._bound(t.children[0], shape))
        if t.data == "dom_simplex":
            return Domain("simplex")
        if t.data == "dom_ball":
            r = self._const_float(t.children[0], "a radius")
            if r <= 0:
                raise ModelError(f"a ball needs a positive radius, got {r:g}", span, code="E503")
            return Domain("ball", radius=r)
        raise AssertionError(f"unhandled domain rule {t.data}")

    # ------------------------------------------------------------------ objective
    def objective(self, t: Tree) -> None:
        span = Span.of(t.meta)
        form = t.data[4:]
        shorthand = self._maxcut_form(t.children[0]) if form == "maximize" else None
        if shorthand is not None:  # `spin s[G.n]; maximize cut(G, s)` is what `maxcut G` abbreviates
            obj = Objective("maxcut", span, graph=shorthand)
        elif form in ("minimize", "maximize"):
            obj = Objective(form, span, expr=self._scalar(self.expr(t.children[0]), "the objective"))
        elif form == "maxcut":
            g = self._graph_ref(t.children[0])
            obj = Objective("maxcut", span, graph=g)
        elif form == "minimax":
            _, names_t, body = t.children
            over = self._names(names_t)
            obj = Objective("minimax", span, expr=self._scalar(self.expr(body), "the objective"), over=over)
        elif form == "robust":
            loss_t, amb_t = t.children
            obj = self._robust(loss_t, amb_t, span)
        elif form == "multimax":
            raise ModelError(
                "a multi-objective block minimizes each of its objectives; `maximize { ... }` is not a form",
                Span(span.line, span.col, span.line, span.col + len("maximize")),
                hint="write minimize { ... } and negate each objective to maximize (f1: -EXPR); the "
                "front and the preference then see -EXPR",
                code="E506",
            )
        elif form == "multi":
            entries = []
            seen: dict[str, Span] = {}
            for e in t.children:
                if e is None:
                    continue
                tok, body = e.children
                if str(tok) in seen:
                    raise NameResolutionError(f"objective '{tok}' is named twice", Span.of(tok), code="E202")
                seen[str(tok)] = Span.of(tok)
                entries.append((str(tok), self._scalar(self.expr(body), f"objective '{tok}'")))
            if len(entries) < 2:
                raise ModelError(
                    "a multi-objective block needs at least two objectives",
                    span,
                    hint="minimize { f1: ..., f2: ... } — or use plain `minimize EXPR`",
                    code="E506",
                )
            obj = Objective("multi", span, entries=tuple(entries))
        else:
            raise AssertionError(f"unhandled objective rule {t.data}")
        self.objectives.append(obj)

    def _robust(self, loss_t: Tree, amb_t: Tree, span: Span) -> Objective:
        if not (isinstance(loss_t, Tree) and loss_t.data == "call" and str(loss_t.children[0]) == "mean"):
            raise ModelError(
                "a robust objective is `robust mean(LOSS) within AMBIGUITY`",
                Span.of(loss_t.meta),
                hint="LOSS is a per-sample vector, e.g. (D.X @ w + b - D.y)^2",
                code="E507",
            )
        args = [a for a in loss_t.children[1:] if a is not None]
        if len(args) != 1 or (isinstance(args[0], Tree) and args[0].data == "kwarg"):
            raise ModelError("mean(LOSS) takes one per-sample vector", Span.of(loss_t.meta), code="E507")
        loss = self.expr(args[0])
        if loss.type.ndim != 1:
            raise ShapeError(
                f"the robust loss must be a per-sample vector, got {loss.type.describe()}",
                Span.of(args[0].meta),
                code="E303",
            )
        if not (isinstance(amb_t, Tree) and amb_t.data == "call" and str(amb_t.children[0]) in AMBIGUITY_FUNCS):
            raise ModelError(
                "unknown ambiguity set",
                Span.of(amb_t.meta),
                hint="chi2(radius = r), kl(radius = r), wasserstein(radius = r, p = 1 | 2), "
                "target_conditional(chi2, radius = r, bins = K)",
                code="E508",
            )
        kind = str(amb_t.children[0])
        pos, kw = self._call_args(amb_t, keep_nodes=("by",), allow_auto=True)
        aspan = Span.of(amb_t.meta)
        allowed = {
            "chi2": {"radius"},
            "kl": {"radius"},
            "wasserstein": {"radius", "p"},
            "target_conditional": {"radius", "bins", "by", "edges"},
        }[kind]
        for k in kw:
            if k not in allowed:
                raise ModelError(
                    f"{kind}() has no argument '{k}'",
                    aspan,
                    hint=f"accepted: {', '.join(sorted(allowed))}",
                    code="E508",
                )
        numeric = [a for a in pos if isinstance(a, (int, float)) and not isinstance(a, bool)]
        if "radius" not in kw and numeric:  # chi2(0.1): a radius written positionally
            given = f"{numeric[0]:g}"
            example = f"{kind}(chi2, radius = {given})" if kind == "target_conditional" else f"{kind}(radius = {given})"
            raise ModelError(f"{kind}() needs radius = r", aspan, hint=f"arguments are named: {example}", code="E508")
        auto = self._ambiguity_auto(kind, kw, aspan)
        radius = (
            math.nan
            if "radius" in auto
            else real_number(kw["radius"], aspan, "the radius", 0.0, np.inf, ModelError, "E508")
        )
        base = "chi2"
        by = None
        edges = None
        if kind == "target_conditional":
            if len(pos) != 1 or not isinstance(pos[0], str) or pos[0] not in ("chi2", "kl"):
                raise ModelError(
                    "target_conditional takes the divergence first: target_conditional(chi2, ...)",
                    aspan,
                    hint="chi2 or kl",
                    code="E508",
                )
            base = pos[0]
            by = kw.get("by")
            if by is not None and (not isinstance(by, Node) or by.type.shape != loss.type.shape):
                raise ShapeError("by = must be a vector with one value per sample", aspan, code="E303")
            if "edges" in kw:
                ev = kw["edges"]
                if isinstance(ev, str) or sp.issparse(ev) or np.ndim(ev) > 1:
                    raise ModelError("edges = must be a vector of bin edges", aspan, code="E508")
                edges = np.sort(np.asarray(ev, dtype=np.float64).ravel())
                if edges.size > 10**6 or not np.all(np.isfinite(edges)):
                    raise ModelError("edges = must be at most 10^6 finite numbers", aspan, code="E508")
        elif pos:
            raise ModelError(f"{kind}() takes keyword arguments only", aspan, code="E508")
        p = _int(kw.get("p", 1), aspan, "wasserstein p (1 or 2)", 1, 2, ModelError, "E508")
        bins = 10 if "bins" in auto else _int(kw.get("bins", 10), aspan, "bins", 1, 10**6, ModelError, "E508")
        amb = Ambiguity(kind, radius, p=p, base=base, bins=bins, edges=edges, auto=auto)  # type: ignore[arg-type]  # kind is a known set
        return Objective("robust", span, expr=loss, ambiguity=amb, ambiguity_by=by)

    def _ambiguity_auto(self, kind: str, kw: dict[str, Any], span: Span) -> dict[str, tuple[float, ...]]:
        """The ambiguity parameters given as `auto` (an omitted radius is `auto`: no radius has a
        principled default), each with its candidate grid (the user's, else the documented default)."""
        if "radius" not in kw:
            kw["radius"] = Auto()
        out: dict[str, tuple[float, ...]] = {}
        for key, v in kw.items():
            if not isinstance(v, Auto):
                continue
            if key not in ("radius", "bins") or (key == "bins" and kind != "target_conditional"):
                raise ModelError(
                    f"{kind}() cannot choose '{key}' by validation",
                    span,
                    hint="auto applies to radius (every ambiguity set) and bins (target_conditional)",
                    code="E513",
                )
            cands = v.candidates if v.candidates is not None else AUTO_GRIDS[key]
            if key == "radius" and min(cands) < 0:
                raise ModelError("radius candidates must be non-negative", span, code="E513")
            if key == "bins" and (min(cands) < 1 or not all(float(c).is_integer() for c in cands)):
                raise ModelError("bins candidates must be positive integers", span, code="E513")
            out[key] = tuple(sorted(set(cands)))
        return out

    def prefer_stmt(self, t: Tree) -> None:
        self.prefers.append((None, Span.of(t.meta), t.children[0]))

    def _finish_objective(self) -> Objective | None:
        if not self.objectives:
            if not self.errors:
                lines = self.source.text.rstrip().splitlines() or [""]
                end = Span(len(lines), 1, len(lines), max(2, len(lines[-1]) + 1))
                self.errors.append(
                    ModelError(
                        "the model has no objective",
                        end,
                        hint="add one of: minimize EXPR, maximize EXPR, maxcut G, "
                        "minimize max over y: EXPR, minimize robust mean(...) within ..., "
                        "minimize { f1: ..., f2: ... }",
                        code="E501",
                    )
                )
            return None
        obj = self.objectives[0]
        for extra in self.objectives[1:]:
            self.errors.append(
                ModelError(
                    "a model has exactly one objective; this is a second one",
                    extra.span,
                    hint=f"the first is at line {obj.span.line}; for several objectives "
                    "use minimize { f1: ..., f2: ... }",
                    code="E502",
                )
            )
        if self.prefers:
            _, pspan, ptree = self.prefers[0]
            for _, extra_span, _ in self.prefers[1:]:
                self.errors.append(ModelError("`prefer` is given twice", extra_span, code="E502"))
            if obj.form != "multi":
                self.errors.append(
                    ModelError(
                        "`prefer` only applies to a multi-objective model",
                        pspan,
                        hint="minimize { f1: ..., f2: ... } then prefer EXPR",
                        code="E509",
                    )
                )
                return obj
            saved = dict(self.lets)
            try:
                for name, node in obj.entries:
                    self.lets.setdefault(name, node)
                pref = self._scalar(self.expr(ptree), "the preference")
                obj = Objective("multi", obj.span, entries=obj.entries, prefer=pref)
            except _Poison:
                pass
            except OptlangError as e:
                self.errors.append(e)
            finally:
                self.lets = saved
        return obj

    # ------------------------------------------------------------------ constraints & solver
    def subject_stmt(self, t: Tree) -> None:
        for c in t.children[1:]:
            if c is None:
                continue
            try:
                self.constraints.append(self._constraint(c))
            except _Poison:
                pass
            except OptlangError as e:
                self.errors.append(e)

    def _constraint(self, c: Tree) -> ConstraintDecl:
        span = Span.of(c.meta)
        text = self._text(c)
        if c.data in ("con_le", "con_ge", "con_eq"):
            a, b = (self.expr(x) for x in c.children)
            lhs, rhs = (a, b) if c.data != "con_ge" else (b, a)
            diff = self.op("sub", [lhs, rhs], span)
            if diff.type.const:
                raise ModelError("this constraint involves no variable", span, code="E510")
            return ConstraintDecl("==" if c.data == "con_eq" else "<=", span, diff, text=text)
        if c.data == "con_argmin":
            names = self._names(c.children[0])
            body = self._scalar(self.expr(c.children[1]), "the lower-level objective")
            return ConstraintDecl("argmin", span, body, names=names, text=text)
        if c.data == "con_argmin_over":
            names = self._names(c.children[0])
            over = self._names(c.children[1])
            body = self._scalar(self.expr(c.children[2]), "the lower-level objective")
            return ConstraintDecl("argmin", span, body, names=names, over=over, text=text)
        raise AssertionError(f"unhandled constraint rule {c.data}")

    def solver_stmt(self, t: Tree) -> None:
        span = Span.of(t.meta)
        if self.solvers:
            raise ModelError(
                "`solver` is given twice", span, hint=f"the first is at line {self.solvers[0].span.line}", code="E504"
            )
        name = str(t.children[0])
        opts: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        for o in t.children[1:]:
            if o is None:
                continue
            key_tok, val = o.children[:2]
            key = str(key_tok)
            if key in opts:
                raise ModelError(f"option '{key}' is given twice", Span.of(key_tok), code="E504")
            auto = self._auto(o) if len(o.children) == 3 else None  # a bare `auto` stays the word "auto"
            opts[key] = auto if auto is not None else self._option_value(val)
            spans[key] = Span.of(o.meta)
        self.solvers.append(SolverDecl(name, opts, span, spans))

    def _option_value(self, t: Tree) -> Any:
        if isinstance(t, Tree) and t.data == "string":
            return _unquote(t.children[0], Span.of(t.meta))
        if isinstance(t, Tree) and t.data == "name" and str(t.children[0]) in ("true", "false"):
            return str(t.children[0]) == "true"
        if isinstance(t, Tree) and t.data == "name" and str(t.children[0]) not in self.params:
            return str(t.children[0])  # bare words: refine = tabu
        v = self._compile_time(t, "param")
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = float(v)
        if isinstance(v, float) and v.is_integer() and not _has_point(t):
            return int(v)
        return v

    # ------------------------------------------------------------------ expressions
    def expr(self, t: Any) -> Node:
        if isinstance(t, Token):
            raise AssertionError(f"bare token {t!r} in expression")
        span = Span.of(t.meta)
        rule = t.data
        if rule == "number":
            value = _number(t.children[0])
            if not np.isfinite(value):
                raise ParseError(
                    "this number is too large (it overflows to infinity)",
                    span,
                    hint="numbers must be below about 1.8e308",
                    code="E111",
                )
            return Const(span, Type(), value)
        if rule == "string":
            raise KindError(
                "a string is not a value here", span, hint="strings name files and options only", code="E407"
            )
        if rule == "name":
            return self._name(t.children[0])
        if rule in ("add", "sub", "mul"):
            chain = self._long_chain(t)
            if chain is not None:
                return chain
        if rule in ATOMS and ATOMS[rule].infix:  # the grammar names each operator's rule after its atom
            return self.op(rule, [self.expr(c) for c in t.children], span)
        if rule == "pos":
            return self.expr(t.children[0])
        if rule == "attr":
            return self._attr(t, span)
        if rule == "subscript":
            return self._subscript(t, span)
        if rule == "call":
            return self._call(t, span)
        if rule == "array":
            elems = [self.expr(c) for c in t.children]
            return self.op("array", elems, span)
        if rule in ("slice", "kwarg"):
            raise ModelError("a slice or keyword is not a value here", span, code="E511")
        raise AssertionError(f"unhandled expression rule {rule}")

    def _long_chain(self, t: Tree) -> Node | None:
        """A chain of + and - (or of *) of BALANCE_FROM terms or more, lowered as a balanced tree.

        Signs are carried: (+a) ⊕ (−b) = +(a − b), (−a) ⊕ (+b) = +(b − a), (−a) ⊕ (−b) = −(a + b);
        the leftmost term is positive, so the root is. Iterative: no recursion along the chain.
        """
        ops = ("add", "sub") if t.data in ("add", "sub") else ("mul",)
        terms: list[tuple[bool, Tree]] = []
        node = t
        while _chain(node, ops):
            terms.append((node.data == "sub", node.children[1]))
            node = node.children[0]
        if len(terms) + 1 < BALANCE_FROM:
            return None
        terms.append((False, node))
        terms.reverse()
        level: list[tuple[bool, Node]] = [(neg, self.expr(x)) for neg, x in terms]
        while len(level) > 1:
            nxt: list[tuple[bool, Node]] = []
            for k in range(0, len(level) - 1, 2):
                (na, a), (nb, b) = level[k], level[k + 1]
                span = a.span.merge(b.span)
                if ops == ("mul",):
                    nxt.append((False, self.op("mul", [a, b], span)))
                elif not na and not nb:
                    nxt.append((False, self.op("add", [a, b], span)))
                elif not na:
                    nxt.append((False, self.op("sub", [a, b], span)))
                elif not nb:
                    nxt.append((False, self.op("sub", [b, a], span)))
                else:
                    nxt.append((True, self.op("add", [a, b], span)))
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0][1]

    def op(self, atom: str, args: list[Node], span: Span, static: dict[str, Any] | None = None) -> Node:
        """Build a typed Op, folding it to a Const when every argument is constant."""
        spec = ATOMS[atom]
        static = static or {}
        lo, hi = spec.nargs
        if not lo <= len(args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise ShapeError(
                f"{atom}() takes {want} argument{'s' if hi != 1 else ''}, got {len(args)}",
                span,
                hint=spec.doc,
                code="E304",
            )
        typ = spec.infer([a.type for a in args], static, span)
        if atom == "neg" and args[0].type.kind == SPIN:
            typ = Type(SPIN, typ.shape, typ.sample, False, typ.vars)
        need = estimate_bytes(atom, args, typ)
        if need > self.budget:  # the message is built only when it is needed
            memory.check(
                need,
                f"'{spec.infix or atom}' on {', '.join(a.type.describe() for a in args)}",
                span,
                hint="densifying a large sparse matrix or broadcasting to a large shape; "
                "the limit is --memory-limit or OPTLANG_MEMORY_LIMIT",
            )
        if all(isinstance(a, Const) for a in args) and not any(a.type.sample for a in args):
            if atom == "div" and _has_zero(args[1].value):
                raise DataError(
                    "division by zero in a constant expression", span, hint="check the divisor", code="E607"
                )
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # NaN results are reported below
                    value = spec.np(*[a.value for a in args], **static)
            except (ArithmeticError, ValueError, TypeError, IndexError) as e:
                raise DataError(
                    f"this constant expression cannot be evaluated ({type(e).__name__}: {D.snippet(e, 60)})",
                    span,
                    hint="check the operands' kinds and shapes",
                    code="E607",
                ) from None
            if not sp.issparse(value):
                value = np.asarray(value, dtype=np.float64)
                if value.ndim == 0:
                    value = float(value)
            if not sp.issparse(value) and not np.all(np.isfinite(value)):
                raise DataError(
                    "this constant expression evaluates to NaN or infinity",
                    span,
                    hint="check the domain of log, sqrt and divisions",
                    code="E607",
                )
            return Const(span, Type(REAL, typ.shape, None, sp.issparse(value)), value)
        return Op(span, typ, atom, tuple(args), static)

    def _name(self, tok: Token) -> Node:
        name = str(tok)
        span = Span.of(tok)
        if name in self.poisoned:
            raise _Poison(name)
        if name in self.variables:
            v = self.variables[name]
            return Var(span, Type(v.kind, v.shape, None, False, frozenset({name})), name)
        if name in self.params:
            val = self.params[name]
            shape = () if np.ndim(val) == 0 and not sp.issparse(val) else tuple(val.shape)
            return Const(span, Type(REAL, shape, None, sp.issparse(val)), val, label=name)
        if name in self.lets:
            return self.lets[name]
        if name in self.tables:
            raise KindError(
                f"'{name}' is a data table, not a value",
                span,
                hint=f"use {name}.X (features), {name}.y (target), {name}.n or {name}.p",
                code="E405",
            )
        if name in self.graphs:
            raise KindError(
                f"'{name}' is a graph, not a value",
                span,
                hint=f"use adjacency({name}), laplacian({name}), cut({name}, s), {name}.n or {name}.m",
                code="E405",
            )
        if name in CONSTANTS:  # after every declaration: a model's own `pi` shadows the constant
            return Const(span, Type(REAL, ()), CONSTANTS[name][0], label=name)
        if name in ATOMS or name in GENERATORS or name in AMBIGUITY_FUNCS:
            raise KindError(f"'{name}' is a function; call it: {name}(...)", span, code="E405")
        raise NameResolutionError(
            f"unknown name '{name}'", span, hint=self._did_you_mean(name, self._known()), code="E201"
        )

    def _known(self) -> list[str]:
        return list(self.variables) + list(self.params) + list(self.lets) + list(self.tables) + list(self.graphs)

    @staticmethod
    def _did_you_mean(name: str, known: list[str]) -> str | None:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if close:
            return f"did you mean '{close[0]}'?"
        if 0 < len(known) <= 12:  # nothing close: say what there is
            return "defined here: " + ", ".join(sorted(known))
        return None

    def _attr(self, t: Tree, span: Span) -> Node:
        base_t, field_tok = t.children
        fname = str(field_tok)
        if isinstance(base_t, Tree) and base_t.data == "name":
            base = str(base_t.children[0])
            if base in self.poisoned:
                raise _Poison(base)
            if base in self.tables:
                tab = self.tables[base]
                if fname == "X":
                    return Const(span, Type(REAL, tab.X.shape, base), tab.X, label=f"{base}.X")
                if fname == "y":
                    if tab.y is None:
                        raise KindError(
                            f"data table '{base}' has no target",
                            span,
                            hint='load it with target = "column"',
                            code="E405",
                        )
                    return Const(span, Type(REAL, tab.y.shape, base), tab.y, label=f"{base}.y")
                if fname in ("n", "p"):
                    return Const(span, Type(), float(getattr(tab, fname)), label=f"{base}.{fname}")
                raise NameResolutionError(
                    f"data table '{base}' has no field '{fname}'",
                    Span.of(field_tok),
                    hint="fields: X, y, n, p",
                    code="E204",
                )
            if base in self.graphs:
                g = self.graphs[base]
                if fname in ("n", "m"):
                    return Const(span, Type(), float(getattr(g, fname)), label=f"{base}.{fname}")
                raise NameResolutionError(
                    f"graph '{base}' has no field '{fname}'", Span.of(field_tok), hint="fields: n, m", code="E204"
                )
        if fname == "T":
            return self.op("transpose", [self.expr(base_t)], span)
        raise NameResolutionError(
            f"no field '{fname}' here",
            Span.of(field_tok),
            hint="only .T (transpose) applies to expressions",
            code="E204",
        )

    def _subscript(self, t: Tree, span: Span) -> Node:
        base = self.expr(t.children[0])
        index: list[Any] = []
        for ix in t.children[1:]:
            if isinstance(ix, Tree) and ix.data == "slice":
                lo = None if ix.children[0] is None else self._const_int(ix.children[0], "an index")
                hi = None if ix.children[1] is None else self._const_int(ix.children[1], "an index")
                index.append(slice(lo, hi))
            else:
                index.append(self._const_int(ix, "an index"))
        return self.op("index", [base], span, {"index": tuple(index)})

    def _call(self, t: Tree, span: Span) -> Node:
        fname = str(t.children[0])
        if fname in ("adjacency", "laplacian"):
            pos_t = [a for a in t.children[1:] if a is not None]
            if len(pos_t) != 1:
                raise ShapeError(f"{fname}(G) takes one graph", span, code="E304")
            g = self.graphs[self._graph_ref(pos_t[0])]
            M = g.W if fname == "adjacency" else g.laplacian()
            return Const(span, Type(REAL, M.shape, None, True), M, label=f"{fname}({self._text(pos_t[0])})")
        if fname == "cut":
            pos_t = [a for a in t.children[1:] if a is not None]
            if len(pos_t) != 2:
                raise ShapeError("cut(G, s) takes a graph and a spin vector", span, code="E304")
            g = self.graphs[self._graph_ref(pos_t[0])]
            W = Const(
                Span.of(pos_t[0].meta),
                Type(REAL, g.W.shape, None, True),
                g.W,
                label=f"adjacency({self._text(pos_t[0])})",
            )
            return self.op("cut", [W, self.expr(pos_t[1])], span)
        if fname in GENERATORS or fname in AMBIGUITY_FUNCS:
            if fname in AMBIGUITY_FUNCS:
                raise ModelError(f"{fname}(...) is an ambiguity set; it belongs after `within`", span, code="E508")
            value = self._compile_time(t, "param")
            if isinstance(value, (D.Graph, D.DataTable)):
                raise KindError(f"{fname}() makes a graph or table; declare it with `graph`/`data`", span, code="E406")
            shape = () if np.ndim(value) == 0 and not sp.issparse(value) else tuple(value.shape)
            return Const(span, Type(REAL, shape, None, sp.issparse(value)), value)
        if fname not in ATOMS or not ATOMS[fname].user:
            if fname in self._known():
                raise KindError(f"'{fname}' is not a function", span, code="E405")
            from optlang.ir.atoms import user_functions, written_elsewhere

            raise NameResolutionError(
                f"unknown function '{fname}'",
                Span.of(t.children[0]),
                hint=written_elsewhere(fname) or self._did_you_mean(fname, user_functions()),
                code="E205",
            )
        args: list[Node] = []
        static: dict[str, Any] = {}
        for a in t.children[1:]:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                key = str(a.children[0])
                spec = ATOMS.get(fname)
                if key != "axis" or spec is None or spec.infer is not reduce_axis:
                    raise ModelError(f"{fname}() has no argument '{key}'", Span.of(a.meta), code="E512")
                static[key] = self._const_int(a.children[1], "an axis")
            else:
                args.append(self.expr(a))
        return self.op(fname, args, span, static)

    # ------------------------------------------------------------------ compile-time evaluation
    def _compile_time(self, t: Tree, kind: str) -> Any:
        """Evaluate a param/data/graph right-hand side: generators, load(), constant expressions."""
        span = Span.of(t.meta)
        if isinstance(t, Tree) and t.data == "call":
            fname = str(t.children[0])
            if fname == "load":
                pos, kw = self._call_args(t)
                if len(pos) != 1 or not isinstance(pos[0], str):
                    raise DataError('load() takes a path: load("file.csv")', span, code="E604")
                value = D.load(pos[0], self.source.base_dir, span, kind=kind, roots=self.roots, **kw)
                if kind == "param" and isinstance(value, D.DataTable):
                    return value.X
                return value
            if fname in ("erdos_renyi", "random_regular", "torus"):
                pos, kw = self._call_args(t)
                allowed = {"seed", "weights"}
                for k in kw:
                    if k not in allowed:
                        raise DataError(
                            f"{fname}() has no argument '{k}'", span, hint="accepted: seed, weights", code="E606"
                        )
                if len(pos) != 2:
                    raise DataError(f"{GENERATORS[fname]}", span, code="E606")
                seed = _opt_int(kw.get("seed"), span)
                weights = kw.get("weights", "unit")
                if not isinstance(weights, str):
                    raise DataError(
                        "weights = must be a string", span, hint='"unit", "signed" or "uniform"', code="E606"
                    )
                n = _int(pos[0], span, f"the number of nodes of {fname}()", 1, D.MAX_NODES)
                if fname == "erdos_renyi":
                    return D.erdos_renyi(
                        n, real_number(pos[1], span, "the edge probability p", 0.0, 1.0), seed, weights, span
                    )
                if fname == "random_regular":
                    d = _int(pos[1], span, "the degree of random_regular()", 0, D.MAX_NODES)
                    return D.random_regular(n, d, seed, weights, span)
                cols = _int(pos[1], span, "the columns of torus()", 1, D.MAX_NODES)
                return D.torus(n, cols, seed, weights, span)
            if fname in ("zeros", "ones", "eye", "randn", "rand"):
                pos, kw = self._call_args(t)
                for k in kw:
                    if k != "seed":
                        raise DataError(f"{fname}() has no argument '{k}'", span, hint="accepted: seed", code="E606")
                if fname in ("zeros", "ones", "eye") and "seed" in kw:
                    raise DataError(f"{fname}() takes no seed", span, code="E606")
                dims = [_int(p, span, f"a dimension of {fname}()", 0, MAX_DIM) for p in pos]
                return D.dense_generator(fname, dims, _opt_int(kw.get("seed"), span), span)
        if kind in ("data", "graph"):
            raise KindError(f"`{kind}` needs load(...) or a generator", span, code="E406")
        node = self.expr(t)
        if not isinstance(node, Const):
            raise KindError(
                "a param must be a constant; it cannot depend on variables",
                span,
                hint="use `let` for expressions of variables",
                code="E408",
            )
        return node.value

    def _call_args(
        self, t: Tree, keep_nodes: tuple[str, ...] = (), allow_auto: bool = False
    ) -> tuple[list[Any], dict[str, Any]]:
        """Constant positional and keyword arguments of a call (numbers, strings, bare names)."""
        pos: list[Any] = []
        kw: dict[str, Any] = {}
        for a in t.children[1:]:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                key = str(a.children[0])
                if key in kw:
                    raise ModelError(f"argument '{key}' is given twice", Span.of(a.meta), code="E512")
                auto = self._auto(a)
                if auto is not None and not allow_auto:
                    raise ModelError(
                        "`auto` is a value for ambiguity parameters and solver options only",
                        Span.of(a.meta),
                        hint="give a number here",
                        code="E513",
                    )
                if auto is not None:
                    kw[key] = auto
                    continue
                kw[key] = self.expr(a.children[1]) if key in keep_nodes else self._static(a.children[1])
            else:
                pos.append(self._static(a))
        return pos, kw

    def _auto(self, t: Tree) -> Auto | None:
        """`KEY = auto` or `KEY = auto in [c1, c2, ...]` (an option or keyword argument), else None."""
        val = t.children[1]
        is_auto = isinstance(val, Tree) and val.data == "name" and str(val.children[0]) == "auto"
        is_auto = is_auto and "auto" not in self.params
        if len(t.children) < 3:
            return Auto() if is_auto else None
        span = Span.of(t.children[2].meta)
        if not is_auto:
            raise ModelError(
                "`in [...]` after a value lists the candidates of `auto` only",
                span,
                hint="write KEY = auto in [c1, c2, ...]",
                code="E513",
            )
        c = np.asarray(self._const(t.children[2], "the candidates of auto"), dtype=np.float64)
        if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)):
            raise ModelError(
                "the candidates of auto are a non-empty list of numbers",
                span,
                hint="auto in [0.01, 0.1, 1]",
                code="E513",
            )
        return Auto(tuple(float(v) for v in c))

    def _static(self, t: Tree) -> Any:
        if isinstance(t, Tree) and t.data == "string":
            return _unquote(t.children[0], Span.of(t.meta))
        if isinstance(t, Tree) and t.data == "name" and str(t.children[0]) in ("chi2", "kl"):
            return str(t.children[0])
        node = self.expr(t)
        if not isinstance(node, Const):
            raise KindError("this argument must be a constant", Span.of(t.meta), code="E408")
        return node.value

    def _const(self, t: Tree, what: str) -> Any:
        node = self.expr(t)
        if not isinstance(node, Const):
            raise KindError(f"{what} must be a constant", Span.of(t.meta), code="E408")
        return node.value

    def _const_float(self, t: Tree, what: str) -> float:
        v = self._const(t, what)
        if sp.issparse(v) or np.ndim(v) != 0:
            raise ShapeError(f"{what} must be a scalar", Span.of(t.meta), code="E301")
        return float(v)

    def _const_int(self, t: Tree, what: str) -> int:
        v = self._const_float(t, what)
        if not float(v).is_integer():
            raise ShapeError(f"{what} must be an integer, got {v:g}", Span.of(t.meta), code="E301")
        if abs(v) > MAX_DIM:
            raise ShapeError(f"{what} of {v:g} is out of any range", Span.of(t.meta), code="E301")
        return int(v)

    def _scalar(self, node: Node, what: str) -> Node:
        if node.type.shape != ():
            raise ShapeError(
                f"{what} must be a scalar, got {node.type.describe()}",
                node.span,
                hint="reduce it with sum, mean, norm2, ...",
                code="E303",
            )
        return node

    def _maxcut_form(self, t: Any) -> str | None:
        """The graph name when `t` is exactly `cut(G, s)` over a spin vector `s` of G.n entries, else None."""
        if not (isinstance(t, Tree) and t.data == "call" and str(t.children[0]) == "cut"):
            return None
        args = [a for a in t.children[1:] if a is not None]
        if len(args) != 2 or not all(isinstance(a, Tree) and a.data == "name" for a in args):
            return None
        g, v = (str(a.children[0]) for a in args)
        var = self.variables.get(v)
        if v != "s" or g not in self.graphs or var is None or var.kind != "spin":
            return None
        return g if tuple(var.shape) == (self.graphs[g].n,) else None

    def _graph_ref(self, t: Tree) -> str:
        if isinstance(t, Tree) and t.data == "name":
            name = str(t.children[0])
            if name in self.poisoned:
                raise _Poison(name)
            if name in self.graphs:
                return name
            if name in self._known():
                raise KindError(
                    f"'{name}' is not a graph",
                    Span.of(t.meta),
                    hint="declare one with graph G = load(...) or a generator",
                    code="E405",
                )
            raise NameResolutionError(
                f"unknown graph '{name}'",
                Span.of(t.meta),
                hint=self._did_you_mean(name, list(self.graphs)),
                code="E201",
            )
        raise KindError("a graph name is expected here", Span.of(t.meta), code="E405")

    def _names(self, t: Tree) -> tuple[str, ...]:
        out = []
        for tok in t.children:
            name = str(tok)
            if name in self.poisoned:
                raise _Poison(name)
            if name not in self.variables:
                raise NameResolutionError(
                    f"'{name}' is not a variable",
                    Span.of(tok),
                    hint=self._did_you_mean(name, list(self.variables)),
                    code="E206",
                )
            out.append(name)
        return tuple(out)

    def _text(self, t: Tree) -> str:
        m = t.meta
        if getattr(m, "empty", True):
            return ""
        return self.source.text[m.start_pos : m.end_pos]


def _number(tok: Token) -> float:
    return float(str(tok))


def _has_point(t: Tree) -> bool:
    return isinstance(t, Tree) and t.data == "number" and any(c in str(t.children[0]) for c in ".eE")


_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


def _unquote(tok: Token, span: Span | None = None) -> str:
    """A string literal's text, by the grammar's escapes: \\\\ \\" \\n \\t \\r (anything else is an error).

    Never `unicode_escape` on user text: non-ASCII characters are kept as written.
    """
    s = str(tok)[1:-1]
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt not in _ESCAPES:
                raise ParseError(
                    f"unknown escape '\\{nxt}' in a string",
                    span,
                    hint='strings know \\\\, \\", \\n, \\t and \\r; write paths with / (or \\\\)',
                    code="E110",
                )
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _describe(v: Any) -> str:
    if isinstance(v, str):
        return f"the string '{D.snippet(v)}'"
    if sp.issparse(v):
        return f"a sparse matrix of shape {v.shape}"
    if np.ndim(v) != 0:
        return f"an array of shape {np.shape(v)}"
    return f"{float(v):g}"


def real_number(
    v: Any,
    span: Span,
    what: str,
    lo: float = -np.inf,
    hi: float = np.inf,
    err: type[OptlangError] = DataError,
    code: str = "E606",
) -> float:
    """A finite scalar number in [lo, hi] (strings, arrays, booleans and NaN/inf are refused)."""
    if isinstance(v, (str, bool)) or v is None or sp.issparse(v) or np.ndim(v) != 0:
        raise err(f"{what} must be a number, got {_describe(v)}", span, code=code)
    x = float(v)
    if not np.isfinite(x) or not lo <= x <= hi:
        rng = f"at least {lo:g}" if hi == np.inf else f"between {lo:g} and {hi:g}"
        raise err(f"{what} must be a finite number {rng}, got {x:g}", span, code=code)
    return x


def _int(
    v: Any,
    span: Span,
    what: str = "this argument",
    lo: float = 0,
    hi: float = MAX_DIM,
    err: type[OptlangError] = DataError,
    code: str = "E606",
) -> int:
    """A whole number in [lo, hi], checked before anything is sized by it."""
    x = real_number(v, span, what, -np.inf, np.inf, err, code)
    if not x.is_integer():
        raise err(f"{what} must be a whole number, got {x:g}", span, code=code)
    if not lo <= x <= hi:
        raise err(f"{what} must be between {_fmt(lo)} and {_fmt(hi)}, got {_fmt(x)}", span, code=code)
    return int(x)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _opt_int(v: Any, span: Span) -> int | None:
    return None if v is None else _int(v, span, "the seed", 0, 2**63 - 1)


def _has_zero(v: Any) -> bool:
    if sp.issparse(v):
        return v.nnz < v.shape[0] * v.shape[1] or bool(np.any(v.data == 0))
    return bool(np.any(np.asarray(v) == 0))


def _nnz(v: Any) -> float:
    return float(v.nnz) if sp.issparse(v) else memory.dense_bytes(np.shape(v), 1.0)


def estimate_bytes(atom: str, args: list[Node], typ: Type) -> float:
    """Bytes an Op allocates: its result, plus dense copies of sparse operands an atom densifies.

    Dense results count 8 bytes per element (broadcasts included: the result shape is the broadcast
    one). Sparse results count the operands' stored entries; sparse @ sparse counts the exact upper
    bound Σ_k nnz(A[:, k]) · nnz(B[k, :]).
    """
    vals = [a.value if isinstance(a, Const) else None for a in args]
    sparse_in = [v for v in vals if v is not None and sp.issparse(v)]
    if atom == "matmul" and len(sparse_in) == 2:
        A, B = (sp.csc_matrix(vals[0]), sp.csr_matrix(vals[1]))
        prod = float(np.dot(np.diff(A.indptr).astype(np.float64), np.diff(B.indptr).astype(np.float64)))
        return 24.0 * prod + 8.0 * typ.shape[0]
    if typ.sparse:
        return 24.0 * sum(_nnz(v) for v in sparse_in) + 8.0 * (typ.shape[0] if typ.shape else 1)
    out = memory.dense_bytes(typ.shape)
    if not ATOMS[atom].sparse_args:  # a dense result from sparse operands: their _dense() copies
        out += sum(memory.dense_bytes(v.shape) for v in sparse_in)
    return out


__all__ = ["lower_source", "KEYWORDS"]
