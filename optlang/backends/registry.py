"""The ordered list of backends, one line each: "name": "module:Class". Nothing is imported here.

A backend's module is imported only when it is used: the planner asks only the backends whose
kinds (KINDS, one line each) include the model's kind, and `solve` imports the chosen one. Moving a
backend module is a one-line change to its string; `tests/test_registry.py` checks KINDS against
each class's own `kinds`.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optlang.backends.base import Backend

BACKENDS: dict[str, str] = {
    "specann": "optlang.backends.specann.backend:SpecAnn",
    "gnnsdp": "optlang.backends.maxcut_sdp.gnnsdp:GNNSDP",
    "bnb": "optlang.backends.maxcut_sdp.bnb:BranchAndBound",
    "bruteforce": "optlang.backends.bruteforce:BruteForce",
    "localsearch": "optlang.backends.localsearch:LocalSearch",
    "neal": "optlang.backends.neal:Neal",
    "sdp-cvxpy": "optlang.backends.maxcut_sdp.sdp_cvxpy:SDPCvxpy",
    "sdp-bm": "optlang.backends.maxcut_sdp.sdp_bm:SDPBM",
    "sdbpg": "optlang.backends.sdbpg:SDBPG",
    "penalty": "optlang.backends.penalty:Penalty",
    "adasgda": "optlang.backends.adasgda:AdaSGDA",
    "gda": "optlang.backends.gda:GDA",
    "paretom3": "optlang.backends.paretom3:ParetoM3",
    "weighted-sum": "optlang.backends.weighted_sum:WeightedSum",
    "tcdro": "optlang.backends.tcdro:TCDRO",
    "dro-cvxpy": "optlang.backends.dro_cvxpy:DROCvxpy",
    "erm": "optlang.backends.erm:ERM",
    "gd": "optlang.backends.gd:GD",
}

# the problem kinds each backend serves (the same as its class's `kinds`; checked by a test)
KINDS: dict[str, str] = {
    "specann": "ising maxcut",
    "gnnsdp": "ising maxcut",
    "bnb": "ising maxcut",
    "bruteforce": "ising maxcut",
    "localsearch": "ising maxcut",
    "neal": "ising maxcut",
    "sdp-cvxpy": "ising maxcut",
    "sdp-bm": "ising maxcut",
    "sdbpg": "bilevel",
    "penalty": "bilevel",
    "adasgda": "minimax",
    "gda": "minimax",
    "paretom3": "multiobjective",
    "weighted-sum": "multiobjective",
    "tcdro": "dro",
    "dro-cvxpy": "dro",
    "erm": "dro",
    "gd": "smooth",
}


@cache
def get(name: str) -> Backend:
    """The backend instance registered under `name` (KeyError when unknown); imports its module."""
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def names() -> list[str]:
    return list(BACKENDS)


def for_kind(kind: str) -> list[str]:
    """The backends that serve `kind`, in registry order, without importing any of them."""
    return [n for n in BACKENDS if kind in KINDS.get(n, "").split()]


def all_backends() -> list[Backend]:
    return [get(n) for n in BACKENDS]
