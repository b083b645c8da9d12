"""Static types of IR nodes: element kind, shape, sample axis, sparsity; broadcasting rules."""

from __future__ import annotations

from dataclasses import dataclass

REAL, SPIN, BINARY = "real", "spin", "binary"


@dataclass(frozen=True)
class Type:
    """kind: real|spin|binary; shape: () scalar, (n,) vector, (m, n) matrix; sample: the data table
    whose rows index axis 0 (an expectation axis), or None; sparse: a scipy sparse constant;
    vars: the decision variables the value depends on (empty = compile-time constant)."""

    kind: str = REAL
    shape: tuple[int, ...] = ()
    sample: str | None = None
    sparse: bool = False
    vars: frozenset[str] = frozenset()

    @property
    def const(self) -> bool:
        return not self.vars

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def discrete(self) -> bool:
        return self.kind in (SPIN, BINARY)

    def describe(self) -> str:
        if not self.shape:
            s = "scalar"
        elif len(self.shape) == 1:
            s = f"vector[{self.shape[0]}]"
        else:
            s = ("sparse " if self.sparse else "") + "matrix[" + ", ".join(map(str, self.shape)) + "]"
        if self.kind != REAL:
            s = f"{self.kind} {s}"
        if self.sample:
            s += f" (samples of {self.sample})"
        return s


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy broadcasting of two shapes, or None when they do not broadcast."""
    out = []
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    longer = a if len(a) > len(b) else b
    out.extend(reversed(longer[: abs(len(a) - len(b))]))
    return tuple(reversed(out))


def join_sample(a: str | None, b: str | None) -> str | None | bool:
    """The sample axis of a combination; False when two different tables meet."""
    if a and b and a != b:
        return False
    return a or b


def join_kind(kinds: list[str]) -> str:
    """Arithmetic on spins/binaries stays of that kind only when alone; mixed → real."""
    ks = set(kinds)
    return ks.pop() if len(ks) == 1 else REAL
