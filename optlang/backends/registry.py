"""The ordered list of backends: one line each, "name": "module:Class". Imported lazily."""

from __future__ import annotations

import importlib
from functools import cache

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
}


@cache
def get(name: str) -> Backend:
    """The backend instance registered under `name` (KeyError when unknown)."""
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def names() -> list[str]:
    return list(BACKENDS)


def all_backends() -> list[Backend]:
    return [get(n) for n in BACKENDS]
