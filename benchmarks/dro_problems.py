"""Hand-built DROProblems for regression models (tests, benchmarks and API users).

The lowering builds linear problems from `.opt` files; these builders let a DRO backend be
exercised from numpy arrays alone: linear ℓ_i = s_i · φ(x_iᵀw + b − y_i), φ square or abs, with
optional fixed per-sample weights s_i (inverse-density baselines); a one-hidden-layer tanh MLP
(`mlp_dro_problem`, nonconvex, torch backends only); and seeded random tanh features with a
ridge-decayed linear layer (`random_features` + `ridge_dro_problem`, convex, with a cvxpy form).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optlang.problem import Ambiguity, DROProblem, LinearResidual, TorchFunction, Variable


def linear_dro_problem(
    X: np.ndarray,
    y: np.ndarray,
    ambiguity: Ambiguity,
    loss: str = "square",
    sample_weights: np.ndarray | None = None,
    bias: bool = True,
    weight_domain: Any = None,
    weight_decay: float = 0.0,
) -> DROProblem:
    """A DRO problem over (w, b) for the loss s_i·φ(x_iᵀw + b − y_i) (+ weight_decay·‖w‖² per sample);
    targets are y. The Wasserstein closed form (`linear`) is attached only without weights or decay."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    n, p = X.shape
    if weight_decay < 0:
        raise ValueError("weight_decay must be non-negative")
    s = None if sample_weights is None else np.asarray(sample_weights, dtype=np.float64).ravel()

    def build(device: Any, dtype: Any) -> Any:
        import torch

        Xt = torch.as_tensor(X, device=device, dtype=dtype)
        yt = torch.as_tensor(y, device=device, dtype=dtype)
        st = None if s is None else torch.as_tensor(s, device=device, dtype=dtype)

        def fn(values: Any, batch: Any = None) -> Any:
            A, t = (Xt, yt) if batch is None else (Xt[batch], yt[batch])
            r = A @ values["w"] - t
            if bias:
                r = r + values["b"]
            out = r * r if loss == "square" else r.abs()
            if st is not None:
                out = out * (st if batch is None else st[batch])
            if weight_decay > 0:
                out = out + weight_decay * (values["w"] * values["w"]).sum()
            return out

        return fn

    def cvx(xs: Any) -> Any:
        import cvxpy as cp

        r = X @ xs["w"] - y
        if bias:
            r = r + xs["b"]
        out = cp.square(r) if loss == "square" else cp.abs(r)
        if s is not None:
            out = cp.multiply(s, out)
        return out + weight_decay * cp.sum_squares(xs["w"]) if weight_decay > 0 else out

    source = f"{loss}(X @ w + b - y)" + (f" + {weight_decay:g}·‖w‖²" if weight_decay > 0 else "")
    f = TorchFunction(build, n_samples=n, per_sample=True, cvxpy=cvx, source=source)
    wvar = Variable("w", (p,)) if weight_domain is None else Variable("w", (p,), domain=weight_domain)
    variables = (wvar, Variable("b", ())) if bias else (wvar,)
    lin = None if s is not None or weight_decay > 0 else LinearResidual(X, y, "w", "b" if bias else None, loss)  # type: ignore[arg-type]
    return DROProblem(variables=variables, loss=f, ambiguity=ambiguity, n_samples=n, targets=y, linear=lin)


def mlp_dro_problem(
    X: np.ndarray,
    y: np.ndarray,
    ambiguity: Ambiguity,
    hidden: int = 32,
    weight_decay: float = 1e-3,
    loss: str = "square",
    sample_weights: np.ndarray | None = None,
    seed: int = 0,
) -> DROProblem:
    """A DRO problem over a one-hidden-layer tanh network f(x) = tanh(x W1 + b1) w2 + b2.

    ℓ_i = s_i · φ(f(x_i) − y_i) + weight_decay · (‖W1‖² + ‖w2‖²): the decay term is the same for
    every sample, so for any ambiguity set whose worst-case weights sum to one (χ², KL, every
    target-conditional mix) the robust objective is the robust data loss plus the decay, and ERM
    minimizes the usual decayed mean loss. The starting point is seeded (Glorot-uniform W1, w2,
    zero biases), so every method trained on the same data starts from the same network. No
    cvxpy form (the loss is nonconvex) and no linear structure: this builder is for the torch
    backends (`tcdro`, `erm`), with χ², KL or target-conditional ambiguity.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    n, p = X.shape
    if hidden < 1:
        raise ValueError("hidden must be at least 1")
    if weight_decay < 0:
        raise ValueError("weight_decay must be non-negative")
    s = None if sample_weights is None else np.asarray(sample_weights, dtype=np.float64).ravel()
    rng = np.random.default_rng(seed)
    a1 = np.sqrt(6.0 / (p + hidden))
    a2 = np.sqrt(6.0 / (hidden + 1))
    w1_0 = rng.uniform(-a1, a1, size=(p, hidden))
    w2_0 = rng.uniform(-a2, a2, size=hidden)

    def build(device: Any, dtype: Any) -> Any:
        import torch

        Xt = torch.as_tensor(X, device=device, dtype=dtype)
        yt = torch.as_tensor(y, device=device, dtype=dtype)
        st = None if s is None else torch.as_tensor(s, device=device, dtype=dtype)

        def fn(values: Any, batch: Any = None) -> Any:
            A, t = (Xt, yt) if batch is None else (Xt[batch], yt[batch])
            W1, b1, w2, b2 = values["W1"], values["b1"], values["w2"], values["b2"]
            r = torch.tanh(A @ W1 + b1) @ w2 + b2 - t
            out = r * r if loss == "square" else r.abs()
            if st is not None:
                out = out * (st if batch is None else st[batch])
            if weight_decay > 0:
                out = out + weight_decay * ((W1 * W1).sum() + (w2 * w2).sum())
            return out

        return fn

    f = TorchFunction(build, n_samples=n, per_sample=True, source=f"{loss}(mlp{hidden}(X) - y) + {weight_decay:g}·‖W‖²")
    variables = (
        Variable("W1", (p, hidden), init=w1_0),
        Variable("b1", (hidden,), init=np.zeros(hidden)),
        Variable("w2", (hidden,), init=w2_0),
        Variable("b2", (), init=np.zeros(())),
    )
    return DROProblem(variables=variables, loss=f, ambiguity=ambiguity, n_samples=n, targets=y)


def mlp_predict(values: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """The network of `mlp_dro_problem` at a solution, evaluated in float64 on new features."""
    X = np.asarray(X, dtype=np.float64)
    h = np.tanh(X @ np.asarray(values["W1"], dtype=np.float64) + np.asarray(values["b1"], dtype=np.float64))
    return h @ np.asarray(values["w2"], dtype=np.float64) + float(np.asarray(values["b2"]).reshape(()))


def random_features(X: np.ndarray, n_features: int = 200, scale: float = 1.0, seed: int = 0) -> np.ndarray:
    """Seeded random tanh features tanh(X Ω + c), Ω ~ N(0, scale²/p), c ~ U(−π, π) (same seed: same map)."""
    X = np.asarray(X, dtype=np.float64)
    p = X.shape[1]
    rng = np.random.default_rng(seed)
    omega = rng.standard_normal((p, n_features)) * (scale / np.sqrt(p))
    c = rng.uniform(-np.pi, np.pi, size=n_features)
    return np.tanh(X @ omega + c)


def ridge_dro_problem(
    F: np.ndarray,
    y: np.ndarray,
    ambiguity: Ambiguity,
    weight_decay: float = 1e-3,
    loss: str = "square",
    sample_weights: np.ndarray | None = None,
) -> DROProblem:
    """A DRO problem over (w, b) for ℓ_i = s_i · φ(f_iᵀw + b − y_i) + weight_decay · ‖w‖².

    With features F = `random_features(X)` this is a nonlinear (random-features) regression model
    that stays convex in (w, b), so `dro-cvxpy` solves the same problem exactly (its cvxpy form is
    given). The decay term is constant across samples: the robust objective is the robust data loss
    plus the decay for every ambiguity set whose worst-case weights sum to one (χ², KL, all
    target-conditional mixes). With a decay no `linear` structure is attached (the decay is not part
    of the Wasserstein closed form), so with Wasserstein ambiguity `tcdro` returns an error status
    ("wasserstein needs a linear-residual loss").
    """
    return linear_dro_problem(F, y, ambiguity, loss, sample_weights, weight_decay=weight_decay)
