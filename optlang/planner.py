"""The planner: which backends can solve a Form, which one is chosen, and why.

Each backend answers refuse(form) with a sentence or None; candidates are ranked research first
(by priority), and a forced backend that refuses the model is a PlanError quoting its sentence —
never a silent fallback.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from optlang.analysis import Form
from optlang.backends import registry
from optlang.errors import PlanError
from optlang.source import Span

KIND_TEXT = {
    "ising": "Ising/QUBO: a quadratic objective over spin or binary variables",
    "maxcut": "Max-Cut of a weighted graph",
    "bilevel": "simple bilevel: minimize f over the minimizers of g (same variables)",
    "minimax": "minimax: min over some variables of max over others",
    "dro": "distributionally robust: worst-case mean loss over an ambiguity set",
    "multiobjective": "multi-objective: a preferred weak-Pareto point or a Pareto front",
    "smooth": "smooth continuous optimization",
    "general_bilevel": "general bilevel: a lower level over other variables than the upper level",
}


@dataclass(frozen=True)
class Candidate:
    name: str
    accepted: bool
    reason: str  # why accepted (its summary) or the refusal sentence
    priority: int = 50
    auto: bool = True


@dataclass(frozen=True)
class Plan:
    kind: str
    chosen: str
    candidates: list[Candidate] = field(default_factory=list)
    form: Form | None = None
    forced: bool = False

    def explain(self) -> str:
        lines = [f"kind: {self.kind} — {KIND_TEXT.get(self.kind, self.kind)}"]
        if self.form is not None:
            lines.append(f"model: {self.form.describe()}")
        how = "forced" if self.forced else "chosen"
        lines.append(f"{how}: {self.chosen}")
        for c in self.candidates:
            mark = "✓" if c.accepted else "✗"
            note = "" if c.auto or not c.accepted else " (baseline; used only when named)"
            lines.append(f"  {mark} {c.name:<14} {c.reason}{note}")
        return "\n".join(lines)


def plan(form: Form, backend: str = "auto", span: Span | None = None) -> Plan:
    """Rank every registered backend for `form` and choose one (or check the forced one)."""
    cands: list[Candidate] = []
    forced_name = None if backend in ("auto", "", None) else backend
    names = registry.names()
    if forced_name in names:
        names = [forced_name]  # a named backend: import and ask only that one
    for name in names:
        b = registry.get(name)
        reason = b.available() or b.refuse(form)
        cands.append(Candidate(name, reason is None, reason or b.summary, b.priority, b.auto))
    accepted = sorted((c for c in cands if c.accepted), key=lambda c: c.priority)
    refused = [c for c in cands if not c.accepted and form.kind in registry.get(c.name).kinds]
    others = [c for c in cands if not c.accepted and form.kind not in registry.get(c.name).kinds]
    ordered = accepted + refused
    if backend in ("auto", "", None):
        auto = [c for c in accepted if c.auto]
        if not auto:
            detail = "; ".join(f"{c.name}: {c.reason}" for c in refused) or "none is registered for it"
            raise PlanError(f"no backend can solve this {form.kind} model — {detail}", span, code="E802")
        return Plan(form.kind, auto[0].name, ordered, form)
    if backend not in registry.names():
        close = difflib.get_close_matches(backend, registry.names(), n=1)
        raise PlanError(
            f"unknown backend '{backend}'",
            span,
            hint=f"did you mean '{close[0]}'?" if close else "backends: " + ", ".join(registry.names()),
            code="E803",
        )
    forced = next(c for c in cands if c.name == backend)
    if not forced.accepted:
        raise PlanError(
            f"backend '{backend}' cannot solve this model: {forced.reason}",
            span,
            hint=("backends that can: " + ", ".join(c.name for c in accepted)) if accepted else None,
            code="E804",
        )
    del others
    return Plan(form.kind, backend, ordered, form, forced=True)
