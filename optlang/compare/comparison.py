"""Comparison: the data of one comparison (every Result plus the model's source, maths, plan, settings).

Holds no running and no rendering; summaries and flags are computed from the Results on demand
(stats.py), so a Comparison rebuilt from JSON is re-checked, never trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optlang.compare.stats import (
    ATOL,
    RTOL,
    BackendSummary,
    Contradiction,
    FrontHypervolumes,
    StatusConflict,
    best_of,
    find_contradictions,
    find_status_conflicts,
    front_hypervolumes,
    has_value,
    summarize,
    tightest_bound,
)
from optlang.result import Result, jsonable

# Notebook display: report/ registers its renderers here when imported (orchestrate imports it), so the
# data class never imports the renderers that import it. format -> render(comparison) -> text
DISPLAY: dict[str, Callable[[Any], str]] = {}


@dataclass
class Comparison:
    """Everything a comparison report shows: the model, the configuration, every run's Result."""

    model: str  # model name
    path: str
    kind: str
    sense: str
    backends: list[str]
    results: list[Result]
    source: str = ""
    latex: str | None = None
    plan: str = ""
    refused: dict[str, str] = field(default_factory=dict)  # backend -> why it was not run
    repeats: int = 1
    time_limit: float | None = None
    time_limit_source: str = ""  # "--time-limit", "the model's solver block" or "the default"
    seeds: list[int] = field(default_factory=list)
    device: str = "auto"
    params: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    atol: float = ATOL
    rtol: float = RTOL
    command: str = "compare"  # "solve" for the report of a single solve

    def __repr__(self) -> str:
        best = self.best_objective
        return (
            f"Comparison({self.model!r}, kind={self.kind!r}, backends={self.backends!r}, runs={len(self.results)}, "
            f"best={'None' if best is None else f'{best:.10g}'})"
        )

    def _repr_markdown_(self) -> str | None:
        render = DISPLAY.get("md")
        return render(self) if render else None

    def _repr_html_(self) -> str | None:
        render = DISPLAY.get("html")
        return render(self) if render else None

    def runs(self, backend: str) -> list[Result]:
        return sorted((r for r in self.results if r.backend == backend), key=lambda r: r.seed)

    def contradictions(self) -> list[Contradiction | StatusConflict]:
        """Claims beaten by another run's objective, then claims a run's own gap contradicts."""
        beaten = find_contradictions(self.results, self.sense, self.atol, self.rtol)
        return [*beaten, *find_status_conflicts(self.results)]

    def summaries(self) -> list[BackendSummary]:
        flagged = {c.claimant for c in self.contradictions()}
        return [summarize(self.results, b, self.sense, b in flagged) for b in self.backends]

    def front_hypervolumes(self) -> FrontHypervolumes | None:
        """The runs' fronts measured against one reference point (None: no front of 2-3 objectives)."""
        return front_hypervolumes({b: self.runs(b) for b in self.backends})

    @property
    def best_objective(self) -> float | None:
        return best_of([r.objective for r in self.results if has_value(r)], self.sense)

    @property
    def best_bound(self) -> float | None:
        return tightest_bound([r.bound for r in self.results if r.bound is not None], self.sense)

    def to_dict(self) -> dict[str, Any]:
        """The full JSON form: configuration, summaries, flags and every Result."""
        return {
            "format": "optlang-compare/1",
            "model": self.model,
            "path": self.path,
            "kind": self.kind,
            "sense": self.sense,
            "backends": list(self.backends),
            "refused": dict(self.refused),
            "repeats": self.repeats,
            "time_limit": self.time_limit,
            "time_limit_source": self.time_limit_source,
            "seeds": list(self.seeds),
            "device": self.device,
            "params": jsonable(self.params),
            "created": self.created,
            "atol": self.atol,
            "rtol": self.rtol,
            "command": self.command,
            "best_objective": self.best_objective,
            "best_bound": self.best_bound,
            "summaries": [s.to_dict() for s in self.summaries()],
            "contradictions": [c.to_dict() for c in self.contradictions()],
            "front_hypervolumes": (fh.to_dict() if (fh := self.front_hypervolumes()) is not None else None),
            "source": self.source,
            "latex": self.latex,
            "plan": self.plan,
            "environment": self.environment,
            "results": [r.to_dict() for r in self.results],
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Comparison:
        """Rebuild from to_dict() output (summaries and flags are recomputed, not trusted)."""
        return Comparison(
            model=d["model"],
            path=d.get("path", ""),
            kind=d.get("kind", ""),
            sense=d.get("sense", "minimize"),
            backends=list(d.get("backends", [])),
            results=[Result.from_dict(r) for r in d.get("results", [])],
            source=d.get("source", ""),
            latex=d.get("latex"),
            plan=d.get("plan", ""),
            refused=dict(d.get("refused", {})),
            repeats=int(d.get("repeats", 1)),
            time_limit=d.get("time_limit"),
            time_limit_source=d.get("time_limit_source", ""),
            seeds=list(d.get("seeds", [])),
            device=d.get("device", "auto"),
            params=dict(d.get("params", {})),
            environment=dict(d.get("environment", {})),
            created=d.get("created", ""),
            atol=float(d.get("atol", ATOL)),
            rtol=float(d.get("rtol", RTOL)),
            command=str(d.get("command", "compare")),
        )
