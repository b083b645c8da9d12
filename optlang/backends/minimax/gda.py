"""Projected gradient descent-ascent with fixed steps: the `gda` baseline of the minimax wing.

Its step rule runs in the shared `minimax_loop` (loop.py), as adasgda's does.
"""

from __future__ import annotations

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
from optlang.lazy import lazy_module, no_grad
from optlang.problem import MinimaxProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

if TYPE_CHECKING:
    from optlang.analysis import Form


class FixedStepGDA:
    """Projected GDA with fixed steps: simultaneous (both from z_t) or alternating (y from the new x)."""

    def __init__(self, lr_x: float, lr_y: float, alternating: bool) -> None:
        self.lr_x, self.lr_y, self.alternating = lr_x, lr_y, alternating

    @no_grad
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
        for k, g in gx.items():
            x[k].sub_(self.lr_x * g)
        oracle.project_x_(x)
        if self.alternating:
            _, _, gy = oracle.grads(x, y, batch)
        for k, g in gy.items():
            y[k].add_(self.lr_y * g)
        oracle.project_y_(y)

    def info(self) -> dict[str, Any]:
        return {"lr_x": self.lr_x, "lr_y": self.lr_y, "alternating": self.alternating}


class GDA(Backend):
    """Projected gradient descent-ascent with fixed steps: the minimax baseline."""

    name = "gda"
    kinds = frozenset({"minimax"})
    summary = "projected gradient descent-ascent with fixed steps lr_x, lr_y (baseline)"
    priority = 60
    option_ranges = {**LOOP_RANGES, "lr_x": ">0", "lr_y": ">0"}
    option_choices = LOOP_CHOICES
    preload = ("torch._dynamo",)  # the first double backward imports it (≈1–9 s on a loaded machine)

    @dataclass
    class Options:
        lr_x: float = 0.01
        lr_y: float = 0.01
        alternating: bool = False
        batch: int = 0  # 0: full batch up to 1024 samples, else 256
        check_every: int = 0  # stochastic runs: full-batch proxy every this many steps (0: once an epoch)
        report_every: int = 50
        inner_iters: int = 3000
        convex_concave: str = "auto"  # auto (sampled curvature) | yes | no: whether to report a duality gap
        final_report: bool = True
        patience: int = 1000  # stop after this many iterations without a 1% better proxy (0: never)

    def refuse(self, form: Form) -> str | None:
        return minimax_refusal(form, self.kinds)

    def solve(self, problem: MinimaxProblem, options: Any, ctx: RunContext) -> RawSolution:
        """Run fixed-step projected GDA on the minimax problem."""
        self.check_options(options)  # make_options checked them; options built by hand are checked here
        rule = FixedStepGDA(options.lr_x, options.lr_y, options.alternating)
        settings = LoopSettings.from_options(options)
        return minimax_loop(problem, rule, ctx, settings)
