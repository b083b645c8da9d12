"""Graphs for training, tests and benchmarks: named families over the language's generators, and the Gset reader.

The generators are the language's own (optlang.data: `erdos_renyi`, `random_regular`, `torus`, what
a model's `graph G = ...` draws), called here with a numpy Generator as the seed: one implementation,
memory-bounded, no optional dependency. Families: Erdős–Rényi (unit or ±1 weights), random d-regular,
2-D torus with ±1 weights. Gset files are read by `read_gset`, the language's own reader (what
`load("G1.txt")` in a model uses), so benchmarks and models see the same matrix.
All return symmetric scipy CSR float64 with zero diagonal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from optlang import data

FAMILIES = ("er", "er_signed", "regular", "torus_signed")


def erdos_renyi(n: int, p: float, rng: np.random.Generator, signed: bool = False) -> sp.csr_matrix:
    """G(n, p), weights 1 (or ±1 with equal chance when signed)."""
    return data.erdos_renyi(n, p, rng, "signed" if signed else "unit", None).W


def random_regular(n: int, d: int, rng: np.random.Generator, signed: bool = False) -> sp.csr_matrix:
    """A random simple d-regular graph (n·d must be even), weights 1 (or ±1 when signed)."""
    return data.random_regular(n, d, rng, "signed" if signed else "unit", None).W


def torus(rows: int, cols: int, rng: np.random.Generator, signed: bool = True) -> sp.csr_matrix:
    """2-D periodic grid (rows × cols), ±1 weights when signed (a spin glass), else unit."""
    return data.torus(rows, cols, rng, "signed" if signed else "unit", None).W


def generate(family: str, n: int, rng: np.random.Generator) -> sp.csr_matrix:
    """One graph of about n nodes from a named family (torus: the nearest rows × cols)."""
    if family == "er":
        return erdos_renyi(n, float(rng.uniform(0.05, 0.5)), rng)
    if family == "er_signed":
        return erdos_renyi(n, float(rng.uniform(0.05, 0.5)), rng, signed=True)
    if family == "regular":
        d = int(rng.choice([3, 4, 5, 6, 8]))
        n2 = n + (n * d) % 2
        return random_regular(n2, d, rng)
    if family == "torus_signed":
        r = max(3, int(round(np.sqrt(n))))
        return torus(r, max(3, n // r), rng)
    raise ValueError(f"unknown graph family {family!r}; known: {', '.join(FAMILIES)}")


def read_gset(path: str | Path) -> sp.csr_matrix:
    """A Gset / rudy edge list ("n m", then m lines "i j [w]", 1-based) → symmetric weights W (CSR)."""
    p = Path(path)
    return data.load(str(p), p.parent, None, kind="graph").W


def shared_data_dir() -> Path:
    """../shared/data next to the repository (override with OPTLANG_SHARED_DATA)."""
    import os

    env = os.environ.get("OPTLANG_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"
