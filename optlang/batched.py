"""One optimization over a leading batch dimension: B independent problems stepped together.

`lbfgs` is L-BFGS with a batch axis: every row keeps its own curvature pairs, its own Armijo
backtracking step and its own stopping test, while the objective is evaluated for all rows in one
call (one vectorized forward/backward pass instead of B). Rows are independent: the result of
row b is what a single-problem L-BFGS would reach on problem b (to the tolerance), which the
sweep tests check against separate solves. `batched_function` turns an IR expression whose
constants differ between batch members into one torch callable over stacked inputs
(`torch.func.vmap`), which is how a parameter grid becomes a single batched problem.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from optlang.ir.nodes import Const, Node, Op, Var
from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

Path = tuple[int, ...]
# fun(z_rows, rows) -> (f (R,), grad (R, d)) for the batch members `rows` (a LongTensor) at z_rows (R, d)
BatchFun = Callable[["torch.Tensor", "torch.Tensor"], tuple["torch.Tensor", "torch.Tensor"]]


# ----------------------------------------------------------------------------- expressions
def _same_static(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def _same_value(a: Any, b: Any) -> bool:
    if sp.issparse(a) or sp.issparse(b):
        return sp.issparse(a) and sp.issparse(b) and a.shape == b.shape and (a != b).nnz == 0
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def const_diff(a: Node, b: Node, path: Path = ()) -> list[Path] | None:
    """Paths of the constants that differ between two expressions of the same structure.

    None when the structures differ (another operation, shape or variable): such points cannot
    share one batched function.
    """
    if a is b:  # a shared subtree (points substituted into one lowering: sweep_lower.py)
        return []
    if type(a) is not type(b) or a.type.shape != b.type.shape:
        return None
    if isinstance(a, Const):
        assert isinstance(b, Const)
        return [] if _same_value(a.value, b.value) else [path]
    if isinstance(a, Var):
        return [] if a.name == b.name else None  # type: ignore[attr-defined]
    assert isinstance(a, Op) and isinstance(b, Op)
    if a.atom != b.atom or len(a.args) != len(b.args) or not _same_static(a.static, b.static):
        return None
    out: list[Path] = []
    for i, (x, y) in enumerate(zip(a.args, b.args, strict=True)):
        d = const_diff(x, y, (*path, i))
        if d is None:
            return None
        out += d
    return out


def at_path(node: Node, path: Path) -> Node:
    for i in path:
        assert isinstance(node, Op)
        node = node.args[i]
    return node


def substitute(node: Node, names: Mapping[Path, str], path: Path = ()) -> Node:
    """The expression with the constants at `names`' paths replaced by variables of those names."""
    if path in names:
        return Var(type=node.type, span=node.span, name=names[path])
    if isinstance(node, Op) and any(p[: len(path)] == path and len(p) > len(path) for p in names):
        args = tuple(substitute(a, names, (*path, i)) for i, a in enumerate(node.args))
        return dataclasses.replace(node, args=args)
    return node


@dataclass
class BatchedExpr:
    """An expression over stacked inputs: `fn(env)` with every variable and swept constant of
    shape (B, ...) returns (B,) (scalar expressions) or (B, N) (per-sample ones)."""

    fn: Callable[[Mapping[str, torch.Tensor]], torch.Tensor]
    single: Callable[[Mapping[str, torch.Tensor]], torch.Tensor]  # the unbatched function
    consts: dict[str, torch.Tensor]  # the swept constants, stacked (B, ...)
    vectorized: bool  # True: one vmap call; False: a loop over rows (an atom without a batching rule)


def batched_function(
    nodes: list[Node], per_sample: bool = False, dtype: Any = torch.float64, device: Any = "cpu"
) -> BatchedExpr | None:
    """One torch function for B expressions that differ only in constants (None if they differ more)."""
    from optlang.ir.evaluate import torch_function

    paths: set[Path] = set()
    for other in nodes[1:]:
        d = const_diff(nodes[0], other)
        if d is None:
            return None
        paths.update(d)
    names = {p: f"__swept{i}" for i, p in enumerate(sorted(paths))}
    consts: dict[str, torch.Tensor] = {}
    for p, name in names.items():
        vals = [at_path(n, p).value for n in nodes]  # type: ignore[attr-defined]
        if any(sp.issparse(v) for v in vals):
            return None
        consts[name] = torch.as_tensor(np.stack([np.asarray(v, dtype=np.float64) for v in vals]), dtype=dtype)
        consts[name] = consts[name].to(device)
    single = torch_function(substitute(nodes[0], names), per_sample=per_sample).compile(device, dtype)

    return BatchedExpr(torch.func.vmap(single), single, consts, True)


class vmap_or_rows:  # noqa: N801 (used like a function: vmap_or_rows(fn)(x))
    """`torch.func.vmap(fn)` over the leading dimension of a tensor or of every tensor of a dict; when
    vmap cannot batch an atom (no batching rule) it falls back, once and for good, to a loop over rows
    (`vectorized` says which ran)."""

    def __init__(self, fn: Callable[[Any], torch.Tensor]) -> None:
        self.fn = fn
        self.batched = torch.func.vmap(fn)
        self.vectorized = True

    def __call__(self, x: Any) -> torch.Tensor:
        if self.vectorized:
            try:
                return self.batched(x)
            except (RuntimeError, NotImplementedError):  # remembered: later calls loop directly
                self.vectorized = False
        if isinstance(x, Mapping):
            n = next(iter(x.values())).shape[0]
            return torch.stack([self.fn({k: v[b] for k, v in x.items()}) for b in range(n)])
        return torch.stack([self.fn(x[b]) for b in range(x.shape[0])])


# up to this many rows, calling the unbatched function row by row costs less than one vmap call
# (vmap's fixed cost is several single calls; the tail of a batched L-BFGS runs a few rows)
LOOP_ROWS = 2


def call_batched(be: BatchedExpr, env: Mapping[str, torch.Tensor], rows: torch.Tensor | None = None) -> torch.Tensor:
    """Evaluate a BatchedExpr for the members `rows` (all if None; `env` holds those rows only);
    falls back to a row loop (and remembers it) if vmap cannot batch an atom."""
    consts = be.consts if rows is None else {k: v[rows] for k, v in be.consts.items()}
    full = {**env, **consts}
    B = next(iter(full.values())).shape[0]
    if be.vectorized and B > LOOP_ROWS:
        try:
            return be.fn(full)
        except (RuntimeError, NotImplementedError):
            be.vectorized = False
    return torch.stack([be.single({k: v[b] for k, v in full.items()}) for b in range(B)])


# ----------------------------------------------------------------------------- flat variables
@dataclass(frozen=True)
class Layout:
    """Where each variable lives in a flat row vector z (one row per batch member)."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @property
    def size(self) -> int:
        return int(sum(int(np.prod(s)) if s else 1 for s in self.shapes))

    @property
    def columns(self) -> dict[str, slice]:
        """Each variable's columns of z."""
        out, pos = {}, 0
        for name, shape in zip(self.names, self.shapes, strict=True):
            k = int(np.prod(shape)) if shape else 1
            out[name] = slice(pos, pos + k)
            pos += k
        return out

    def unpack(self, z: torch.Tensor) -> dict[str, torch.Tensor]:
        cols, B = self.columns, z.shape[0]
        return {n: z[:, cols[n]].reshape((B, *shape)) for n, shape in zip(self.names, self.shapes, strict=True)}

    def to_numpy(self, z: torch.Tensor, row: int) -> dict[str, np.ndarray]:
        vals = self.unpack(z.detach()[row : row + 1])
        return {k: v[0].cpu().numpy().astype(np.float64) for k, v in vals.items()}

    def pack(self, values: list[Mapping[str, np.ndarray]], dtype: Any = torch.float64) -> torch.Tensor:
        rows = [np.concatenate([np.asarray(v[n], dtype=np.float64).ravel() for n in self.names]) for v in values]
        return torch.as_tensor(np.stack(rows), dtype=dtype)


# ----------------------------------------------------------------------------- batched L-BFGS
@dataclass
class LBFGSOutcome:
    z: torch.Tensor  # (B, d) final rows
    f: torch.Tensor  # (B,) final values
    iterations: np.ndarray  # (B,) iterations each row ran
    converged: np.ndarray  # (B,) bool: the row met its stopping test
    finite: np.ndarray  # (B,) bool
    # the curvature memory at the end, for a warm start: (S, Y, R, gamma, head, slots written)
    memory: tuple[Any, ...] | None = None


def lbfgs(
    fun: BatchFun,
    z0: torch.Tensor,
    max_iter: int = 500,
    tol: float = 1e-10,
    gtol: float = 1e-9,
    history: int = 20,
    should_stop: Callable[[], bool] | None = None,
    memory: tuple[Any, ...] | None = None,
) -> LBFGSOutcome:
    """Minimize B independent smooth (or Danskin-smooth) functions at once.

    Per row: two-loop recursion on its own (s, y) pairs, a unit (first step: 1/‖g‖) Armijo
    backtracking step, and a stop when ‖g‖∞ ≤ gtol·max(1, |f|) or the relative decrease stays
    below `tol` for 3 iterations. Converged rows are frozen; the loop ends when all rows are.
    `memory` (an outcome's, rows matched) starts the rows with those curvature pairs and a unit
    first step instead of an empty memory. The bookkeeping runs in numpy on the host (its (B, d)
    arrays are small and numpy's per-operation cost is a fraction of torch's); `fun` gets and
    returns torch tensors on z0's device and dtype.
    """
    device = z0.device

    def fun_np(zr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fr, gr = fun(torch.from_numpy(zr).to(device), torch.from_numpy(idx).to(device))
        return fr.detach().cpu().numpy(), gr.detach().cpu().numpy()

    z = z0.detach().cpu().numpy().copy()
    B, d = z.shape
    f, g = fun_np(z, np.arange(B))
    f_start = np.abs(f)
    S = np.zeros((history, B, d), dtype=z.dtype)
    Y = np.zeros_like(S)
    R = np.zeros((history, B), dtype=z.dtype)  # 1 / (s·y); 0 = empty slot
    gamma = np.ones(B, dtype=z.dtype)
    head, written = 0, 0
    if memory is not None:
        S, Y, R, gamma = (np.array(a, dtype=z.dtype) for a in memory[:4])
        head, written = int(memory[4]), int(memory[5])
    calm = np.zeros(B, dtype=np.int64)
    iters = np.zeros(B, dtype=np.int64)
    done = ~np.isfinite(f)
    t_last = np.ones(B, dtype=z.dtype)
    it = -1
    for it in range(max_iter):
        small = np.abs(g).max(1) <= gtol * np.maximum(np.abs(f), 1.0)
        done |= small | (calm >= 3)
        if bool(done.all()) or (should_stop is not None and should_stop()):
            break
        # two-loop recursion, batched over rows (empty slots have R = 0 and contribute nothing; the
        # slots never written yet, all but the last `it`, are skipped: adding their zeros is exact)
        q = g.copy()
        steps = []
        for j in range(min(it + written, history)):
            k = (head - 1 - j) % history
            a = R[k] * (S[k] * q).sum(1)
            q -= a[:, None] * Y[k]
            steps.append((k, a))
        r = gamma[:, None] * q
        for k, a in reversed(steps):
            b = R[k] * (Y[k] * r).sum(1)
            r += S[k] * (a - b)[:, None]
        p = -r
        slope = (p * g).sum(1)
        bad = ~(slope < 0) | ~np.isfinite(slope)
        if bool(bad.any()):  # not a descent direction: steepest descent for those rows
            p[bad] = -g[bad]
            slope = (p * g).sum(1)
        # first trial step: 1, or 4× the row's last accepted step when that was shorter (nonsmooth
        # kinks make unit quasi-Newton steps fail repeatedly; this saves the re-backtracking)
        t = np.minimum(4.0 * t_last, 1.0)
        if it == 0 and written == 0:
            t = np.minimum(1.0 / np.maximum(np.abs(g).sum(1), 1e-300), 1.0)
        t[done] = 0.0
        # Armijo with room for rounding (values equal to 1e-14 relative count as no increase);
        # only the rows still searching are evaluated again
        slack = 1e-14 * np.maximum(np.abs(f), 1.0)
        zn, fn_, gn = z.copy(), f.copy(), g.copy()
        pending = ~done
        for _ in range(30):
            idx = np.flatnonzero(pending)
            if idx.size == 0:
                break
            zt = z[idx] + t[idx, None] * p[idx]
            ft, gt = fun_np(zt, idx)
            ok = (ft <= f[idx] + 1e-4 * t[idx] * slope[idx] + slack[idx]) & np.isfinite(ft)
            acc = idx[ok]
            zn[acc], fn_[acc], gn[acc] = zt[ok], ft[ok], gt[ok]
            pending[acc] = False
            t[idx[~ok]] *= 0.25
        t[pending] = 0.0
        moved = (t > 0) & ~done
        t_last = np.where(moved, t, t_last)
        done |= ~moved  # no decrease along a descent direction: the row is at its numerical optimum
        s = zn - z
        y = gn - g
        sy = (s * y).sum(1)
        store = moved & (sy > 1e-12 * np.sqrt((s * s).sum(1)) * np.sqrt((y * y).sum(1)))
        S[head] = np.where(store[:, None], s, 0.0)
        Y[head] = np.where(store[:, None], y, 0.0)
        R[head] = np.where(store, 1.0 / np.where(store, sy, 1.0), 0.0)
        gamma = np.where(store, sy / np.maximum((y * y).sum(1), 1e-300), gamma)
        head = (head + 1) % history
        rel = np.abs(f - fn_) <= tol * np.maximum(np.abs(fn_), 1.0)
        calm = np.where(moved, np.where(rel, calm + 1, 0), calm)
        z = np.where(moved[:, None], zn, z)
        f = np.where(moved, fn_, f)
        g = np.where(moved[:, None], gn, g)
        iters += ~done
    small = np.abs(g).max(1) <= gtol * np.maximum(np.abs(f), 1.0)
    done |= small | (calm >= 3)
    # a value 1e12 times the start's (or non-finite) is taken as unbounded below: the row diverged
    fin = np.isfinite(f) & np.isfinite(z).all(1) & (np.abs(f) <= 1e12 * np.maximum(f_start, 1.0))
    out = LBFGSOutcome(torch.from_numpy(z).to(device), torch.from_numpy(f).to(device), iters, done & fin, fin)
    out.memory = (S, Y, R, gamma, head, min(written + it + 1, history))
    return out


def value_and_grad(objective: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> BatchFun:
    """fun(z, rows) -> (f (R,), ∇f (R, d)) for an objective mapping (z (R, d), rows) to values (R,)."""

    def fun(z: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        zz = z.detach().requires_grad_(True)
        with torch.enable_grad():
            f = objective(zz, rows)
            (g,) = torch.autograd.grad(f.sum(), zz)
        return f.detach(), g.detach()

    return fun


def path_lbfgs(
    fun: BatchFun, z0: torch.Tensor, max_iter: int = 500, stride: int = 8, carry: bool = False, **kw: Any
) -> LBFGSOutcome:
    """`lbfgs` warm-started along the path: first every `stride`-th row (and the last) from z0, then
    every row from its nearest solved anchor (rows in grid order are neighbours on the path).
    Small batches (< 2·stride rows) run `lbfgs` directly. Iterations count both phases."""
    B = z0.shape[0]
    if B < 2 * stride:
        return lbfgs(fun, z0, max_iter=max_iter, **kw)
    anchors = torch.unique(torch.cat([torch.arange(0, B, stride), torch.tensor([B - 1])]))
    pre = lbfgs(lambda z, rows: fun(z, anchors[rows]), z0[anchors], max_iter=max_iter, **kw)
    nearest = torch.argmin((torch.arange(B)[:, None] - anchors[None, :]).abs(), 1)
    ok = torch.as_tensor(pre.finite)[nearest]
    start = torch.where(ok[:, None], pre.z[nearest], z0)
    memory = None
    if carry and pre.memory is not None:  # each row also starts with its anchor's curvature pairs
        S, Y, R, gamma, head, written = pre.memory
        keep = ok.numpy()
        n = nearest.numpy()
        S, Y = S[:, n] * keep[None, :, None], Y[:, n] * keep[None, :, None]
        R, gamma = R[:, n] * keep[None, :], np.where(keep, gamma[n], 1.0)
        memory = (S, Y, R, gamma, head, written)
    out = lbfgs(fun, start, max_iter=max_iter, memory=memory, **kw)
    out.iterations = out.iterations + pre.iterations[nearest.numpy()]
    return out
