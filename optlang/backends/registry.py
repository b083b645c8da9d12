"""The ordered list of backends: one line each, "name": "module:Class". Imported lazily."""

from __future__ import annotations

import importlib
from functools import cache

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
    "hgms": "optlang.backends.general_bilevel.hgms:HGMS",
    "aid": "optlang.backends.general_bilevel.aid:AID",
    "itd": "optlang.backends.general_bilevel.itd:ITD",
    "kkt": "optlang.backends.general_bilevel.kkt:KKT",
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
