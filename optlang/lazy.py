"""Deferred imports: heavy libraries (torch) are imported on first use, so `optlang check` and
`optlang plan` start in well under a second and never pay torch's ≈2 s import.

Use as
    if TYPE_CHECKING:
        import torch
    else:
        torch = lazy_module("torch")
and decorate gradient-free kernels with `no_grad` instead of `@torch.no_grad()` (which would import
torch when the module is imported).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class LazyModule:
    """Stands for a module and imports it on the first attribute access (then caches attributes)."""

    def __init__(self, name: str) -> None:
        self._lazy_name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # keep copy/pickle/introspection from importing the module
        value = getattr(importlib.import_module(self._lazy_name), attr)
        setattr(self, attr, value)  # a module's attributes are fixed once imported: cache them
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_name!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for `import name` that imports it only when an attribute is first used."""
    return LazyModule(name)


def no_grad(fn: F) -> F:
    """`@torch.no_grad()` without importing torch at decoration time."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.no_grad():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
