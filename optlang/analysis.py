"""Form: the facts about a checked model that the planner and backends' refuse() read.

Nothing here solves or lowers; a Form is small, frozen and printable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class VarInfo:
    """One user variable: element kind, shape, domain description, and role in the problem."""

    name: str
    kind: str  # "real" | "spin" | "binary"
    shape: tuple[int, ...]
    domain: str = "free"  # "free" | "box" | "simplex" | "ball"
    role: str = "min"  # "min" (decision) | "max" (maximizing player, minimax) | "lower" (follower, general bilevel)


@dataclass(frozen=True)
class Form:
    """The classification of a model: kind plus the structural facts backends decide on."""

    kind: str  # one of problem.KINDS (one backends/ wing each)
    sense: str = "minimize"
    variables: tuple[VarInfo, ...] = ()
    n_scalar: int = 0  # total number of scalar decision values
    constraints: tuple[str, ...] = ()  # general constraints beyond domains/argmin, as source text
    degree: int | None = None  # polynomial degree of a discrete objective
    n_spins: int = 0  # ising/maxcut: spins after rewrites (a field adds no spin here)
    nnz: int = 0  # ising/maxcut: nonzeros of J
    has_field: bool = False
    n_samples: int | None = None  # sample-axis length, when any
    ambiguity: str | None = None  # dro: chi2 | kl | wasserstein | target_conditional
    ambiguity_base: str | None = None  # dro target_conditional: chi2 | kl
    linear_residual: bool = False  # dro: loss is φ(Xw + b − y) with φ square/abs
    cvxpy_ok: bool = False  # every atom of the objective (and constraints) has a cvxpy form
    # smooth with general constraints and cvxpy forms: decides (once, on first use of `dcp`) whether the
    # model is a disciplined convex program; deciding imports cvxpy, so `check` never asks
    dcp_test: Callable[[], bool] | None = field(default=None, compare=False, repr=False)
    n_objectives: int = 1
    has_preference: bool = False
    matrix_vars: bool = False  # some real variable is 2-D
    auto: tuple[str, ...] = ()  # dro: ambiguity parameters given as `auto` (chosen by validation)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @cached_property
    def dcp(self) -> bool:
        """A disciplined convex program (cvxpy's DCP rules; optlang/convexity.py); False when not asked."""
        return bool(self.dcp_test()) if self.dcp_test is not None else False

    @property
    def domains(self) -> set[str]:
        return {v.domain for v in self.variables}

    def describe(self) -> str:
        parts = [f"kind {self.kind}", f"{self.n_scalar} scalar variables"]
        if self.n_spins:
            parts.append(f"{self.n_spins} spins, {self.nnz // 2} couplings" + (", field" if self.has_field else ""))
        if self.n_samples:
            parts.append(f"{self.n_samples} samples")
        if self.constraints:
            parts.append(f"{len(self.constraints)} general constraints")
        if self.ambiguity:
            parts.append(f"ambiguity {self.ambiguity}")
        if self.auto:
            parts.append(f"{', '.join(self.auto)} = auto (chosen by validation)")
        if self.kind == "multiobjective":
            parts.append(f"{self.n_objectives} objectives" + (", preference" if self.has_preference else ", front"))
        return "; ".join(parts)
