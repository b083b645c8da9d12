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

from dataclasses import asdict, dataclass

import torch
from torch import nn

from optlang.backends.maxcut_sdp.bm import normalize_rows
from optlang.backends.maxcut_sdp.bounds import cs_dual


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
    n = P.shape[0]
    x = torch.cos(1.7 * torch.arange(n, device=P.device, dtype=P.dtype))  # deterministic start
    Pd = P @ dhat
    nrm = torch.linalg.vector_norm(x)
    for _ in range(iters):
        x = (P @ x - Pd * (dhat @ x)) / nrm.clamp_min(1e-30)  # P(x − d̂d̂ᵀx)/‖x‖
        nrm = torch.linalg.vector_norm(x)
    return float(nrm)


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
        A = normalized_adjacency(Wd)
        f, rnd = self.features(Wd, gen)
        H = torch.relu(self.inp(torch.cat([f, rnd], 1)))
        for lin, ln in zip(self.msg, self.norms, strict=True):
            H = ln(H + torch.relu(lin(torch.cat([H, A @ H], 1))))
        V = normalize_rows(self.head_v(torch.cat([H, rnd], 1)))
        dabs = Wd.abs().sum(1)
        dhat = dabs / torch.linalg.vector_norm(dabs).clamp_min(1e-30)
        P = Wd / row_scale(Wd)[:, None]  # S⁻¹W: spectrum O(1) in every family
        P = P * (2.0 / max(2.0, step_radius(P, dhat)))  # hubs (Gset G14) can push it beyond 2
        a = 2.0 * torch.sigmoid(self.alpha)
        if torch.is_grad_enabled():
            for t in range(self.cfg.unroll):
                U = V - dhat[:, None] * (dhat @ V)[None, :]  # the Perron direction of unsigned graphs removed
                V = normalize_rows(V - a[t] * (P @ U))
        else:  # the same steps in fused calls (inference: 4 kernels a step instead of ~12)
            Pd = P @ dhat
            for at in a.tolist():
                X = torch.addmm(V, P, V, alpha=-at)  # V − a·PV
                V = nn.functional.normalize(torch.addr(X, Pd, dhat @ V, alpha=at), dim=1, eps=1e-30)
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
