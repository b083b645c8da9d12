"""The ordered list of backends: one line each, "name": "module:Class". Imported lazily."""

from __future__ import annotations

import importlib
from functools import cache

from optlang.backends.base import Backend

BACKENDS: dict[str, str] = {
    "sdbpg": "optlang.backends.sdbpg:SDBPG",
    "adasgda": "optlang.backends.adasgda:AdaSGDA",
    "gda": "optlang.backends.gda:GDA",
    "tcdro": "optlang.backends.tcdro:TCDRO",
    "dro-cvxpy": "optlang.backends.dro_cvxpy:DROCvxpy",
    "erm": "optlang.backends.erm:ERM",
    "gd": "optlang.backends.gd:GD",
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
