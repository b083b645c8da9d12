"""Max-Cut through the SDP relaxation: the learned GNN-SDP proxy, branch and bound on it, and two classical
SDP solvers (the baselines). Every method here reduces the Ising form to a Max-Cut graph first (`reduce`).

Modules: `reduce` (Ising ↔ Max-Cut), `bounds` (dual eigenvalue and Cholesky shifts, certificate), `bm`
(Burer–Monteiro Riemannian ascent), `model` (the network; its self-supervised training is
scripts/train_gnnsdp.py), `proxy` (graph → primal V, certified bound), `gw` (Goemans–Williamson rounding +
local search), `common` (refusals, checks shared by the backends), and one module per backend: `gnnsdp`,
`bnb`, `sdp_cvxpy`, `sdp_bm`. Test and benchmark graphs come from benchmarks/graphs.py.
"""

from __future__ import annotations

__all__ = ["sdp_bound"]


def __getattr__(name: str):  # lazy: no torch import when the package is only listed
    if name == "sdp_bound":
        from optlang.backends.maxcut.gnnsdp import sdp_bound

        return sdp_bound
    raise AttributeError(name)
