"""The GNN-SDP proxy network: weighted graph → primal factor V (unit rows) and dual vector y.

Max-Cut-specific message passing on the signed, degree-normalized adjacency Â = D^-½ W D^-½
(D = diag Σ_j |w_ij|): node states H are updated from [H, ÂH] (O(ne·h), O(n²·h) dense); a linear
head gives V₀, then T unrolled "anti-alignment" steps V ← rownorm(V − α_t D⁻¹WV) (learned α_t;
a degree-preconditioned Riemannian ascent step of ¼⟨L, VVᵀ⟩, a parallel form of the mixing
method's v_i ← −rownorm(Σ_j w_ij v_j)) give V. The dual is the complementary-slackness vector
y_i = ¼(LVVᵀ)_ii plus a learned per-node correction scaled by the degree. Random node features
(seeded) break the symmetry of regular graphs. Feasibility never depends on the weights: V has unit
rows by construction and y is made feasible afterwards by the eigenvalue shift (bounds.py).
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
    unroll: int = 16  # unrolled anti-alignment steps
    n_random: int = 8  # random node features

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def normalized_adjacency(Wd: torch.Tensor) -> torch.Tensor:
    """Â = D^-½ W D^-½ with D = diag Σ_j |w_ij| (isolated nodes: zero rows)."""
    dabs = Wd.abs().sum(1)
    r = torch.where(dabs > 0, dabs.clamp_min(1e-30).rsqrt(), torch.zeros_like(dabs))
    return r[:, None] * Wd * r[None, :]


class GNNSDP(nn.Module):
    """Graph network mapping dense symmetric weights W (n, n) to (V, y)."""

    def __init__(self, cfg: ProxyConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg = cfg or ProxyConfig()
        h = cfg.hidden
        n_in = 4 + cfg.n_random
        self.inp = nn.Linear(n_in, h)
        self.msg = nn.ModuleList(nn.Linear(2 * h, h) for _ in range(cfg.layers))
        self.norms = nn.ModuleList(nn.LayerNorm(h) for _ in range(cfg.layers))
        self.head_v = nn.Linear(h + cfg.n_random, cfg.rank)
        self.alpha = nn.Parameter(torch.full((cfg.unroll,), 0.5))
        self.head_y = nn.Sequential(nn.Linear(h + 2, h), nn.ReLU(), nn.Linear(h, 1))
        nn.init.zeros_(self.head_y[-1].weight)
        nn.init.zeros_(self.head_y[-1].bias)

    def features(self, Wd: torch.Tensor, gen: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Scale-free node features and the random ones (seeded by `gen`)."""
        n = Wd.shape[0]
        dabs = Wd.abs().sum(1)
        dsig = Wd.sum(1)
        mean = dabs.mean().clamp_min(1e-30)
        cnt = (Wd != 0).sum(1).to(Wd.dtype)
        f = torch.stack(
            [
                torch.log1p(dabs / mean),
                dsig / dabs.clamp_min(1e-30),
                torch.log1p(cnt) / 5.0,
                torch.full_like(dabs, 1.0 / (1.0 + torch.log1p(torch.tensor(float(n))).item())),
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
        P = Wd / dabs.clamp_min(1e-30)[:, None]  # D⁻¹W: row-normalized, scale-free step
        for a in self.alpha:
            V = normalize_rows(V - nn.functional.softplus(a) * (P @ V))
        y = cs_dual(Wd, V)
        frustr = (V * (A @ V)).sum(1, keepdim=True)
        corr = self.head_y(torch.cat([H, frustr, f[:, :1]], 1)).squeeze(1)
        return V, y + 0.05 * dabs * corr


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
