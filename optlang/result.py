"""Result: the one frozen answer type every backend's solution becomes, re-verified from the IR.

The objective is recomputed in float64 from the user's model, never copied from the solver;
the backend's own value, bound and checks are kept beside it. JSON round-trips exactly.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np


class Status(StrEnum):
    """How a solve ended. `has_solution` says whether `values` hold a usable point."""

    OPTIMAL = "optimal"  # proven optimal (closed tree, exact enumeration, convex solver optimum)
    CONVERGED = "converged"  # stationarity / tolerance criteria met (no global certificate)
    FEASIBLE = "feasible"  # a solution, no convergence claim (heuristics at their own stop)
    TIME_LIMIT = "time_limit"  # stopped by the time limit; best solution returned
    ITERATION_LIMIT = "iteration_limit"  # stopped by the iteration/node limit; best solution returned
    INTERRUPTED = "interrupted"  # Ctrl-C; best solution returned
    DIVERGED = "diverged"  # NaN/inf or blow-up; the best iterate before it is returned
    UNBOUNDED = "unbounded"  # the objective ran past 1e20 in the improving direction with growing iterates
    INFEASIBLE = "infeasible"  # proven infeasible
    ERROR = "error"  # the backend failed; no solution

    @property
    def has_solution(self) -> bool:
        return self not in (Status.INFEASIBLE, Status.ERROR, Status.UNBOUNDED)


# An `optimal` status is a proof that nothing is better: its bound gap may only be rounding noise.
OPTIMAL_GAP_TOL = 1e-6


def status_gap_conflict(status: Status, gap: float | None) -> str | None:
    """Why a status contradicts its own gap (`optimal` next to a positive gap), or None when consistent."""
    if status == Status.OPTIMAL and gap is not None and math.isfinite(gap) and gap > OPTIMAL_GAP_TOL:
        return f"status optimal with a gap of {gap:.3g} (above {OPTIMAL_GAP_TOL:g}): the bound does not prove it"
    return None


def consistent_status(status: Status, gap: float | None) -> tuple[Status, str | None]:
    """The status a Result may carry with this gap: `optimal` with a positive gap becomes `feasible`."""
    why = status_gap_conflict(status, gap)
    return (Status.FEASIBLE, why) if why else (status, None)


@dataclass(frozen=True)
class Check:
    """One certificate check: passed or not, and what was compared."""

    name: str
    passed: bool
    detail: str = ""


class HistoryRow(NamedTuple):
    """One progress row, in the user's sense: seconds since the solve started, objective, bound (or None)."""

    time: float
    objective: float
    bound: float | None


@dataclass(frozen=True)
class Result:
    """The answer of one solve, in the user's terms (user variables, user sense).

    objective: recomputed from the model in float64 (maximize models report the maximized value).
    bound: a proven bound in the user's sense (upper for maximize, lower for minimize) or None.
    gap: |bound - objective| / max(1, |objective|) when a bound is known.
    values: one entry per variable; a scalar variable is a Python float, others numpy arrays.
    history: HistoryRow(time, objective, bound) rows. log: messages the solver emitted (warnings), kept
    here instead of printed.
    """

    status: Status
    objective: float | None
    values: dict[str, np.ndarray | float]
    backend: str
    kind: str
    sense: str = "minimize"
    bound: float | None = None
    gap: float | None = None
    plan: str = ""
    timing: dict[str, float] = field(default_factory=dict)  # compile, solve, total (seconds)
    iterations: int = 0
    history: tuple[HistoryRow, ...] = ()
    checks: tuple[Check, ...] = ()
    device: str = "cpu"
    seed: int = 0
    model: str = ""
    backend_objective: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    log: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        values = {k: _user_value(v) for k, v in self.values.items()}
        object.__setattr__(self, "values", values)
        rows = tuple(HistoryRow(*row) if not isinstance(row, HistoryRow) else row for row in self.history)
        object.__setattr__(self, "history", rows)
        object.__setattr__(self, "log", tuple(str(x) for x in self.log))

    def __repr__(self) -> str:
        obj = "None" if self.objective is None else f"{self.objective:.10g}"
        extra = "" if self.bound is None else f", bound={self.bound:.10g}"
        return (
            f"Result(status={self.status.value!r}, objective={obj}{extra}, backend={self.backend!r}, "
            f"kind={self.kind!r}, time={self.timing.get('total', 0.0):.3g}s)"
        )

    def _repr_markdown_(self) -> str:
        from optlang.display import result_markdown

        return result_markdown(self)

    def _repr_html_(self) -> str:
        from optlang.display import result_html

        return result_html(self)

    @property
    def ok(self) -> bool:
        """A solution is present and every certificate check passed."""
        return self.status.has_solution and all(c.passed for c in self.checks)

    def inconsistencies(self) -> list[str]:
        """Claims of this Result that its own numbers contradict (empty when consistent).

        verify() never builds such a Result (it downgrades the status, keeping the claim in
        info["status_claimed"]); a Result loaded from older JSON or built by hand may hold one.
        """
        out = []
        why = status_gap_conflict(self.status, self.gap)
        if why:
            out.append(why)
        claimed = self.info.get("status_claimed")
        if claimed and claimed != self.status.value:
            out.append(f"the backend claimed {claimed}; {self.info.get('status_note', 'its numbers do not prove it')}")
        return out

    def __getitem__(self, name: str) -> np.ndarray | float:
        return self.values[name]

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "objective": _num(self.objective),
            "bound": _num(self.bound),
            "gap": _num(self.gap),
            "values": {k: np.asarray(v).tolist() for k, v in self.values.items()},
            "backend": self.backend,
            "plan": self.plan,
            "timing": dict(self.timing),
            "history": [[t, _num(o), _num(b)] for t, o, b in self.history],
            "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks],
            "kind": self.kind,
            "sense": self.sense,
            "iterations": self.iterations,
            "device": self.device,
            "seed": self.seed,
            "model": self.model,
            "backend_objective": _num(self.backend_objective),
            "info": jsonable(self.info),
            "log": list(self.log),
        }

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """The result as JSON text; with a path, also write it there (as `save(path)` does).

        `indent` is keyword-only so that `to_json("result.json")` can never be read as an indent."""
        if path is not None and not isinstance(path, (str, Path)):
            raise TypeError(f"to_json(path): expected a file path, got {type(path).__name__}; use indent={path!r}")
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            _write_text(Path(path), text + "\n")
        return text

    def save(self, path: str | Path) -> Path:
        """Write the result as JSON to `path` (exactly what `Result.load(path)` reads back); returns the path."""
        p = Path(path)
        _write_text(p, self.to_json() + "\n")
        return p

    @staticmethod
    def load(path: str | Path) -> Result:
        """Read a result written by `save` (or `optlang solve -o`)."""
        return Result.from_json(Path(path).read_text(encoding="utf-8"))

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Result:
        return Result(
            status=Status(d["status"]),
            objective=_unnum(d.get("objective")),
            values={k: np.asarray(v, dtype=np.float64) for k, v in d.get("values", {}).items()},
            backend=d["backend"],
            kind=d.get("kind", ""),
            sense=d.get("sense", "minimize"),
            bound=_unnum(d.get("bound")),
            gap=_unnum(d.get("gap")),
            plan=d.get("plan", ""),
            timing=dict(d.get("timing", {})),
            iterations=int(d.get("iterations", 0)),
            history=tuple(
                HistoryRow(float(t), math.nan if o is None else float(o), _unnum(b)) for t, o, b in d.get("history", [])
            ),
            checks=tuple(Check(c["name"], bool(c["passed"]), c.get("detail", "")) for c in d.get("checks", [])),
            device=d.get("device", "cpu"),
            seed=int(d.get("seed", 0)),
            model=d.get("model", ""),
            backend_objective=_unnum(d.get("backend_objective")),
            info=d.get("info", {}),
            log=tuple(d.get("log", ())),
        )

    @staticmethod
    def from_json(text: str) -> Result:
        return Result.from_dict(json.loads(text))

    def summary(self) -> str:
        """One line: status, objective, bound and gap, backend and time."""
        obj = "—" if self.objective is None else f"{self.objective:.10g}"
        s = f"{self.status.value}: objective {obj}"
        if self.bound is not None:
            s += (
                f", bound {self.bound:.10g}, gap {self.gap:.3%}"
                if self.gap is not None
                else f", bound {self.bound:.10g}"
            )
        return s + f" ({self.backend}, {self.timing.get('total', 0.0):.2f}s)"


def _user_value(v: Any) -> np.ndarray | float:
    """A scalar variable's value as a Python float; anything else as a numpy array."""
    if isinstance(v, float):
        return v
    arr = np.asarray(v)
    return float(arr) if arr.ndim == 0 else arr


def _write_text(p: Path, text: str) -> None:
    """Write through a temporary file in the same folder, then rename: never a half-written result."""
    import os
    import tempfile

    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _num(x: float | None) -> float | str | None:
    """JSON has no inf/NaN: write them as strings so they survive the round trip."""
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _unnum(x: Any) -> float | None:
    return None if x is None else float(x)


def jsonable(obj: Any) -> Any:
    """obj as plain JSON values: the one converter of every JSON output (Result, sweep records,
    comparison params, backend info).

    Policy: numpy scalars and arrays become Python numbers and lists; dict keys become strings;
    non-finite floats become the strings "nan", "inf", "-inf" (JSON has no such numbers; null would
    lose which one it was, and `Result.from_dict` reads the strings back); anything else becomes str().
    The output passes json.dumps(..., allow_nan=False).
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        return _num(float(obj))
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    return str(obj)
