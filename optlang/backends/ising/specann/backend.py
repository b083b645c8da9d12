"""SpecAnn: the spectral-annealing backend for Ising and Max-Cut (METHODS.md "SpecAnn").

Phases: (1) absorb the field into one extra spin; (2) sweep the normalization path
M(t) = D^(-t/2) J D^(-t/2), t = 0 → 1, with warm-started LOBPCG solves; (3) round many candidates
per eigenspace and descend them all at once (batched 1-flip); (4) refine the elite candidates by
batched annealed flips over a graph colouring until the time limit. The best state is kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.ising.ops import (
    descent_with_fields,
    energy_check,
    ising_info,
    ising_refusal,
    to_torch_csr,
    torch_threads,
)
from optlang.backends.ising.specann.anneal import ColorBlocks, anneal, color_classes, temperature_scale
from optlang.backends.ising.specann.eigen import path_sweep, round_eigenspace
from optlang.backends.ising.specann.lattice import MaskedTorus, PackedTorus, anneal_torus, detect_torus, pack_torus
from optlang.backends.ising.specann.tabu import tabu_search
from optlang.backends.stopping import Stagnation
from optlang.errors import OptionError
from optlang.lazy import lazy_module, no_grad
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

REFINES = ("anneal", "ils", "none")
PREDICTORS = ("inverse", "forward", "none")
LATTICES = ("auto", "on", "off")


@dataclass
class SpecAnnOptions:
    """SpecAnn's options (defaults chosen by measurement, see docs/backends/specann.md)."""

    path_steps: int = 5  # points t on the normalization path [0, 1]
    eigvecs: int = 8  # eigenvectors per path point (block size k)
    eig_iters: int = 20  # LOBPCG iterations per warm-started point (3x for the first, cold point)
    eig_tol: float = 1e-3  # relative residual at which a point counts as converged
    predictor: str = "inverse"  # diagonal warm start: inverse (D^-Δt/2), forward (D^+Δt/2), none
    candidates: int = 32  # rounded candidates per path point
    batch: int = 8  # candidates refined at once (capped by max_elems / n)
    max_elems: int = 262_144  # batch ≤ max_elems / n: big graphs anneal fewer, longer chains
    refine: str = "anneal"  # anneal | ils (perturb + descent) | none
    sweeps: int = 2000  # sweeps per anneal round (a round also ends when its time share is spent)
    t_start: float = 0.5  # first round's start temperature, × σ (mean |ΔE| at a random state); 0.5: Gset, issue 23
    t_start_large: float = 0.3  # the same for a large model (batch 1, time limit): one round fills the time
    t_end: float = 1.0  # final temperature, × δ / ln 100 (δ the smallest |ΔE| unit)
    reheat: float = 0.5  # later rounds start at t_start × reheat, from the elite states
    perturb: float = 0.05  # ils: fraction of spins flipped before each descent
    tabu: float = 0.0  # anneal: fraction of each round's time given to tabu search on its best states
    tabu_steps: int = 50_000  # most tabu steps per round
    tabu_tenure: int = 0  # tabu tenure base (a flipped spin is tabu tenure + U[0, tenure) steps); 0: max(10, n/50)
    tabu_max_n: int = 100_000  # no tabu above this many spins (one flip per step per candidate)
    spectral_fraction: float = 0.1  # most of the time limit the path sweep may use
    rounds: int = 3  # refinement rounds when no time limit is given (max_iter overrides)
    patience: int = 10  # time-limited: stop after rounds without a better state (stopping.py); 0: fill the limit
    threads: int = 1  # torch CPU threads during the solve (0: leave torch's setting)
    lattice_t_end: float = 0.85  # the bit-packed torus anneal's final temperature, × δ / ln 100 (~20× the sweeps)
    lattice: str = "auto"  # ±J torus annealed bit-packed (lattice.py): auto = at batch 1; on = always (or error); off


class _Incumbent:
    """The best state so far plus an elite pool of distinct good states (spin-major (n, m))."""

    def __init__(self, ctx: RunContext, pool_size: int, n: int, report: Any) -> None:
        self.ctx = ctx
        self.size = pool_size
        self.best_E = math.inf
        self.best_s: torch.Tensor | None = None
        self.pool: torch.Tensor | None = None  # (n, m)
        self.pool_E: torch.Tensor | None = None
        self.report = report
        self.first_time: float | None = None
        self._reported = math.inf
        self._hash = torch.randn(n, generator=ctx.torch_generator(), device=ctx.device).to(ctx.dtype)

    def offer(self, S: torch.Tensor, E: torch.Tensor) -> None:
        """Offer candidates S (n, B) with energies E (B,) (without the constant)."""
        k = int(torch.argmin(E))
        if float(E[k]) < self.best_E:
            self.best_E = float(E[k])
            self.best_s = S[:, k].clone()
            if self.first_time is None:
                self.first_time = self.ctx.elapsed()
            if self.best_E < self._reported - 1e-9 * (1 + abs(self.best_E)):  # not already reported mid-round
                self._reported = self.best_E
                self.report(self.best_E)
        allS = S if self.pool is None else torch.cat([self.pool, S], dim=1)
        allE = E if self.pool_E is None else torch.cat([self.pool_E, E])
        key = torch.stack([allE.double(), (self._hash @ allS).double().abs()], dim=1)
        _, first = np.unique(np.round(key.cpu().numpy(), 4), axis=0, return_index=True)
        first = torch.as_tensor(first, device=allE.device)
        order = first[torch.argsort(allE[first])][: self.size]
        self.pool, self.pool_E = allS[:, order].contiguous(), allE[order]

    def progress(self, e: float) -> None:
        """An energy reached inside a refinement round (its state joins the pool when the round ends)."""
        if e < self.best_E - 1e-9 * (1 + abs(e)) and e < self._reported - 1e-9 * (1 + abs(e)):
            self._reported = e
            self.report(e)

    def starts(self, B: int) -> torch.Tensor:
        """B starting states (n, B): the elite pool, tiled."""
        assert self.pool is not None
        m = self.pool.shape[1]
        reps = (B + m - 1) // m
        return self.pool.repeat(1, reps)[:, :B].contiguous()


class SpecAnn(Backend):
    """Spectral annealing: normalization path eigensolves, batched rounding and refinement."""

    name: ClassVar[str] = "specann"
    kinds: ClassVar[frozenset[str]] = frozenset({"ising", "maxcut"})
    summary: ClassVar[str] = (
        "spectral annealing: warm-started eigensolves along the normalization path, batched rounding, "
        "1-flip descent and annealed flips (sparse, cpu or cuda)"
    )
    priority: ClassVar[int] = 10
    Options: ClassVar[type] = SpecAnnOptions
    # counts ≥ 1; 0 keeps its documented meaning where it has one (tabu_tenure, patience, threads: the table
    # in docs/backends/specann.md); temperatures > 0; fractions of spins or of the time in (0, 1] / [0, 1]
    option_ranges: ClassVar[dict[str, str]] = {
        "path_steps": ">=1",
        "eigvecs": ">=1",
        "eig_iters": ">=1",
        "eig_tol": ">0",
        "candidates": ">=1",
        "batch": ">=1",
        "max_elems": ">=1",
        "sweeps": ">=1",
        "t_start": ">0",
        "t_start_large": ">0",
        "t_end": ">0",
        "reheat": ">0",
        "perturb": "(0,1]",
        "tabu": "[0,1]",
        "tabu_steps": ">=0",
        "tabu_tenure": ">=0",
        "tabu_max_n": ">=0",
        "spectral_fraction": "(0,1]",
        "rounds": ">=1",
        "patience": ">=0",
        "threads": ">=0",
        "lattice_t_end": ">0",
    }
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "refine": REFINES,
        "predictor": PREDICTORS,
        "lattice": LATTICES,
    }

    def refuse(self, form: Any) -> str | None:
        return ising_refusal(form, self.kinds)

    def solve(self, problem: IsingProblem, options: SpecAnnOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # (options built by hand, not by make_options)
        with torch_threads(options.threads if str(ctx.device) == "cpu" else 0):
            return _solve(problem, options, ctx)


@no_grad
def _solve(problem: IsingProblem, opt: SpecAnnOptions, ctx: RunContext) -> RawSolution:
    n0 = problem.n
    P = problem.with_field_spin()
    n = P.n
    dev, dt = ctx.device, ctx.dtype
    if n == 0 or P.J.nnz == 0:  # no couplings and no field: every state has the constant energy
        s = np.ones(n0)
        E, chk = energy_check(problem, s, float(problem.constant))
        return RawSolution(
            Status.OPTIMAL, {"s": s}, E, E, checks={"energy_recomputed": chk}, info=ising_info(problem, E)
        )
    index32 = torch.int32 if P.J.nnz < 2**31 else None  # int32 indices: a third less memory per coupling
    Jt = to_torch_csr(P.J, dev, dt, index_dtype=index32)
    h_t = torch.zeros(n, dtype=dt, device=dev)
    gen = ctx.torch_generator()
    B = int(max(1, min(opt.batch, opt.max_elems // max(n, 1))))
    const = float(P.constant)
    maxcut = problem.maxcut_weights is not None

    def report(e: float) -> None:
        extra = {"cut": -(e + const)} if maxcut else {}
        ctx.report(e + const, None, **extra)

    inc = _Incumbent(ctx, max(B, 4), n, report)
    limit = ctx.time_limit
    reserve = 0.0 if limit is None else min(0.03 * limit, 2.0)
    spec_end = math.inf if limit is None else opt.spectral_fraction * limit

    def stop_spec() -> bool:
        return ctx.should_stop() or ctx.elapsed() >= spec_end

    def stop_all() -> bool:
        return ctx.should_stop() or (limit is not None and ctx.elapsed() >= limit - reserve)

    # ---- phases 2-3: the normalization path, rounding, batched descent
    t0 = ctx.elapsed()
    path: list[dict[str, Any]] = []
    stop_desc = stop_all if inc.best_s is None else stop_spec
    for step in path_sweep(
        Jt,
        opt.eigvecs,
        opt.path_steps,
        gen,
        first_iters=3 * opt.eig_iters,
        iters=opt.eig_iters,
        tol=opt.eig_tol,
        predictor=opt.predictor,
        stop=stop_spec,
        first_stop=lambda: stop_spec() or ctx.elapsed() >= t0 + 0.5 * (spec_end - t0),  # half the share
    ):
        step_best = math.inf
        for lo in range(0, max(opt.candidates, 1), B):  # rounded a batch at a time: memory n·B
            S = round_eigenspace(step.vectors, min(B, max(opt.candidates, 1) - lo), gen, start=lo).contiguous()
            if inc.best_s is None:  # the very first cut is the rounded eigenvector itself (a big model's
                G = 2.0 * (Jt @ S.T.contiguous()).T + h_t  # descent takes a while; anytime means a cut right away)
                inc.offer(S.T.contiguous(), (S * (G + h_t)).sum(dim=1) / 2)
            S, G, _ = descent_with_fields(Jt, h_t, S, stop=stop_desc)
            E = (S * (G + h_t)).sum(dim=1) / 2
            inc.offer(S.T.contiguous(), E)
            step_best = min(step_best, float(E.min()))
            stop_desc = stop_spec
            if stop_spec():
                break
        path.append(
            {
                "t": step.t,
                "eigenvalues": [float(v) for v in step.values[:4]],
                "iterations": step.iterations,
                "residual": step.residual,
                "best_energy": step_best + const,
            }
        )
        if stop_spec():
            break
    spectral_time = ctx.elapsed() - t0

    # ---- phase 4: refinement of the elite pool
    rounds = sweeps_total = tabu_total = 0
    stop = ""
    max_rounds = ctx.max_iter if ctx.max_iter is not None else (None if limit is not None else opt.rounds)
    n_colors = 0
    anneal_stats: dict[str, int] = {}  # class updates propagated sparsely / densely (anneal's cost model)
    packed: PackedTorus | MaskedTorus | None = None  # a ±J torus annealed bit-packed (lattice.py)
    if opt.refine != "none":
        blocks = None
        if opt.refine == "anneal":
            t_c = time.perf_counter()
            if opt.lattice == "on" or (opt.lattice == "auto" and B == 1):
                shape = detect_torus(P.J, P.h)
                if shape is None and opt.lattice == "on":
                    raise OptionError(
                        "lattice",
                        "lattice = 'on' needs a ±J torus: a rows × cols periodic grid (both sides ≥ 3, numbered "
                        "row by row as torus() numbers it) with couplings of one magnitude and no field",
                    )
                packed = None if shape is None else pack_torus(shape, dev)
            if packed is None:
                blocks = ColorBlocks(P.J, color_classes(P.J, seed=ctx.seed), dev, dt, index_dtype=index32)
                n_colors = len(blocks)
            else:
                n_colors = packed.n_colors
            sigma, delta = temperature_scale(P.J, P.h)
            # the bit-packed torus anneal does ~20× the sweeps and ends colder (measured, docs/backends/specann.md)
            T_end = (opt.t_end if packed is None else opt.lattice_t_end) * delta / math.log(100.0)
            color_time = time.perf_counter() - t_c
        stagnation = Stagnation(opt.patience if max_rounds is None else 0)
        while not stop_all() and (max_rounds is None or rounds < max_rounds):
            if stagnation.update(inc.best_E, ctx.elapsed()):
                stop = "stagnated"
                break
            S = inc.starts(B)
            budget = math.inf if limit is None else max(limit - reserve - ctx.elapsed(), 0.0)
            if opt.refine == "anneal":
                # a large model (one chain, batch 1) with a time limit anneals once, slowly, over all the
                # time left, from a cooler start (measured at 10^5-10^6 spins, docs/backends/specann.md)
                long_round = B == 1 and limit is not None and rounds == 0
                t_first = opt.t_start_large if long_round else opt.t_start
                T0 = max(t_first * sigma * (1.0 if rounds == 0 else opt.reheat), 1.01 * T_end)
                n_sweeps = 1 << 40 if long_round else opt.sweeps
                # a round takes its share of the remaining time, so it always ends cold
                share = budget if max_rounds is None else budget / max(max_rounds - rounds, 1)
                use_tabu = opt.tabu > 0 and n <= opt.tabu_max_n
                t_round = ctx.elapsed()
                anneal_time = share * (1.0 - opt.tabu) if use_tabu else share
                if packed is not None:  # the candidates one after another, each its share of the time
                    done_cols = []
                    for b in range(B):
                        left_time = anneal_time - (ctx.elapsed() - t_round)
                        s_b, _, sw = anneal_torus(
                            packed,
                            S[:, b],
                            T0,
                            T_end,
                            n_sweeps,
                            gen,
                            max(left_time, 0.0) / (B - b),
                            ctx.should_stop,
                            progress=inc.progress,
                        )
                        done_cols.append(s_b)
                        sweeps_total += sw
                    bestS = torch.stack(done_cols, dim=1)
                else:
                    assert blocks is not None
                    bestS, _, sw = anneal(
                        blocks,
                        h_t,
                        S,
                        2.0 * (Jt @ S) + h_t[:, None],
                        T0,
                        T_end,
                        n_sweeps,
                        gen,
                        anneal_time,
                        ctx.should_stop,
                        progress=inc.progress,
                        stats=anneal_stats,
                    )
                    sweeps_total += sw
                cand = bestS.T.contiguous()
                if use_tabu and not stop_all():
                    # the annealed states are 1-flip minima: tabu walks on from them, uphill when it must
                    cand, G1, _ = descent_with_fields(Jt, h_t, cand, stop=ctx.should_stop)
                    # tabu's share of this round, in proportion to the time the anneal actually took
                    # (a round that ended on its sweep count leaves the rest to later rounds)
                    spent = ctx.elapsed() - t_round
                    left = min(share - spent, spent * opt.tabu / max(1.0 - opt.tabu, 1e-9))
                    if limit is not None:
                        left = min(left, max(limit - reserve - ctx.elapsed(), 0.0))
                    cand, _, st = tabu_search(
                        Jt,
                        h_t,
                        cand,
                        G1,
                        opt.tabu_steps,
                        gen,
                        opt.tabu_tenure if opt.tabu_tenure > 0 else max(10, n // 50),
                        left,
                        ctx.should_stop,
                        progress=inc.progress,
                    )
                    tabu_total += st
            else:  # ils: perturb a fraction of the spins of each elite state, then descend
                flip = torch.rand(S.shape, generator=gen, device=dev, dtype=dt) < opt.perturb
                cand = torch.where(flip, -S, S).T.contiguous()
            cand, G2, _ = descent_with_fields(Jt, h_t, cand, stop=ctx.should_stop)
            E = (cand * (G2 + h_t)).sum(dim=1) / 2
            inc.offer(cand.T.contiguous(), E)
            rounds += 1

    # ---- the answer, mapped back and checked in float64
    assert inc.best_s is not None
    t_best = inc.best_s.to("cpu", torch.float64).numpy()
    s = t_best[:n0] * t_best[n0] if n > n0 else t_best
    claimed = inc.best_E + const
    E, chk = energy_check(problem, s, claimed)
    if ctx.interrupted:
        status, stop = Status.INTERRUPTED, "interrupted"
    elif stop == "stagnated":
        status = Status.FEASIBLE
    elif limit is not None and (ctx.elapsed() >= limit - reserve - 1e-3 or max_rounds is None):
        status, stop = Status.TIME_LIMIT, "time_limit"
    elif ctx.max_iter is not None and rounds >= ctx.max_iter:
        status, stop = Status.ITERATION_LIMIT, "iteration_limit"
    else:
        status, stop = Status.FEASIBLE, "finished"
    info: dict[str, Any] = {
        **ising_info(problem, E),
        "n_spins": n,
        "field_spin": n > n0,
        "batch": B,
        "path": path,
        "spectral_time": spectral_time,
        "time_to_first": inc.first_time,
        "refine": opt.refine,
        "rounds": rounds,
        "stop": stop,
        "sweeps": sweeps_total,
        "tabu_steps": tabu_total,
        "colors": n_colors,
        "lattice": None if packed is None else f"torus {packed.rows}x{packed.cols}, bit-packed",
        "anneal_updates": {
            "sparse": anneal_stats.get("sparse_updates", 0),
            "dense": anneal_stats.get("dense_updates", 0),
        },
        "torch_energy": claimed,
    }
    if opt.refine == "anneal" and n_colors:
        t_first = opt.t_start_large if B == 1 and limit is not None else opt.t_start
        info.update({"t_start": t_first * sigma, "t_end": T_end, "coloring_time": color_time})
    return RawSolution(
        status=status,
        values={"s": s},
        objective=E,
        bound=None,
        iterations=rounds,
        history=list(ctx.history),
        info=info,
        checks={"energy_recomputed": chk},
    )
