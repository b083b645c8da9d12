"""Data: load() for every file format and the seeded generators of LANGUAGE.md §4.

Never unpickles (np.load(allow_pickle=False)); checks NaN/inf, shapes and paths; estimates sizes
and refuses what would not fit in memory before allocating it. Errors are DataError with the
span of the load()/generator call, naming the file and the reason.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from optlang.errors import DataError
from optlang.source import Span


@dataclass(frozen=True)
class DataTable:
    """A sample table: X (N × p) features, y (N) target (may be None), column names."""

    name: str
    X: np.ndarray
    y: np.ndarray | None
    columns: tuple[str, ...] = ()
    path: str = ""

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def p(self) -> int:
        return int(self.X.shape[1])


@dataclass(frozen=True)
class Graph:
    """An undirected weighted graph as a symmetric CSR matrix W (zero diagonal)."""

    W: sp.csr_matrix
    path: str = ""

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    @property
    def m(self) -> int:
        return int(sp.triu(self.W, k=1).nnz)

    def laplacian(self) -> sp.csr_matrix:
        deg = np.asarray(self.W.sum(axis=1)).ravel()
        return (sp.diags(deg) - self.W).tocsr()


# ------------------------------------------------------------------ memory
def memory_limit() -> int:
    """Bytes a single model may allocate: OPTLANG_MAX_BYTES, else 80% of physical memory."""
    env = os.environ.get("OPTLANG_MAX_BYTES")
    if env:
        return int(float(env))
    try:
        return int(0.8 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def check_size(nbytes: float, what: str, span: Span | None) -> None:
    """Refuse an allocation that would not fit, before it happens."""
    limit = memory_limit()
    if nbytes > limit:
        raise DataError(
            f"{what} would need {_human(nbytes)}, more than the {_human(limit)} this machine allows",
            span,
            hint="use a smaller size, or a sparse generator (erdos_renyi, random_regular, torus)",
            code="E610",
        )


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024:
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EB"


def check_finite(arr: Any, what: str, span: Span | None) -> None:
    vals = arr.data if sp.issparse(arr) else np.asarray(arr)
    if vals.dtype.kind in "fc" and not np.all(np.isfinite(vals)):
        bad = np.argwhere(~np.isfinite(vals))[0] if not sp.issparse(arr) else None
        where = f" (first at index {tuple(int(i) for i in bad)})" if bad is not None else ""
        raise DataError(
            f"{what} contains NaN or infinite values{where}",
            span,
            hint="clean the data, or drop the rows with missing values",
            code="E603",
        )


# ------------------------------------------------------------------ load
def load(path: str, base_dir: Path, span: Span | None, kind: str = "param", **kw: Any) -> Any:
    """Read a file by extension; returns ndarray / sparse / DataTable / Graph by `kind`.

    kind: "param" (arrays), "data" (a DataTable; .csv with target=), "graph" (a Graph).
    """
    p = Path(path)
    if not p.is_absolute():
        p = base_dir / p
    if not p.exists():
        raise DataError(
            f"file not found: {path} (looked in {p.parent})",
            span,
            hint="paths are relative to the folder of the model file",
            code="E601",
        )
    if p.is_dir():
        raise DataError(f"{path} is a folder, not a file", span, code="E601")
    ext = p.suffix.lower()
    check_size(p.stat().st_size * (3 if ext in (".csv", ".txt", ".json", ".mtx", "") else 1), f"loading {path}", span)
    allowed = {"param": {"key"}, "data": {"target", "key"}, "graph": set()}[kind]
    for k in kw:
        if k not in allowed:
            raise DataError(
                f"load() for a {kind} has no argument '{k}'",
                span,
                hint=f"accepted: {', '.join(sorted(allowed)) or 'none'}",
                code="E604",
            )
    try:
        if kind == "graph":
            return _load_graph(p, path, span)
        if ext == ".npy":
            arr = _load_npy(p, path, span)
        elif ext == ".npz":
            arr = _load_npz(p, path, span, kw.get("key"))
        elif ext == ".csv":
            table = _load_csv(p, path, span, kw.get("target"))
            if kind == "data":
                return table
            arr = table.X if table.y is None else np.column_stack([table.X, table.y])
        elif ext == ".mtx":
            import scipy.io

            arr = scipy.io.mmread(str(p))
            arr = arr.tocsr() if sp.issparse(arr) else np.asarray(arr, dtype=np.float64)
        elif ext == ".json":
            arr = _load_json(p, path, span, kw.get("key"))
        else:
            raise DataError(
                f"cannot read '{path}': unknown file type '{ext or '(none)'}'",
                span,
                hint="use .npy, .npz, .csv, .mtx, .json, or a Gset/edge-list .txt for graphs",
                code="E602",
            )
    except DataError:
        raise
    except (ValueError, OSError, KeyError, IndexError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read '{path}': {e}", span, code="E602") from None
    check_finite(arr, f"'{path}'", span)
    if kind == "data":
        a = np.asarray(arr.toarray() if sp.issparse(arr) else arr, dtype=np.float64)
        if a.ndim != 2:
            raise DataError(f"a data table needs a 2-D array, '{path}' holds {a.ndim}-D", span, code="E605")
        return DataTable("", a, None, tuple(f"x{i}" for i in range(a.shape[1])), str(p))
    return arr


def _load_npy(p: Path, path: str, span: Span | None) -> np.ndarray:
    try:
        arr = np.load(p, allow_pickle=False, mmap_mode="r")
    except ValueError as e:
        raise DataError(f"cannot read '{path}': {e} (object arrays are never unpickled)", span, code="E602") from None
    check_size(arr.nbytes, f"loading {path}", span)
    return np.asarray(arr, dtype=np.float64)


def _load_npz(p: Path, path: str, span: Span | None, key: str | None) -> Any:
    with np.load(p, allow_pickle=False) as z:
        keys = list(z.keys())
        if {"data", "indices", "indptr", "shape"} <= set(keys) and key is None:
            return sp.load_npz(p).tocsr().astype(np.float64)
        if key is None:
            if len(keys) != 1:
                raise DataError(
                    f"'{path}' holds several arrays ({', '.join(keys)}): choose one with key = \"...\"",
                    span,
                    code="E604",
                )
            key = keys[0]
        if key not in keys:
            raise DataError(f"'{path}' has no array '{key}'", span, hint=f"it holds: {', '.join(keys)}", code="E604")
        return np.asarray(z[key], dtype=np.float64)


def _load_csv(p: Path, path: str, span: Span | None, target: str | None) -> DataTable:
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(f"'{path}' is empty", span, code="E602") from None
        rows = [r for r in reader if r]
    header = [h.strip() for h in header]
    try:
        arr = np.array([[float(v) if v.strip() != "" else np.nan for v in r] for r in rows], dtype=np.float64)
    except ValueError as e:
        raise DataError(
            f"'{path}' has a non-numeric value: {e}",
            span,
            hint="every column of a data table must be numeric (encode categories as 0/1)",
            code="E602",
        ) from None
    if arr.ndim != 2 or arr.shape[1] != len(header):
        raise DataError(f"'{path}' rows do not all have {len(header)} columns", span, code="E602")
    check_finite(arr, f"'{path}'", span)
    if target is None:
        return DataTable("", arr, None, tuple(header), str(p))
    if target not in header:
        import difflib

        close = difflib.get_close_matches(target, header, n=1)
        raise DataError(
            f"'{path}' has no column '{target}'",
            span,
            hint=(f"did you mean '{close[0]}'?" if close else f"columns: {', '.join(header)}"),
            code="E604",
        )
    j = header.index(target)
    X = np.delete(arr, j, axis=1)
    return DataTable("", X, arr[:, j].copy(), tuple(h for h in header if h != target), str(p))


def _load_json(p: Path, path: str, span: Span | None, key: str | None) -> Any:
    obj = json.loads(p.read_text(encoding="utf-8"))
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            raise DataError(f"'{path}' has no entry '{key}'", span, code="E604")
        obj = obj[key]
    if isinstance(obj, dict) and "edges" in obj:
        return _graph_from_edges(int(obj["n"]), np.asarray(obj["edges"], dtype=np.float64), path, span).W
    return np.asarray(obj, dtype=np.float64)


def _load_graph(p: Path, path: str, span: Span | None) -> Graph:
    ext = p.suffix.lower()
    if ext == ".mtx":
        import scipy.io

        W = sp.csr_matrix(scipy.io.mmread(str(p)), dtype=np.float64)
        if W.shape[0] != W.shape[1]:
            raise DataError(f"'{path}' is not a square matrix, so not a graph", span, code="E605")
        if (abs(W - W.T) > 1e-12).nnz:  # each edge given once, in either triangle
            return Graph(_symmetrize(W), str(p))
        W = W - sp.diags(W.diagonal())
        W.eliminate_zeros()
        return Graph(W.tocsr(), str(p))
    if ext == ".json":
        obj = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(obj, dict) or "edges" not in obj or "n" not in obj:
            raise DataError(
                f'\'{path}\' is not a graph: expected {{"n": N, "edges": [[i, j, w], ...]}}', span, code="E605"
            )
        return _graph_from_edges(
            int(obj["n"]),
            np.asarray(obj["edges"], dtype=np.float64),
            path,
            span,
            one_based=bool(obj.get("one_based", False)),
        )
    if ext in (".npz",):
        return Graph(_symmetrize(sp.load_npz(p).tocsr().astype(np.float64)), str(p))
    return _load_edge_list(p, path, span)


def _load_edge_list(p: Path, path: str, span: Span | None) -> Graph:
    """Gset / edge-list text: a header `n m`, then m lines `i j [w]`, 1-based."""
    with open(p, encoding="utf-8") as f:
        header = f.readline().split()
        if len(header) < 2:
            raise DataError(f"'{path}': the first line must be `n m` (nodes and edges)", span, code="E605")
        try:
            n, m = int(header[0]), int(header[1])
        except ValueError:
            raise DataError(
                f"'{path}': the first line must be two integers `n m`, got '{' '.join(header)}'", span, code="E605"
            ) from None
        check_size(m * 40.0, f"graph '{path}'", span)
        body = np.loadtxt(f, dtype=np.float64, ndmin=2) if m else np.zeros((0, 3))
    if body.shape[0] != m:
        raise DataError(f"'{path}': the header says {m} edges but the file has {body.shape[0]}", span, code="E605")
    if body.shape[1] == 2:
        body = np.column_stack([body, np.ones(m)])
    return _graph_from_edges(n, body[:, :3], path, span, one_based=True)


def _graph_from_edges(n: int, edges: np.ndarray, path: str, span: Span | None, one_based: bool = False) -> Graph:
    if edges.size == 0:
        return Graph(sp.csr_matrix((n, n)), path)
    if edges.ndim != 2 or edges.shape[1] not in (2, 3):
        raise DataError(f"'{path}': edges must be rows `i j [w]`", span, code="E605")
    check_finite(edges, f"'{path}'", span)
    i = edges[:, 0].astype(np.int64) - (1 if one_based else 0)
    j = edges[:, 1].astype(np.int64) - (1 if one_based else 0)
    w = edges[:, 2] if edges.shape[1] == 3 else np.ones(len(i))
    if i.min() < 0 or j.min() < 0 or i.max() >= n or j.max() >= n:
        raise DataError(
            f"'{path}': an edge names a node outside 1..{n}"
            if one_based
            else f"'{path}': an edge names a node outside 0..{n - 1}",
            span,
            code="E605",
        )
    keep = i != j
    A = sp.coo_matrix((w[keep], (i[keep], j[keep])), shape=(n, n)).tocsr()
    return Graph(_symmetrize(A), path)


def _symmetrize(A: sp.csr_matrix) -> sp.csr_matrix:
    """Edges given once (either direction) become a symmetric W; zero diagonal."""
    U = sp.triu(A, k=1) + sp.tril(A, k=-1).T
    W = (U + U.T).tocsr()
    W.eliminate_zeros()
    return W


# ------------------------------------------------------------------ generators
def dense_generator(name: str, dims: list[int], seed: int | None, span: Span | None) -> np.ndarray:
    """zeros, ones, eye, randn, rand — seeded; size-checked before allocation."""
    if not 1 <= len(dims) <= 2:
        raise DataError(f"{name}() takes one or two dimensions, got {len(dims)}", span, code="E606")
    for d in dims:
        if d < 0:
            raise DataError(f"{name}() dimensions must be non-negative, got {d}", span, code="E606")
    check_size(8.0 * float(np.prod(dims, dtype=np.float64)), f"{name}({', '.join(map(str, dims))})", span)
    rng = np.random.default_rng(seed)
    shape = tuple(dims)
    if name == "zeros":
        return np.zeros(shape)
    if name == "ones":
        return np.ones(shape)
    if name == "eye":
        if len(dims) != 1:
            raise DataError("eye(n) takes one dimension", span, code="E606")
        return np.eye(dims[0])
    if name == "randn":
        return rng.standard_normal(shape)
    return rng.random(shape)


def _weights(m: int, weights: str, rng: np.random.Generator, span: Span | None) -> np.ndarray:
    if weights == "unit":
        return np.ones(m)
    if weights == "signed":
        return rng.choice(np.array([-1.0, 1.0]), size=m)
    if weights == "uniform":
        return rng.random(m)
    raise DataError(f"unknown weights '{weights}'", span, hint='use "unit", "signed" (±1) or "uniform"', code="E606")


def erdos_renyi(n: int, p: float, seed: int | None, weights: str, span: Span | None) -> Graph:
    """G(n, p): the number of edges is Binomial(n(n−1)/2, p), the pairs drawn without replacement."""
    if n < 1 or not 0.0 <= p <= 1.0:
        raise DataError(f"erdos_renyi needs n ≥ 1 and 0 ≤ p ≤ 1, got n = {n}, p = {p}", span, code="E606")
    rng = np.random.default_rng(seed)
    pairs = n * (n - 1) // 2
    m = int(rng.binomial(pairs, p)) if pairs else 0
    check_size(m * 48.0, f"erdos_renyi({n}, {p})", span)
    idx = np.sort(rng.choice(pairs, size=m, replace=False)) if m else np.zeros(0, dtype=np.int64)
    # linear index k over pairs (i < j), row-major: row i starts at i*n - i*(i+1)/2
    i = (n - 2 - np.floor(np.sqrt(-8 * idx + 4 * n * (n - 1) - 7) / 2.0 - 0.5)).astype(np.int64)
    j = (idx + i + 1 - n * (n - 1) // 2 + (n - i) * ((n - i) - 1) // 2).astype(np.int64)
    w = _weights(m, weights, rng, span)
    return _graph_from_edges(n, np.column_stack([i, j, w]), "erdos_renyi", span)


def random_regular(n: int, d: int, seed: int | None, weights: str, span: Span | None) -> Graph:
    """A uniformly random simple d-regular graph by the configuration model with rejection.

    Stub pairings are redrawn until simple (for small d this takes a few tries at any n); after 500
    tries the self-loops and repeated edges of the last pairing are dropped (documented).
    """
    if n < 1 or d < 0 or d >= n or (n * d) % 2:
        raise DataError(f"random_regular needs 0 ≤ d < n and n·d even, got n = {n}, d = {d}", span, code="E606")
    check_size(n * d * 48.0, f"random_regular({n}, {d})", span)
    rng = np.random.default_rng(seed)
    stubs = np.repeat(np.arange(n, dtype=np.int64), d)
    for _ in range(500):
        perm = rng.permutation(stubs)
        a, b = perm[0::2], perm[1::2]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = lo * n + hi
        if np.all(lo != hi) and np.unique(key).size == key.size:
            break
    keep = lo != hi
    key = lo[keep] * n + hi[keep]
    key = np.unique(key)
    lo, hi = key // n, key % n
    w = _weights(lo.size, weights, rng, span)
    return _graph_from_edges(n, np.column_stack([lo, hi, w]), "random_regular", span)


def torus(rows: int, cols: int, seed: int | None, weights: str, span: Span | None) -> Graph:
    """A 2-D periodic grid rows × cols (torus(1, n) is a ring of n nodes); repeated edges merged."""
    if rows < 1 or cols < 1 or rows * cols < 2:
        raise DataError(f"torus needs at least two nodes, got {rows} × {cols}", span, code="E606")
    check_size(rows * cols * 4 * 48.0, f"torus({rows}, {cols})", span)
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    pairs = []
    if cols > 1:
        pairs.append(np.column_stack([idx.ravel(), np.roll(idx, -1, axis=1).ravel()]))
    if rows > 1:
        pairs.append(np.column_stack([idx.ravel(), np.roll(idx, -1, axis=0).ravel()]))
    e = np.concatenate(pairs)
    lo, hi = np.minimum(e[:, 0], e[:, 1]), np.maximum(e[:, 0], e[:, 1])
    key = np.unique(lo[lo != hi] * (rows * cols) + hi[lo != hi])
    lo, hi = key // (rows * cols), key % (rows * cols)
    rng = np.random.default_rng(seed)
    w = _weights(lo.size, weights, rng, span)
    return _graph_from_edges(rows * cols, np.column_stack([lo, hi, w]), "torus", span)
