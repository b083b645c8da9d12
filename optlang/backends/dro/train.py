"""Torch training loops and objectives for the DRO backends (tcdro, erm).

What lives here: the objectives (plain mean, region χ²/KL robust mean, Wasserstein closed form
for linear models), each able to give (a) a full-batch differentiable value whose gradient is
the Danskin gradient Σ w_i ∇ℓ_i with the exact worst-case weights, and (b) an unbiased minibatch
estimate through the variational forms of the duals; and `train`, which runs L-BFGS (full batch,
free variables) or projected Adam (full batch or minibatch) under the RunContext's limits.
The exact mathematics (duals, regions) lives in dro_common.py.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext, Status
from optlang.backends.common import KeepBest, finite, init_tensors, project_all_, to_numpy
from optlang.backends.dro.common import Regions, RobustValue, robust_value
from optlang.backends.loop import End, LoopOptions, Step, diverged, run_loop
from optlang.lazy import lazy_module, no_grad
from optlang.problem import DROProblem, LinearResidual

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

_EXP_CLAMP = 60.0


# ----------------------------------------------------------------------------- objectives
class Objective(ABC):
    """A DRO training objective: full-batch value (differentiable), minibatch estimate, refresh."""

    minibatch_ok: bool = True

    @abstractmethod
    def full(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        """The objective on all samples (differentiable)."""

    def batch(self, values: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
        """An estimate of the objective from the samples `idx` (objectives with minibatch_ok)."""
        raise RuntimeError(f"{type(self).__name__} has no minibatch estimate (minibatch_ok is False)")

    def refresh(self, values: dict[str, torch.Tensor]) -> None:  # noqa: B027 — optional hook, default no-op
        """Re-solve the inner duals exactly on the full data (minibatch mode)."""

    def dual_params(self) -> list[torch.Tensor]:
        return []


class MeanObjective(Objective):
    """ERM: the plain mean of the per-sample loss (optionally with fixed per-sample weights)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def full(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.fn(values).mean()

    def batch(self, values: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
        return self.fn(values, batch=idx).mean()


def full_losses(fn: Any, values: dict[str, torch.Tensor], n: int, chunk: int) -> torch.Tensor:
    """The per-sample loss vector on all samples, evaluated in chunks when n is large."""
    if n <= chunk:
        return fn(values)
    parts = []
    for start in range(0, n, chunk):
        idx = torch.arange(start, min(n, start + chunk), device=next(iter(values.values())).device)
        parts.append(fn(values, batch=idx))
    return torch.cat(parts)


class RegionObjective(Objective):
    """Σ_k a_k sup_{D(Q_k‖P̂_k) ≤ ρ_k} E_{Q_k} ℓ over target regions (one region = global DRO).

    Full batch: the exact duals are solved in float64 on the detached losses, and the value is
    Σ w_i ℓ_i with the worst-case weights w detached (value exact, gradient by Danskin).
    Minibatch: the duals' variational forms make the objective an expectation, so a uniform
    minibatch gives an unbiased estimate; χ²: √E z² = min_s E z²/(2s) + s/2, KL: λ log E e^{ℓ/λ}
    = min_μ μ + λ E e^{(ℓ−μ)/λ} − λ. The dual variables are re-solved exactly by `refresh`
    and, with dual="joint", also trained jointly with the model between refreshes.
    """

    def __init__(
        self, fn: Any, regions: Regions, base: str, mix: str, outer_radius: float, device: Any, dtype: Any, chunk: int
    ) -> None:
        self.fn, self.regions, self.base, self.mix, self.outer = fn, regions, base, mix, outer_radius
        self.n = int(regions.labels.size)
        self.chunk = chunk
        self.last: RobustValue | None = None
        K = regions.k
        kw = {"device": device, "dtype": dtype}
        self.labels = torch.as_tensor(regions.labels, device=device, dtype=torch.long)
        self.counts = torch.as_tensor(regions.counts, **kw)
        self.rho = torch.as_tensor(regions.radii, **kw)
        self.c = torch.sqrt(1.0 + 2.0 * self.rho)
        self.a = torch.as_tensor(regions.masses, **kw).clone()
        # χ²: (η, log s); KL: (μ, log λ). Set by refresh before use.
        self.d1 = torch.zeros(K, **kw).requires_grad_(True)
        self.d2 = torch.zeros(K, **kw).requires_grad_(True)

    def exact(self, losses: np.ndarray) -> RobustValue:
        return robust_value(losses, self.regions, self.base, self.mix, self.outer)

    def full(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        loss = full_losses(self.fn, values, self.n, self.chunk)
        rv = self.exact(loss.detach().to("cpu", torch.float64).numpy())
        self.last = rv
        w = torch.as_tensor(rv.sample_weights, device=loss.device, dtype=loss.dtype)
        return (w * loss).sum()

    def batch(self, values: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
        loss = self.fn(values, batch=idx)
        k = self.labels[idx]
        if self.mix == "adaptive":  # η + Σ_k π_k λ_k(ρ_k − ½) + E (λ_k + ℓ − η)₊² / (2λ_k)
            eta, lam = self.d1[0], torch.exp(self.d2)
            masses = self.counts / self.n
            head = eta + (masses * lam * (self.rho - 0.5)).sum()
            return head + (torch.relu(lam[k] + loss - eta) ** 2 / (2.0 * lam[k])).mean()
        coef = (self.n / idx.numel()) * self.a[k] / self.counts[k]
        if self.base == "chi2":
            eta, s = self.d1[k], torch.exp(self.d2[k])
            h = eta + self.c[k] * (torch.relu(loss - eta) ** 2 / (2.0 * s) + s / 2.0)
        else:
            mu, lam = self.d1[k], torch.exp(self.d2[k])
            z = torch.clamp((loss - mu) / lam, max=_EXP_CLAMP)
            h = lam * self.rho[k] + mu + lam * (torch.exp(z) - 1.0)
        return (coef * h).sum()

    @no_grad
    def refresh(self, values: dict[str, torch.Tensor]) -> None:
        loss = full_losses(self.fn, values, self.n, self.chunk).to("cpu", torch.float64).numpy()
        rv = self.exact(loss)
        self.last = rv
        d1 = np.empty(self.regions.k)
        d2 = np.empty(self.regions.k)
        if self.mix == "adaptive":
            scale = max(float(np.abs(loss).max()), 1e-12)
            d1[:] = rv.eta
            d2[:] = np.log(np.clip(np.nan_to_num(rv.duals, posinf=1e6 * scale), 1e-8 * scale, 1e6 * scale))
            self.d1.copy_(torch.as_tensor(d1))
            self.d2.copy_(torch.as_tensor(d2))
            return
        for k in range(self.regions.k):
            lk = loss[self.regions.labels == k]
            scale = max(float(np.abs(lk).max()), 1e-12)
            if self.base == "chi2":
                eta = rv.duals[k] if np.isfinite(rv.duals[k]) else lk.min() - scale
                s = math.sqrt(float(np.mean(np.maximum(lk - eta, 0.0) ** 2)))
                d1[k], d2[k] = eta, math.log(max(s, 1e-8 * scale))
            else:
                lam = rv.duals[k] if np.isfinite(rv.duals[k]) else 1e6 * scale
                lam = max(lam, 1e-6 * scale)
                top = float(lk.max())
                d1[k] = top + lam * math.log(float(np.mean(np.exp((lk - top) / lam))))
                d2[k] = math.log(lam)
        self.d1.copy_(torch.as_tensor(d1))
        self.d2.copy_(torch.as_tensor(d2))
        self.a.copy_(torch.as_tensor(rv.region_weights))

    def dual_params(self) -> list[torch.Tensor]:
        return [self.d1, self.d2]


class WassersteinLinearObjective(Objective):
    """Worst-case mean loss of a linear model over a Wasserstein ball on the features (closed form)."""

    minibatch_ok = False

    def __init__(self, lin: LinearResidual, radius: float, p: int, device: Any, dtype: Any) -> None:
        self.lin, self.radius, self.p = lin, float(radius), int(p)
        self.X = torch.as_tensor(np.asarray(lin.X, dtype=np.float64), device=device, dtype=dtype)
        self.y = torch.as_tensor(np.asarray(lin.y, dtype=np.float64), device=device, dtype=dtype)

    def full(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        w = values[self.lin.weight]
        res = self.X @ w - self.y
        if self.lin.bias is not None:
            res = res + values[self.lin.bias]
        wn = torch.linalg.vector_norm(w)
        if self.lin.loss == "abs":
            return res.abs().mean() + self.radius * wn
        return (torch.sqrt(torch.mean(res * res)) + self.radius * wn) ** 2


# ----------------------------------------------------------------------------- training loop
@dataclass
class TrainConfig:
    """How to train: solver, step size, batch size, iteration budget and dual handling."""

    solver: str = "auto"  # auto | lbfgs | adam
    lr: float = 0.01
    batch_size: int = 0  # 0: full batch up to full_batch_max samples, else 1024
    full_batch_max: int = 200_000
    max_iter: int = 500  # L-BFGS iterations or Adam steps (ctx.max_iter overrides)
    tol: float = 1e-10  # relative change of the objective that counts as converged
    dual: str = "closed_form"  # minibatch duals: closed_form (refreshed) | joint (also trained)
    refresh: int = 0  # minibatch: refresh the duals every this many steps (0: once per epoch)
    eval_every: int = 0  # minibatch: exact full objective every this many steps (0: per epoch)


@dataclass
class TrainOutcome:
    values: dict[str, np.ndarray]
    status: Status
    iterations: int
    solver: str
    best_value: float


def _plan_solver(problem: DROProblem, cfg: TrainConfig, objective: Objective) -> tuple[str, int]:
    n = problem.n_samples
    free = all(v.domain.kind == "free" for v in problem.variables)
    bs = cfg.batch_size if cfg.batch_size > 0 else (n if n <= cfg.full_batch_max else 1024)
    if not objective.minibatch_ok:
        bs = n
    bs = min(bs, n)
    solver = cfg.solver
    if solver == "auto":
        solver = "lbfgs" if (free and bs >= n) else "adam"
    if solver == "lbfgs" and not free:
        solver = "adam"  # L-BFGS steps cannot be projected; projected Adam honours the domains
    if solver == "lbfgs":
        bs = n
    return solver, bs


def train_polished(
    problem: DROProblem, make_objective: Any, ctx: RunContext, cfg: TrainConfig, polish_iter: int = 200
) -> TrainOutcome:
    """Train in ctx.dtype; after a float32 full-batch L-BFGS run, polish in float64 from its point.

    float32 L-BFGS stalls at ~1e-3 relative on ill-conditioned data (raw, unstandardized features);
    a few float64 iterations recover full precision at a small cost. `polish_iter` 0 disables it.
    """
    out = train(problem, make_objective(ctx.dtype), ctx, cfg)
    if polish_iter <= 0 or ctx.dtype == torch.float64 or out.solver != "lbfgs" or ctx.should_stop():
        return out
    if out.status == Status.DIVERGED:
        return out
    pol = train(
        problem, make_objective(torch.float64), ctx, cfg, init=out.values, dtype=torch.float64, max_iter=polish_iter
    )
    if pol.status == Status.DIVERGED or not pol.best_value <= out.best_value:
        return out
    return TrainOutcome(pol.values, pol.status, out.iterations + pol.iterations, "lbfgs+float64-polish", pol.best_value)


def train(
    problem: DROProblem,
    objective: Objective,
    ctx: RunContext,
    cfg: TrainConfig,
    init: dict[str, np.ndarray] | None = None,
    dtype: Any = None,
    max_iter: int | None = None,
) -> TrainOutcome:
    """Minimize the objective over the problem's variables; return the best iterate found."""
    torch.manual_seed(ctx.seed)
    dtype = dtype or ctx.dtype
    if init is None:
        tensors = {
            k: t.detach().to(dtype).requires_grad_(True) for k, t in init_tensors(problem.variables, ctx).items()
        }
    else:
        tensors = {
            v.name: torch.as_tensor(np.asarray(init[v.name]), dtype=dtype, device=ctx.device)
            .clone()
            .requires_grad_(True)
            for v in problem.variables
        }
    params = list(tensors.values())
    solver, bs = _plan_solver(problem, cfg, objective)
    if max_iter is None:
        max_iter = ctx.max_iter if ctx.max_iter is not None else cfg.max_iter
    tol = ctx.tol if ctx.tol is not None else cfg.tol
    n = problem.n_samples
    best = KeepBest(tensors)

    step: _Calm
    if solver == "lbfgs":
        step = _LBFGSStep(objective, tensors, params, tol)
    else:
        step = _AdamStep(problem, objective, tensors, params, cfg, ctx, bs, max_iter, tol)
    step.prev = _evaluate(objective, tensors)
    best.offer(step.prev)
    ctx.report(step.prev)
    # L-BFGS: a row every 10 iterations; Adam: one at each full evaluation (every eval_every steps)
    report_every = 10 if solver == "lbfgs" else 1
    options = LoopOptions(
        max_iter=max_iter, iterations_first=True, report_every=report_every, report_value="best", restore="always"
    )
    end = run_loop(step, ctx, options, keep=best)
    status = end.status or Status.ITERATION_LIMIT
    it = int(end.iterations)
    return TrainOutcome(to_numpy(tensors), status, it, solver if bs >= n else f"{solver}-minibatch", best.value)


def _evaluate(objective: Objective, tensors: dict[str, torch.Tensor]) -> float:
    """The exact full-batch objective (no gradient)."""
    with torch.no_grad():
        return float(objective.full(tensors))


class _Calm(Step):
    """Converged after three evaluations in a row whose value moved by at most tol·max(1, |value|)."""

    def __init__(self, tol: float) -> None:
        self.tol = tol
        self.prev = math.inf
        self.calm = 0
        self.value = math.inf

    def calm_after(self, val: float) -> End | None:
        self.calm = self.calm + 1 if abs(self.prev - val) <= self.tol * max(1.0, abs(val)) else 0
        self.prev = val
        return End(Status.CONVERGED) if self.calm >= 3 else None


class _LBFGSStep(_Calm):
    """One full-batch L-BFGS iteration (strong Wolfe); the exact objective after it."""

    def __init__(
        self, objective: Objective, tensors: dict[str, torch.Tensor], params: list[torch.Tensor], tol: float
    ) -> None:
        super().__init__(tol)
        self.objective, self.tensors, self.params = objective, tensors, params
        self.opt = torch.optim.LBFGS(
            params,
            lr=1.0,
            max_iter=1,
            max_eval=30,
            history_size=20,
            line_search_fn="strong_wolfe",
            tolerance_grad=1e-12,
            tolerance_change=1e-16,
        )

    def _closure(self) -> torch.Tensor:
        self.opt.zero_grad()
        val = self.objective.full(self.tensors)
        val.backward()
        return val

    def update(self, t: float) -> float | End:
        self.opt.step(self._closure)
        self.value = _evaluate(self.objective, self.tensors)
        if not all(finite(p) for p in self.params):
            return diverged(counted=True)
        return self.value

    def check(self, t: float) -> End | None:
        return self.calm_after(self.value)


class _AdamStep(_Calm):
    """One projected Adam step (full batch, or a minibatch with the duals refreshed every `refresh`
    steps); the exact objective every eval_every steps and at the last one."""

    def __init__(
        self,
        problem: DROProblem,
        objective: Objective,
        tensors: dict[str, torch.Tensor],
        params: list[torch.Tensor],
        cfg: TrainConfig,
        ctx: RunContext,
        bs: int,
        max_iter: int,
        tol: float,
    ) -> None:
        super().__init__(tol)
        n = problem.n_samples
        self.problem, self.objective, self.tensors, self.bs, self.n, self.max_iter = (
            problem,
            objective,
            tensors,
            bs,
            n,
            max_iter,
        )
        self.minibatch = bs < n
        extra = objective.dual_params() if (self.minibatch and cfg.dual == "joint") else []
        self.opt = torch.optim.Adam(params + extra, lr=cfg.lr)
        steps_per_epoch = max(1, math.ceil(n / bs))
        self.refresh = cfg.refresh or steps_per_epoch
        self.eval_every = cfg.eval_every or (steps_per_epoch if self.minibatch else 10)
        self.gen = ctx.torch_generator()
        self.device = ctx.device
        self.perm = torch.randperm(n, generator=self.gen, device=ctx.device)
        self.pos = 0
        self.fresh = False
        self.val_t: torch.Tensor | None = None

    def measure(self, t: float) -> End | None:
        self.opt.zero_grad()
        if self.minibatch:
            if t % self.refresh == 0:
                self.objective.refresh(self.tensors)
            if self.pos + self.bs > self.n:
                self.perm = torch.randperm(self.n, generator=self.gen, device=self.device)
                self.pos = 0
            idx = self.perm[self.pos : self.pos + self.bs]
            self.pos += self.bs
            self.val_t = self.objective.batch(self.tensors, idx)
        else:
            self.val_t = self.objective.full(self.tensors)
        return None if finite(self.val_t) else diverged()  # a minibatch estimate: tested, never kept

    def update(self, t: float) -> float | None:
        assert self.val_t is not None
        self.val_t.backward()
        self.opt.step()
        project_all_(self.problem.variables, self.tensors)
        it = t + 1
        self.fresh = it % self.eval_every == 0 or it == self.max_iter
        if not self.fresh:
            return None
        self.value = _evaluate(self.objective, self.tensors)
        return self.value

    def row(self, t: float, value: float | None, ctx: RunContext) -> None:
        if self.fresh and value is not None:
            ctx.report(value)

    def check(self, t: float) -> End | None:
        return self.calm_after(self.value) if self.fresh else None
