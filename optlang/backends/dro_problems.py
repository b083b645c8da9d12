"""Hand-built DROProblems for linear regression models (tests, benchmarks and API users).

The lowering builds the same objects from `.opt` files; this builder exists so that a DRO
backend can be exercised from numpy arrays alone: ℓ_i = s_i · φ(x_iᵀw + b − y_i), φ square or
abs, with optional fixed per-sample weights s_i (inverse-density baselines).
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
) -> DROProblem:
    """A DRO problem over (w, b) for the loss φ(Xw + b − y); targets are y."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    n, p = X.shape
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
            return out

        return fn

    def cvx(xs: Any) -> Any:
        import cvxpy as cp

        r = X @ xs["w"] - y
        if bias:
            r = r + xs["b"]
        out = cp.square(r) if loss == "square" else cp.abs(r)
        return out if s is None else cp.multiply(s, out)

    f = TorchFunction(build, n_samples=n, per_sample=True, cvxpy=cvx, source=f"{loss}(X @ w + b - y)")
    wvar = Variable("w", (p,)) if weight_domain is None else Variable("w", (p,), domain=weight_domain)
    variables = (wvar, Variable("b", ())) if bias else (wvar,)
    lin = None if s is not None else LinearResidual(X, y, "w", "b" if bias else None, loss)  # type: ignore[arg-type]
    return DROProblem(variables=variables, loss=f, ambiguity=ambiguity, n_samples=n, targets=y, linear=lin)
