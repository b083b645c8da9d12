"""The GNN-SDP proxy network: weighted graph → primal factor V (unit rows) and dual vector y.

Max-Cut-specific message passing on the signed, degree-normalized adjacency Â = D^-½ W D^-½
(D = diag Σ_j |w_ij|): node states H are updated from [H, ÂH] (O(ne·h), O(n²·h) dense); a linear
head gives V₀, then T unrolled "anti-alignment" steps

    V ← rownorm(V − a_t κ S⁻¹ W (V − d̂ d̂ᵀV)),   S = diag √(Σ_j w_ij²),  d̂ = |d| / ‖|d|‖

(learned a_t ∈ (0, 2); a parallel form of the mixing method's v_i ← −rownorm(Σ_j w_ij v_j)).
S scales every family's spectrum to O(1) (the semicircle edge of a ±1 Erdős–Rényi graph is
2√(np), √(Σ_j w_ij²) = √(np)) and the deflation of the Perron direction d̂ keeps the large
positive eigenvalue of unsigned graphs from dominating, so one step size serves signed and
unsigned graphs alike (the former D⁻¹W step had to stay small for unsigned graphs, which left
signed graphs 5–13 % below the SDP value after 16 steps). The deflation is complete: a learned
partial one left (1 − c)·√(np) of the Perron eigenvalue of dense unsigned graphs, which the steps
then amplified (V collapsed to one direction on an n = 800, p ≈ 0.5 graph, beyond the training
sizes). κ = 2/max(2, ρ) with ρ the power-iteration estimate of the step operator's spectral
radius: 1 on the training families, < 1 on graphs with hubs (Gset G14), where a localized
positive eigenvector survives the deflation. The dual is the complementary-slackness vector
y_i = ¼(LVVᵀ)_ii plus a learned per-node correction scaled by √(Σ_j w_ij²). Random node features
(seeded) break the symmetry of regular graphs. Feasibility never depends on the weights: V has
unit rows by construction and y is made feasible afterwards by the eigenvalue shift (bounds.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

from optlang.backends.maxcut.bm import normalize_rows
from optlang.backends.maxcut.bounds import cs_dual

SPARSE_MIN_N = 400  # use_sparse: inference on graphs at least this large ...
SPARSE_DENSITY = 0.05  # ... with at most this fraction of nonzero weights uses CSR products


@dataclass(frozen=True)
class ProxyConfig:
    """Architecture sizes (stored beside the weights)."""

    hidden: int = 32
    layers: int = 4
    rank: int = 24  # columns of V
    unroll: int = 32  # unrolled anti-alignment steps
    n_random: int = 8  # random node features

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def normalized_adjacency(Wd: torch.Tensor) -> torch.Tensor:
    """Â = D^-½ W D^-½ with D = diag Σ_j |w_ij| (isolated nodes: zero rows)."""
    dabs = Wd.abs().sum(1)
    r = torch.where(dabs > 0, dabs.clamp_min(1e-30).rsqrt(), torch.zeros_like(dabs))
    return r[:, None] * Wd * r[None, :]


def row_scale(Wd: torch.Tensor) -> torch.Tensor:
    """s_i = √(Σ_j w_ij²) (1 for isolated nodes): the scale of node i's share of the spectrum."""
    s = torch.linalg.vector_norm(Wd, dim=1)
    return torch.where(s > 0, s, torch.ones_like(s))


@torch.no_grad()
def step_radius(P: torch.Tensor, dhat: torch.Tensor, iters: int = 20) -> float:
    """Spectral radius of the step operator x ↦ P(x − d̂d̂ᵀx) by `iters` power iterations (O(n²) each).

    About 2 on the training families (the semicircle edge after S-scaling); larger on graphs with
    hubs, where a localized positive eigenvector survives the deflation and the learned step sizes
    would amplify it: the step is then scaled by 2/ρ.
    """
    return operator_radius(P - torch.outer(P @ dhat, dhat), iters)


@torch.no_grad()
def operator_radius(
    B: torch.Tensor | Callable[[torch.Tensor], torch.Tensor], iters: int = 20, like: torch.Tensor | None = None
) -> float:
    """‖B x_k‖/‖x_k‖ after `iters` power iterations x_{k+1} = B x_k (deterministic start); B a
    matrix, or a function x ↦ Bx on vectors shaped like `like` (its length, device, dtype).

    The iterate is rescaled only every 5 steps (one matvec a step otherwise: at small n the per-op
    overhead, not the O(n²) work, is the cost). No overflow: every row of S⁻¹W has unit norm, so
    ‖B‖₂ ≤ ‖S⁻¹W‖_F = √n and 5 steps grow ‖x‖ by at most n^2.5.
    """
    apply, ref = (B.__matmul__, B) if isinstance(B, torch.Tensor) else (B, like)
    assert ref is not None, "a function B needs `like`"
    x = torch.cos(1.7 * torch.arange(ref.shape[0], device=ref.device, dtype=ref.dtype))
    for k in range(iters - 1):
        x = apply(x)
        if (k + 1) % 5 == 0:
            x = x / torch.linalg.vector_norm(x).clamp_min(1e-30)
    return float(torch.linalg.vector_norm(apply(x)) / torch.linalg.vector_norm(x).clamp_min(1e-30))


def use_sparse(Wd: torch.Tensor) -> bool:
    """Inference on a large sparse graph: products with a CSR S⁻¹W and Â (n ≥ SPARSE_MIN_N, at most
    SPARSE_DENSITY of the entries nonzero). On G14 (n = 800, 1.5 %) one CSR product with V took
    0.06 ms against 0.65 ms dense."""
    n = Wd.shape[0]
    return n >= SPARSE_MIN_N and int(torch.count_nonzero(Wd)) <= SPARSE_DENSITY * n * n


def csr_scaled(Ws: torch.Tensor, row: torch.Tensor, left: torch.Tensor, right: torch.Tensor | None) -> torch.Tensor:
    """The CSR matrix diag(left)·W·diag(right) with W's pattern (`row`: the row of each stored entry)."""
    vals = Ws.values() * left[row]
    if right is not None:
        vals = vals * right[Ws.col_indices()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        return torch.sparse_csr_tensor(Ws.crow_indices(), Ws.col_indices(), vals, size=Ws.shape)


class GNNSDP(nn.Module):
    """Graph network mapping dense symmetric weights W (n, n) to (V, y)."""

    def __init__(self, cfg: ProxyConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg = cfg or ProxyConfig()
        h = cfg.hidden
        n_in = 6 + cfg.n_random
        self.inp = nn.Linear(n_in, h)
        self.msg = nn.ModuleList(nn.Linear(2 * h, h) for _ in range(cfg.layers))
        self.norms = nn.ModuleList(nn.LayerNorm(h) for _ in range(cfg.layers))
        self.head_v = nn.Linear(h + cfg.n_random, cfg.rank)
        self.alpha = nn.Parameter(torch.zeros(cfg.unroll))  # a_t = 2·sigmoid(alpha_t), starts at 1
        self.head_y = nn.Sequential(nn.Linear(h + 3, h), nn.ReLU(), nn.Linear(h, 1))
        nn.init.zeros_(self.head_y[-1].weight)
        nn.init.zeros_(self.head_y[-1].bias)

    def features(self, Wd: torch.Tensor, gen: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Scale-free node features and the random ones (seeded by `gen`)."""
        n = Wd.shape[0]
        dabs = Wd.abs().sum(1)
        dsig = Wd.sum(1)
        mean = dabs.mean().clamp_min(1e-30)
        cnt = (Wd != 0).sum(1).to(Wd.dtype)
        s = row_scale(Wd)
        f = torch.stack(
            [
                torch.log1p(dabs / mean),
                dsig / dabs.clamp_min(1e-30),
                torch.log1p(cnt) / 5.0,
                torch.full_like(dabs, 1.0 / (1.0 + torch.log1p(torch.tensor(float(n))).item())),
                torch.log1p(dabs / s) / 3.0,  # ~ ½ log(degree) for ±1 weights: the spectrum's scale
                torch.log(s / s.mean().clamp_min(1e-30)).clamp(-5.0, 5.0),
            ],
            1,
        )
        dev = gen.device if gen is not None else Wd.device
        rnd = torch.randn(n, self.cfg.n_random, generator=gen, device=dev, dtype=Wd.dtype).to(Wd.device)
        return f, rnd

    def forward(self, Wd: torch.Tensor, gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(V with unit rows (n, rank), y (n,)) for dense weights Wd."""
        sparse = not torch.is_grad_enabled() and use_sparse(Wd)
        dabs = Wd.abs().sum(1)
        if sparse:  # the same operators as CSR matrices (inference on large sparse graphs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
                Ws = Wd.to_sparse_csr()
            row = torch.repeat_interleave(torch.arange(Wd.shape[0], device=Wd.device), Ws.crow_indices().diff())
            r = torch.where(dabs > 0, dabs.clamp_min(1e-30).rsqrt(), torch.zeros_like(dabs))
            A = csr_scaled(Ws, row, r, r)
        else:
            A = normalized_adjacency(Wd)
        f, rnd = self.features(Wd, gen)
        H = torch.relu(self.inp(torch.cat([f, rnd], 1)))
        for lin, ln in zip(self.msg, self.norms, strict=True):
            H = ln(H + torch.relu(lin(torch.cat([H, A @ H], 1))))
        V = normalize_rows(self.head_v(torch.cat([H, rnd], 1)))
        dhat = dabs / torch.linalg.vector_norm(dabs).clamp_min(1e-30)
        a = 2.0 * torch.sigmoid(self.alpha)
        if torch.is_grad_enabled():
            P = Wd / row_scale(Wd)[:, None]  # S⁻¹W: spectrum O(1) in every family
            P = P * (2.0 / max(2.0, step_radius(P, dhat)))  # hubs (Gset G14) can push it beyond 2
            for t in range(self.cfg.unroll):
                U = V - dhat[:, None] * (dhat @ V)[None, :]  # the Perron direction of unsigned graphs removed
                V = normalize_rows(V - a[t] * (P @ U))
        elif sparse:  # CSR S⁻¹W: V − a·κ·(S⁻¹WV − (S⁻¹Wd̂)(d̂ᵀV)), 2 products a step, O(ne·k)
            inv_s = 1.0 / row_scale(Wd)
            P = csr_scaled(Ws, row, inv_s, None)
            Pd = P @ dhat
            kappa = 2.0 / max(2.0, operator_radius(lambda x: P @ x - Pd * (dhat @ x), like=dhat))
            if kappa != 1.0:
                P = csr_scaled(Ws, row, inv_s * kappa, None)
                Pd = Pd * kappa
            for at in a.tolist():
                X = torch.addr(torch.addmm(V, P, V, alpha=-at), Pd, dhat @ V, alpha=at)
                V = X / torch.linalg.vector_norm(X, dim=1, keepdim=True).clamp_min_(1e-30)
            V = normalize_rows(V)
        else:  # inference: B = κ·S⁻¹W(I − d̂d̂ᵀ) built once, then 2 kernels a step (addmm, normalize)
            P = Wd / row_scale(Wd)[:, None]
            B = torch.addr(P, P @ dhat, dhat, alpha=-1.0)
            kappa = 2.0 / max(2.0, operator_radius(B))
            if kappa != 1.0:
                P = P * kappa
                B = B * kappa
            for at in a.tolist():
                V = torch.addmm(V, B, V, alpha=-at)  # V − a·κ·S⁻¹W(V − d̂d̂ᵀV)
                V = V / torch.linalg.vector_norm(V, dim=1, keepdim=True).clamp_min_(1e-30)
            V = normalize_rows(V)
        y = cs_dual(Wd, V)
        PV = P @ V
        frustr = (V * (A @ V)).sum(1, keepdim=True)
        resid = (torch.linalg.vector_norm(PV, dim=1, keepdim=True) + (V * PV).sum(1, keepdim=True)).clamp_min(0.0)
        corr = self.head_y(torch.cat([H, frustr, resid, f[:, :1]], 1)).squeeze(1)
        return V, y + 0.25 * row_scale(Wd) * corr


def save_weights(model: GNNSDP, path: str, meta: dict[str, str] | None = None) -> None:
    """Write the parameters as safetensors (no pickle), config in the metadata."""
    import json

    from safetensors.torch import save_file

    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    md = {"config": json.dumps(model.cfg.to_dict()), **(meta or {})}
    save_file(tensors, path, metadata=md)


def load_weights(path: str, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> GNNSDP:
    """Load a network saved by `save_weights` (safetensors: never unpickles)."""
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(path, framework="pt") as fh:
        md = fh.metadata() or {}
    cfg = ProxyConfig(**json.loads(md["config"])) if "config" in md else ProxyConfig()
    model = GNNSDP(cfg)
    model.load_state_dict(load_file(path))
    return model.to(device=device, dtype=dtype).eval()
