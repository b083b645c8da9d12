"""The ZDT1-3 and DTLZ1/2/7 test problems as `MultiObjectiveProblem`s, and the analytic Pareto fronts
of ZDT1-3 and DTLZ2 (pymoo's definitions), shared by tests/test_paretom3.py and benchmarks/multiobjective.py.

Test data, not library: optlang/ never imports this module. All objectives are minimized.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from optlang.backends.multiobjective.metrics import das_dennis, nondominated
from optlang.problem import Domain, MultiObjectiveProblem, TorchFunction, Variable

# ----------------------------------------------------------------------------- reference fronts


def zdt_front(which: int, n_points: int = 500) -> np.ndarray:
    """The analytic Pareto front of ZDT1/2/3 (g = 1), non-dominated, (n_points or fewer, 2)."""
    f1 = np.linspace(0.0, 1.0, n_points)
    if which == 1:
        f2 = 1.0 - np.sqrt(f1)
    elif which == 2:
        f2 = 1.0 - f1**2
    elif which == 3:
        f1 = np.linspace(0.0, 0.8518328654, 20 * n_points)
        f2 = 1.0 - np.sqrt(f1) - f1 * np.sin(10.0 * np.pi * f1)
        F = nondominated(np.stack([f1, f2], axis=1))
        idx = np.linspace(0, F.shape[0] - 1, min(n_points, F.shape[0])).round().astype(int)
        return F[idx]
    else:
        raise ValueError("ZDT front known for 1, 2, 3")
    return np.stack([f1, f2], axis=1)


def dtlz2_front(n_partitions: int = 20) -> np.ndarray:
    """Points of the DTLZ2 3-objective front: the unit sphere in the positive orthant."""
    W = das_dennis(n_partitions, 3)
    return W / np.linalg.norm(W, axis=1, keepdims=True)


# ----------------------------------------------------------------------------- problems


def _tf(fn: Callable, source: str) -> TorchFunction:
    return TorchFunction.from_callable(fn, source=source)


def zdt_problem(which: int, n: int = 30, preference: Callable | None = None) -> MultiObjectiveProblem:
    """ZDT1/2/3 (pymoo's definitions) over x ∈ [0, 1]^n; `preference(f1, f2, x)` → scalar tensor or None."""
    import torch

    def g_of(x: torch.Tensor) -> torch.Tensor:
        return 1.0 + 9.0 * x[1:].sum() / (n - 1)

    def f1(v: dict, batch: object = None) -> torch.Tensor:
        return v["x"][0]

    def f2(v: dict, batch: object = None) -> torch.Tensor:
        x = v["x"]
        g = g_of(x)
        r = x[0] / g
        if which == 1:
            return g * (1.0 - torch.sqrt(r))
        if which == 2:
            return g * (1.0 - r**2)
        return g * (1.0 - torch.sqrt(r) - r * torch.sin(10.0 * math.pi * x[0]))

    objectives = (("f1", _tf(f1, "x[0]")), ("f2", _tf(f2, f"zdt{which} f2")))
    pref = None
    if preference is not None:
        pref = _tf(lambda v, batch=None: preference(f1(v), f2(v), v["x"]), "preference")
    var = Variable("x", (n,), Domain("box", 0.0, 1.0))
    return MultiObjectiveProblem(variables=(var,), objectives=objectives, preference=pref)


def dtlz2_problem(n: int = 12, m: int = 3, preference: Callable | None = None) -> MultiObjectiveProblem:
    """DTLZ2 (pymoo's ordering) over x ∈ [0, 1]^n; `preference(F, x)` with F a length-m tensor."""
    import torch

    def objs(x: torch.Tensor) -> list[torch.Tensor]:
        g = ((x[m - 1 :] - 0.5) ** 2).sum()
        c = torch.cos(x[: m - 1] * (math.pi / 2))
        s = torch.sin(x[: m - 1] * (math.pi / 2))
        out = []
        for i in range(m):
            f = 1.0 + g
            for j in range(m - 1 - i):
                f = f * c[j]
            if i > 0:
                f = f * s[m - 1 - i]
            out.append(f)
        return out

    def obj(x: torch.Tensor, i: int) -> torch.Tensor:
        """Objective i alone (the same value as objs(x)[i], without computing the other m − 1)."""
        f = 1.0 + ((x[m - 1 :] - 0.5) ** 2).sum()
        if m - 1 - i > 0:
            f = f * torch.cos(x[: m - 1 - i] * (math.pi / 2)).prod()
        if i > 0:
            f = f * torch.sin(x[m - 1 - i] * (math.pi / 2))
        return f

    objectives = tuple(
        (f"f{i + 1}", _tf(lambda v, batch=None, i=i: obj(v["x"], i), f"dtlz2 f{i + 1}")) for i in range(m)
    )
    pref = None
    if preference is not None:
        pref = _tf(lambda v, batch=None: preference(torch.stack(objs(v["x"])), v["x"]), "preference")
    var = Variable("x", (n,), Domain("box", 0.0, 1.0))
    return MultiObjectiveProblem(variables=(var,), objectives=objectives, preference=pref)


def dtlz_problem(which: int, n: int, m: int = 3) -> MultiObjectiveProblem:
    """DTLZ1, DTLZ2 or DTLZ7 (pymoo's definitions, k = n − m + 1 distance variables) over x ∈ [0, 1]^n."""
    import torch

    if which == 2:
        return dtlz2_problem(n, m)
    if which not in (1, 7):
        raise ValueError("DTLZ1, DTLZ2 and DTLZ7 are defined here")
    k = n - m + 1

    def obj(x: torch.Tensor, i: int) -> torch.Tensor:
        """Objective i alone, by the same operations as when all m were computed together (the same
        values bit for bit), without computing the other m − 1 (as pymoo's vectorized DTLZ does)."""
        if which == 1:
            xm = x[m - 1 :] - 0.5
            g = 100.0 * (k + (xm**2 - torch.cos(20.0 * math.pi * xm)).sum())
            f = 0.5 * (1.0 + g) * torch.prod(x[: m - 1 - i])
            if i > 0:
                f = f * (1.0 - x[m - 1 - i])
            return f
        if i < m - 1:
            return x[i]
        g = 1.0 + 9.0 / k * x[-k:].sum()
        f = x[: m - 1]
        h = m - (f / (1.0 + g) * (1.0 + torch.sin(3.0 * math.pi * f))).sum()
        return (1.0 + g) * h

    objectives = tuple(
        (f"f{i + 1}", _tf(lambda v, batch=None, i=i: obj(v["x"], i), f"dtlz{which} f{i + 1}")) for i in range(m)
    )
    return MultiObjectiveProblem(variables=(Variable("x", (n,), Domain("box", 0.0, 1.0)),), objectives=objectives)
