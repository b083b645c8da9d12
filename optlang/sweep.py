"""Parameter sweeps: one model solved over a grid of `param` values as ONE batched problem.

`run_sweep(model, params)` (also `Model.sweep`, `optlang sweep`) lowers the model at every grid
point (once, substituting each point's values, where the swept names enter only as values:
sweep_lower.py), checks that the points differ only in constants (same operations and shapes), and
then solves all of them together: the variables get a leading batch axis, the objective is one
`torch.func.vmap` call over the stacked variables and the swept constants, and `batched.lbfgs`
steps every point with its own curvature pairs and line search (float64). Kinds batched today:
`smooth` (unconstrained, free variables) and `dro` (chi2, kl, target_conditional through tcdro's
exact duals per point; radius and bins may be swept) here, and by the kinds registered in
`BATCHED_KINDS` with their own batched module: `bilevel` (batched SDBPG, `batched_bilevel.py`),
`multiobjective` with a preference (a weight in the preference or the objectives; box or free
variables — backends/multiobjective/batched.py) and `minimax` (free variables — nested batched
L-BFGS, backends/minimax/batched.py). Every other model — another kind, variable
domains, constraints, points whose shapes differ — runs point by point on an executor, and the
sweep's `plan` says why. Either way each point is re-verified like a single solve (the Result's
float64 recomputation from that point's model).

Ising/Max-Cut points whose couplings share one pattern are batched by `batched_ising.py` (exact
enumeration or the batched annealing path, after the backend a single solve would use).
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from optlang.errors import OptionError
from optlang.result import Result, jsonable

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"

# kinds batched by their own module beside smooth and dro (batched_solve): kind -> module with
# `cannot_batch(models, backend) -> str | None` and `solve(models, seed, max_iter) -> (results, note)`
# (raising batched_solve.NotBatchable); one line per kind
BATCHED_KINDS: dict[str, str] = {
    "bilevel": "optlang.batched_bilevel",
    "multiobjective": "optlang.backends.multiobjective.batched",
    "minimax": "optlang.backends.minimax.batched",
}


# ----------------------------------------------------------------------------- the grid
def parse_values(text: str) -> list[float]:
    """A swept parameter's values: `logspace(a, b, n)` (10^a … 10^b), `linspace(a, b, n)`, `[v, ...]`,
    or one number. Read by regular expressions only: nothing is evaluated."""
    s = text.strip()
    m = re.fullmatch(rf"(logspace|linspace)\(\s*({_NUM})\s*,\s*({_NUM})\s*,\s*(\d+)\s*\)", s)
    if m:
        a, b, n = float(m.group(2)), float(m.group(3)), int(m.group(4))
        if n < 1:
            raise OptionError("param", f"{m.group(1)} needs at least one point, got {n}")
        vals = np.logspace(a, b, n) if m.group(1) == "logspace" else np.linspace(a, b, n)
        return [float(v) for v in vals]
    m = re.fullmatch(r"\[(.*)\]", s)
    if m:
        parts = [p.strip() for p in m.group(1).split(",") if p.strip()]
        if parts and all(re.fullmatch(_NUM, p) for p in parts):
            return [float(p) for p in parts]
    if re.fullmatch(_NUM, s):
        return [float(s)]
    raise OptionError(
        "param",
        f"cannot read the sweep values '{text}'",
        hint="use logspace(-3, 1, 64), linspace(0, 1, 11), [0.1, 0.3, 1] or a number",
    )


def grid(params: Mapping[str, Sequence[float]], mode: str = "product") -> list[dict[str, float]]:
    """The grid points: every combination (`product`) or the i-th value of each (`zip`)."""
    names = list(params)
    values = [list(params[n]) for n in names]
    if not names:
        raise OptionError("params", "a sweep needs at least one parameter with values")
    if mode == "zip":
        lengths = {len(v) for v in values}
        if len(lengths) != 1:
            raise OptionError("params", f"zipped parameters need equal lengths, got {sorted(lengths)}")
        return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    if mode != "product":
        raise OptionError("mode", f"unknown grid mode '{mode}'", hint="product or zip")
    return [dict(zip(names, row, strict=True)) for row in itertools.product(*values)]


# ----------------------------------------------------------------------------- the result
@dataclass
class SweepResult:
    """The grid, one verified Result per point, and how the grid was solved."""

    points: list[dict[str, float]]
    results: list[Result]
    plan: str  # "batched: ..." or "point by point: <why>"
    batched: bool
    timing: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.points)

    def records(self) -> list[dict[str, Any]]:
        """One flat record per point: the swept values, status, objective, checks, and every variable
        entry (x, or x[0], x[1], ... for vectors up to 16 entries)."""
        out = []
        for p, r in zip(self.points, self.results, strict=True):
            rec: dict[str, Any] = dict(p)
            rec.update({"status": r.status.value, "objective": r.objective, "ok": r.ok})
            for name, v in (r.info.get("objectives") or {}).items():
                rec[name] = v
            for name, v in r.values.items():
                a = np.asarray(v, dtype=np.float64).ravel()
                if a.size == 1:
                    rec[name] = float(a[0])
                elif a.size <= 16:
                    rec.update({f"{name}[{i}]": float(x) for i, x in enumerate(a)})
            out.append(rec)
        return out

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame (pandas is optional)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise OptionError("to_pandas", "to_pandas() needs pandas", hint="pip install pandas") from e
        return pd.DataFrame(self.records())

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "batched": self.batched,
            "timing": dict(self.timing),
            "points": self.points,
            "records": jsonable(self.records()),
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def to_csv(self) -> str:
        recs = self.records()
        cols: list[str] = []
        for r in recs:
            cols += [k for k in r if k not in cols]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols)
        w.writeheader()
        for r in recs:
            w.writerow(r)
        return buf.getvalue()

    def table(self, max_cols: int = 8) -> str:
        """A plain-text table: swept values, status, objective and the first variable columns."""
        recs = self.records()
        if not recs:
            return "(empty sweep)"
        cols = list(recs[0])[: len(self.points[0]) + 3 + max_cols]
        cells = [[_fmt(r.get(c)) for c in cols] for r in recs]
        widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
        return "\n".join(lines)

    def html(self, title: str = "sweep") -> str:
        """A small HTML report: the objective and each scalar column against the (first) swept parameter."""
        from html import escape

        from optlang.report.plots import sweep_svg

        recs = self.records()
        x = next(iter(self.points[0]))
        xs = [float(r[x]) for r in recs]
        logx = min(xs) > 0 and max(xs) / min(xs) >= 100
        skip = set(self.points[0]) | {"status", "ok"}
        charts = []
        for col in (c for c in recs[0] if c not in skip):
            ys = [float(r[col]) if isinstance(r.get(col), (int, float)) else math.nan for r in recs]
            charts.append(sweep_svg(xs, ys, f"{col} vs {x}", x, col, logx))
        body = "\n".join(f"<div>{c}</div>" for c in charts)
        return (
            f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title></head><body>"
            f"<h1>{escape(title)}</h1><p>{escape(self.plan)}</p><pre>{escape(self.table())}</pre>{body}</body></html>"
        )


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# ----------------------------------------------------------------------------- running
def run_sweep(
    model: Any,
    params: Mapping[str, Sequence[float] | float],
    mode: str = "product",
    backend: str | None = None,
    seed: int = 0,
    max_iter: int | None = None,
    batch: bool = True,
    executor: str = "inline",
) -> SweepResult:
    """Solve `model` at every grid point; batched when the kind and the points allow it."""

    t0 = time.perf_counter()
    spec: dict[str, list[float]] = {
        k: [float(v)] if isinstance(v, (int, float)) else [float(x) for x in np.ravel(v)] for k, v in params.items()
    }
    points = grid(spec, mode)
    base_params, base_data = getattr(model, "overrides", ({}, {}))
    src = model.ir.source
    models = _lower_points(src, points, base_params, base_data)
    t_lower = time.perf_counter() - t0
    with _located_options(model):
        why = _cannot_batch(models, backend) if batch else "batching turned off"
    if batch and models[0].kind in ("ising", "maxcut"):  # fields/couplings over one pattern: batched_ising.py
        from optlang import batched_ising

        try:
            results, note = batched_ising.solve(models, backend=backend, seed=seed, max_iter=max_iter)
            t = time.perf_counter() - t0
            return SweepResult(points, results, f"batched: {note}", True, {"lower": t_lower, "total": t})
        except batched_ising.NotBatchable as e:
            why = str(e)
    if why is None:
        from optlang import batched_solve

        solver: Any = _wing(models[0].kind) or batched_solve
        try:
            with _located_options(model):
                results, note = solver.solve(models, seed=seed, max_iter=max_iter)
            t = time.perf_counter() - t0
            return SweepResult(points, results, f"batched: {note}", True, {"lower": t_lower, "total": t})
        except batched_solve.NotBatchable as e:
            why = str(e)
    results = _point_by_point(models, points, src.path, backend, seed, max_iter, executor, base_data)
    t = time.perf_counter() - t0
    return SweepResult(points, results, f"point by point ({executor}): {why}", False, {"lower": t_lower, "total": t})


@contextmanager
def _located_options(model: Any) -> Iterator[None]:
    """An OptionError from a batched wing (its options read from the solver block) points at the line."""
    try:
        yield
    except OptionError as e:
        spans = model.ir.solver.option_spans if model.ir.solver else {}
        if e.span is None and e.key in spans:
            e.span = spans[e.key]
        raise e.with_source(model.ir.source) from None


def _lower_points(src: Any, points: list[dict[str, float]], params: dict, data: dict) -> list[Any]:
    """The model at every point. The text is parsed once. For the batched kinds, when the swept names
    enter the lowering only as values, the first point is lowered once and every point is that IR with
    its own values substituted (sweep_lower.py); otherwise each point is lowered from the parsed tree
    (ising/maxcut forms refined with the lowered sizes, as optlang.parse does)."""
    import optlang
    from optlang.api import Model
    from optlang.compiler import classify
    from optlang.errors import OptlangError
    from optlang.grammar.parser import parse_tree
    from optlang.ir.lower import Lowerer
    from optlang.sweep_lower import Substitution

    def full(p: dict[str, float]) -> Any:
        return optlang.parse(src.text, base_dir=src.base_dir, params={**params, **p}, data=data, path=src.path)

    batched_kinds = ("smooth", "dro", "ising", "maxcut", *BATCHED_KINDS)
    tree = parse_tree(src)  # the text was checked (size, nesting) when the model was parsed
    subst = Substitution.trace(src, tree, points[0], params, data) if len(points) > 1 else None
    if subst is not None:  # lowered once: every point is the first's IR with its own swept values
        try:
            out = [subst.model(p, params, data) for p in points]
        except OptlangError as e:
            raise e.with_source(src) from None
        if out[0].kind in batched_kinds:
            for m in out:
                _refine_ising(m)
            return out
    first = full(points[0])
    if first.kind not in batched_kinds:
        return [first] + [full(p) for p in points[1:]]
    out = [first]
    reuse = point_free_params(src, tree, points, params, data)
    for p in points[1:]:
        over = {**params, **p}
        try:
            lowerer = Lowerer(src, over, data)
            lowerer.reuse = reuse
            ir = lowerer.run(tree)
            m = Model(ir, classify(ir))
            _refine_ising(m)
        except OptlangError as e:
            raise e.with_source(src) from None
        m.overrides = (over, dict(data))
        out.append(m)
    return out


def _refine_ising(m: Any) -> None:
    """As optlang.parse does for ising/maxcut models: the planner's sizes and fields from the lowering."""
    from optlang.problem import IsingProblem

    if m.kind in ("ising", "maxcut"):
        q = m.compiled.problem
        assert isinstance(q, IsingProblem)
        m.form = replace(m.form, n_spins=q.n, nnz=int(q.J.nnz), has_field=q.has_field)


def point_free_params(src: Any, tree: Any, points: list[dict[str, float]], params: dict, data: dict) -> dict:
    """Values of the params whose statements use no swept name (directly or through another statement),
    computed once at the first point, so that every further point reuses them instead of evaluating
    generators and products again (a sweep's points differ only in the swept names)."""
    from lark import Token, Tree

    from optlang.ir.lower import Lowerer

    dependent = {name for p in points for name in p}
    free: list[str] = []
    for st in tree.iter_subtrees_topdown():
        if not isinstance(st, Tree) or not st.children or not isinstance(st.children[0], Token):
            continue
        if st.data not in ("param_stmt", "let_stmt", "data_stmt", "graph_stmt"):
            continue
        name = str(st.children[0])
        used = {str(t) for t in st.scan_values(lambda v: isinstance(v, Token))} - {name}
        if name in dependent or used & dependent:
            dependent.add(name)
        elif st.data == "param_stmt":
            free.append(name)
    if not free:
        return {}
    lowerer = Lowerer(src, {**params, **points[0]}, data)
    lowerer.run(tree)
    keep = (np.ndarray, int, float, np.number)
    return {k: lowerer.params[k] for k in free if isinstance(lowerer.params.get(k), keep)}


def _wing(kind: str) -> Any:
    """The module that batches this kind (None: batched_solve, or no batching)."""
    import importlib

    return importlib.import_module(BATCHED_KINDS[kind]) if kind in BATCHED_KINDS else None


def _cannot_batch(models: list[Any], backend: str | None) -> str | None:
    m = models[0]
    if m.kind in BATCHED_KINDS:
        return _wing(m.kind).cannot_batch(models, backend)
    if m.kind not in ("smooth", "dro"):
        kinds = ", ".join(["smooth", "dro", *BATCHED_KINDS])
        return f"kind {m.kind} has no batched solver yet (batched kinds: {kinds})"
    if backend not in (None, "", "auto", "tcdro" if m.kind == "dro" else "gd"):
        return f"backend '{backend}' was named; the batched solver replaces tcdro (dro) / gd (smooth) only"
    if any(v.domain != "free" for v in m.form.variables):
        return "variables with domains (the batched L-BFGS has no projection)"
    if m.form.constraints:
        return "general constraints"
    if m.kind == "dro":
        if m.form.ambiguity == "wasserstein":
            return "wasserstein ambiguity (closed forms are solved per point)"
        if m.form.auto:
            return "auto parameters inside a sweep (each point runs its own validation)"
        chosen = m.plan(backend).chosen
        if chosen != "tcdro":
            return f"the planned backend is {chosen}, not tcdro"
    return None


def _point_by_point(
    models: list[Any],
    points: list[dict[str, float]],
    path: str,
    backend: str | None,
    seed: int,
    max_iter: int | None,
    executor: str,
    data: Mapping[str, Any],
) -> list[Result]:
    """Each point as a separate solve: in this process, or as executor jobs when the model is a file."""
    if executor == "inline" or not Path(path).is_file():
        return [m.solve(backend=backend, seed=seed, max_iter=max_iter) for m in models]
    from optlang.executors import Job, make_executor, stream

    base_params: dict[str, Any] = getattr(models[0], "overrides", ({}, {}))[0]
    jobs = [
        Job(
            model=path,
            backend=backend or "auto",
            seed=seed,
            params={**base_params, **p},
            data={k: str(v) for k, v in data.items()},
            options={"max_iter": max_iter} if max_iter else {},
            repeat=i,
        )
        for i, p in enumerate(points)
    ]
    ex = make_executor(executor)
    try:
        done = stream(ex, jobs)
    finally:
        ex.close()
    by_index = {job.repeat: Result.from_dict(res) for job, res in done}
    return [by_index[i] for i in range(len(points))]


# ----------------------------------------------------------------------------- CLI
def add_parser(subparsers: Any) -> None:
    """`optlang sweep model.opt -p 'lam=logspace(-3, 1, 64)' [-p ...]`."""
    p = subparsers.add_parser("sweep", help="solve a model over a grid of param values (one batched solve)")
    p.add_argument("model", help="the .opt model file")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="NAME=VALUES",
        help="a swept param: logspace(a, b, n), linspace(a, b, n), [v, ...]; a single number fixes it",
    )
    p.add_argument("-d", "--data", action="append", metavar="NAME=PATH", help="override a data or graph source")
    p.add_argument("--zip", action="store_true", help="zip the value lists instead of taking their product")
    p.add_argument("-b", "--backend", default=None, help="backend (default: the planned one)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-iter", type=int, default=None)
    p.add_argument("--no-batch", action="store_true", help="solve point by point even when batching is possible")
    p.add_argument("--executor", default="inline", help="point-by-point runs: inline (default), local or dask")
    p.add_argument("--json", action="store_true", help="the sweep as JSON on stdout")
    p.add_argument("--csv", default=None, metavar="PATH", help="write the records as CSV")
    p.add_argument("-o", "--output", default=None, metavar="PATH", help="write the sweep as JSON")
    p.add_argument("--report", default=None, metavar="PATH", help="write an HTML report (plots vs the parameter)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import optlang
    from optlang.cli_common import parse_assignments

    swept: dict[str, list[float]] = {}
    fixed: dict[str, str] = {}
    for item in args.param or []:
        if "=" not in item:
            raise OptionError("param", f"-p needs NAME=VALUES, got '{item}'")
        name, text = item.split("=", 1)
        vals = parse_values(text)
        if len(vals) == 1 and not text.strip().startswith(("[", "logspace", "linspace")):
            fixed[name.strip()] = text
        else:
            swept[name.strip()] = vals
    if not swept:
        raise OptionError("param", "nothing to sweep", hint="-p 'lam=logspace(-3, 1, 64)'")
    fixed_params = parse_assignments([f"{k}={v}" for k, v in fixed.items()], "-p") if fixed else {}
    model = optlang.load(args.model, params=fixed_params, data=parse_assignments(args.data, "-d"))
    res = run_sweep(
        model,
        swept,
        mode="zip" if args.zip else "product",
        backend=args.backend,
        seed=args.seed,
        max_iter=args.max_iter,
        batch=not args.no_batch,
        executor=args.executor,
    )
    if args.output:
        Path(args.output).write_text(res.to_json(), encoding="utf-8")
    if args.csv:
        Path(args.csv).write_text(res.to_csv(), encoding="utf-8")
    if args.report:
        Path(args.report).write_text(res.html(f"sweep of {args.model}"), encoding="utf-8")
    if args.json:
        print(res.to_json())
    else:
        print(f"{len(res)} points, {res.plan}, {res.timing['total']:.2f} s")
        print(res.table())
    return 0 if all(r.status.has_solution for r in res.results) else 1
