"""The ordered list of backends, one line each: "name": Entry("module:Class", "kinds"). Nothing is imported here.

A backend's module is imported only when it is used: the planner asks only the backends whose
kinds include the model's kind, and `solve` imports the chosen one. Moving a backend module is a
change to its line; `tests/test_install.py` checks each line's kinds against the class's own `kinds`.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from optlang.backends.base import Backend


class Entry(NamedTuple):
    """Where a backend's class is ("module:Class") and the problem kinds it serves, space-separated (the same
    as the class's `kinds`, checked by tests/test_install.py), so the planner can filter without importing."""

    target: str
    kinds: str


BACKENDS: dict[str, Entry] = {
    "specann": Entry("optlang.backends.ising.specann.backend:SpecAnn", "ising maxcut"),
    "gnnsdp": Entry("optlang.backends.maxcut.gnnsdp:GNNSDP", "ising maxcut"),
    "bnb": Entry("optlang.backends.maxcut.bnb:BranchAndBound", "ising maxcut"),
    "bruteforce": Entry("optlang.backends.ising.bruteforce:BruteForce", "ising maxcut"),
    "localsearch": Entry("optlang.backends.ising.localsearch:LocalSearch", "ising maxcut"),
    "neal": Entry("optlang.backends.ising.neal:Neal", "ising maxcut"),
    "sdp-cvxpy": Entry("optlang.backends.maxcut.sdp_cvxpy:SDPCvxpy", "ising maxcut"),
    "sdp-bm": Entry("optlang.backends.maxcut.sdp_bm:SDPBM", "ising maxcut"),
    "sdbpg": Entry("optlang.backends.bilevel.sdbpg:SDBPG", "bilevel"),
    "penalty": Entry("optlang.backends.bilevel.penalty:Penalty", "bilevel"),
    "adasgda": Entry("optlang.backends.minimax.adasgda:AdaSGDA", "minimax"),
    "gda": Entry("optlang.backends.minimax.gda:GDA", "minimax"),
    "paretom3": Entry("optlang.backends.multiobjective.paretom3:ParetoM3", "multiobjective"),
    "weighted-sum": Entry("optlang.backends.multiobjective.weighted_sum:WeightedSum", "multiobjective"),
    "tcdro": Entry("optlang.backends.dro.tcdro:TCDRO", "dro"),
    "dro-cvxpy": Entry("optlang.backends.dro.dro_cvxpy:DROCvxpy", "dro"),
    "erm": Entry("optlang.backends.dro.erm:ERM", "dro"),
    "gd": Entry("optlang.backends.smooth.gd:GD", "smooth"),
    "convex": Entry("optlang.backends.smooth.convex:Convex", "smooth"),
    "slsqp": Entry("optlang.backends.smooth.slsqp:SLSQP", "smooth"),
    "hgms": Entry("optlang.backends.general_bilevel.hgms:HGMS", "general_bilevel"),
    "aid": Entry("optlang.backends.general_bilevel.aid:AID", "general_bilevel"),
    "itd": Entry("optlang.backends.general_bilevel.itd:ITD", "general_bilevel"),
    "kkt": Entry("optlang.backends.general_bilevel.kkt:KKT", "general_bilevel"),
}


@cache
def get(name: str) -> Backend:
    """The backend instance registered under `name` (KeyError when unknown); imports its module."""
    module, cls = BACKENDS[name].target.split(":")
    return getattr(importlib.import_module(module), cls)()


def names() -> list[str]:
    return list(BACKENDS)


def for_kind(kind: str) -> list[str]:
    """The backends that serve `kind`, in registry order, without importing any of them."""
    return [n for n, e in BACKENDS.items() if kind in e.kinds.split()]


def all_backends() -> list[Backend]:
    return [get(n) for n in BACKENDS]
