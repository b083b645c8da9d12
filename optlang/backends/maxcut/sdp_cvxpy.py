"""Backend `sdp-cvxpy`: the Max-Cut SDP through cvxpy (SCS or Clarabel), then GW rounding.

The solver's dual y is only approximately feasible, so it gets the same float64 eigenvalue shift
as the proxy's; the smaller of that and the shifted complementary-slackness dual of the primal
factor is reported, which makes the bound rigorous.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import scipy.sparse as sp

from optlang.backends.base import Backend, RawSolution, RunContext
from optlang.backends.maxcut.bm import normalize_rows
from optlang.backends.maxcut.bounds import DualBound, certificate, cs_dual, primal_value, shift_dual
from optlang.backends.maxcut.common import (
    ROUNDING_CHOICES,
    ROUNDING_RANGES,
    edgeless,
    energy_check,
    proven_lower,
    refuse_maxcut,
    status_for,
)
from optlang.backends.maxcut.gw import gw_round
from optlang.backends.maxcut.reduce import to_maxcut
from optlang.errors import OptionError
from optlang.lazy import lazy_module
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

if TYPE_CHECKING:
    from optlang.analysis import Form


@dataclass
class SDPCvxpyOptions:
    """Options of `sdp-cvxpy`."""

    solver: str = "SCS"  # SCS or CLARABEL
    eps: float = 1e-6  # solver accuracy (SCS eps_abs/eps_rel)
    planes: int = 256
    polish: int = 16  # the best `polish` roundings get 1-flip local search
    local_search: bool = True
    shift: str = "uniform"


@dataclass
class CvxpySDP:
    """A solved SDP: primal factor, primal value, certified dual, solver status and time."""

    V: torch.Tensor  # float64, unit rows
    primal: float
    dual: DualBound
    solver_status: str
    seconds: float


def _eigh_seconds(n: int) -> float:
    """Measured time of one symmetric n×n eigendecomposition here (≈ one SCS iteration on this SDP)."""
    A = np.random.default_rng(0).standard_normal((n, n))
    t = time.perf_counter()
    np.linalg.eigh(A + A.T)
    return max(time.perf_counter() - t, 1e-6)


def solve_sdp_cvxpy(
    W: sp.spmatrix | np.ndarray,
    solver: str = "SCS",
    eps: float = 1e-6,
    time_limit: float | None = None,
    shift: str = "uniform",
) -> CvxpySDP:
    """max ¼⟨L, X⟩ s.t. diag X = 1, X ⪰ 0 by cvxpy; dual made rigorous by the eigenvalue shift."""
    import cvxpy as cp

    t0 = time.perf_counter()
    Wn = W.toarray() if sp.issparse(W) else np.asarray(W, dtype=np.float64)
    n = Wn.shape[0]
    L = np.diag(Wn.sum(1)) - Wn
    X = cp.Variable((n, n), PSD=True)
    con = cp.diag(X) == 1
    prob = cp.Problem(cp.Maximize(cp.trace(L @ X) / 4.0), [con])
    kw: dict = {}
    try:
        # canonicalize first, so the solver gets the time that is left after it (cvxpy's documented
        # get_problem_data / solve_via_data / unpack_results path, same result as prob.solve)
        # (solver_opts: Clarabel's inverse step reads them; filled in below, the same dict)
        data, chain, inverse = prob.get_problem_data(solver.upper(), solver_opts=kw)
    except cp.error.SolverError as e:  # not installed, or no PSD cones: the user's choice, not a failed solve
        raise OptionError(
            "solver", f"option 'solver' of 'sdp-cvxpy': {e}", hint="SCS or CLARABEL (installed with cvxpy)"
        ) from e
    try:
        canon = time.perf_counter() - t0
        if solver.upper() == "SCS":
            kw.update({"eps_abs": eps, "eps_rel": eps, "max_iters": 100_000})
            if time_limit is not None:
                # SCS's limit counts its iterations only; its setup (a sparse factorization of the same
                # data) took about as long as the canonicalization here, so that is set aside too
                left = max(1e-3, time_limit - (time.perf_counter() - t0) - canon)
                # SCS tests its time limit only every few dozen iterations, and an iteration costs about
                # one n×n eigendecomposition (the PSD cone projection): cap the iterations as well
                kw["time_limit_secs"] = left
                kw["max_iters"] = max(1, int(left / (1.5 * _eigh_seconds(n))))
        elif solver.upper() == "CLARABEL" and time_limit is not None:
            kw["time_limit"] = max(1e-3, time_limit - (time.perf_counter() - t0))
        soln = chain.solve_via_data(prob, data, solver_opts=kw)
        prob.unpack_results(soln, chain, inverse)
    except cp.error.SolverError:
        pass
    W64 = torch.as_tensor(Wn, dtype=torch.float64)
    Xv = X.value if X.value is not None else np.eye(n)
    evals, evecs = np.linalg.eigh((Xv + Xv.T) / 2.0)
    V = normalize_rows(torch.as_tensor(evecs * np.sqrt(np.clip(evals, 0.0, None)), dtype=torch.float64))
    cands = [shift_dual(W64, cs_dual(W64, V), shift)]
    if con.dual_value is not None and np.all(np.isfinite(con.dual_value)):
        cands.append(shift_dual(W64, torch.as_tensor(np.asarray(con.dual_value, dtype=np.float64)), shift))
    dual = min(cands, key=lambda d: d.bound)
    return CvxpySDP(
        V=V,
        primal=float(primal_value(W64, V)),
        dual=dual,
        solver_status=str(prob.status),
        seconds=time.perf_counter() - t0,
    )


class SDPCvxpy(Backend):
    """The Max-Cut SDP by a general conic solver (reference for every bound), then GW rounding."""

    name: ClassVar[str] = "sdp-cvxpy"
    kinds: ClassVar[frozenset[str]] = frozenset({"maxcut", "ising"})
    summary: ClassVar[str] = "Max-Cut SDP via cvxpy (SCS/Clarabel) with a rigorous shifted dual, GW rounding"
    auto: ClassVar[bool] = False
    priority: ClassVar[int] = 80
    Options: ClassVar[type] = SDPCvxpyOptions
    # solver: any cvxpy solver with PSD cones (checked by cvxpy when the solve starts)
    option_ranges: ClassVar[dict[str, str]] = {**ROUNDING_RANGES, "eps": ">0"}
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = ROUNDING_CHOICES
    requires: ClassVar[tuple[str, ...]] = ("cvxpy",)
    preload: ClassVar[tuple[str, ...]] = ("cvxpy", "scs", "clarabel")  # the solvers import on first use

    def refuse(self, form: Form) -> str | None:
        return refuse_maxcut(form, self.kinds, max_n=3000)

    def solve(self, problem: IsingProblem, options: SDPCvxpyOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # (options built by hand, not by make_options)
        mc = to_maxcut(problem)
        if mc.W.nnz == 0:
            return edgeless(problem, mc)
        eps = options.eps if ctx.tol is None else ctx.tol
        import cvxpy  # noqa: F401  (imported before the clock is read: its import counts against the limit)

        # after the SDP: an eigendecomposition of X, the dual shift's eigenvalue certificates and the
        # rounding, about five n×n eigendecompositions — kept out of the solver's share of the limit
        reserve = 0.0 if ctx.time_limit is None else 5.0 * _eigh_seconds(mc.n)
        tl = None if ctx.time_limit is None else max(0.01, ctx.remaining() - reserve)
        sdp = solve_sdp_cvxpy(mc.W, options.solver, eps, tl, options.shift)
        ctx.report(mc.offset - sdp.primal, mc.offset - sdp.dual.bound, stage="sdp")
        V = sdp.V.to(ctx.device, ctx.dtype)
        t, cut = gw_round(mc.W, V, options.planes, ctx.torch_generator(), options.local_search, options.polish)
        s = mc.spins(t)
        energy, echeck = energy_check(problem, mc, s, cut)
        lower = proven_lower(mc, sdp.dual.bound)  # integer weights: the bound rounded down to an integer cut
        ctx.report(energy, lower, stage="rounding")
        checks = certificate(torch.as_tensor(mc.W.toarray(), dtype=torch.float64), sdp.dual.y, cut)
        checks["energy_recomputed"] = echeck
        status = status_for(energy, lower, ctx, ctx.should_stop())
        info = {
            "cut": cut,
            "sdp_upper_bound": sdp.dual.bound,
            "sdp_primal": sdp.primal,
            "gap": (sdp.dual.bound - cut) / max(abs(sdp.dual.bound), 1.0),
            "solver": options.solver.upper(),
            "solver_status": sdp.solver_status,
            "solver_seconds": sdp.seconds,
            "shift": sdp.dual.shift,
        }
        return RawSolution(
            status=status,
            values={"s": s},
            objective=energy,
            bound=lower,
            history=list(ctx.history),
            info=info,
            checks=checks,
        )
