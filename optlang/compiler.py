"""Whole-model checks, classification into a Form, and compilation into a backend Problem.

`classify(ir)` collects every structural error (mixed kinds, cubic spin terms, argmin on other
variables, ...) and returns the Form the planner reads. `compile_problem(ir, form)` builds the
lowered problem (IsingProblem or a continuous problem of torch functions) together with the
inverse map from the backend's solution to the user's variables — the invertible rewrites
(maximize → minimize, binary → spin, maxcut → ising) live here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.analysis import Form, VarInfo
from optlang.errors import KindError, ModelError, ModelErrors, OptlangError
from optlang.ir.atoms import ATOMS, ising_atoms
from optlang.ir.evaluate import constraint_size, cvxpy_ok, sample_size, torch_function, torch_functions
from optlang.ir.kinks import coordinate_kinks, moving_kinks
from optlang.ir.model import ConstraintDecl, ModelIR, Objective
from optlang.ir.nodes import Const, Node, Op, Var
from optlang.ir.quadratic import QuadraticLowering
from optlang.ir.terms import summands, weighted_sum
from optlang.ir.types import REAL, SPIN
from optlang.problem import (
    BilevelProblem,
    Constraint,
    Domain,
    DROProblem,
    GeneralBilevelProblem,
    IsingProblem,
    LinearResidual,
    MinimaxProblem,
    MovingKinkFn,
    MultiObjectiveProblem,
    Problem,
    QuadraticSplit,
    SmoothProblem,
    TorchFunction,
    Variable,
)


@dataclass(frozen=True)
class Compiled:
    """A backend-ready problem and how to map its solution back to user variables."""

    problem: Problem
    to_user: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    sign: float = 1.0  # user objective = sign * backend objective (maximize → -1)
    offset: float = 0.0
    rescaled: bool = False  # some variable is solved on a unit box (per-element bounds; `_unit_boxes`)


# ---------------------------------------------------------------------------- degree
def degree(node: Node) -> float:
    """Polynomial degree in the decision variables (inf when not a polynomial); each atom's rule is in its
    AtomSpec (ir/atoms.py)."""
    if isinstance(node, Const):
        return 0
    if isinstance(node, Var):
        return 1
    assert isinstance(node, Op)
    consts = [a.value if isinstance(a, Const) else None for a in node.args]
    return ATOMS[node.atom].degree([degree(a) for a in node.args], consts)


def _first_high_degree(node: Node, limit: int) -> Node:
    """The smallest subexpression whose degree exceeds `limit` (for the error's caret)."""
    for child in node.children():
        if degree(child) > limit:
            return _first_high_degree(child, limit)
    return node


# ---------------------------------------------------------------------------- classify
def classify(ir: ModelIR) -> Form:
    """Check the model as a whole and say which kind of problem it is."""
    errors: list[OptlangError] = []
    obj = ir.objective
    discrete = {n for n, v in ir.variables.items() if v.kind != REAL}
    exprs: list[Node] = []
    if obj.expr is not None:
        exprs.append(obj.expr)
    exprs += [e for _, e in obj.entries]
    if obj.prefer is not None:
        exprs.append(obj.prefer)
    used: set[str] = set()
    for e in exprs:
        used |= e.type.vars
    for c in ir.constraints:
        used |= c.expr.type.vars | set(c.names)

    argmins = [c for c in ir.constraints if c.sense == "argmin"]
    general = tuple(c.text or c.sense for c in ir.constraints if c.sense != "argmin")
    kind = ""
    n_spins = nnz = 0
    has_field = False
    sense = "maximize" if obj.form in ("maximize", "maxcut") else "minimize"
    deg = None

    if obj.form == "maxcut":
        kind = "maxcut"
        g = ir.graphs[obj.graph or ""]
        n_spins, nnz = g.n, g.W.nnz
    elif obj.form in ("minimize", "maximize") and (obj.expr is not None and obj.expr.type.vars & discrete):
        real_used = obj.expr.type.vars - discrete
        if real_used:
            errors.append(
                KindError(
                    f"the objective mixes spin/binary variables with real ones ({', '.join(sorted(real_used))})",
                    obj.expr.span,
                    hint="an Ising/QUBO objective uses spin or binary variables only",
                    code="E403",
                )
            )
        deg = degree(obj.expr)
        if math.isinf(deg):
            bad = _first_high_degree(obj.expr, 2)
            atom = getattr(bad, "atom", None) or "this expression"
            what = ATOMS[atom].infix or atom if atom in ATOMS else atom
            errors.append(
                KindError(
                    f"'{what}' makes the objective non-polynomial in the spin/binary variables",
                    bad.span,
                    hint="Ising and QUBO objectives are polynomials of degree at most 2 (for a spin, abs(s) = 1 "
                    f"and s^2 = 1): use {ising_atoms()}",
                    code="E402",
                )
            )
        elif deg > 2:
            bad = _first_high_degree(obj.expr, 2)
            errors.append(
                KindError(
                    f"the objective has degree {'>2' if math.isinf(deg) else int(deg)} in the spin/binary variables",
                    bad.span,
                    hint="Ising and QUBO objectives are polynomials of degree at most 2",
                    code="E401",
                )
            )
        kind = "ising"
        n_spins = sum(int(np.prod(ir.variables[v].shape)) if ir.variables[v].shape else 1 for v in discrete)
    else:
        for e in exprs + [c.expr for c in ir.constraints]:
            bad_vars = e.type.vars & discrete
            if bad_vars:
                errors.append(
                    KindError(
                        f"spin/binary variable{'s' if len(bad_vars) > 1 else ''} {', '.join(sorted(bad_vars))} "
                        "can only appear in an Ising/QUBO or Max-Cut objective",
                        e.span,
                        code="E404",
                    )
                )
                break
        if obj.form == "minimax":
            kind = "minimax"
        elif obj.form == "robust":
            kind = "dro"
            if _no_region_targets(ir, obj):
                errors.append(
                    ModelError(
                        "target_conditional needs one target per sample to define its regions, and this loss "
                        "has none: it uses no data table loaded with a target, and no `by =` was given",
                        obj.span,
                        hint='load the data with data D = load("file.csv", target = "y") and use D.y in the '
                        "loss, or give the targets: target_conditional(chi2, radius = r, by = y)",
                        code="E508",
                    )
                )
        elif obj.form == "multi":
            kind = "multiobjective"
        elif argmins:
            kind = "bilevel"
            if obj.form != "minimize":
                errors.append(
                    ModelError("a bilevel model minimizes its upper level: use `minimize`", obj.span, code="E513")
                )
            upper_vars = obj.expr.type.vars if obj.expr is not None else frozenset()
            for c in argmins:
                if c.over or set(c.names) != set(upper_vars) or not c.expr.type.vars <= set(c.names):
                    kind = "general_bilevel"
                    errors += _general_bilevel_errors(c, used)
            if len(argmins) > 1:
                errors.append(ModelError("only one `argmin` constraint is supported", argmins[1].span, code="E513"))
        else:
            kind = "smooth"
    if argmins and kind not in ("bilevel", "general_bilevel"):
        errors.append(
            ModelError(
                f"an `argmin` constraint needs a plain `minimize` objective, not a {kind} one",
                argmins[0].span,
                code="E513",
            )
        )
    if obj.form == "minimax":
        others = used - set(obj.over)
        if not others:
            errors.append(ModelError("every variable is maximized: nothing is left to minimize", obj.span, code="E514"))
    if errors:
        for e in errors:
            e.with_source(ir.source)
        raise errors[0] if len(errors) == 1 else ModelErrors(errors)

    roles = {}
    if obj.form == "minimax":
        roles = {n: "max" for n in obj.over}
    if kind == "general_bilevel":
        roles = {n: "lower" for n in lower_level_names(argmins[0])}
    variables = tuple(
        VarInfo(v.name, v.kind, v.shape, v.domain.kind, roles.get(v.name, "min"))
        for v in ir.variables.values()
        if v.name in used or kind == "maxcut"
    )
    if kind == "maxcut":
        variables = (VarInfo("s", SPIN, (n_spins,)),)
    n_scalar = sum(int(np.prod(v.shape)) if v.shape else 1 for v in variables)
    n_samples = None
    for e in exprs:
        n_samples = n_samples or sample_size(e)
    amb = obj.ambiguity
    linear = linear_residual(obj.expr) if kind == "dro" and obj.expr is not None else None
    if (
        kind == "dro"
        and amb is not None
        and amb.kind == "wasserstein"
        and linear is None
        and obj.expr is not None
        and linear_residual(obj.expr, samples=False) is not None
    ):
        err = ModelError(
            "Wasserstein DRO moves the samples of a `data` table, but X and y here are plain params",
            obj.expr.span,
            hint='declare the samples as a table: data D = load("train.csv", target = "y"), '
            "then write the loss with D.X and D.y",
            code="E515",
        )
        raise err.with_source(ir.source)
    per_element = [v for n, v in ir.variables.items() if n in used and v.domain.elementwise]
    if per_element and kind not in ("smooth", "multiobjective", "minimax", "bilevel"):
        raise ModelError(
            f"per-element bounds on '{per_element[0].name}' are supported in smooth, multi-objective, minimax "
            f"and simple bilevel models, not in a {kind} model",
            per_element[0].span,
            hint="give one bound for every element, or bound the elements by constraints",
            code="E516",
        ).with_source(ir.source)
    cvx = all(cvxpy_ok(e) for e in exprs) and all(cvxpy_ok(c.expr) for c in ir.constraints)
    dcp_test = None
    if kind == "smooth" and general and cvx:
        from functools import partial

        from optlang.convexity import smooth_is_dcp

        dcp_test = partial(smooth_is_dcp, ir, real_variables(ir, sorted(used)))
    return Form(
        kind=kind,
        sense=sense,
        variables=variables,
        n_scalar=n_scalar,
        constraints=general,
        degree=None if deg is None else int(deg),
        n_spins=n_spins,
        nnz=nnz,
        has_field=has_field,
        n_samples=n_samples,
        ambiguity=amb.kind if amb else None,
        ambiguity_base=amb.base if amb and amb.kind == "target_conditional" else None,
        linear_residual=linear is not None,
        cvxpy_ok=cvx,
        dcp_test=dcp_test,
        n_objectives=max(1, len(obj.entries)),
        has_preference=obj.prefer is not None,
        matrix_vars=any(len(v.shape) == 2 for v in variables),
        auto=tuple(sorted(amb.auto)) if amb else (),
    )


# ---------------------------------------------------------------------------- general bilevel
def quadratic_split(expr: Node, follower: set[str]) -> QuadraticSplit | None:
    """The summands of `expr` that are polynomials of degree ≤ 2 in the follower's variables alone
    (general bilevel backends precompute them as c + bᵀy + ½yᵀQy), and the rest; None if there are none."""
    terms = summands(expr)
    quad = [(c, t) for c, t in terms if t.type.vars and t.type.vars <= follower and degree(t) <= 2]
    if not quad:
        return None
    rest = [(c, t) for c, t in terms if not (t.type.vars and t.type.vars <= follower and degree(t) <= 2)]
    size = sum(
        int(n.value.nnz if sp.issparse(n.value) else np.size(n.value))
        for _, t in quad
        for n in t.walk()
        if isinstance(n, Const)
    )
    return QuadraticSplit(weighted_sum(quad), weighted_sum(rest) if rest else None, size)


def lower_level_names(c: Any) -> tuple[str, ...]:
    """The follower's variables of an argmin constraint: `over` when given, else the constrained names."""
    return tuple(c.over) if c.over else tuple(c.names)


def _general_bilevel_errors(c: Any, used: set[str]) -> list[OptlangError]:
    """Structural errors of `y in argmin over y: g(x, y)`: the names must be lower-level variables,
    and some variable must be left to the upper level."""
    lower = set(lower_level_names(c))
    out: list[OptlangError] = []
    if not set(c.names) <= lower:
        extra = ", ".join(sorted(set(c.names) - lower))
        out.append(
            ModelError(
                f"{extra} is constrained to the argmin but is not among the variables after `over`",
                c.span,
                hint="write `y in argmin over y: g(x, y)` with the same names on both sides",
                code="E513",
            )
        )
    elif not used - lower:
        out.append(
            ModelError(
                "every variable is a lower-level variable: nothing is left to the upper level",
                c.span,
                hint="for a simple bilevel problem write `x in argmin g(x)` without `over`",
                code="E513",
            )
        )
    return out


# ---------------------------------------------------------------------------- linear residual
def linear_residual(loss: Node, samples: bool = True) -> tuple[Any, ...] | None:
    """Match ℓ = φ(±(X @ w + b − y)) with φ square/abs; returns (X, y, w, b, φ) or None.

    samples=False also accepts X and y that are not sample-indexed (plain params), to explain a refusal."""
    if not isinstance(loss, Op):
        return None
    if (
        loss.atom == "pow"
        and isinstance(loss.args[1], Const)
        and np.ndim(loss.args[1].value) == 0
        and float(loss.args[1].value) == 2.0
    ):
        phi, inner = "square", loss.args[0]
    elif loss.atom in ("square", "abs"):
        phi, inner = loss.atom, loss.args[0]
    else:
        return None
    terms: list[tuple[float, Node]] = []

    def flatten(n: Node, sign: float) -> bool:
        if isinstance(n, Op) and n.atom in ("add", "sub"):
            return flatten(n.args[0], sign) and flatten(n.args[1], sign if n.atom == "add" else -sign)
        if isinstance(n, Op) and n.atom == "neg":
            return flatten(n.args[0], -sign)
        terms.append((sign, n))
        return True

    flatten(inner, 1.0)
    X = y = w = b = None
    signs: dict[str, float] = {}
    for s, t in terms:
        if (
            isinstance(t, Op)
            and t.atom == "matmul"
            and isinstance(t.args[0], Const)
            and (t.args[0].type.sample or not samples)
            and len(t.args[0].type.shape) == 2
            and isinstance(t.args[1], Var)
            and len(t.args[1].type.shape) == 1
            and X is None
        ):
            X, w, signs["w"] = t.args[0].value, t.args[1].name, s
        elif isinstance(t, Var) and t.type.shape == () and b is None:
            b, signs["b"] = t.name, s
        elif isinstance(t, Const) and (t.type.sample or not samples) and len(t.type.shape) == 1 and y is None:
            y, signs["y"] = t.value, s
        else:
            return None
    if X is None or y is None or signs["y"] != -signs["w"] or (b is not None and signs["b"] != signs["w"]):
        return None
    return (X, y, w, b, phi)


# ---------------------------------------------------------------------------- compile
def real_variables(ir: ModelIR, names: list[str] | tuple[str, ...] | None = None) -> tuple[Variable, ...]:
    out = []
    for v in ir.variables.values():
        if v.kind == REAL and (names is None or v.name in names):
            out.append(Variable(v.name, v.shape, v.domain))
    return tuple(out)


def _general(ir: ModelIR) -> list[ConstraintDecl]:
    """The `<=` / `==` constraints of the IR (not `argmin`)."""
    return [c for c in ir.constraints if c.sense in ("<=", "==")]


def _general_constraints(ir: ModelIR) -> tuple[Constraint, ...]:
    """The `<=` / `==` constraints (not `argmin`) as torch functions of the variables."""
    return tuple(
        Constraint(torch_function(c.expr), c.sense, c.text, constraint_size(c.expr))  # type: ignore[arg-type]
        for c in _general(ir)
    )


def _identity(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}


UnitMaps = dict[str, tuple[np.ndarray, np.ndarray]]  # variable -> (offset, scale): x = offset + scale ⊙ z


def _unit_boxes(variables: tuple[Variable, ...]) -> tuple[tuple[Variable, ...], UnitMaps]:
    """Variables with per-element boxes mapped to scalar boxes: x = lo + (hi − lo) ⊙ z with z in [0, 1]
    (x = lo + z, z ≥ 0 or x = hi + z, z ≤ 0 when one side is open). Backends clamp, scale steps and
    project with one bound per variable; in z the box is one, and each element's step is relative to
    its own width, as an evolutionary method's operators are."""
    out, maps = [], {}
    for v in variables:
        d = v.domain
        if not d.elementwise:
            out.append(v)
            continue
        lo = np.broadcast_to(np.asarray(d.lower, dtype=np.float64), v.shape)
        hi = np.broadcast_to(np.asarray(d.upper, dtype=np.float64), v.shape)
        if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
            maps[v.name], dom = (lo.copy(), hi - lo), Domain("box", 0.0, 1.0)
        elif np.all(np.isfinite(lo)):
            maps[v.name], dom = (lo.copy(), np.ones(v.shape)), Domain("box", 0.0, np.inf)
        else:
            maps[v.name], dom = (hi.copy(), np.ones(v.shape)), Domain("box", -np.inf, 0.0)
        out.append(Variable(v.name, v.shape, dom, v.init))
    return tuple(out), maps


def _to_user_map(maps: UnitMaps) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    def to_user(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = _identity(values)
        for name, (off, scale) in maps.items():
            if name in out:
                out[name] = off + scale * out[name].reshape(off.shape)
        return out

    return to_user


def _in_units(f: TorchFunction, maps: UnitMaps) -> TorchFunction:
    """f of the user's variables as a function of the unit-box ones (`_unit_boxes`)."""
    if not maps:
        return f

    def build(device: Any, dtype: Any) -> Callable[..., Any]:
        import torch

        inner = f.compile(device, dtype)
        coef = {
            n: (torch.as_tensor(o, dtype=dtype, device=device), torch.as_tensor(s, dtype=dtype, device=device))
            for n, (o, s) in maps.items()
        }

        def fn(values: Mapping[str, Any], batch: Any = None) -> Any:
            vals = dict(values)
            for n, (o, s) in coef.items():
                if n in vals:
                    vals[n] = o + s * vals[n]
            return inner(vals, batch)

        return fn

    cvx = None
    if f.cvxpy is not None:
        outer = f.cvxpy

        def cvx(var_map: Mapping[str, Any]) -> Any:
            vm = dict(var_map)
            for n, (o, s) in maps.items():
                if n in vm:
                    vm[n] = o + _cp_multiply(s, vm[n])
            return outer(vm)

    return TorchFunction(build, n_samples=f.n_samples, per_sample=f.per_sample, cvxpy=cvx, source=f.source)


def _cp_multiply(scale: np.ndarray, x: Any) -> Any:
    """scale ⊙ x for a cvxpy expression (elementwise)."""
    import cvxpy as cp

    return cp.multiply(scale, x)


def _constraints_in_units(cons: tuple[Constraint, ...], maps: UnitMaps) -> tuple[Constraint, ...]:
    if not maps:
        return cons
    return tuple(
        Constraint(_in_units(c.fn, maps), c.sense, c.text, _in_units(c.size, maps) if c.size is not None else None)
        for c in cons
    )


def _kinks_in_units(kinks: Any, maps: UnitMaps) -> list[Any]:
    """Coordinate kinks at x = value moved to z = (value − offset) / scale (none where an element is fixed)."""
    out = []
    for k in kinks:
        if k.name not in maps:
            out.append((k.name, k.index, k.value))
            continue
        off, scale = (a.ravel()[k.index] for a in maps[k.name])
        if scale != 0:
            out.append((k.name, k.index, float((k.value - off) / scale)))
    return out


def _moving_kinks_in_units(kinks: Any, maps: UnitMaps) -> tuple[MovingKinkFn, ...]:
    """Moving kinks with their arguments as functions of z = (x − offset) / scale: a slope a in x is a · scale
    in z (0, no kink, where an element is fixed)."""
    out = []
    for k in kinks:
        coef = np.asarray(k.coef, dtype=np.float64)
        if k.name in maps:
            coef = coef * maps[k.name][1].ravel()[k.index]
        if np.any(coef != 0):
            fn = _in_units(torch_function(k.arg), maps)
            out.append(MovingKinkFn(fn, k.name, tuple(int(i) for i in k.index), tuple(float(c) for c in coef), k.exact))
    return tuple(out)


def _negated(f: TorchFunction) -> TorchFunction:
    def build(device: Any, dtype: Any) -> Callable[..., Any]:
        inner = f.compile(device, dtype)
        return lambda values, batch=None: -inner(values, batch)

    cvx = (lambda var_map: -f.cvxpy(var_map)) if f.cvxpy is not None else None  # type: ignore[misc]  # a conditional lambda
    return TorchFunction(build, n_samples=f.n_samples, cvxpy=cvx, source=f"-({f.source})")


def _no_region_targets(ir: ModelIR, obj: Objective) -> bool:
    """A target_conditional objective whose regions have no targets: no `by =`, no data table with a
    target in the loss, and no linear residual whose y could serve (backends/dro/report.region_targets)."""
    amb = obj.ambiguity
    if amb is None or amb.kind != "target_conditional" or obj.ambiguity_by is not None or obj.expr is None:
        return False
    table = obj.expr.type.sample
    if table and ir.tables[table].y is not None:
        return False
    return linear_residual(obj.expr) is None


def compile_problem(ir: ModelIR, form: Form) -> Compiled:
    """Build the backend problem for a classified model."""
    obj = ir.objective
    kind = form.kind
    if kind == "maxcut":
        g = ir.graphs[obj.graph or ""]
        return Compiled(IsingProblem.from_maxcut(g.W), lambda v: {"s": np.asarray(v["s"], dtype=np.float64)}, -1.0)
    if kind == "ising":
        assert obj.expr is not None
        disc = [v for v in ir.variables.values() if v.kind != REAL and v.name in obj.expr.type.vars]
        q = QuadraticLowering(disc)
        problem = q.ising(obj.expr, negate=obj.form == "maximize")
        return Compiled(problem, lambda v: q.split(np.asarray(v["s"])), -1.0 if obj.form == "maximize" else 1.0)
    used = {v.name for v in form.variables}
    variables = tuple(v for v in real_variables(ir) if v.name in used)
    variables, maps = _unit_boxes(variables)
    to_user = _to_user_map(maps) if maps else _identity
    if kind == "smooth":
        assert obj.expr is not None
        f = _in_units(torch_function(obj.expr), maps)
        if obj.form == "maximize":
            f = _negated(f)
        sign = -1.0 if obj.form == "maximize" else 1.0
        cons = _constraints_in_units(_general_constraints(ir), maps)
        return Compiled(SmoothProblem(variables, f, cons), to_user, sign, rescaled=bool(maps))
    if kind == "bilevel":
        assert obj.expr is not None
        lower = next(c for c in ir.constraints if c.sense == "argmin")
        upper_f, lower_f = _in_units(torch_function(obj.expr), maps), _in_units(torch_function(lower.expr), maps)
        return Compiled(BilevelProblem(variables, upper_f, lower_f), to_user, rescaled=bool(maps))
    if kind == "general_bilevel":
        assert obj.expr is not None
        lower_c = next(c for c in ir.constraints if c.sense == "argmin")
        lower_names = set(lower_level_names(lower_c))
        ups = tuple(v for v in variables if v.name not in lower_names)
        lows = tuple(v for v in variables if v.name in lower_names)
        problem = GeneralBilevelProblem(
            ups,
            lows,
            torch_function(obj.expr),
            torch_function(lower_c.expr),
            quadratic_split(obj.expr, lower_names),
            quadratic_split(lower_c.expr, lower_names),
            degree(lower_c.expr),
        )
        return Compiled(problem, _identity)
    if kind == "minimax":
        assert obj.expr is not None
        mins = tuple(v for v in variables if v.name not in obj.over)
        maxs = tuple(v for v in variables if v.name in obj.over)
        f = _in_units(torch_function(obj.expr), maps)
        return Compiled(MinimaxProblem(mins, maxs, f), to_user, rescaled=bool(maps))
    if kind == "multiobjective":
        objs = tuple((name, _in_units(torch_function(e), maps)) for name, e in obj.entries)
        pref = _in_units(torch_function(obj.prefer), maps) if obj.prefer is not None else None
        exprs = [e for _, e in obj.entries] + [c.expr for c in _general(ir)]
        kinks = _kinks_in_units(coordinate_kinks(exprs, [v.name for v in variables]), maps)
        cons = _constraints_in_units(_general_constraints(ir), maps)
        together = _in_units(torch_functions([e for _, e in obj.entries]), maps)
        moving = _moving_kinks_in_units(moving_kinks(exprs, [v.name for v in variables]), maps)
        problem = MultiObjectiveProblem(variables, objs, pref, cons, tuple(kinks), together, moving)
        return Compiled(problem, to_user, rescaled=bool(maps))
    if kind == "dro":
        assert obj.expr is not None and obj.ambiguity is not None
        n = int(obj.expr.type.shape[0])
        targets = None
        if obj.ambiguity_by is not None:
            from optlang.ir.evaluate import evaluate_np

            targets = np.asarray(evaluate_np(obj.ambiguity_by, {}), dtype=np.float64)
        else:
            table = obj.expr.type.sample
            if table and ir.tables[table].y is not None:
                targets = ir.tables[table].y
        lin = linear_residual(obj.expr)
        linear = LinearResidual(lin[0], lin[1], lin[2], lin[3], lin[4]) if lin else None
        if linear is not None and lin[4] not in ("square", "abs"):
            linear = None
        problem = DROProblem(variables, torch_function(obj.expr, per_sample=True), obj.ambiguity, n, targets, linear)
        return Compiled(problem, _identity)
    raise ModelError(f"no compiler for problem kind '{kind}'", obj.span, code="E599")
