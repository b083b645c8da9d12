"""Regenerates the small data files shipped beside the example models (seeded, deterministic).

Run from the repo root: python models/make_data.py
"""

from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent


def housing(n: int = 300, p: int = 5, seed: int = 0) -> None:
    """train.csv: a regression table whose target is right-skewed (rare expensive houses)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w = np.array([1.5, -1.0, 0.5, 0.0, 2.0])[:p]
    y = np.exp(0.35 * (X @ w) + 0.2 * rng.standard_normal(n)) * 10.0
    header = ",".join([f"x{i}" for i in range(p)] + ["y"])
    np.savetxt(HERE / "train.csv", np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.6f")


def small_graph(seed: int = 1) -> None:
    """petersen.mtx: the Petersen graph (max cut 12) in Matrix Market format."""
    outer = [(i, (i + 1) % 5) for i in range(5)]
    spokes = [(i, i + 5) for i in range(5)]
    inner = [(5 + i, 5 + (i + 2) % 5) for i in range(5)]
    e = np.array(outer + spokes + inner)
    W = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(10, 10))
    scipy.io.mmwrite(str(HERE / "petersen.mtx"), W, symmetry="general")


if __name__ == "__main__":
    housing()
    small_graph()
