"""Data: load() for every file format and the seeded generators of LANGUAGE.md §4.

Never unpickles (np.load(allow_pickle=False)); checks NaN/inf, shapes and paths; estimates sizes
and refuses what would not fit in memory before allocating it. Errors are DataError with the
span of the load()/generator call, naming the file and the reason.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zipfile import BadZipFile

import numpy as np
import scipy.sparse as sp

from optlang import memory
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


# ------------------------------------------------------------------ memory and limits
MAX_NODES = 2**31 - 1  # graph sizes beyond int32 indices are refused (and would not fit anyway)
MAX_ABS_WEIGHT = 1e12  # larger edge weights overflow the backends' float32 sums: refused with the line
MAX_JSON_DEPTH = 64  # JSON nested deeper than this is not an array or a graph
# a text number needs ≥ 2 bytes ("1,") and becomes a Python float in a list (≈ 32 bytes) before numpy
TEXT_EXPANSION = 20.0


def memory_limit() -> int:
    """Bytes a single model may allocate (see optlang.memory: --memory-limit, OPTLANG_MEMORY_LIMIT)."""
    return memory.limit()


def check_size(nbytes: float, what: str, span: Span | None) -> None:
    """Refuse an allocation that would not fit, before it happens."""
    memory.check(
        nbytes, what, span, hint="use a smaller size, or a sparse generator (erdos_renyi, random_regular, torus)"
    )


_human = memory.human


def snippet(text: object, limit: int = 24) -> str:
    """At most `limit` characters of file content, escaped (never echo a file into an error)."""
    s = str(text)
    short = s[:limit]
    return repr(short)[1:-1] + ("…" if len(s) > limit else "")


def check_finite(arr: Any, what: str, span: Span | None, line_of: Any = None) -> None:
    """Reject NaN/inf (and complex) values, naming the first bad index or line."""
    vals = arr.data if sp.issparse(arr) else np.asarray(arr)
    if vals.dtype.kind == "c":
        raise DataError(f"{what} holds complex numbers", span, hint="optlang models are real-valued", code="E603")
    if vals.dtype.kind == "f" and not np.all(np.isfinite(vals)):
        where = ""
        if not sp.issparse(arr):
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(vals))[0])
            where = f" (line {line_of(bad[0])})" if line_of is not None else f" (first at index {bad})"
        raise DataError(
            f"{what} contains NaN or infinite values{where}",
            span,
            hint="clean the data, or drop the rows with missing values",
            code="E603",
        )


def _numeric(arr: np.ndarray, path: str, span: Span | None) -> np.ndarray:
    """A real numeric array as float64; structured, string, object and complex arrays are refused."""
    kind = arr.dtype.kind
    if arr.dtype.names is not None or kind not in "biuf":
        what = {"c": "complex numbers", "V": "a structured array", "U": "text", "S": "bytes", "O": "objects"}
        raise DataError(
            f"'{path}' holds {what.get(kind, f'values of type {arr.dtype}')}, not real numbers",
            span,
            hint="save a plain float or integer array",
            code="E602",
        )
    return np.asarray(arr, dtype=np.float64)


# ------------------------------------------------------------------ paths
def confine(p: Path, path: str, roots: Sequence[Path] | None, span: Span | None) -> Path:
    """The path, if it lies lexically inside one of `roots` (None: anywhere, as for CLI overrides).

    `..` and absolute paths are normalised first; symbolic links placed inside a root by the folder's
    owner are followed (the model text cannot create them, only name them).
    """
    real = Path(os.path.abspath(p))
    if roots is None:
        return real
    for r in roots:
        if real.is_relative_to(Path(os.path.abspath(r))):
            return real
    raise DataError(
        f"load() may only read files inside the model's folder; '{snippet(path, 80)}' is outside it",
        span,
        hint="move the file next to the model, or allow its folder: --allow-path DIR (API: allow_paths=[...])",
        code="E611",
    )


# ------------------------------------------------------------------ load
def load(
    path: str,
    base_dir: Path,
    span: Span | None,
    kind: str = "param",
    roots: Sequence[Path] | None = None,
    base_label: str = "the folder of the model file",
    **kw: Any,
) -> Any:
    """Read a file by extension; returns ndarray / sparse / DataTable / Graph by `kind`.

    kind: "param" (arrays), "data" (a DataTable; .csv with target=), "graph" (a Graph).
    roots: folders the file must lie in (None: unconfined); base_label names base_dir in hints.
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise DataError('load() takes a path: load("file.csv")', span, code="E604")
    allowed = {"param": {"key"}, "data": {"target", "key"}, "graph": set()}[kind]
    for k, v in kw.items():
        if k not in allowed:
            raise DataError(
                f"load() for a {kind} has no argument '{k}'",
                span,
                hint=f"accepted: {', '.join(sorted(allowed)) or 'none'}",
                code="E604",
            )
        if v is not None and not isinstance(v, str):
            raise DataError(
                f"load() argument '{k}' must be a string naming a column or an entry",
                span,
                hint=f'{k} = "name"',
                code="E604",
            )
    p = Path(path)
    if not p.is_absolute():
        p = base_dir / p
    p = confine(p, path, roots, span)
    try:
        exists, is_dir = p.exists(), p.is_dir()
    except OSError:
        exists, is_dir = False, False
    if not exists:
        raise DataError(
            f"file not found: {snippet(path, 80)} (looked in {p.parent})",
            span,
            hint=f"paths are relative to {base_label}",
            code="E601",
        )
    if is_dir:
        raise DataError(f"{snippet(path, 80)} is a folder, not a file", span, code="E601")
    ext = p.suffix.lower()
    size = p.stat().st_size
    if ext in (".csv", ".txt", ".json", ".mtx", ""):
        # an edge-list line "1 2 1" (6 bytes) becomes a string and three floats in lists: ~40×
        factor = 2 * TEXT_EXPANSION if kind == "graph" and ext in (".txt", "") else TEXT_EXPANSION
        check_size(size * factor, f"loading {path}", span)
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
            arr = _load_mtx(p, path, span)
        elif ext == ".json":
            arr = _load_json(p, path, span, kw.get("key"))
        else:
            raise DataError(
                f"cannot read '{snippet(path, 80)}': unknown file type '{snippet(ext or '(none)')}'",
                span,
                hint="use .npy, .npz, .csv, .mtx, .json, or a Gset/edge-list .txt for graphs",
                code="E602",
            )
    except DataError:
        raise
    except RecursionError:
        raise DataError(f"cannot read '{path}': nested too deeply", span, code="E602") from None
    except (ValueError, OSError, KeyError, IndexError, TypeError, UnicodeDecodeError, EOFError, BadZipFile) as e:
        raise DataError(f"cannot read '{path}': {type(e).__name__}: {snippet(e, 60)}", span, code="E602") from None
    if sp.issparse(arr):
        arr = arr.tocsr().astype(np.float64)
    check_finite(arr, f"'{path}'", span)
    if kind == "data":
        a = np.asarray(arr.toarray() if sp.issparse(arr) else arr, dtype=np.float64)
        if a.ndim != 2:
            raise DataError(f"a data table needs a 2-D array, '{path}' holds {a.ndim}-D", span, code="E605")
        return DataTable("", a, None, tuple(f"x{i}" for i in range(a.shape[1])), str(p))
    return arr


def _npy_header(f: Any, path: str, span: Span | None) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from an .npy header, read without touching the data."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    return tuple(int(d) for d in shape), dtype


def _load_npy(p: Path, path: str, span: Span | None) -> np.ndarray:
    with open(p, "rb") as f:
        shape, dtype = _npy_header(f, path, span)
    if dtype.hasobject:
        raise DataError(f"cannot read '{path}': it holds Python objects (never unpickled)", span, code="E602")
    check_size(memory.dense_bytes(shape, 8.0 * memory.CONSTANT_COPIES + dtype.itemsize), f"loading {path}", span)
    try:
        arr = np.load(p, allow_pickle=False, mmap_mode="r")
    except ValueError as e:
        raise DataError(
            f"cannot read '{path}': {snippet(e, 60)} (object arrays are never unpickled)", span, code="E602"
        ) from None
    return _numeric(np.asarray(arr), path, span)


def _npz_sizes(z: Any, path: str, span: Span | None) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Each member's shape and dtype from its header: the decompressed size is known before reading."""
    out = {}
    for info in z.zip.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        with z.zip.open(info) as f:
            out[name] = _npy_header(f, path, span)
    total = sum(memory.dense_bytes(s, 8.0 * memory.CONSTANT_COPIES + d.itemsize) for s, d in out.values())
    check_size(total, f"loading {path} (decompressed)", span)
    return out


def _load_npz(p: Path, path: str, span: Span | None, key: str | None) -> Any:
    with np.load(p, allow_pickle=False) as z:
        headers = _npz_sizes(z, path, span)
        keys = list(z.keys())
        if {"data", "indices", "indptr", "shape"} <= set(keys) and key is None:
            shape = tuple(int(d) for d in z["shape"])
            if len(shape) != 2 or min(shape) < 0:
                raise DataError(f"'{path}' holds a sparse matrix with a bad shape", span, code="E602")
            check_size(8.0 * (shape[0] + 1), f"loading {path}", span)
            W = sp.load_npz(p).tocsr()
            _numeric(W.data, path, span)
            return W.astype(np.float64)
        if key is None:
            if len(keys) != 1:
                raise DataError(
                    f"'{path}' holds several arrays ({snippet(', '.join(keys), 80)}): choose one with key = \"...\"",
                    span,
                    code="E604",
                )
            key = keys[0]
        if key not in keys:
            raise DataError(
                f"'{path}' has no array '{snippet(key)}'",
                span,
                hint=f"it holds: {snippet(', '.join(keys), 80)}",
                code="E604",
            )
        if headers.get(key, (None, np.dtype("f8")))[1].hasobject:
            raise DataError(f"cannot read '{path}': '{key}' holds Python objects (never unpickled)", span, code="E602")
        return _numeric(np.asarray(z[key]), path, span)


def _mtx_info(p: Path, path: str, span: Span | None) -> tuple[int, int, int, str, str]:
    """rows, cols, entries, format, field of a Matrix Market file, from its header; sizes checked."""
    import scipy.io

    rows, cols, entries, fmt, field, _sym = scipy.io.mminfo(str(p))
    if field == "complex":
        raise DataError(f"'{path}' holds complex numbers", span, hint="optlang models are real-valued", code="E603")
    if fmt == "array":
        check_size(memory.dense_bytes((rows, cols), 8.0 * memory.CONSTANT_COPIES + 16.0), f"loading {path}", span)
    else:
        if max(rows, cols) > MAX_NODES:
            raise DataError(f"'{path}' declares {rows} × {cols}: too large", span, code="E610")
        check_size(memory.graph_bytes(max(rows, cols), 2 * entries), f"loading {path}", span)
    return int(rows), int(cols), int(entries), str(fmt), str(field)


def _load_mtx(p: Path, path: str, span: Span | None) -> Any:
    import scipy.io

    _mtx_info(p, path, span)
    arr = scipy.io.mmread(str(p))
    if sp.issparse(arr):
        return sp.csr_matrix(arr, dtype=np.float64) if arr.dtype.kind in "biuf" else _numeric(arr.data, path, span)
    return _numeric(np.asarray(arr), path, span)


def _line_of(header_lines: int) -> Any:
    return lambda row: row + 1 + header_lines


def _load_csv(p: Path, path: str, span: Span | None, target: str | None) -> DataTable:
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(f"'{path}' is empty", span, code="E602") from None
        header = [h.strip() for h in header]
        rows: list[list[float]] = []
        lines: list[int] = []
        for r in reader:
            if not r:
                continue
            line = reader.line_num
            if len(r) != len(header):
                raise DataError(
                    f"'{path}' line {line} has {len(r)} values, the header names {len(header)} columns",
                    span,
                    hint="every row needs one value per column",
                    code="E602",
                )
            row = []
            for v in r:
                s = v.strip()
                if s == "":
                    row.append(np.nan)
                    continue
                try:
                    x = float(s)
                except ValueError:
                    raise DataError(
                        f"'{path}' line {line} has a non-numeric value '{snippet(s)}'",
                        span,
                        hint="every column of a data table must be numeric (encode categories as 0/1)",
                        code="E602",
                    ) from None
                row.append(x)
            rows.append(row)
            lines.append(line)
    arr = np.array(rows, dtype=np.float64).reshape(len(rows), len(header))
    check_finite(arr, f"'{path}'", span, line_of=lambda r: lines[r])
    if target is None:
        return DataTable("", arr, None, tuple(header), str(p))
    if target not in header:
        import difflib

        close = difflib.get_close_matches(target, header, n=1)
        raise DataError(
            f"'{path}' has no column '{snippet(target)}'",
            span,
            hint=(f"did you mean '{snippet(close[0])}'?" if close else f"columns: {snippet(', '.join(header), 80)}"),
            code="E604",
        )
    j = header.index(target)
    X = np.delete(arr, j, axis=1)
    return DataTable("", X, arr[:, j].copy(), tuple(h for h in header if h != target), str(p))


def _json_depth_ok(text: str) -> bool:
    """True when brackets nest at most MAX_JSON_DEPTH deep (checked before json.loads recurses)."""
    depth = 0
    deepest = 0
    in_str = False
    esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    return False
        elif ch in "]}":
            depth -= 1
    return True


def _read_json(p: Path, path: str, span: Span | None) -> Any:
    text = p.read_text(encoding="utf-8")
    if not _json_depth_ok(text):
        raise DataError(f"'{path}' is nested more than {MAX_JSON_DEPTH} levels deep", span, code="E602")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise DataError(
            f"'{path}' is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", span, code="E602"
        ) from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def _json_array(obj: Any, path: str, span: Span | None) -> np.ndarray:
    if isinstance(obj, bool) or (not isinstance(obj, (int, float, list))):
        raise DataError(
            f"'{path}' must hold a number or a (nested) list of numbers, not a {type(obj).__name__}",
            span,
            hint='choose an entry with key = "..."' if isinstance(obj, dict) else None,
            code="E602",
        )
    try:
        arr = np.array(obj, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        raise DataError(
            f"'{path}' is not a rectangular array of numbers", span, hint="every row needs the same length", code="E602"
        ) from None
    return arr


def _load_json(p: Path, path: str, span: Span | None, key: str | None) -> Any:
    obj = _read_json(p, path, span)
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            raise DataError(f"'{path}' has no entry '{snippet(key)}'", span, code="E604")
        obj = obj[key]
    if isinstance(obj, dict) and "edges" in obj:
        return _json_graph(obj, path, span).W
    return _json_array(obj, path, span)


def _json_graph(obj: Any, path: str, span: Span | None) -> Graph:
    if not isinstance(obj, dict) or "edges" not in obj or "n" not in obj:
        raise DataError(f'\'{path}\' is not a graph: expected {{"n": N, "edges": [[i, j, w], ...]}}', span, code="E605")
    n = obj["n"]
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not float(n).is_integer():
        raise DataError(f"'{path}': \"n\" must be a whole number of nodes, got {snippet(n)}", span, code="E605")
    one_based = obj.get("one_based", False)
    if not isinstance(one_based, bool):
        raise DataError(f"'{path}': \"one_based\" must be true or false", span, code="E605")
    edges = obj["edges"]
    if not isinstance(edges, list):
        raise DataError(f"'{path}': \"edges\" must be a list of [i, j, w] rows", span, code="E605")
    arr = _json_array(edges, path, span) if edges else np.zeros((0, 3))
    return _graph_from_edges(int(n), arr, path, span, one_based=one_based)


def _load_graph(p: Path, path: str, span: Span | None) -> Graph:
    ext = p.suffix.lower()
    if ext == ".mtx":
        import scipy.io

        rows, cols, _, fmt, _ = _mtx_info(p, path, span)
        if rows != cols:
            raise DataError(f"'{path}' is not a square matrix, so not a graph", span, code="E605")
        M = scipy.io.mmread(str(p))
        if not sp.issparse(M):
            M = _numeric(np.asarray(M), path, span)
        elif M.dtype.kind not in "biuf":
            _numeric(M.data, path, span)
        W = sp.csr_matrix(M, dtype=np.float64)
        _check_weights(W.data, path, span)
        if (abs(W - W.T) > 1e-12).nnz:  # each edge given once, in either triangle
            return Graph(_symmetrize(W), str(p))
        W = W - sp.diags(W.diagonal())
        W.eliminate_zeros()
        return Graph(W.tocsr(), str(p))
    if ext == ".json":
        return _json_graph(_read_json(p, path, span), path, span)
    if ext in (".npz",):
        with np.load(p, allow_pickle=False) as z:
            headers = _npz_sizes(z, path, span)
            if not {"data", "indices", "indptr", "shape"} <= set(headers):
                raise DataError(f"'{path}' is not a scipy sparse matrix (save_npz)", span, code="E605")
        W = sp.load_npz(p).tocsr()
        if W.shape[0] != W.shape[1]:
            raise DataError(f"'{path}' is not a square matrix, so not a graph", span, code="E605")
        _numeric(W.data, path, span)
        W = W.astype(np.float64)
        _check_weights(W.data, path, span)
        return Graph(_symmetrize(W), str(p))
    return _load_edge_list(p, path, span)


def _check_weights(w: np.ndarray, path: str, span: Span | None, line_of: Any = None) -> None:
    check_finite(np.asarray(w), f"'{path}' edge weights", span, line_of=line_of)
    big = np.abs(w) > MAX_ABS_WEIGHT
    if np.any(big):
        r = int(np.argmax(big))
        where = f" (line {line_of(r)})" if line_of is not None else ""
        raise DataError(
            f"'{path}' has an edge weight of magnitude above {MAX_ABS_WEIGHT:g}{where}",
            span,
            hint="rescale the weights; the backends sum them in float32",
            code="E605",
        )


def _load_edge_list(p: Path, path: str, span: Span | None) -> Graph:
    """Gset / edge-list text: a header `n m`, then m lines `i j [w]`, 1-based."""
    with open(p, encoding="utf-8") as f:
        header = f.readline().split()
        if len(header) != 2:
            raise DataError(
                f"'{path}': the first line must be `n m` (nodes and edges), got '{snippet(' '.join(header))}'",
                span,
                code="E605",
            )
        try:
            n, m = int(header[0]), int(header[1])
        except ValueError:
            raise DataError(
                f"'{path}': the first line must be two integers `n m`, got '{snippet(' '.join(header))}'",
                span,
                code="E605",
            ) from None
        if not 1 <= n <= MAX_NODES or m < 0:
            raise DataError(
                f"'{path}': the header says {n} nodes and {m} edges", span, hint="n ≥ 1, m ≥ 0", code="E605"
            )
        check_size(memory.graph_bytes(n, m), f"graph '{path}' ({n} nodes, {m} edges)", span)
        lines = []
        numbers = []
        for k, raw in enumerate(f, start=2):
            s = raw.split("#", 1)[0].strip()
            if s:
                lines.append(k)
                numbers.append(s)
    if len(numbers) != m:
        raise DataError(f"'{path}': the header says {m} edges but the file has {len(numbers)}", span, code="E605")
    if not m:
        return _graph_from_edges(n, np.zeros((0, 3)), path, span, one_based=True)
    rows = []
    width = None
    for r, s in enumerate(numbers):
        parts = s.split()
        if len(parts) not in (2, 3) or (width is not None and len(parts) != width):
            raise DataError(
                f"'{path}' line {lines[r]} has {len(parts)} values; edge lines are `i j` or `i j w`, all alike",
                span,
                code="E605",
            )
        width = len(parts)
        try:
            rows.append([float(x) for x in parts])
        except ValueError:
            raise DataError(
                f"'{path}' line {lines[r]} has a non-numeric value '{snippet(s)}'", span, code="E605"
            ) from None
    body = np.array(rows, dtype=np.float64)
    if body.shape[1] == 2:
        body = np.column_stack([body, np.ones(m)])
    return _graph_from_edges(n, body, path, span, one_based=True, line_of=lambda r: lines[r])


def _graph_from_edges(
    n: int, edges: np.ndarray, path: str, span: Span | None, one_based: bool = False, line_of: Any = None
) -> Graph:
    if not 1 <= n <= MAX_NODES:
        raise DataError(f"'{path}': a graph needs 1 to {MAX_NODES} nodes, got {n}", span, code="E605")
    m = edges.shape[0] if edges.ndim == 2 else 0
    check_size(memory.graph_bytes(n, m), f"graph '{path}' ({n} nodes, {m} edges)", span)
    if edges.size == 0:
        return Graph(sp.csr_matrix((n, n)), path)
    if edges.ndim != 2 or edges.shape[1] not in (2, 3):
        raise DataError(f"'{path}': edges must be rows `i j [w]`", span, code="E605")
    where = (lambda r: f"line {line_of(r)}") if line_of is not None else (lambda r: f"edge {r}")
    check_finite(edges[:, :2], f"'{path}' node ids", span, line_of=line_of)
    frac = edges[:, :2] != np.floor(edges[:, :2])
    if np.any(frac):
        r = int(np.argwhere(frac)[0][0])
        raise DataError(f"'{path}': a node id is not a whole number ({where(r)})", span, code="E605")
    w = edges[:, 2] if edges.shape[1] == 3 else np.ones(len(edges))
    _check_weights(w, path, span, line_of=line_of)
    lo = 1 if one_based else 0
    out = (edges[:, :2] < lo) | (edges[:, :2] > n - 1 + lo)
    if np.any(out):
        r = int(np.argwhere(out)[0][0])
        raise DataError(
            f"'{path}': an edge names a node outside {lo}..{n - 1 + lo} ({where(r)})",
            span,
            code="E605",
        )
    i = edges[:, 0].astype(np.int64) - lo
    j = edges[:, 1].astype(np.int64) - lo
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
# The one family of seeded graph generators: the language's erdos_renyi / random_regular / torus, and
# benchmarks/graphs.py (benchmarks, tests, scripts/train_gnnsdp.py) call these. Memory-bounded at
# millions of nodes (no n × n arrays, sizes checked before drawing) and free of optional dependencies.
# `seed` is an int (the language's seed = k: same seed, same graph) or a numpy Generator to draw from.
Seed = int | np.random.Generator | None
REGULAR_TRIES = 20  # fresh pairings before repairing the last one by switches (bounded either way)


def dense_generator(name: str, dims: list[int], seed: int | None, span: Span | None) -> np.ndarray:
    """zeros, ones, eye, randn, rand — seeded; size-checked before allocation (eye(n) is n × n)."""
    if not 1 <= len(dims) <= 2:
        raise DataError(f"{name}() takes one or two dimensions, got {len(dims)}", span, code="E606")
    for d in dims:
        if d < 0:
            raise DataError(f"{name}() dimensions must be non-negative, got {d}", span, code="E606")
    if name == "eye" and len(dims) != 1:
        raise DataError("eye(n) takes one dimension", span, code="E606")
    shape = (dims[0], dims[0]) if name == "eye" else tuple(dims)
    check_size(memory.constant_bytes(shape), f"{name}({', '.join(map(str, dims))})", span)
    rng = np.random.default_rng(seed)
    if name == "zeros":
        return np.zeros(shape)
    if name == "ones":
        return np.ones(shape)
    if name == "eye":
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
    raise DataError(
        f"unknown weights '{snippet(weights)}'", span, hint='use "unit", "signed" (±1) or "uniform"', code="E606"
    )


def _check_nodes(what: str, n: int, span: Span | None) -> None:
    if not 1 <= n <= MAX_NODES:
        raise DataError(f"{what} needs 1 to {MAX_NODES} nodes, got {n}", span, code="E606")


def erdos_renyi(n: int, p: float, seed: Seed, weights: str, span: Span | None) -> Graph:
    """G(n, p): the number of edges is Binomial(n(n−1)/2, p), the pairs drawn without replacement."""
    if n < 1 or not 0.0 <= p <= 1.0:
        raise DataError(f"erdos_renyi needs n ≥ 1 and 0 ≤ p ≤ 1, got n = {n}, p = {p}", span, code="E606")
    _check_nodes("erdos_renyi", n, span)
    pairs = n * (n - 1) // 2
    # the expected size plus six standard deviations, before drawing anything
    mean = float(pairs) * p
    check_size(memory.graph_bytes(n, mean + 6.0 * np.sqrt(mean + 1.0)), f"erdos_renyi({n}, {p:g})", span)
    rng = np.random.default_rng(seed)
    m = int(rng.binomial(pairs, p)) if pairs else 0
    check_size(memory.graph_bytes(n, m), f"erdos_renyi({n}, {p:g})", span)
    idx = np.sort(rng.choice(pairs, size=m, replace=False)) if m else np.zeros(0, dtype=np.int64)
    i, j = pair_decode(np.asarray(idx, dtype=np.int64), n)
    w = _weights(m, weights, rng, span)
    return _graph_from_edges(n, np.column_stack([i, j, w]), "erdos_renyi", span)


def pair_decode(idx: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pair (i, j), i < j, of each linear index over pairs in row-major order (row i starts at
    s(i) = i·n − i(i+1)/2); exact for every n ≤ MAX_NODES (the float guess is corrected in integers)."""
    disc = np.maximum(-8.0 * idx + 4.0 * n * (n - 1) - 7, 0.0)  # rounding can dip below 0 on the last row
    i = (n - 2 - np.floor(np.sqrt(disc) / 2.0 - 0.5)).astype(np.int64)
    i = np.clip(i, 0, max(n - 2, 0))
    for _ in range(4):  # float rounding for n beyond 2^26: integer correction steps each way
        start = i * n - i * (i + 1) // 2
        i = np.where(start > idx, i - 1, i)
        nxt = (i + 1) * n - (i + 1) * (i + 2) // 2
        i = np.where(nxt <= idx, i + 1, i)
    j = idx - (i * n - i * (i + 1) // 2) + i + 1
    return i, j


class _EdgeSet:
    """Membership of undirected edges keyed lo*n+hi: a sorted array plus a small dict of changes."""

    def __init__(self, keys: np.ndarray) -> None:
        self.sorted = np.sort(keys)
        self.delta: dict[int, int] = {}

    def count(self, key: int) -> int:
        a = int(np.searchsorted(self.sorted, key, "right") - np.searchsorted(self.sorted, key, "left"))
        return a + self.delta.get(key, 0)

    def move(self, old: int, new: int) -> None:
        self.delta[old] = self.delta.get(old, 0) - 1
        self.delta[new] = self.delta.get(new, 0) + 1


def random_regular(n: int, d: int, seed: Seed, weights: str, span: Span | None) -> Graph:
    """A random simple d-regular graph: the configuration model, with bounded work.

    Up to REGULAR_TRIES stub pairings are drawn when d ≤ 3 (one otherwise: a pairing is then simple
    with probability below 5%); a simple one is exactly uniform. If none is simple,
    the last one is repaired by random switches of its loops and repeated edges (each tried a bounded
    number of times), which is close to uniform. No unbounded retry loop: the work is O(REGULAR_TRIES ·
    n·d log(n·d)) plus O(bad pairs · 1000) switch attempts, and failing those is an error, not a hang.
    """
    if n < 1 or d < 0 or d >= n or (n * d) % 2:
        raise DataError(f"random_regular needs 0 ≤ d < n and n·d even, got n = {n}, d = {d}", span, code="E606")
    _check_nodes("random_regular", n, span)
    check_size(memory.graph_bytes(n, n * d / 2) + 64.0 * n * d, f"random_regular({n}, {d})", span)
    rng = np.random.default_rng(seed)
    if d == n - 1:  # the complete graph is the only one
        lo, hi = np.triu_indices(n, k=1)
        w = _weights(lo.size, weights, rng, span)
        return _graph_from_edges(n, np.column_stack([lo, hi, w]), "random_regular", span)
    stubs = np.repeat(np.arange(n, dtype=np.int64), d)
    # a pairing is simple with probability ≈ exp(−(d² − 1)/4): redraw only while that is worth it
    p_simple = float(np.exp(-(d * d - 1) / 4.0))
    tries = REGULAR_TRIES if p_simple >= 0.05 else 1
    for _ in range(tries):
        perm = rng.permutation(stubs)
        lo, hi = np.minimum(perm[0::2], perm[1::2]), np.maximum(perm[0::2], perm[1::2])
        key = lo * n + hi
        order = np.argsort(key, kind="stable")
        dup = np.zeros(key.size, dtype=bool)
        dup[order[1:]] = key[order[1:]] == key[order[:-1]]
        bad = (lo == hi) | dup
        if not bad.any():
            break
    if bad.any():
        lo, hi = _repair(lo, hi, bad, n, rng, span)
    w = _weights(lo.size, weights, rng, span)
    return _graph_from_edges(n, np.column_stack([lo, hi, w]), "random_regular", span)


def _repair(
    lo: np.ndarray, hi: np.ndarray, bad: np.ndarray, n: int, rng: np.random.Generator, span: Span | None
) -> tuple[np.ndarray, np.ndarray]:
    """Switch each loop or repeated pair {a, b} with a random pair {c, e} into {a, c}, {b, e}."""
    lo, hi = lo.copy(), hi.copy()
    edges = _EdgeSet(lo * n + hi)
    m = lo.size
    for k in np.flatnonzero(bad):
        for _attempt in range(1000):
            l_ = int(rng.integers(m))
            a, b, c, e = int(lo[k]), int(hi[k]), int(lo[l_]), int(hi[l_])
            if rng.random() < 0.5:
                c, e = e, c
            if l_ == k or a == c or b == e:
                continue
            k1, k2 = min(a, c) * n + max(a, c), min(b, e) * n + max(b, e)
            if k1 == k2 or edges.count(k1) or edges.count(k2):
                continue
            old_l = int(lo[l_]) * n + int(hi[l_])
            if edges.count(old_l) > 1 or lo[l_] == hi[l_]:
                continue  # switch only with a good pair
            edges.move(a * n + b, k1)
            edges.move(old_l, k2)
            lo[k], hi[k] = min(a, c), max(a, c)
            lo[l_], hi[l_] = min(b, e), max(b, e)
            break
        else:
            raise DataError(
                "random_regular could not find a simple pairing in the bounded number of attempts",
                span,
                hint="try another seed, or a smaller degree",
                code="E606",
            )
    return lo, hi


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """np.unique by sort-and-compare (numpy's hash-based unique is ~10× slower on large int arrays)."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if a.size else a


def torus(rows: int, cols: int, seed: Seed, weights: str, span: Span | None) -> Graph:
    """A 2-D periodic grid rows × cols (torus(1, n) is a ring of n nodes); repeated edges merged."""
    if rows < 1 or cols < 1 or rows * cols < 2:
        raise DataError(f"torus needs at least two nodes, got {rows} × {cols}", span, code="E606")
    _check_nodes("torus", rows * cols, span)
    check_size(memory.graph_bytes(rows * cols, 2 * rows * cols) + 96.0 * rows * cols, f"torus({rows}, {cols})", span)
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    pairs = []
    if cols > 1:
        pairs.append(np.column_stack([idx.ravel(), np.roll(idx, -1, axis=1).ravel()]))
    if rows > 1:
        pairs.append(np.column_stack([idx.ravel(), np.roll(idx, -1, axis=0).ravel()]))
    e = np.concatenate(pairs)
    lo, hi = np.minimum(e[:, 0], e[:, 1]), np.maximum(e[:, 0], e[:, 1])
    key = _sorted_unique(lo[lo != hi] * (rows * cols) + hi[lo != hi])
    lo, hi = key // (rows * cols), key % (rows * cols)
    rng = np.random.default_rng(seed)
    w = _weights(lo.size, weights, rng, span)
    return _graph_from_edges(rows * cols, np.column_stack([lo, hi, w]), "torus", span)
