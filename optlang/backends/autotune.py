"""`auto` optimizer options: `solver tcdro { lr = auto }`, gd's `lr`, adasgda's step sizes, ...

Any numeric option (an `int` or `float` field of a backend's Options) may be `auto` or
`auto in [c1, c2, ...]`. `split_auto` (called by `Backend.make_options`) keeps those aside; `solve`
(called by `api.Model.solve` instead of `backend.solve`) chooses them, then runs the final solve at
the choice and records it in `Result.info["auto_options"]`. Two rules, by what the model has:

* **Validation** — dro models and smooth models whose objective has a sample axis (a `mean` over
  data rows) with at least `2 × FOLDS` rows: K seeded folds of the rows (`FOLDS` = 5; the backend's
  own `select`/`folds`/`val_frac` options when it has them, as tcdro does); for every candidate and
  fold the backend's own solve on the training rows (the same function with its sample axis
  restricted to them), scored by the validation loss of the fitted model: the mean held-out
  per-sample loss (dro) or the objective with its sample mean over the held-out rows (smooth),
  pooled over folds. The least score wins — unless its fits stopped short (a fit of some fold ended
  without converging: an Adam step size too small for the budget, whose early stop then acts as a
  regularizer) while a candidate whose every fit converged scores within one standard error of it (the
  standard error of the least score's fold means, K ≥ 2): then the least score among those converged
  candidates wins (the one-standard-error rule, ESL §7.10, with "solved the stated problem" as the
  tie-breaker). The chosen option then solves the model the user wrote, not an early-stopped version.
* **Budget** — every other model (no data rows to hold out): each candidate runs the backend on
  the whole problem for the same short budget (`BUDGET_ITER` iterations, or the user's smaller
  `max_iter`), scored by the backend's own objective value reached (diverged or no solution: +inf).
  This is a tuning run, not validation in the statistical sense, and the record says so.

Candidates are the user's list, else the documented default grid: a float option with default
d > 0 tries d/10, d, 10·d; an int option with default d ≥ 1 tries max(1, d // 2), d, 2·d; an option
whose default is 0 or negative has no default grid (an error asks for `auto in [...]`). Several auto
options take the product of their grids. Equal scores (an option that does not act here, e.g. an
Adam step size when the backend runs L-BFGS) keep the backend's default when it is a candidate, and
the record says the scores were tied. Scores within `TIE_RTOL` (1e-4, relative) of the least are ties
too, since float32 fits agree only to about that: the default wins such a tie when it is among them,
else the first listed.

A backend with `solve_candidates(problem, options_list, ctx)` runs the candidates of one fold (or
of the budget rule) as one batched problem when it can — gd's projected Adam over stacked copies
with a per-candidate lr (`backends/smooth/gd_batched.py`), each copy ending where its own fit ends —
and returns None otherwise; then each candidate runs the backend's own loop. The record's
`execution` says which. Model quantities (DRO radii and bins) are chosen as one batched problem in
`backends/dro/auto.py`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import AUTO_KEY as KEY
from optlang.backends.base import Backend, RawSolution, RunContext, Status, numeric_kind
from optlang.problem import DROProblem, SmoothProblem, TorchFunction

if TYPE_CHECKING:
    from optlang.analysis import Form

FOLDS = 5  # validation folds when the backend has no `folds` option
BUDGET_ITER = 200  # iterations per candidate under the budget rule


# ----------------------------------------------------------------------------- options
def auto_of(options: Any) -> dict[str, tuple[float, ...]]:
    """The auto options of an Options instance (empty when none)."""
    return dict(getattr(options, KEY, None) or {})


def folds(n: int, how: str, k: int, val_frac: float, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, validation) index pairs: K seeded folds, or one seeded holdout."""
    perm = np.random.default_rng(90_000 + seed).permutation(n)
    if how == "holdout":
        n_val = max(1, int(round(val_frac * n)))
        return [(np.sort(perm[n_val:]), np.sort(perm[:n_val]))]
    parts = np.array_split(perm, k)
    return [(np.sort(np.concatenate(parts[:i] + parts[i + 1 :])), np.sort(parts[i])) for i in range(k)]


# ----------------------------------------------------------------------------- rules
def sample_count(problem: Any) -> int | None:
    """The length of the sample axis validation can split: dro losses, a smooth objective's mean."""
    if isinstance(problem, DROProblem):
        return int(problem.n_samples)
    if isinstance(problem, SmoothProblem):
        return problem.objective.n_samples
    return None


def rule_for(kind: str, n_samples: int | None, folds: int = FOLDS) -> str:
    """'validation' or 'budget' for a problem kind and its sample count."""
    if kind in ("dro", "smooth") and n_samples is not None and n_samples >= 2 * folds:
        return "validation"
    return "budget"


def describe(auto: Mapping[str, tuple[float, ...]], form: Form, problem: Any) -> str:
    """One line for the plan: which options are auto, their candidates and the rule."""
    grids = "; ".join(f"{k} in [{', '.join(f'{c:g}' for c in v)}]" for k, v in auto.items())
    if rule_for(form.kind, sample_count(problem)) == "validation":
        how = f"chosen by {FOLDS}-fold validation on the samples (the backend's own fit per candidate)"
    else:
        how = f"chosen by the objective reached in {BUDGET_ITER} iterations per candidate (no samples to hold out)"
    return f"{grids} — {how}"


# ----------------------------------------------------------------------------- sub-problems
def subset_function(f: TorchFunction, idx: np.ndarray) -> TorchFunction:
    """`f` with its sample axis restricted to the rows `idx` (a mean becomes their mean)."""
    rows = np.asarray(idx, dtype=np.int64)

    def build(device: Any, dtype: Any) -> Any:
        import torch

        base = f.compile(device, dtype)
        ix = torch.as_tensor(rows, device=device)

        def fn(values: Mapping[str, Any], batch: Any = None) -> Any:
            sel = ix if batch is None else ix[batch]
            if f.per_sample:  # a per-sample vector (dro): its entries are the rows, data table or not
                return base(values)[sel]
            return base(values, batch=sel)

        return fn

    return TorchFunction(build, n_samples=int(rows.size), per_sample=f.per_sample, source=f"{f.source} [rows]")


def subset_problem(problem: Any, idx: np.ndarray, n: int) -> Any:
    """The problem on the rows `idx` of its sample axis (length n)."""
    if isinstance(problem, DROProblem):
        lin = problem.linear
        if lin is not None:
            lin = dataclasses.replace(lin, X=np.asarray(lin.X)[idx], y=np.asarray(lin.y)[idx])
        return dataclasses.replace(
            problem,
            loss=subset_function(problem.loss, idx),
            n_samples=int(idx.size),
            targets=None if problem.targets is None else np.asarray(problem.targets)[idx],
            linear=lin,
        )
    assert isinstance(problem, SmoothProblem)
    cons = tuple(
        dataclasses.replace(c, fn=subset_function(c.fn, idx)) if c.fn.n_samples == n else c for c in problem.constraints
    )
    return dataclasses.replace(problem, objective=subset_function(problem.objective, idx), constraints=cons)


def held_out_loss(problem: Any, values: Mapping[str, np.ndarray], idx: np.ndarray) -> float:
    """The validation loss of a fitted model on the rows `idx`, in float64."""
    import torch

    f = problem.loss if isinstance(problem, DROProblem) else problem.objective
    fn = f.compile("cpu", torch.float64)
    env = {k: torch.as_tensor(np.asarray(v, dtype=np.float64)) for k, v in values.items()}
    rows = torch.as_tensor(np.asarray(idx, dtype=np.int64))
    with torch.no_grad():
        out = fn(env)[rows] if f.per_sample else fn(env, batch=rows)
    return float(out.mean()) if out.ndim else float(out)


# ----------------------------------------------------------------------------- solving
def _child(ctx: RunContext, max_iter: int | None) -> RunContext:
    """A context for one tuning fit: the parent's seed, device, dtype, clock and stop flag."""
    parent = ctx

    class Child(RunContext):
        def should_stop(self) -> bool:
            return parent.should_stop() or super().should_stop()

    c = Child(
        seed=ctx.seed,
        device=str(ctx.device),
        dtype=ctx.dtype_name,
        time_limit=ctx.time_limit,
        max_iter=max_iter,
        tol=ctx.tol,
    )
    c.restart_clock(at=time.perf_counter() - ctx.elapsed())
    return c


def _with(options: Any, values: Mapping[str, float], fields: Mapping[str, dataclasses.Field]) -> Any:
    """A copy of the options at one candidate (extra attributes such as tcdro's `_auto` kept)."""
    typed = {k: int(v) if numeric_kind(fields[k]) == "int" else float(v) for k, v in values.items()}
    out = dataclasses.replace(options, **typed)
    for k, v in vars(options).items():
        if k not in fields and k != KEY:
            setattr(out, k, v)
    return out


def solve(backend: Backend, problem: Any, options: Any, ctx: RunContext) -> RawSolution:
    """`backend.solve`, after choosing the options given as `auto` (none: the plain solve)."""
    auto = auto_of(options)
    if not auto:
        return backend.solve(problem, options, ctx)
    fields = {f.name: f for f in dataclasses.fields(options)}
    names = list(auto)
    cands = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(auto[k] for k in names))]
    n = sample_count(problem)
    k = int(getattr(options, "folds", FOLDS))
    t0 = time.perf_counter()
    kind = "dro" if isinstance(problem, DROProblem) else ("smooth" if isinstance(problem, SmoothProblem) else "")
    se: list[float] | None = None
    converged: list[bool] | None = None
    if rule_for(kind, n, max(k, 2)) == "validation":
        assert n is not None
        rule = "validation"
        scores, method, criterion, fits, execution, se, converged = _validate(
            backend, problem, options, ctx, cands, fields, n
        )
    else:
        rule = "budget"
        scores, method, criterion, fits, execution = _budget(backend, problem, options, ctx, cands, fields)
    best, note = _choose(scores, cands, fields, se, converged)
    record: dict[str, Any] = {
        "parameters": names,
        "rule": rule,
        "method": method,
        "criterion": criterion,
        "candidates": [
            {**c, "score": s if math.isfinite(s) else None, **_fit_record(i, se, converged)}
            for i, (c, s) in enumerate(zip(cands, scores, strict=True))
        ],
        "chosen": dict(cands[best]),
        "how": note,
        "fits": fits,
        "execution": execution,
        "seconds": time.perf_counter() - t0,
    }
    raw = backend.solve(problem, _with(options, cands[best], fields), ctx)
    raw.info["auto_options"] = record
    return raw


def _validate(
    backend: Backend,
    problem: Any,
    options: Any,
    ctx: RunContext,
    cands: list[dict[str, float]],
    fields: Mapping[str, dataclasses.Field],
    n: int,
) -> tuple[list[float], str, str, int, str, list[float], list[bool]]:
    """Each candidate's pooled validation score, the record's method and criterion, the fits run, how they
    ran, each candidate's standard error (of its fold means; NaN with one split) and whether every one of its
    fits converged."""
    how = str(getattr(options, "select", "kfold"))
    k = int(getattr(options, "folds", FOLDS))
    frac = float(getattr(options, "val_frac", 0.25))
    splits = folds(n, how if how in ("kfold", "holdout") else "kfold", k, frac, ctx.seed)
    opts = [_with(options, cand, fields) for cand in cands]
    totals = [0.0] * len(cands)
    per_fold: list[list[float]] = [[] for _ in cands]
    converged = [True] * len(cands)
    fits = 0
    batched = True
    for tr, va in splits:  # per fold: the candidates as one batched run where the backend has one
        sub = subset_problem(problem, tr, n)
        raws = _batched(backend, sub, opts, _child(ctx, ctx.max_iter))
        if raws is None:
            batched = False
            raws = [backend.solve(sub, o, _child(ctx, ctx.max_iter)) for o in opts]
        fits += len(raws)
        for i, raw in enumerate(raws):
            loss = held_out_loss(problem, raw.values, va) if raw.status.has_solution and raw.values else math.inf
            totals[i] += loss * va.size
            per_fold[i].append(loss)
            converged[i] &= raw.status in (Status.CONVERGED, Status.OPTIMAL)
    count = sum(va.size for _, va in splits)
    scores = [t / count if math.isfinite(t) else math.inf for t in totals]
    method = (
        f"{len(splits)}-fold" if how != "holdout" else f"holdout {frac:g}"
    ) + f" validation on the training data (seed {ctx.seed}): the backend's own fit per candidate and fold"
    what = "mean held-out per-sample loss" if isinstance(problem, DROProblem) else "objective on the held-out rows"
    se = [_standard_error(f) for f in per_fold]
    criterion = f"least validation score ({what}, pooled over folds)"
    if len(splits) > 1:
        criterion += (
            "; a least score whose fits stopped short yields to the least converged one within its standard error"
        )
    return scores, method, criterion, fits, _execution(batched, len(splits)), se, converged


def _standard_error(values: list[float]) -> float:
    """The standard error of the mean of the fold scores (NaN with fewer than two, or any not finite)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return math.nan
    return float(v.std(ddof=1) / math.sqrt(v.size))


def _fit_record(i: int, se: list[float] | None, converged: list[bool] | None) -> dict[str, Any]:
    """A candidate's standard error and convergence for the record (validation only)."""
    if se is None or converged is None:
        return {}
    return {"standard_error": se[i] if math.isfinite(se[i]) else None, "converged": converged[i]}


def _budget(
    backend: Backend,
    problem: Any,
    options: Any,
    ctx: RunContext,
    cands: list[dict[str, float]],
    fields: Mapping[str, dataclasses.Field],
) -> tuple[list[float], str, str, int, str]:
    budget = BUDGET_ITER if ctx.max_iter is None else min(BUDGET_ITER, ctx.max_iter)
    opts = [_with(options, cand, fields) for cand in cands]
    raws = _batched(backend, problem, opts, _child(ctx, budget))
    batched = raws is not None
    if raws is None:
        raws = [backend.solve(problem, o, _child(ctx, budget)) for o in opts]
    scores = []
    for raw in raws:
        ok = raw.status.has_solution and raw.objective is not None and math.isfinite(raw.objective)
        scores.append(float(raw.objective) if ok else math.inf)  # type: ignore[arg-type]
    method = (
        f"budget: {budget} iterations per candidate on the whole problem (seed {ctx.seed}); not validation in "
        "the statistical sense: the model has no data rows to hold out"
    )
    return (
        scores,
        method,
        "least objective reached (the backend's own value, minimized)",
        len(cands),
        _execution(batched, 1),
    )


def _batched(backend: Backend, problem: Any, opts: list[Any], ctx: RunContext) -> list[RawSolution] | None:
    """The backend's own batched run of several candidates (`solve_candidates`), or None when it has none
    or says it does not apply (then each candidate is its own fit)."""
    run = getattr(backend, "solve_candidates", None)
    if run is None or len(opts) < 2:
        return None
    raws = run(problem, opts, ctx)
    return None if raws is None else list(raws)


def _execution(batched: bool, groups: int) -> str:
    """How the candidates ran, for the record."""
    if batched:
        return f"batched: the candidates as one batched run per fold ({groups} run{'s' if groups > 1 else ''})"
    return "looped: one backend fit per candidate and fold"


TIE_RTOL = 1e-4  # validation or budget scores this close (relative) to the least are ties (`_choose`)


def _choose(
    scores: list[float],
    cands: list[dict[str, float]],
    fields: Mapping[str, dataclasses.Field],
    se: list[float] | None = None,
    converged: list[bool] | None = None,
) -> tuple[int, str]:
    """The index of the chosen candidate and how it was chosen; with `se` and `converged` (validation), a
    least score whose fits did not all converge yields to the least converged one within its standard error."""
    finite = [i for i, s in enumerate(scores) if math.isfinite(s)]
    defaults = [i for i, c in enumerate(cands) if all(fields[k].default == v for k, v in c.items())]
    default = defaults[0] if defaults else len(cands) // 2  # the backend's default, else the middle one
    if not finite:
        return default, "fallback: no candidate reached a finite score; the default (or middle) candidate"
    lo = min(scores[i] for i in finite)
    hi = max(scores[i] for i in finite)
    if len(finite) == len(scores) and hi - lo <= 1e-9 * max(1.0, abs(lo)):
        return default, "tied: every candidate scored the same (the option does not act here); the default"
    best = min(finite, key=lambda i: (scores[i], i))
    # scores within the fits' own noise of the least are ties (float32 fits agree to ~1e-6 relative whether
    # they ran batched or looped: an Adam lr of 0.1 and of 1 scored 0.0596840 and 0.0596839 one way and the
    # other way round the other); a tie goes to the backend's default when it is among them, else to the
    # first listed, so the choice does not follow rounding
    tied = [i for i in finite if scores[i] <= lo + TIE_RTOL * max(abs(lo), 1e-12)]
    least = "least score"
    if len(tied) > 1:
        best = default if defaults and default in tied else tied[0]
        least = (
            f"least score, tied within {TIE_RTOL:g} (relative) with {len(tied) - 1} other candidate"
            f"{'s' if len(tied) > 2 else ''}: {'the default' if best == default else 'the first listed'}"
        )
    if se is None or converged is None or converged[best] or not math.isfinite(se[best]):
        return best, least
    near = [i for i in finite if converged[i] and scores[i] <= scores[best] + se[best]]
    if not near:
        return best, least
    pick = min(near, key=lambda i: (scores[i], i))
    return pick, (
        f"one standard error: the least score ({scores[best]:.6g}) came from fits that stopped short of "
        f"convergence; the least score among candidates whose every fit converged ({scores[pick]:.6g}) is "
        f"within its standard error ({se[best]:.3g})"
    )
