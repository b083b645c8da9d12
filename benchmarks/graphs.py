"""Graphs for training, tests and benchmarks: seeded generators and the Gset reader.

Families: Erdős–Rényi (unit or ±1 weights), random d-regular, 2-D torus with ±1 weights.
Gset files are read by `read_gset`, which is the language's own reader (optlang.data, what
`load("G1.txt")` in a model uses), so benchmarks and models see the same matrix.
All return symmetric scipy CSR float64 with zero diagonal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

FAMILIES = ("er", "er_signed", "regular", "torus_signed")


def _sym(n: int, i: np.ndarray, j: np.ndarray, w: np.ndarray) -> sp.csr_matrix:
    W = sp.coo_matrix((w, (i, j)), shape=(n, n)).tocsr()
    W = (W + W.T).tocsr()
    W.setdiag(0.0)
    W.eliminate_zeros()
    return W


def erdos_renyi(n: int, p: float, rng: np.random.Generator, signed: bool = False) -> sp.csr_matrix:
    """G(n, p), weights 1 (or ±1 with equal chance when signed)."""
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    i, j = iu[keep], ju[keep]
    w = rng.choice([-1.0, 1.0], size=i.size) if signed else np.ones(i.size)
    return _sym(n, i, j, w)


def random_regular(n: int, d: int, rng: np.random.Generator) -> sp.csr_matrix:
    """A random d-regular graph with unit weights (n·d must be even); networkx is the `train` extra."""
    import networkx as nx

    G = nx.random_regular_graph(d, n, seed=int(rng.integers(2**31)))
    e = np.array(G.edges(), dtype=np.int64).reshape(-1, 2)
    return _sym(n, e[:, 0], e[:, 1], np.ones(len(e)))


def torus(rows: int, cols: int, rng: np.random.Generator, signed: bool = True) -> sp.csr_matrix:
    """2-D periodic grid (rows × cols), ±1 weights when signed (a spin glass), else unit."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    i = np.concatenate([idx.ravel(), idx.ravel()])
    j = np.concatenate([np.roll(idx, -1, 1).ravel(), np.roll(idx, -1, 0).ravel()])
    w = rng.choice([-1.0, 1.0], size=i.size) if signed else np.ones(i.size)
    return _sym(rows * cols, i, j, w)


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
    from optlang.data import load

    p = Path(path)
    return load(str(p), p.parent, None, kind="graph").W


def shared_data_dir() -> Path:
    """../shared/data next to the repository (override with OPTLANG_SHARED_DATA)."""
    import os

    env = os.environ.get("OPTLANG_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"
