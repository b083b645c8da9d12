"""Self-supervised training of the GNN-SDP proxy: loss = certified duality gap, no solved SDPs.

    python scripts/train_gnnsdp.py [--steps N] [--seed S] [--out PATH]

Each step draws a graph (Erdős–Rényi, signed Erdős–Rényi, random regular, signed torus in the
rotation `SCHEDULE`, signed Erdős–Rényi twice as often: its gap is the hardest; n in [nmin, nmax]),
runs the network, and minimizes (Σy' − ¼⟨L, VVᵀ⟩) / Σ_{i<j}|w_ij| where
y' = y + max(0, −λ_min(Diag(y) − L/4)) (differentiable through eigvalsh, float64).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks.graphs

from benchmarks.graphs import generate  # noqa: E402
from optlang.backends.maxcut.bounds import dense_weights, primal_value, slack  # noqa: E402
from optlang.backends.maxcut.model import GNNSDP, ProxyConfig, save_weights  # noqa: E402
from optlang.backends.maxcut.proxy import WEIGHTS  # noqa: E402

SCHEDULE = ("er", "er_signed", "regular", "er_signed", "torus_signed")  # families, in turn


def gap_loss(model: GNNSDP, Wd: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Normalized duality gap of the network on one graph (differentiable)."""
    V, y = model(Wd, gen)
    W64 = Wd.to(torch.float64)
    lam = torch.linalg.eigvalsh(slack(W64, y.to(torch.float64)))[0]
    n = Wd.shape[0]
    bound = y.to(torch.float64).sum() + n * torch.relu(-lam)
    gap = bound - primal_value(W64, V.to(torch.float64))
    return gap / (0.5 * W64.abs().sum()).clamp_min(1e-30)


def train(
    steps: int = 1500,
    seed: int = 0,
    nmin: int = 20,
    nmax: int = 120,
    lr: float = 3e-3,
    cfg: ProxyConfig | None = None,
    log_every: int = 100,
    device: str = "cpu",
) -> tuple[GNNSDP, list[float]]:
    """Train a fresh network; returns it and the per-step losses."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    model = GNNSDP(cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, steps))
    losses: list[float] = []
    t0 = time.perf_counter()
    for step in range(steps):
        fam = SCHEDULE[step % len(SCHEDULE)]
        n = int(rng.integers(nmin, nmax + 1))
        W = generate(fam, n, rng)
        if W.nnz == 0:
            continue
        loss = gap_loss(model, dense_weights(W, device, torch.float32), gen)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if log_every and (step + 1) % log_every == 0:
            recent = np.mean(losses[-log_every:])
            print(f"step {step + 1:5d}  gap {recent:.4f}  {time.perf_counter() - t0:.0f}s", flush=True)
    return model.eval(), losses


def main(argv: list[str] | None = None) -> None:
    """Command line: train and write the weights plus a JSON note beside them."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nmin", type=int, default=20)
    ap.add_argument("--nmax", type=int, default=120)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 avoids oversubscription on a shared machine)"
    )
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default=str(WEIGHTS))
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    model, losses = train(a.steps, a.seed, a.nmin, a.nmax, a.lr, device=a.device)
    secs = time.perf_counter() - t0
    cmd = (
        f"python scripts/train_gnnsdp.py --steps {a.steps} --seed {a.seed} --nmin {a.nmin} --nmax {a.nmax} --lr {a.lr}"
    )
    meta = {"command": cmd, "seed": str(a.seed), "final_gap": f"{np.mean(losses[-100:]):.5f}"}
    save_weights(model.cpu(), a.out, meta)
    note = {
        **meta,
        "families": list(SCHEDULE),
        "train_seconds": round(secs, 1),
        "device": a.device,
        "config": model.cfg.to_dict(),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    Path(a.out).with_suffix(".json").write_text(json.dumps(note, indent=2) + "\n")
    print(json.dumps(note, indent=2))


if __name__ == "__main__":
    main()
