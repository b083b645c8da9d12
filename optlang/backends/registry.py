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
    "specann": "optlang.backends.ising.specann.backend:SpecAnn",
    "gnnsdp": "optlang.backends.maxcut.gnnsdp:GNNSDP",
    "bnb": "optlang.backends.maxcut.bnb:BranchAndBound",
    "bruteforce": "optlang.backends.ising.bruteforce:BruteForce",
    "localsearch": "optlang.backends.ising.localsearch:LocalSearch",
    "neal": "optlang.backends.ising.neal:Neal",
    "sdp-cvxpy": "optlang.backends.maxcut.sdp_cvxpy:SDPCvxpy",
    "sdp-bm": "optlang.backends.maxcut.sdp_bm:SDPBM",
    "sdbpg": "optlang.backends.bilevel.sdbpg:SDBPG",
    "penalty": "optlang.backends.bilevel.penalty:Penalty",
    "adasgda": "optlang.backends.minimax.adasgda:AdaSGDA",
    "gda": "optlang.backends.minimax.gda:GDA",
    "paretom3": "optlang.backends.multiobjective.paretom3:ParetoM3",
    "weighted-sum": "optlang.backends.multiobjective.weighted_sum:WeightedSum",
    "tcdro": "optlang.backends.dro.tcdro:TCDRO",
    "dro-cvxpy": "optlang.backends.dro.dro_cvxpy:DROCvxpy",
    "erm": "optlang.backends.dro.erm:ERM",
    "gd": "optlang.backends.smooth.gd:GD",
    "hgms": "optlang.backends.general_bilevel.hgms:HGMS",
    "aid": "optlang.backends.general_bilevel.aid:AID",
    "itd": "optlang.backends.general_bilevel.itd:ITD",
    "kkt": "optlang.backends.general_bilevel.kkt:KKT",
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
    "hgms": "general_bilevel",
    "aid": "general_bilevel",
    "itd": "general_bilevel",
    "kkt": "general_bilevel",
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
