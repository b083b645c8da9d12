"""Max-Cut SDP backends: the learned GNN-SDP proxy, branch and bound on it, and two classical SDP solvers.

Modules: `reduce` (Ising ↔ Max-Cut), `bounds` (dual eigenvalue and Cholesky shifts, certificate), `bm`
(Burer–Monteiro Riemannian ascent), `model`/`train` (the network and its self-supervised training),
`proxy` (graph → primal V, certified bound), `gw` (Goemans–Williamson rounding + local search),
`graphs` (seeded generators, shared-data path), `common` (refusals, checks shared by the
backends), and one module per backend: `gnnsdp`, `bnb`, `sdp_cvxpy`, `sdp_bm`.
"""

from __future__ import annotations

__all__ = ["sdp_bound"]


def __getattr__(name: str):  # lazy: no torch import when the package is only listed
    if name == "sdp_bound":
        from optlang.backends.maxcut_sdp.gnnsdp import sdp_bound

        return sdp_bound
    raise AttributeError(name)
