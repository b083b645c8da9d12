"""The planner: which backends can solve a Form, which one is chosen, and why.

Each backend answers refuse(form) with a sentence or None. Only the backends registered for the
form's kind are imported and asked (registry.for_kind). Candidates are ranked by kind *and* size:
an exact method whose measured cost (`exact_cost`, the rule's one home) fits well inside the budget
comes first — it proves the optimum sooner than a heuristic would stop — and the rest follow by
priority (research methods first). A forced backend that refuses the model is a PlanError quoting
its sentence — never a silent fallback. A backend whose optional package is missing refuses with
"needs optional package X (pip install 'optlang-dsl[EXTRA]')" and is never chosen.
"""

from __future__ import annotations

import difflib
import math
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

# --- the sizing rule (measured by benchmarks/planner_costs.py on the 2-core CI machine, loaded) ---
# bruteforce: 7–17 ns per state from 2^18 to 2^24 states (2^24: 0.12 s); 20 ns/state + 5 ms is the
# estimate (an upper envelope).
BRUTE_SECONDS_PER_STATE = 20e-9
BRUTE_OVERHEAD_S = 0.005
# bnb on random G(n, 0.5) and signed G(n, 0.15) Max-Cuts, worst of 2 seeds: n = 20: 0.02 s,
# 30: 0.10 s, 40: 0.34 s, 50: 3.1 s, 60: 20 s (or open at a 20 s limit), 80: open at 20 s — about
# ×7.5 per 10 nodes; plus 0.2–0.4 s in a fresh process to load the GNN weights and warm the first
# operations (a 20-node solve: 0.23 / 0.39 s fresh, 0.07 s warm; torch's import is before the clock).
BNB_SECONDS_AT_20 = 0.02
BNB_LOG10_PER_NODE = 0.075
BNB_START_S = 0.3
# an exact method is put first when its estimate is at most this share of the time limit, or at
# most NO_LIMIT_EXACT_S when no limit is given (heuristics have their own default stop then)
EXACT_BUDGET_SHARE = 0.25
NO_LIMIT_EXACT_S = 3.0


@dataclass(frozen=True)
class Cost:
    """An exact method's estimated run time on a form, and the sentence that shows it."""

    seconds: float
    text: str


def _fmt_seconds(s: float) -> str:
    if s < 0.1:
        return f"{s:.2f} s"
    if s < 100:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 86400 * 365:
        return f"{s / 3600:.0f} h"
    return "years"


def exact_cost(name: str, form: Form) -> Cost | None:
    """The measured estimate of an exact backend's time on `form`, or None (not an exact method)."""
    if form.kind not in ("ising", "maxcut"):
        return None
    if name == "bruteforce":
        n = form.n_spins  # the model's spins (a field is not enumerated as a spin)
        t = BRUTE_OVERHEAD_S + BRUTE_SECONDS_PER_STATE * 2.0 ** min(n, 1000)
        return Cost(t, f"exact: 2^{n} states, ≈ {_fmt_seconds(t)}")
    if name == "bnb":
        n = form.n_spins + (1 if form.has_field else 0)  # a field becomes one extra graph node
        t = BNB_START_S + BNB_SECONDS_AT_20 * 10 ** min(BNB_LOG10_PER_NODE * (n - 20), 300.0)
        return Cost(t, f"exact: branch and bound on {n} nodes, ≈ {_fmt_seconds(t)} to close")
    return None


def exact_allowance(time_limit: float | None) -> float:
    """How long an exact method may be expected to take and still be put first."""
    if time_limit is None:
        return NO_LIMIT_EXACT_S
    return EXACT_BUDGET_SHARE * time_limit


@dataclass(frozen=True)
class Candidate:
    name: str
    accepted: bool
    reason: str  # why ranked here (accepted: rank reason and summary) or the refusal sentence
    priority: int = 50
    auto: bool = True
    estimate: float | None = None  # exact methods: estimated seconds to prove the optimum


@dataclass(frozen=True)
class Plan:
    kind: str
    chosen: str
    candidates: list[Candidate] = field(default_factory=list)
    form: Form | None = None
    forced: bool = False
    auto_options: tuple[str, ...] = ()  # the chosen backend's options given as `auto` (backends/autotune.py)
    auto_note: str = ""  # their candidates and how they are chosen

    def __repr__(self) -> str:
        accepted = [c.name for c in self.candidates if c.accepted]
        return f"Plan(kind={self.kind!r}, chosen={self.chosen!r}, forced={self.forced}, accepted={accepted!r})"

    def __str__(self) -> str:
        return self.explain()

    def _repr_markdown_(self) -> str:
        from optlang.display import plan_markdown

        return plan_markdown(self)

    def _repr_html_(self) -> str:
        from optlang.display import plan_html

        return plan_html(self)

    def explain(self) -> str:
        lines = [f"kind: {self.kind} — {KIND_TEXT.get(self.kind, self.kind)}"]
        if self.form is not None:
            lines.append(f"model: {self.form.describe()}")
        how = "forced" if self.forced else "chosen"
        lines.append(f"{how}: {self.chosen}")
        if self.auto_options:
            lines.append(f"auto options: {self.auto_note}")
        for c in self.candidates:
            mark = "✓" if c.accepted else "✗"
            note = "" if c.auto or not c.accepted else " (baseline; used only when named)"
            lines.append(f"  {mark} {c.name:<14} {c.reason}{note}")
        return "\n".join(lines)


def _rank(cands: list[Candidate], time_limit: float | None) -> list[Candidate]:
    """Exact methods that fit the budget first (cheapest first), then by priority; refusals last."""
    allowance = exact_allowance(time_limit)

    def key(c: Candidate) -> tuple[int, float, int]:
        if not c.accepted:
            return (2, 0.0, c.priority)
        if c.estimate is not None and c.estimate <= allowance:
            return (0, c.estimate, c.priority)
        return (1, 0.0, c.priority)

    return sorted(cands, key=key)


def _candidate(name: str, form: Form, time_limit: float | None) -> Candidate:
    b = registry.get(name)
    refusal = b.available() or b.refuse(form)
    if refusal is not None:
        return Candidate(name, False, refusal, b.priority, b.auto)
    cost = exact_cost(name, form)
    if cost is None:
        why = "research method: " if b.research else ("baseline: " if b.auto else "")  # CLI marks named-only ones
        return Candidate(name, True, f"{why}{b.summary}", b.priority, b.auto)
    allowance = exact_allowance(time_limit)
    fits = "within" if cost.seconds <= allowance else "beyond"
    budget = f"{EXACT_BUDGET_SHARE:g} × time limit" if time_limit is not None else "the no-limit allowance"
    why = f"{cost.text} ({fits} {budget}, {_fmt_seconds(allowance)}); {b.summary}"
    return Candidate(name, True, why, b.priority, b.auto, cost.seconds if math.isfinite(cost.seconds) else None)


def plan(form: Form, backend: str = "auto", span: Span | None = None, time_limit: float | None = None) -> Plan:
    """Rank the backends registered for `form`'s kind and choose one (or check the forced one)."""
    forced_name = None if backend in ("auto", "", None) else backend
    if forced_name is not None and forced_name not in registry.names():
        close = difflib.get_close_matches(forced_name, registry.names(), n=1)
        raise PlanError(
            f"unknown backend '{forced_name}'",
            span,
            hint=f"did you mean '{close[0]}'?" if close else "backends: " + ", ".join(registry.names()),
            code="E803",
        )
    # a named backend: import and ask only that one (of another kind, it refuses with its sentence)
    names = registry.for_kind(form.kind) if forced_name is None else [forced_name]
    cands = _rank([_candidate(n, form, time_limit) for n in names], time_limit)
    accepted = [c for c in cands if c.accepted]
    if forced_name is None:
        auto = [c for c in accepted if c.auto]
        if not auto:
            refused = [c for c in cands if not c.accepted]
            detail = "; ".join(f"{c.name}: {c.reason}" for c in refused) or "none is registered for it"
            raise PlanError(f"no backend can solve this {form.kind} model — {detail}", span, code="E802")
        return Plan(form.kind, auto[0].name, cands, form)
    forced = cands[0]
    if not forced.accepted:
        able = [n for n in registry.for_kind(form.kind) if _candidate(n, form, time_limit).accepted]
        raise PlanError(
            f"backend '{forced_name}' cannot solve this model: {forced.reason}",
            span,
            hint=("backends that can: " + ", ".join(able)) if able else None,
            code="E804",
        )
    return Plan(form.kind, forced_name, cands, form, forced=True)
