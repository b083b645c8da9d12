"""Lowered problems: the only thing a backend ever receives.

The IR is compiled into one of these per problem kind. Each holds arrays (numpy/scipy, sparse
where sparse) and torch-compilable functions; none holds parse trees or IR nodes. Backends read
these and nothing else, so a backend can be tested by building a problem by hand.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

# The problem kinds, one backends/<kind>/ wing each (tests/test_architecture.py checks wings, registry
# and classification against this list): a new kind starts here.
KINDS: tuple[str, ...] = (
    "ising",
    "maxcut",
    "bilevel",
    "minimax",
    "dro",
    "multiobjective",
    "smooth",
    "general_bilevel",
)


# ----------------------------------------------------------------------------- domains
def _bound_text(v: float | np.ndarray) -> str:
    """A bound as the model would write it: a number, or a vector's first entries."""
    if np.ndim(v) == 0:
        return f"{float(v):g}"
    flat = np.asarray(v, dtype=np.float64).ravel()
    head = ", ".join(f"{x:g}" for x in flat[:4])
    return f"[{head}, … ({flat.size} entries)]" if flat.size > 4 else f"[{head}]"


@dataclass(frozen=True)
class Domain:
    """A variable's feasible set: free, box [lo, hi] (either side may be infinite), simplex, ball(r).

    A box may have one bound per element (WFG's x_i in [0, 2i]): `lo_elements` / `hi_elements` are
    then arrays of the variable's shape and `lo` / `hi` their hull. Backends see only scalar boxes: the
    compiler maps a per-element box onto [0, 1] (`compiler._unit_boxes`)."""

    kind: Literal["free", "box", "simplex", "ball"] = "free"
    lo: float = -np.inf
    hi: float = np.inf
    radius: float = 1.0
    lo_elements: np.ndarray | None = field(default=None, compare=False)
    hi_elements: np.ndarray | None = field(default=None, compare=False)

    @staticmethod
    def box(lo: float | np.ndarray, hi: float | np.ndarray) -> Domain:
        """A box from scalar or per-element bounds (arrays of the variable's shape)."""
        lo_el = np.asarray(lo, dtype=np.float64) if np.ndim(lo) else None
        hi_el = np.asarray(hi, dtype=np.float64) if np.ndim(hi) else None
        return Domain("box", float(np.min(lo)), float(np.max(hi)), 1.0, lo_el, hi_el)

    @property
    def elementwise(self) -> bool:
        """A box whose bounds differ from element to element."""
        return self.lo_elements is not None or self.hi_elements is not None

    @property
    def lower(self) -> float | np.ndarray:
        """The lower bound: a number, or one per element."""
        return self.lo if self.lo_elements is None else self.lo_elements

    @property
    def upper(self) -> float | np.ndarray:
        """The upper bound: a number, or one per element."""
        return self.hi if self.hi_elements is None else self.hi_elements

    def describe(self) -> str:
        if self.kind == "box":
            if np.isinf(self.hi):
                return f">= {_bound_text(self.lower)}"
            if np.isinf(self.lo):
                return f"<= {_bound_text(self.upper)}"
            return f"in [{_bound_text(self.lower)}, {_bound_text(self.upper)}]"
        if self.kind == "ball":
            return f"in ball({self.radius:g})"
        if self.kind == "simplex":
            return "in simplex"
        return "free"

    def project_np(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the domain (float64 reference; torch versions live in backends)."""
        x = np.asarray(x, dtype=np.float64)
        if self.kind == "box":
            return np.clip(x, self.lower, self.upper)
        if self.kind == "ball":
            nrm = float(np.linalg.norm(x))
            return x if nrm <= self.radius else x * (self.radius / nrm)
        if self.kind == "simplex":
            flat = x.ravel()
            u = np.sort(flat)[::-1]
            css = np.cumsum(u) - 1.0
            idx = np.arange(1, flat.size + 1)
            rho = np.nonzero(u - css / idx > 0)[0][-1]
            theta = css[rho] / (rho + 1.0)
            return np.maximum(flat - theta, 0.0).reshape(x.shape)
        return x

    def contains(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        x = np.asarray(x, dtype=np.float64)
        if self.kind == "box":
            return bool(np.all(x >= self.lower - tol) and np.all(x <= self.upper + tol))
        if self.kind == "ball":
            return bool(np.linalg.norm(x) <= self.radius * (1 + tol) + tol)
        if self.kind == "simplex":
            return bool(np.all(x >= -tol) and abs(x.sum() - 1.0) <= tol * max(1, x.size))
        return True


@dataclass(frozen=True)
class Variable:
    """A continuous decision variable: name, shape (() scalar, (n,), (m, n)), domain, initial point."""

    name: str
    shape: tuple[int, ...]
    domain: Domain = field(default_factory=Domain)
    init: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        """A feasible starting point: `init` if given, else a small random point projected."""
        if self.init is not None:
            return self.domain.project_np(np.asarray(self.init, dtype=np.float64).reshape(self.shape))
        if self.domain.kind == "simplex":
            return np.full(self.shape, 1.0 / self.size)
        if self.domain.kind == "box" and np.isfinite(self.domain.lo) and np.isfinite(self.domain.hi):
            return rng.uniform(self.domain.lower, self.domain.upper, size=self.shape)
        x = 0.01 * rng.standard_normal(self.shape)
        return self.domain.project_np(x)


# ----------------------------------------------------------------------------- functions
Values = Mapping[str, Any]  # variable name -> torch.Tensor (or numpy for reference evaluation)
Builder = Callable[[Any, Any], Callable[..., Any]]  # (torch.device, torch.dtype) -> fn(values, batch)


class TorchFunction:
    """A function of the decision variables, compiled on demand to a torch callable.

    `build(device, dtype)` returns `fn(values, batch=None)`, where `values` maps variable names to
    tensors and `batch` (a LongTensor of sample indices or None) restricts every sample-axis array
    to those rows, so a `mean` over the sample axis becomes a minibatch mean. `n_samples` is the
    length of the sample axis (None when the function is deterministic). Results are scalars, or
    per-sample vectors for DRO losses (`per_sample=True`).
    """

    def __init__(
        self,
        build: Builder,
        n_samples: int | None = None,
        per_sample: bool = False,
        cvxpy: Callable[[Mapping[str, Any]], Any] | None = None,
        source: str | Callable[[], str] = "",
    ) -> None:
        self._build = build
        self.n_samples = n_samples
        self.per_sample = per_sample
        self.cvxpy = cvxpy  # fn(var_map: name -> cvxpy.Variable) -> cvxpy.Expression, or None
        self._source = source  # the text, or a function making it when first asked (printing only)
        self._cache: dict[tuple[str, str], Callable[..., Any]] = {}

    @property
    def source(self) -> str:
        if callable(self._source):
            self._source = self._source()
        return self._source

    @classmethod
    def from_callable(
        cls, fn: Callable[..., Any], n_samples: int | None = None, per_sample: bool = False, **kw: Any
    ) -> TorchFunction:
        """Wrap a plain `fn(values, batch=None)` that already works for any device/dtype."""
        return cls(lambda device, dtype: fn, n_samples=n_samples, per_sample=per_sample, **kw)

    def compile(self, device: Any = "cpu", dtype: Any = None) -> Callable[..., Any]:
        import torch

        dtype = dtype or torch.float32
        key = (str(device), str(dtype))
        if key not in self._cache:
            self._cache[key] = self._build(torch.device(device), dtype)
        return self._cache[key]

    def value(self, values: Mapping[str, np.ndarray]) -> float | np.ndarray:
        """Evaluate in float64 on the CPU from numpy values (used for checks and Result)."""
        import torch

        fn = self.compile("cpu", torch.float64)
        with torch.no_grad():
            out = fn({k: torch.as_tensor(np.asarray(v, dtype=np.float64)) for k, v in values.items()})
        arr = out.detach().cpu().numpy()
        return float(arr) if arr.ndim == 0 else arr

    def __repr__(self) -> str:
        return f"TorchFunction({self.source or '<fn>'}, n_samples={self.n_samples})"


# ----------------------------------------------------------------------------- problems
@dataclass(frozen=True)
class IsingProblem:
    """Minimize E(s) = sᵀ J s + hᵀ s + constant over s ∈ {-1, +1}^n.

    J is symmetric scipy CSR (float64) with zero diagonal, so each pair {i, j} contributes
    2 J_ij s_i s_j. `maxcut_weights` (symmetric CSR) is kept when the problem came from a Max-Cut
    (then J = W/4, constant = -Σ_{i<j} w_ij / 2 and cut = -E), so Max-Cut backends can work on W.
    """

    J: sp.csr_matrix
    h: np.ndarray
    constant: float = 0.0
    maxcut_weights: sp.csr_matrix | None = None

    @property
    def n(self) -> int:
        return int(self.J.shape[0])

    @property
    def has_field(self) -> bool:
        return bool(np.any(self.h != 0))

    def energy(self, s: np.ndarray) -> np.ndarray | float:
        """Energy of one spin vector (n,) or a batch (B, n), float64."""
        s = np.asarray(s, dtype=np.float64)
        if s.ndim == 1:
            return float(s @ (self.J @ s) + self.h @ s + self.constant)
        js = (self.J @ s.T).T
        return np.einsum("bi,bi->b", s, js) + s @ self.h + self.constant

    def with_field_spin(self) -> IsingProblem:
        """Absorb h into one extra spin (index n, to be fixed to +1): a pure quadratic problem.

        A solution t of the result maps back as s = t[:n] * t[n]; energies are equal.
        """
        if not self.has_field:
            return self
        n = self.n
        col = sp.csr_matrix((self.h / 2.0, (np.arange(n), np.full(n, 0))), shape=(n, 1))
        J = sp.bmat([[self.J, col], [col.T, None]], format="csr")
        return IsingProblem(J=J, h=np.zeros(n + 1), constant=self.constant)

    @staticmethod
    def from_maxcut(W: sp.spmatrix) -> IsingProblem:
        """Max-Cut of symmetric weights W as an energy to minimize: E = -cut."""
        W = sp.csr_matrix(W, dtype=np.float64)
        W = W - sp.diags(W.diagonal())
        W.eliminate_zeros()
        total = float(W.sum()) / 2.0
        return IsingProblem(J=(W / 4.0).tocsr(), h=np.zeros(W.shape[0]), constant=-total / 2.0, maxcut_weights=W)


@dataclass(frozen=True)
class Constraint:
    """A general constraint `fn(values) <= 0` (sense '<=') or `== 0` (sense '==')."""

    fn: TorchFunction
    sense: Literal["<=", "=="]
    text: str = ""
    # |a| + |b| of the constraint `a <= b` (elementwise): the size a feasibility tolerance is relative to
    size: TorchFunction | None = None


@dataclass(frozen=True)
class SmoothProblem:
    """Minimize `objective` over `variables` (domains are projections), with optional constraints."""

    variables: tuple[Variable, ...]
    objective: TorchFunction
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True)
class BilevelProblem:
    """Simple bilevel: minimize `upper` over x subject to x ∈ argmin `lower` (same variables)."""

    variables: tuple[Variable, ...]
    upper: TorchFunction
    lower: TorchFunction
    lower_optimum: float | None = None  # g* when known in closed form (for the gap report)


@dataclass(frozen=True)
class QuadraticSplit:
    """A level's function as `quadratic` + `rest`: `quadratic` is the sum of the top-level summands
    that depend on the follower's variables only, with polynomial degree ≤ 2 (so it equals
    c + bᵀy + ½yᵀQy exactly); `rest` the other summands (None when there are none)."""

    quadratic: TorchFunction
    rest: TorchFunction | None
    data_size: int = 0  # entries of the constants `quadratic` reads (a pass over them costs at least this)


@dataclass(frozen=True)
class GeneralBilevelProblem:
    """General bilevel: minimize `upper`(x, y) over x, with y ∈ argmin_y `lower`(x, y) (optimistic).

    `upper_vars` are x (the leader's variables, domains projected), `lower_vars` are y (the
    follower's); both functions take the values of every variable.
    """

    upper_vars: tuple[Variable, ...]
    lower_vars: tuple[Variable, ...]
    upper: TorchFunction
    lower: TorchFunction
    upper_split: QuadraticSplit | None = None  # F's follower-only quadratic part, when it has one
    lower_split: QuadraticSplit | None = None  # g's
    lower_degree: float = math.inf  # g's polynomial degree in all variables (≤ 2: ∇ᵧg is affine)


@dataclass(frozen=True)
class MinimaxProblem:
    """min over `min_vars` of max over `max_vars` of `objective`."""

    min_vars: tuple[Variable, ...]
    max_vars: tuple[Variable, ...]
    objective: TorchFunction


@dataclass(frozen=True)
class MovingKinkFn:
    """A kink along a curve: `arg` (a function of the variables, flattened) is 0 there, and at its flat
    position k equals coef[k] · x.flat[index[k]] of variable `name` plus a rest free of that element, so
    x.flat[index[k]] − arg[k] / coef[k] is the kink (positions with coef 0 have none)."""

    arg: TorchFunction
    name: str
    index: tuple[int, ...]
    coef: tuple[float, ...]
    exact: bool = True  # else the rest depends on the element too: Newton's method along it (ir/kinks.py)


@dataclass(frozen=True)
class MultiObjectiveProblem:
    """Minimize the vector (objectives) over variables; `preference` (a function of the
    variables, objective names already inlined) selects one weak-Pareto point; None = front."""

    variables: tuple[Variable, ...]
    objectives: tuple[tuple[str, TorchFunction], ...]
    preference: TorchFunction | None = None
    constraints: tuple[Constraint, ...] = ()  # general constraints (front mode honours them)
    # (variable, flat element, value) where an objective or constraint has a kink along that element
    # (ir/kinks.py): front mode tries its points there, since gradient steps only circle a kink
    kinks: tuple[tuple[str, int, float], ...] = ()
    # the objectives as one function whose value is the list of their values, in one pass over what they
    # share (the compiler's `torch_functions`); None: `joint` evaluates them one by one
    together: TorchFunction | None = None
    # kinks along curves (ir/kinks.py `moving_kinks`): where |y − 5 cos x| is 0 moves with x
    moving_kinks: tuple[MovingKinkFn, ...] = ()

    @functools.cached_property
    def joint(self) -> TorchFunction:
        """(f_1, ..., f_m) as one TorchFunction whose value is the list of their 0-d values: `together`
        when the compiler made it (what the objectives share is evaluated once), else each objective
        in turn."""
        if self.together is not None:
            return self.together
        objectives = self.objectives

        def build(device: Any, dtype: Any) -> Callable[..., Any]:
            fns = [f.compile(device, dtype) for _, f in objectives]
            return lambda values, batch=None: [f(values, batch).reshape(()) for f in fns]

        return TorchFunction(build, source=lambda: "[" + ", ".join(f.source for _, f in objectives) + "]")


@dataclass(frozen=True)
class Ambiguity:
    """The ambiguity set of a DRO objective (LANGUAGE.md §3 conventions)."""

    kind: Literal["chi2", "kl", "wasserstein", "target_conditional"]
    radius: float
    p: int = 1  # wasserstein order
    base: Literal["chi2", "kl"] = "chi2"  # divergence inside target_conditional
    bins: int = 10
    edges: np.ndarray | None = None  # user-given region edges (target_conditional)
    # parameters given as `auto` (LANGUAGE.md §3): name -> candidate grid; the backend chooses among
    # them by validation (backends/dro/auto.py). An auto radius is NaN until chosen, so nothing can
    # silently use a placeholder.
    auto: dict[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Auto:
    """The value `auto` (optionally `auto in [c1, c2, ...]`) of a numeric option or ambiguity parameter."""

    candidates: tuple[float, ...] | None = None


# the documented default candidates of `auto` (docs/backends/tcdro.md): radii as in
# benchmarks/dro_tail.py --select-radius, bins around the language's default 10
AUTO_GRIDS: dict[str, tuple[float, ...]] = {
    "radius": (0.03, 0.1, 0.3, 1.0),
    "bins": (5.0, 10.0, 20.0),
    "outer_radius": (0.03, 0.1, 0.3, 1.0),
}


@dataclass(frozen=True)
class LinearResidual:
    """Structure found in a DRO loss ℓ_i = φ(x_iᵀw + b − y_i): lets Wasserstein use closed forms."""

    X: np.ndarray  # (N, p) features
    y: np.ndarray  # (N,)
    weight: str  # variable name of w (shape (p,))
    bias: str | None  # variable name of b (scalar) or None
    loss: Literal["square", "abs"]


@dataclass(frozen=True)
class DROProblem:
    """Minimize the worst-case mean of a per-sample loss vector over an ambiguity set.

    `loss` is per_sample (returns a vector of length n_samples, or len(batch) with a batch).
    `targets` are the per-sample targets used for target-conditional regions.
    """

    variables: tuple[Variable, ...]
    loss: TorchFunction
    ambiguity: Ambiguity
    n_samples: int
    targets: np.ndarray | None = None
    linear: LinearResidual | None = None


Problem = (
    IsingProblem
    | SmoothProblem
    | BilevelProblem
    | GeneralBilevelProblem
    | MinimaxProblem
    | MultiObjectiveProblem
    | DROProblem
)
