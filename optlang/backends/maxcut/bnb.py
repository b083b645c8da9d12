"""Backend `bnb`: exact Max-Cut / Ising by best-bound-first branch and bound on SDP bounds.

A node fixes relations between vertices: branching on a pair (a, b) sets s_b = σ s_a (σ = +1 same
side, −1 opposite), which contracts the graph to a smaller Ising problem uᵀJ'u + c' (a signed
Max-Cut plus a constant). Each node is bounded by the proxy (network at the root, then Burer–
Monteiro refinement warm-started from the parent's factor, certified by the eigenvalue shift),
stopping as soon as the bound prunes; small nodes are enumerated exactly. Incumbents come from GW
rounding of every node's factor plus 1-flip descent on the full graph. OPTIMAL only when the tree
is closed.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp

from optlang.backends.base import Backend, RawSolution, RunContext, Status, missing_package
from optlang.backends.ising.ops import brute_force_min, one_flip_descent, to_torch_csr
from optlang.backends.maxcut.bounds import dense_weights
from optlang.backends.maxcut.common import edgeless, refuse_maxcut
from optlang.backends.maxcut.gw import gw_round
from optlang.backends.maxcut.proxy import load_model, proxy_solve
from optlang.backends.maxcut.reduce import MaxCutForm, to_maxcut
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
class BnBOptions:
    """Options of `bnb`."""

    max_nodes: int = 1_000_000  # node limit (ctx.max_iter overrides)
    bounder: str = "proxy"  # proxy (network + warm-started refinement) | bm (cold Burer–Monteiro) | cvxpy (SCS)
    root_refine_steps: int = 500
    refine_steps: int = 80  # per node; refinement stops earlier once the node prunes
    target_gap: float = 1e-4  # per-node certified SDP gap where refinement stops
    check_every: int = 5  # eigenvalue certificate every this many refinement steps
    root_stall_checks: int = 3  # root refinement stops when 3 checks gained < 10 % of the gap (0: never)
    enumerate_below: int = 12  # nodes with at most this many vertices are solved by enumeration
    branching: str = "uncertain"  # pair (0, j) with |X_0j| smallest ("uncertain") or largest ("certain")
    planes: int = 8  # GW hyperplanes per node (256 at the root)
    report_every: int = 25  # progress rows every this many nodes


@dataclass(order=True)
class Node:
    """An open subproblem: E = uᵀJu + const over u ∈ {±1}^m, vertex i of the root is sign[i]·u[rep[i]]."""

    lb: float
    seq: int
    J: np.ndarray = field(compare=False)
    const: float = field(compare=False)
    rep: np.ndarray = field(compare=False)
    sign: np.ndarray = field(compare=False)
    V: torch.Tensor | None = field(compare=False, default=None)
    depth: int = field(compare=False, default=0)


def contract(
    J: np.ndarray, const: float, rep: np.ndarray, sign: np.ndarray, a: int, b: int, sigma: float
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]:
    """Impose u_b = σ u_a: J' = PᵀJP with b merged into a; returns (J', const', rep', sign', kept rows)."""
    J = J.copy()
    J[a, :] += sigma * J[b, :]
    J[:, a] += sigma * J[:, b]
    const = const + float(J[a, a])  # = 2σ J_ab: u_a² = 1 makes it a constant
    J[a, a] = 0.0
    keep = np.delete(np.arange(J.shape[0]), b)
    J = J[np.ix_(keep, keep)]
    rep, sign = rep.copy(), sign.copy()
    moved = rep == b
    rep[moved] = a
    sign[moved] *= sigma
    rep[rep > b] -= 1
    return J, const, rep, sign, keep


class _Search:
    """State of one branch-and-bound run (kept out of the backend class for clarity)."""

    def __init__(self, problem: IsingProblem, mc: MaxCutForm, opt: BnBOptions, ctx: RunContext) -> None:
        self.problem, self.mc, self.opt, self.ctx = problem, mc, opt, ctx
        self.gen = ctx.torch_generator()
        self.Wfull = mc.W.toarray()
        self.J0 = self.Wfull / 4.0
        self.const0 = mc.offset - float(self.Wfull.sum()) / 4.0  # E(t) = tᵀJ0t + const0 = offset − cut(t)
        d = mc.W.data
        self.integral = bool(d.size == 0 or np.all(np.abs(d - np.round(d)) <= 1e-12 * np.maximum(1, np.abs(d))))
        self.Jt = to_torch_csr((mc.W / 4.0).tocsr(), ctx.device, torch.float64)
        self.h0 = torch.zeros(mc.n, dtype=torch.float64, device=ctx.device)
        self.best_t = np.ones(mc.n)
        self.best = float(self.energy(self.best_t))
        self.nodes = 0
        self.pruned = 0
        self.enumerated = 0
        self.bound_seconds = 0.0
        self.root_steps = 0
        self.model = load_model(ctx.device, ctx.dtype) if opt.bounder == "proxy" else None

    def energy(self, t: np.ndarray) -> float:
        return float(t @ self.J0 @ t + self.const0)

    def slack(self) -> float:
        """How far below the incumbent a node's bound must be to be kept (integral: 1 − 1e-6)."""
        return 1.0 - 1e-6 if self.integral else 1e-9 * max(1.0, abs(self.best))

    def offer(self, u: np.ndarray, rep: np.ndarray, sign: np.ndarray, polish: bool = True) -> None:
        """Lift a node solution to the root, polish it by 1-flip descent, keep it if better."""
        t = sign * u[rep]
        if polish:
            S = torch.as_tensor(t[None, :], dtype=torch.float64, device=self.ctx.device)
            t = one_flip_descent(self.Jt, self.h0, S)[0].cpu().numpy()
        e = self.energy(t)
        if e < self.best - 1e-12 * max(1.0, abs(e)):
            self.best, self.best_t = e, t.copy()

    def bound(self, node: Node, root: bool) -> tuple[float, torch.Tensor | None]:
        """A valid lower bound on the node's energy and a factor V (None when enumerated)."""
        J, const = node.J, node.const
        m = J.shape[0]
        if m <= self.opt.enumerate_below:
            e, u = brute_force_min(IsingProblem(J=sp.csr_matrix(J), h=np.zeros(m), constant=const))
            self.enumerated += 1
            self.offer(u, node.rep, node.sign, polish=False)
            return float(e), None
        W = 4.0 * J
        offset = const + float(W.sum()) / 4.0  # node energy = offset − cut_W(u)
        stop_ub = offset - self.best + self.slack()
        t0 = time.perf_counter()
        if self.opt.bounder == "cvxpy":
            from optlang.backends.maxcut.sdp_cvxpy import solve_sdp_cvxpy

            sdp = solve_sdp_cvxpy(W, "SCS", 1e-6)
            ub, V = sdp.dual.bound, sdp.V.to(self.ctx.device, self.ctx.dtype)
        else:
            Wd = dense_weights(W, self.ctx.device, self.ctx.dtype)
            warm = node.V if (self.opt.bounder == "proxy" and not root) else None
            res = proxy_solve(
                Wd,
                self.gen,
                model=self.model if root else None,
                V0=warm,
                refine_steps=self.opt.root_refine_steps if root else self.opt.refine_steps,
                target_gap=self.opt.target_gap,
                stop_bound=None if root else stop_ub,
                check_every=self.opt.check_every,
                first_check=self.opt.check_every,
                should_stop=self.ctx.should_stop,
                cholesky_checks=not root,  # the root needs gap values to see a stagnating gap
                stall_checks=self.opt.root_stall_checks if root else 0,
            )
            ub, V = res.bound, res.V
            if root:
                self.root_steps = res.refine_steps
        self.bound_seconds += time.perf_counter() - t0
        planes = 256 if root else self.opt.planes
        with torch.no_grad():
            u, _ = gw_round(sp.csr_matrix(W), V, planes, self.gen, local_search=root)  # lifted u is polished
        self.offer(u, node.rep, node.sign)
        return offset - ub, V

    def children(self, node: Node) -> list[Node]:
        """The two contracted subproblems of the node's branching pair."""
        V = node.V
        m = node.J.shape[0]
        X0 = (V[1:] @ V[0]).abs().cpu().numpy() if V is not None else np.zeros(m - 1)
        j = 1 + int(np.argmin(X0) if self.opt.branching == "uncertain" else np.argmax(X0))
        out = []
        for sigma in (1.0, -1.0):
            J, const, rep, sign, keep = contract(node.J, node.const, node.rep, node.sign, 0, j, sigma)
            Vc = None if V is None else V[torch.as_tensor(keep, device=V.device)]
            out.append(Node(node.lb, 0, J, const, rep, sign, Vc, node.depth + 1))
        return out


class BranchAndBound(Backend):
    """Exact Max-Cut / Ising: best-bound-first branch and bound on certified SDP-proxy bounds."""

    name: ClassVar[str] = "bnb"
    kinds: ClassVar[frozenset[str]] = frozenset({"maxcut", "ising"})
    summary: ClassVar[str] = "exact branch and bound on pair contractions, bounded by the GNN-SDP proxy"
    priority: ClassVar[int] = 30
    Options: ClassVar[type] = BnBOptions
    # 0 = none where it has a meaning: root_refine_steps / refine_steps (no refinement), root_stall_checks
    # (never stop the root early), enumerate_below (never enumerate), target_gap (refine for all the steps)
    option_ranges: ClassVar[dict[str, str]] = {
        "max_nodes": ">=1",
        "root_refine_steps": ">=0",
        "refine_steps": ">=0",
        "target_gap": ">=0",
        "check_every": ">=1",
        "root_stall_checks": ">=0",
        "enumerate_below": ">=0",
        "planes": ">=1",
        "report_every": ">=1",
    }
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "bounder": ("proxy", "bm", "cvxpy"),
        "branching": ("uncertain", "certain"),
    }

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """The tables, and the cvxpy bounder only where cvxpy is installed (an extra)."""
        super().check_options(options, auto)
        if options.bounder == "cvxpy" and (missing := missing_package("cvxpy")):
            raise OptionError("bounder", f"bounder 'cvxpy' {missing}", hint="use bounder = \"proxy\" or \"bm\"")

    def refuse(self, form: Form) -> str | None:
        return refuse_maxcut(form, self.kinds, max_n=2000)

    def solve(self, problem: IsingProblem, options: BnBOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # (options built by hand, not by make_options)
        mc = to_maxcut(problem)
        if mc.W.nnz == 0:
            return edgeless(problem, mc)
        max_nodes = options.max_nodes if ctx.max_iter is None else min(options.max_nodes, ctx.max_iter)
        S = _Search(problem, mc, options, ctx)
        n = mc.n
        root = Node(-np.inf, 0, S.J0.copy(), S.const0, np.arange(n), np.ones(n))
        lb, V = S.bound(root, root=True)
        S.nodes = 1
        root.lb, root.V = lb, V
        heap: list[Node] = []
        seq = 1
        if V is not None and lb < S.best - S.slack():
            heapq.heappush(heap, root)
        root_lb = lb
        max_depth = 0
        ctx.report(S.best, min(lb, S.best), nodes=1, open=len(heap))
        stopped = None
        while heap:
            if ctx.should_stop():
                stopped = ctx.stop_status(Status.TIME_LIMIT)
                break
            if S.nodes >= max_nodes:
                stopped = Status.ITERATION_LIMIT
                break
            node = heapq.heappop(heap)
            if node.lb >= S.best - S.slack():
                S.pruned += 1
                continue
            for child in S.children(node):
                S.nodes += 1
                clb, cV = S.bound(child, root=False)
                child.lb, child.V = max(node.lb, clb), cV
                max_depth = max(max_depth, child.depth)
                if cV is None or child.lb >= S.best - S.slack():
                    S.pruned += cV is not None
                    continue
                child.seq = seq
                seq += 1
                heapq.heappush(heap, child)
            if S.nodes % options.report_every < 2:
                glb = min([x.lb for x in heap] + [S.best])
                ctx.report(S.best, glb, nodes=S.nodes, open=len(heap), gap=(S.best - glb) / max(1.0, abs(S.best)))
        glb = min([x.lb for x in heap] + [S.best]) if heap else S.best
        closed = not heap or all(x.lb >= S.best - S.slack() for x in heap)
        if closed:
            glb = S.best if S.integral else min([x.lb for x in heap] + [S.best])
        status = Status.OPTIMAL if closed else (stopped or Status.ITERATION_LIMIT)
        ctx.report(S.best, glb, nodes=S.nodes, open=len(heap), gap=(S.best - glb) / max(1.0, abs(S.best)))
        s = mc.spins(S.best_t)
        e = float(problem.energy(s))
        checks = {
            "energy_recomputed": (
                abs(e - S.best) <= 1e-7 * max(1.0, abs(e)),
                f"energy {e:.6f} from J, h vs search value {S.best:.6f}",
            ),
            "bound_le_energy": (glb <= e + 1e-9 * max(1.0, abs(e)), f"lower bound {glb:.6f} <= energy {e:.6f}"),
        }
        info = {
            "nodes": S.nodes,
            "pruned": S.pruned,
            "enumerated": S.enumerated,
            "open": len(heap),
            "max_depth": max_depth,
            "root_bound": root_lb,
            "root_steps": S.root_steps,
            "gap": (e - glb) / max(1.0, abs(e)),
            "bound_seconds": S.bound_seconds,
            "bounder": options.bounder,
            "cut": mc.offset - e,
            "integral": S.integral,
            # proved: the tree closed (bound meets incumbent); else the limit that ended the search
            "stop": "proved" if closed else str(stopped or Status.ITERATION_LIMIT),
        }
        return RawSolution(
            status=status,
            values={"s": s},
            objective=e,
            bound=glb,
            iterations=S.nodes,
            history=list(ctx.history),
            info=info,
            checks=checks,
        )
