"""AdaSGDA and AdaSGDA-VR: orthogonalized, adaptive, two-time-scale stochastic gradient descent-ascent.

The step rule plugs into the minimax loop of gda.py (minibatches, projections, proxy, divergence,
verification). Per player p ∈ {x, y} with gradient estimate m (the minibatch gradient, or a
STORM estimate in the VR variant):

    V_p += ‖m_p‖²,   s₀ = ‖m₀‖ (the first gradient, both players),
    η_x = (c_x / s₀) / (max(V_x, V_y) / s₀²)^a,   η_y = (c_y / s₀) / (V_y / s₀²)^b,   a > b,
    x ← P_X(x − η_x · D(m_x)),   y ← P_Y(y + η_y · D(m_y)),

where D(M) = polar(M) · ‖M‖_F / ‖polar(M)‖_F for 2-D variables (Newton–Schulz polar factor, the
singular values equalized, the gradient's length kept) and D(g) = ‖g‖ · g/‖g‖ = g for vectors.
Measuring the accumulators in units of s₀ makes the iterates exactly invariant to scaling f by a
constant; c_x, c_y are step lengths in the units of the variables. docs/backends/adasgda.md has
the derivation, the deviations from the brief and the measured tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import Backend, RawSolution, RunContext
from optlang.backends.minimax.loop import (
    LOOP_CHOICES,
    LOOP_RANGES,
    LoopSettings,
    MinimaxOracle,
    Tensors,
    minimax_loop,
    minimax_refusal,
)
from optlang.backends.minimax.stationarity import sq_norm
from optlang.errors import OptionError
from optlang.lazy import lazy_module
from optlang.problem import MinimaxProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

if TYPE_CHECKING:
    from optlang.analysis import Form

NS_COEFFS = (3.4445, -4.7750, 2.0315)  # Muon's quintic Newton–Schulz coefficients (KellerJordan/Muon)


def polar_factor(g: torch.Tensor, steps: int = 5, polish: int = 2) -> torch.Tensor:
    """Approximate orthogonal polar factor U Vᵀ of a matrix (≥3-D tensors as shape[0] × rest).

    `steps` quintic Newton–Schulz iterations (Muon) bring the singular values into ~[0.7, 1.2];
    `polish` cubic iterations X ← 1.5X − 0.5XXᵀX then pull them to 1. Zero maps to zero.
    """
    shape = g.shape
    m = g.reshape(shape[0], -1)
    nrm = torch.linalg.matrix_norm(m)
    if float(nrm) == 0.0:
        return torch.zeros_like(g)
    x = m / nrm
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    a, b, c = NS_COEFFS
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    for _ in range(polish):
        x = 1.5 * x - 0.5 * (x @ x.T) @ x
    if transposed:
        x = x.T
    return x.reshape(shape)


def direction(g: torch.Tensor, orthogonalize: bool, steps: int, polish: int) -> torch.Tensor:
    """The update direction with the gradient's length: rescaled polar factor for matrices, g for vectors."""
    if not orthogonalize or g.ndim < 2 or min(g.shape[0], g[0].numel()) < 2:
        return g
    q = polar_factor(g, steps, polish)
    qn = torch.linalg.vector_norm(q)
    if float(qn) == 0.0:
        return g
    return q * (torch.linalg.vector_norm(g) / qn)


def _clone(t: Tensors) -> Tensors:
    return {k: v.detach().clone() for k, v in t.items()}


class AdaSGDARule:
    """The AdaSGDA step rule (base or STORM variance-reduced), simultaneous or alternating."""

    def __init__(self, opts: Any) -> None:
        self.o = opts
        self.vr = opts.variant == "vr"
        self.vx = self.vy = 0.0
        self.s0: float | None = None  # first gradient norm, both players
        self.sx = self.sy = 1.0  # largest gradient norm of each player so far (its accumulator's unit)
        self.eta_x = self.eta_y = 0.0
        self.extra_evals = 0
        self.ortho_steps = 0  # player steps taken along orthogonalized directions
        self.rx = self.ry = 1.0  # distance scales (DoG); 1 when off, so c_x, c_y are the step lengths
        self.x0: Tensors | None = None
        self.y0: Tensors | None = None
        # STORM state: previous estimates and the points they were taken at (x- and y-estimators)
        self.mx: Tensors | None = None
        self.my: Tensors | None = None
        self.px: tuple[Tensors, Tensors] | None = None
        self.py: tuple[Tensors, Tensors] | None = None

    def _track_distance(self, x: Tensors, y: Tensors) -> None:
        """DoG: the step scales grow with the largest distance travelled from the start (r_ε at first)."""
        if self.x0 is None or self.y0 is None:
            self.x0, self.y0 = _clone(x), _clone(y)
            self.rx = self.o.r_eps * (1.0 + math.sqrt(sq_norm(x)))
            self.ry = self.o.r_eps * (1.0 + math.sqrt(sq_norm(y)))
            return
        self.rx = max(self.rx, math.sqrt(sq_norm({k: x[k] - self.x0[k] for k in x})))
        self.ry = max(self.ry, math.sqrt(sq_norm({k: y[k] - self.y0[k] for k in y})))

    def _beta(self, t: int) -> float:
        return min(1.0, (t + 1.0) ** (-self.o.storm_power))

    def _storm_x(self, t: int, x: Tensors, y: Tensors, gx: Tensors, batch: Any, oracle: MinimaxOracle) -> Tensors:
        if self.mx is None or self.px is None:
            m = gx
        else:
            _, gpx, _ = oracle.grads(self.px[0], self.px[1], batch)
            self.extra_evals += 1
            beta = self._beta(t)
            m = {k: gx[k] + (1.0 - beta) * (self.mx[k] - gpx[k]) for k in gx}
        self.mx, self.px = m, (_clone(x), _clone(y))
        return m

    def _storm_y(self, t: int, x: Tensors, y: Tensors, gy: Tensors, batch: Any, oracle: MinimaxOracle) -> Tensors:
        if self.my is None or self.py is None:
            m = gy
        else:
            _, _, gpy = oracle.grads(self.py[0], self.py[1], batch)
            self.extra_evals += 1
            beta = self._beta(t)
            m = {k: gy[k] + (1.0 - beta) * (self.my[k] - gpy[k]) for k in gy}
        self.my, self.py = m, (_clone(x), _clone(y))
        return m

    def _storm_both(
        self, t: int, x: Tensors, y: Tensors, gx: Tensors, gy: Tensors, batch: Any, oracle: MinimaxOracle
    ) -> tuple[Tensors, Tensors]:
        """Simultaneous VR: both estimators share the previous point, so one extra evaluation serves both."""
        if self.mx is None or self.my is None or self.px is None:
            mx, my = gx, gy
        else:
            _, gpx, gpy = oracle.grads(self.px[0], self.px[1], batch)
            self.extra_evals += 1
            beta = self._beta(t)
            mx = {k: gx[k] + (1.0 - beta) * (self.mx[k] - gpx[k]) for k in gx}
            my = {k: gy[k] + (1.0 - beta) * (self.my[k] - gpy[k]) for k in gy}
        self.mx, self.my = mx, my
        self.px = self.py = (_clone(x), _clone(y))
        return mx, my

    def _step(self, tensors: Tensors, m: Tensors, eta: float, sign: float, project: Any, unit: float) -> float:
        """Move along D(m) by eta, project, and return the squared length of the realized mapping Δ/eta."""
        o = self.o
        before = _clone(tensors)
        # far from stationarity the polar factor preconditions; near it, plain directions converge linearly
        ortho = o.orthogonalize and math.sqrt(sq_norm(m)) > o.ortho_until * unit
        self.ortho_steps += int(ortho)
        with torch.no_grad():
            for k, g in m.items():
                tensors[k].add_(direction(g, ortho, o.ns_steps, o.ns_polish), alpha=sign * eta)
        project(tensors)
        return sq_norm({k: tensors[k] - before[k] for k in tensors}) / (eta * eta)

    def update(
        self,
        t: int,
        x: Tensors,
        y: Tensors,
        gx: Tensors,
        gy: Tensors,
        batch: torch.Tensor | None,
        oracle: MinimaxOracle,
    ) -> None:
        """One AdaSGDA iteration from the gradients (gx, gy) at (x, y) on `batch`.

        The step uses the accumulators with this step's ‖m‖² included (bounded first steps); the
        accumulators then keep the realized projected mapping ‖Δ/η‖² instead, which vanishes at a
        constrained stationary point where the raw gradient does not (else η would decay forever).
        """
        o = self.o
        if self.vr and not o.alternating:
            mx, my = self._storm_both(t, x, y, gx, gy, batch, oracle)
        else:
            mx = self._storm_x(t, x, y, gx, batch, oracle) if self.vr else gx
            my = gy
        nx, ny = sq_norm(mx), sq_norm(my)
        if self.s0 is None:
            self.s0 = math.sqrt(nx + ny) or 1.0
            self.sx = self.sy = 1e-6 * self.s0  # a player whose gradients all vanish keeps a tiny unit
        self.sx = max(self.sx, math.sqrt(nx))  # each player's unit: its largest gradient so far
        self.sy = max(self.sy, math.sqrt(ny))
        if o.dog:
            self._track_distance(x, y)
        vy_trial = self.vy + (0.0 if o.alternating else ny)
        ratio_x, ratio_y = (self.vx + nx) / self.sx**2, vy_trial / self.sy**2
        self.eta_x = (o.c_x * self.rx / self.sx) / max(ratio_x, ratio_y, 1e-300) ** o.a
        self.vx += self._step(x, mx, self.eta_x, -1.0, oracle.project_x_, self.sx)
        if o.alternating:  # the max player answers the new x (Gauss–Seidel)
            _, _, gy = oracle.grads(x, y, batch)
            self.extra_evals += 1
            my = self._storm_y(t, x, y, gy, batch, oracle) if self.vr else gy
            ny = sq_norm(my)
            self.sy = max(self.sy, math.sqrt(ny))
        self.eta_y = (o.c_y * self.ry / self.sy) / max((self.vy + ny) / self.sy**2, 1e-300) ** o.b
        self.vy += self._step(y, my, self.eta_y, 1.0, oracle.project_y_, self.sy)

    def info(self) -> dict[str, Any]:
        o = self.o
        return {
            "variant": o.variant,
            "orthogonalize": o.orthogonalize,
            "alternating": o.alternating,
            "eta_x": self.eta_x,
            "eta_y": self.eta_y,
            "accum_x": self.vx,
            "accum_y": self.vy,
            "first_grad_norm": self.s0,
            "unit_x": self.sx,
            "unit_y": self.sy,
            "c_x": o.c_x,
            "c_y": o.c_y,
            "a": o.a,
            "b": o.b,
            "extra_evaluations": self.extra_evals,
            "orthogonalized_steps": self.ortho_steps,
        }


class AdaSGDA(Backend):
    """AdaSGDA(-VR): orthogonalized adaptive two-time-scale GDA for nonconvex-strongly-concave minimax."""

    name = "adasgda"
    kinds = frozenset({"minimax"})
    summary = "orthogonalized adaptive two-time-scale stochastic GDA (variant base | vr), parameter-free defaults"
    priority = 10
    preload = ("torch._dynamo",)  # the first double backward imports it (≈1–9 s on a loaded machine)
    # the declared meaning of the options; b ≤ a (two options together) is checked by check_options
    option_ranges = {
        **LOOP_RANGES,
        "c_x": ">0",
        "c_y": ">0",
        "a": "[0,1]",
        "b": "[0,1]",
        "ns_steps": ">=0",
        "ns_polish": ">=0",
        "ortho_until": ">=0",
        "storm_power": "(0,1]",
        "r_eps": ">0",
    }
    option_choices = {**LOOP_CHOICES, "variant": ("base", "vr")}

    @dataclass
    class Options:
        variant: str = "base"  # base | vr (STORM estimators, one extra gradient per step)
        orthogonalize: bool = True  # Newton–Schulz polar directions for 2-D variables
        c_x: float = 1.0  # step scale of the min player (× distance travelled with dog, else units of x)
        c_y: float = 1.0  # step scale of the max player
        a: float = 0.6  # accumulator power of the min player (a > b: x is the slow player)
        b: float = 0.2  # accumulator power of the max player (b < a: y is the fast player)
        ns_steps: int = 5
        ns_polish: int = 2
        ortho_until: float = 1e-2  # orthogonalize while ‖m_p‖ > ortho_until · s₀ (0: always)
        storm_power: float = 2.0 / 3.0  # VR momentum β_t = (t + 1)^(−storm_power)
        alternating: bool = False  # y answers the new x (one extra gradient per step)
        dog: bool = True  # step scales c_p · (largest distance travelled so far), as in DoG
        r_eps: float = 1e-3  # DoG's first distance, relative to 1 + ‖start‖
        batch: int = 0  # 0: full batch up to 1024 samples, else 256
        check_every: int = 0  # stochastic runs: full-batch proxy every this many steps (0: once an epoch)
        report_every: int = 50
        inner_iters: int = 3000
        convex_concave: str = "auto"  # auto (sampled curvature) | yes | no: whether to report a duality gap
        final_report: bool = True
        patience: int = 1000  # stop after this many iterations without a 1% better proxy (0: never)

    def refuse(self, form: Form) -> str | None:
        return minimax_refusal(form, self.kinds)

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """The declared ranges and choices, and b ≤ a (x is the slow player) for every combination of their
        values and `auto` candidates (autotune runs the product of the grids), named by the power the user
        changed (b when both or neither were)."""
        super().check_options(options, auto)
        auto = auto or {}
        a_vals = auto.get("a") or (options.a,)
        b_vals = auto.get("b") or (options.b,)
        if max(b_vals) > min(a_vals):
            default = self.Options()
            a_set, b_set = options.a != default.a or "a" in auto, options.b != default.b or "b" in auto
            key = "a" if a_set and not b_set else "b"
            raise OptionError(
                key,
                f"'{self.name}' needs b ≤ a (a > b separates the time scales), got a = "
                f"{', '.join(f'{v:g}' for v in a_vals)}, b = {', '.join(f'{v:g}' for v in b_vals)}",
            )

    def solve(self, problem: MinimaxProblem, options: Any, ctx: RunContext) -> RawSolution:
        """Run AdaSGDA (or AdaSGDA-VR) on the minimax problem."""
        self.check_options(options)  # make_options checked them; options built by hand are checked here
        settings = LoopSettings.from_options(options)
        return minimax_loop(problem, AdaSGDARule(options), ctx, settings)
