"""DRO mathematics shared by the DRO backends, in float64 numpy: regions, radii, exact duals.

What lives here: target regions and their radii (TC-DRO), the exact χ² and KL worst-case means
(dual value, dual variable and the worst-case weights), the combination of per-region values
into one robust objective, and the Wasserstein closed forms for linear models. No torch, no
solver loops (those are in dro_train.py), so every backend and test can use the same reference.

Conventions (LANGUAGE.md §3):
  chi2(r): {Q ≪ P̂ : ½ E_P̂ (dQ/dP̂ − 1)² ≤ r}, sup E_Q ℓ = min_η η + √(1+2r) √(E_P̂ (ℓ−η)₊²)
  kl(r):   {Q : E_Q log(dQ/dP̂) ≤ r},        sup E_Q ℓ = min_{λ>0} λ r + λ log E_P̂ exp(ℓ/λ)
  wasserstein(r, p): features move at cost ‖x − x'‖₂, targets fixed, W_p(Q, P̂) ≤ r.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

RADIUS_RULES = ("count", "inverse", "density", "uniform")
REGION_SCHEMES = ("quantile", "uniform")
REGION_WEIGHTS = ("adaptive", "empirical", "balanced", "robust")
# the region options tcdro and dro-cvxpy share (Backend.option_choices); `auto` weights mean robust
REGION_CHOICES = {
    "regions": REGION_SCHEMES,
    "radius_rule": RADIUS_RULES,
    "region_weights": ("auto", *REGION_WEIGHTS),
}
# the optimizer options tcdro and erm share (Backend.option_ranges / option_choices): batch_size 0 and
# refresh 0 are automatic, polish_iter 0 turns the polish off, full_batch_max 0 always takes minibatches
TRAIN_RANGES = {"lr": ">0", "batch_size": ">=0", "full_batch_max": ">=0", "polish_iter": ">=0"}
TRAIN_CHOICES = {"solver": ("auto", "lbfgs", "adam")}


# ----------------------------------------------------------------------------- divergence duals
@dataclass(frozen=True)
class DualResult:
    """A worst-case mean: its value, the dual variable (η for χ², λ for KL) and the worst-case
    probabilities over the samples (they sum to 1 and Σ q_i ℓ_i equals the value)."""

    value: float
    dual: float
    weights: np.ndarray


def _probs(n: int, weights: np.ndarray | None) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=np.float64)
    return w / w.sum()


def chi2_dual(losses: np.ndarray, radius: float, weights: np.ndarray | None = None) -> DualResult:
    """Exact sup of E_Q ℓ over {½ E_P (dQ/dP − 1)² ≤ radius}, P = `weights` (uniform if None).

    The dual min_η η + c √(Σ π_i (ℓ_i − η)₊²), c = √(1 + 2r), is convex and piecewise smooth in η;
    on each piece (the top-m losses active) its stationary point is a closed form, so the minimum
    is found exactly by evaluating every piece's clipped stationary point (O(n log n)).
    """
    loss = np.asarray(losses, dtype=np.float64).ravel()
    n = loss.size
    pi = _probs(n, weights)
    if n == 0:
        raise ValueError("chi2_dual needs at least one loss")
    if radius <= 0.0:
        return DualResult(float(pi @ loss), -np.inf, pi.copy())
    shift = float(loss.max())
    v = loss - shift  # all ≤ 0: keeps the prefix sums well conditioned
    order = np.argsort(-v, kind="stable")
    vs, ps = v[order], pi[order]
    c2 = 1.0 + 2.0 * radius
    W = np.cumsum(ps)
    S1 = np.cumsum(ps * vs)
    S2 = np.cumsum(ps * vs * vs)
    var = np.maximum(S2 - S1 * S1 / W, 0.0)
    hi = vs  # piece m: η in [vs[m+1], vs[m]] (0-based m: top m+1 active)
    lo = np.append(vs[1:], -np.inf)
    denom = c2 - 1.0 / W
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(denom > 0, np.sqrt(var / np.where(denom > 0, denom, 1.0)), np.inf)
        eta_stat = (S1 - u) / W
    eta = np.clip(np.where(np.isfinite(eta_stat), eta_stat, lo), lo, hi)
    eta = np.where(np.isfinite(eta), eta, hi)  # last piece without a stationary point: its top
    g = np.maximum(S2 - 2.0 * eta * S1 + W * eta * eta, 0.0)
    f = eta + np.sqrt(c2) * np.sqrt(g)
    best = int(np.argmin(f))
    eta_star = float(eta[best])
    excess = np.maximum(v - eta_star, 0.0) * pi
    if excess.sum() <= 0.0:  # the ball holds the point mass on the maximum: sup = max
        q = np.where(v >= 0.0, pi, 0.0)
        q = q / q.sum()
    else:
        q = excess / excess.sum()
    return DualResult(float(f[best]) + shift, eta_star + shift, q)


def kl_dual(losses: np.ndarray, radius: float, weights: np.ndarray | None = None) -> DualResult:
    """Exact sup of E_Q ℓ over {KL(Q‖P) ≤ radius}, P = `weights` (uniform if None).

    h(λ) = λ r + λ log E_P exp(ℓ/λ) has h'(λ) = r − KL(Q_λ‖P), Q_λ ∝ P·exp(ℓ/λ), and KL(Q_λ‖P)
    decreases in λ; so λ* solves KL(Q_λ‖P) = r by a bracketed root search on log λ. When r is at
    least log(1/P(argmax)), the ball holds the point mass on the maximum and sup = max ℓ.
    """
    loss = np.asarray(losses, dtype=np.float64).ravel()
    n = loss.size
    pi = _probs(n, weights)
    if radius <= 0.0:
        return DualResult(float(pi @ loss), np.inf, pi.copy())
    shift = float(loss.max())
    v = loss - shift
    spread = float(-v.min())
    top = v >= -1e-15 * max(1.0, abs(shift))
    p_top = float(pi[top].sum())
    if spread == 0.0 or radius >= -np.log(p_top) - 1e-12:
        q = np.where(top, pi, 0.0)
        return DualResult(shift, 0.0, q / q.sum())
    logpi = np.log(np.maximum(pi, 1e-300))

    def tilt(lam: float) -> tuple[np.ndarray, float]:
        z = logpi + v / lam
        zmax = z.max()
        lse = zmax + np.log(np.exp(z - zmax).sum())
        return np.exp(z - lse), lse

    def gap(t: float) -> float:
        q, lse = tilt(float(np.exp(t)))
        kl = float(np.sum(q * (v / np.exp(t) - lse)))
        return kl - radius

    t_lo, t_hi = np.log(spread) - 8.0, np.log(spread) + 8.0
    while gap(t_lo) < 0.0 and t_lo > np.log(spread) - 700:
        t_lo -= 8.0
    while gap(t_hi) > 0.0 and t_hi < np.log(spread) + 700:
        t_hi += 8.0
    from scipy.optimize import brentq  # imported when a DRO solve needs it, not at plan time

    t_star = brentq(gap, t_lo, t_hi, xtol=1e-13, rtol=1e-15, maxiter=500)
    lam = float(np.exp(t_star))
    q, lse = tilt(lam)
    value = lam * radius + lam * lse + shift
    return DualResult(float(value), lam, q)


def divergence_dual(base: str, losses: np.ndarray, radius: float, weights: np.ndarray | None = None) -> DualResult:
    """The χ² or KL worst-case mean by name."""
    if base == "chi2":
        return chi2_dual(losses, radius, weights)
    if base == "kl":
        return kl_dual(losses, radius, weights)
    raise ValueError(f"unknown divergence '{base}' (chi2 or kl)")


# ----------------------------------------------------------------------------- regions
@dataclass(frozen=True)
class Regions:
    """Target regions R_k: per-sample labels, edges, sizes n_k, radii ρ_k and masses n_k/N."""

    labels: np.ndarray  # (N,) int in [0, K)
    edges: np.ndarray  # (K+1,) region boundaries in target units
    counts: np.ndarray  # (K,) n_k
    radii: np.ndarray  # (K,) ρ_k
    masses: np.ndarray  # (K,) n_k / N

    @property
    def k(self) -> int:
        return int(self.counts.size)

    def index(self, k: int) -> np.ndarray:
        return np.nonzero(self.labels == k)[0]


def region_edges(targets: np.ndarray, bins: int, scheme: str = "quantile") -> np.ndarray:
    """Edges of `bins` target regions: quantiles (equal counts) or equal widths; ties merge bins."""
    y = np.asarray(targets, dtype=np.float64).ravel()
    if scheme == "quantile":
        edges = np.quantile(y, np.linspace(0.0, 1.0, bins + 1))
    elif scheme == "uniform":
        edges = np.linspace(y.min(), y.max(), bins + 1)
    else:
        raise ValueError(f"unknown region scheme '{scheme}' ({', '.join(REGION_SCHEMES)})")
    return np.unique(edges)


def region_radii(radius: float, counts: np.ndarray, widths: np.ndarray, rule: str = "count") -> np.ndarray:
    """Per-region radii from the base radius ρ₀.

    count:   ρ_k = ρ₀ √(N / (K n_k))   (the default: grows as regions hold fewer samples)
    inverse: ρ_k = ρ₀ N / (K n_k)      (faster growth, the χ² variance scaling 1/n_k)
    density: ρ_k = ρ₀ √(d̄ / d_k), d_k = n_k / width_k (quantile regions have equal counts, so
             their scarcity shows in their width; equals `count` for equal-width regions)
    uniform: ρ_k = ρ₀
    """
    counts = np.asarray(counts, dtype=np.float64)
    K, N = counts.size, counts.sum()
    if rule == "count":
        return radius * np.sqrt(N / (K * counts))
    if rule == "inverse":
        return radius * N / (K * counts)
    if rule == "density":
        w = np.maximum(np.asarray(widths, dtype=np.float64), 1e-3 * max(float(np.sum(widths)), 1e-12))
        d = counts / w
        return radius * np.sqrt(d.mean() / d)
    if rule == "uniform":
        return np.full(K, float(radius))
    raise ValueError(f"unknown radius rule '{rule}' ({', '.join(RADIUS_RULES)})")


def make_regions(
    targets: np.ndarray,
    bins: int,
    radius: float,
    edges: np.ndarray | None = None,
    scheme: str = "quantile",
    rule: str = "count",
) -> Regions:
    """Assign samples to target regions (user edges, else `scheme` bins) and give each a radius.

    Interior edges split the target line; empty regions are dropped, so K may be below `bins`
    (e.g. many tied targets, as the zeros of forest-fire areas).
    """
    y = np.asarray(targets, dtype=np.float64).ravel()
    e = np.unique(np.asarray(edges, dtype=np.float64)) if edges is not None else region_edges(y, bins, scheme)
    inner = e[1:-1] if edges is None else e[(e > y.min()) & (e <= y.max())]
    raw = np.searchsorted(inner, y, side="right")  # region r = (inner[r-1], inner[r]]
    used = np.unique(raw)
    labels = np.searchsorted(used, raw)
    bounds = np.concatenate([[y.min()], inner, [y.max()]])
    lo_edges, hi_edges = bounds[used], bounds[used + 1]
    counts = np.bincount(labels, minlength=used.size).astype(np.int64)
    radii = region_radii(radius, counts, hi_edges - lo_edges, rule)
    out_edges = np.append(lo_edges, hi_edges[-1])
    return Regions(labels=labels, edges=out_edges, counts=counts, radii=radii, masses=counts / counts.sum())


def single_region(n: int, radius: float) -> Regions:
    """One region holding every sample: global χ²/KL DRO."""
    return Regions(
        labels=np.zeros(n, dtype=np.int64),
        edges=np.array([-np.inf, np.inf]),
        counts=np.array([n]),
        radii=np.array([float(radius)]),
        masses=np.array([1.0]),
    )


# ----------------------------------------------------------------------------- robust objective
@dataclass(frozen=True)
class RobustValue:
    """The robust objective of a loss vector over regions, with everything a report needs."""

    value: float
    region_values: np.ndarray  # V_k: each region's worst-case mean
    region_weights: np.ndarray  # a_k: weight of region k in the total (sums to 1)
    duals: np.ndarray  # η_k (χ²) or λ_k (KL); adaptive: λ_k
    sample_weights: np.ndarray  # w_i = a_k q_{k,i}: Σ w_i ℓ_i = value, Σ w_i = 1
    eta: float = 0.0  # adaptive: the normalization multiplier η


def region_mix(values: np.ndarray, masses: np.ndarray, mode: str, outer_radius: float) -> DualResult:
    """Combine per-region worst cases V_k into one number.

    empirical: Σ (n_k/N) V_k  (region masses fixed, conditionals robust: the TC-DRO set)
    balanced:  (1/K) Σ V_k    (every target region counts equally)
    robust:    sup over region masses π in a χ² ball of radius `outer_radius` around n_k/N of
               Σ π_k V_k (the adversary also moves mass towards the worst regions)
    """
    v = np.asarray(values, dtype=np.float64)
    if mode == "empirical":
        a = np.asarray(masses, dtype=np.float64)
        return DualResult(float(a @ v), 0.0, a.copy())
    if mode == "balanced":
        a = np.full(v.size, 1.0 / v.size)
        return DualResult(float(a @ v), 0.0, a)
    if mode == "robust":
        return chi2_dual(v, outer_radius, masses)
    raise ValueError(f"unknown region weighting '{mode}' ({', '.join(REGION_WEIGHTS)})")


def robust_value(
    losses: np.ndarray, regions: Regions, base: str = "chi2", mix: str = "empirical", outer_radius: float = 0.0
) -> RobustValue:
    """The robust objective of `losses` over the regions, exactly, with the worst-case weights.

    adaptive (χ² only): sup E_P̂[L ℓ] over likelihood ratios L ≥ 0 with E_P̂ L = 1 and
    ½ E_P̂[(L − 1)² | R_k] ≤ ρ_k in every region (see adaptive_chi2); otherwise
    region_mix over the per-region worst cases sup_{D(Q_k‖P̂_k) ≤ ρ_k} E_{Q_k} ℓ.
    """
    loss = np.asarray(losses, dtype=np.float64).ravel()
    if not np.all(np.isfinite(loss)):  # a diverged model: no dual to solve
        K = regions.k
        return RobustValue(
            float("nan"),
            np.full(K, np.nan),
            regions.masses.copy(),
            np.full(K, np.nan),
            np.full(loss.size, 1.0 / loss.size),
        )
    if mix == "adaptive" and regions.k > 1:
        if base != "chi2":
            raise ValueError("adaptive region weights are defined for the chi2 base divergence only")
        return adaptive_chi2(loss, regions)
    if mix == "adaptive":  # one region: the adaptive set is the global ball, solved directly
        mix = "empirical"
    K = regions.k
    vals = np.empty(K)
    duals = np.empty(K)
    inner = np.zeros_like(loss)
    for k in range(K):
        idx = regions.index(k)
        d = divergence_dual(base, loss[idx], float(regions.radii[k]))
        vals[k], duals[k] = d.value, d.dual
        inner[idx] = d.weights
    outer = region_mix(vals, regions.masses, mix, outer_radius)
    w = inner * outer.weights[regions.labels]
    return RobustValue(float(outer.value), vals, outer.weights, duals, w)


def _ratio_multiplier(ls: np.ndarray, p1: np.ndarray, p2: np.ndarray, eta: float, rho: float) -> float:
    """λ solving ½ mean(((1 + z/λ)₊ − 1)²) = ρ for z = ℓ − η (ℓ sorted ascending, prefix sums p1, p2).

    With j samples below −λ (the j smallest ℓ), the equation reads A_j/(2λ²) + j/2 = nρ, where
    A_j = Σ_{i ≥ j} z_i²; the left side h decreases in λ. At the breakpoints λ = a_j = η − ℓ_j it
    is H_j = A_j/(2a_j²) + j/2, increasing in j, so the root's piece is the first j with H_j ≥ nρ.
    Returns 0 when the ball already allows L = 0 below η and no loss exceeds η (then sup = 0).
    """
    n = ls.size
    m = int(np.searchsorted(ls, eta, side="left"))  # samples with z < 0
    target = n * rho
    j = np.arange(m + 1)
    A = (p2[n] - p2[: m + 1]) - 2.0 * eta * (p1[n] - p1[: m + 1]) + (n - j) * (eta * eta)
    np.maximum(A, 0.0, out=A)
    jstar = m
    if m > 0:
        a = eta - ls[:m]
        hit = np.flatnonzero(A[:m] / (2.0 * a * a) + 0.5 * j[:m] >= target)
        if hit.size:
            jstar = int(hit[0])
    den = 2.0 * target - jstar
    if den <= 0.0 or A[jstar] <= 0.0:
        return 0.0
    return float(np.sqrt(A[jstar] / den))


def adaptive_chi2(losses: np.ndarray, regions: Regions) -> RobustValue:
    """Target-conditional χ² with adaptive region masses, exactly.

    sup E_P̂[L ℓ] over L ≥ 0, E_P̂ L = 1, ½ E_P̂[(L − 1)² | R_k] ≤ ρ_k for each region k. The
    adversary moves mass between regions too, by at most a factor 1 + √(2ρ_k) on region k, so
    regions with larger radii (the scarce ones) can be inflated more. Dual:
    min_{η, λ_k > 0} η + Σ_k π_k [λ_k ρ_k − λ_k/2 + E_k (λ_k + ℓ − η)₊² / (2λ_k)], with
    L_i = (1 + (ℓ_i − η)/λ_k)₊. For fixed η each λ_k is a closed form on sorted losses
    (_ratio_multiplier); η solves E_P̂ L(η) = 1, a monotone equation, by a bracketed root search.
    One region gives global χ²-DRO; all radii 0 give the mean.
    """
    loss = np.asarray(losses, dtype=np.float64).ravel()
    K = regions.k
    idxs = [regions.index(k) for k in range(K)]
    sorted_l, pref1, pref2 = [], [], []
    for idx in idxs:
        ls = np.sort(loss[idx])
        sorted_l.append(ls)
        pref1.append(np.concatenate([[0.0], np.cumsum(ls)]))
        pref2.append(np.concatenate([[0.0], np.cumsum(ls * ls)]))
    rho = regions.radii
    pi = regions.masses

    def lambdas(eta: float) -> np.ndarray:
        return np.array(
            [
                np.inf if rho[k] <= 0 else _ratio_multiplier(sorted_l[k], pref1[k], pref2[k], eta, float(rho[k]))
                for k in range(K)
            ]
        )

    def ratios(eta: float, lam: np.ndarray) -> np.ndarray:
        L = np.ones_like(loss)
        for k in range(K):
            idx = idxs[k]
            if np.isinf(lam[k]):
                continue
            if lam[k] <= 0.0:
                L[idx] = (loss[idx] >= eta).astype(np.float64)
            else:
                L[idx] = np.maximum(1.0 + (loss[idx] - eta) / lam[k], 0.0)
        return L

    def excess_mass(eta: float) -> float:
        """E_P̂ L(η) − 1 from the sorted losses and prefix sums (no per-sample arrays)."""
        total = 0.0
        for k in range(K):
            ls, n = sorted_l[k], sorted_l[k].size
            if rho[k] <= 0:
                total += pi[k]
                continue
            lam = _ratio_multiplier(ls, pref1[k], pref2[k], eta, float(rho[k]))
            if lam <= 0.0:
                total += pi[k] * (n - np.searchsorted(ls, eta, side="left")) / n
                continue
            j0 = int(np.searchsorted(ls, eta - lam, side="right"))  # L > 0 from here on
            c, S = n - j0, pref1[k][n] - pref1[k][j0]
            total += pi[k] * (c * (1.0 - eta / lam) + S / lam) / n
        return total - 1.0

    if np.all(rho <= 0):
        w = pi[regions.labels] / regions.counts[regions.labels]
        return RobustValue(
            float(w @ loss), np.array([loss[i].mean() for i in idxs]), pi.copy(), np.full(K, np.inf), w, 0.0
        )
    top, bottom = float(loss.max()), float(loss.min())
    spread = max(top - bottom, 1e-12 * max(1.0, abs(top)))
    hi = top
    lo = bottom - spread
    for _ in range(200):
        if excess_mass(lo) > 0.0:
            break
        lo -= 4.0 * (top - lo)
    if excess_mass(hi) >= 0.0:
        eta = hi
    else:
        from scipy.optimize import brentq

        eta = brentq(excess_mass, lo, hi, xtol=1e-14 * max(1.0, abs(top), spread), rtol=1e-15, maxiter=500)
    lam = lambdas(eta)
    L = ratios(eta, lam)
    value = eta
    for k in range(K):
        z = loss[idxs[k]] - eta
        if np.isinf(lam[k]):
            value += pi[k] * z.mean()
        elif lam[k] > 0.0:
            value += pi[k] * (lam[k] * rho[k] - lam[k] / 2.0 + np.mean(np.maximum(lam[k] + z, 0.0) ** 2) / (2 * lam[k]))
    w = L * pi[regions.labels] / regions.counts[regions.labels]
    w = w / w.sum()
    mass = np.array([w[i].sum() for i in idxs])
    cond = np.array([(w[i] @ loss[i]) / mass[k] if mass[k] > 0 else float(loss[i].mean()) for k, i in enumerate(idxs)])
    return RobustValue(float(value), cond, mass, lam, w, float(eta))


def weights_summary(w: np.ndarray) -> dict[str, float]:
    """Effective sample weights in units of the uniform weight 1/N (ERM has all ones)."""
    w = np.asarray(w, dtype=np.float64)
    n = w.size
    rel = w * n
    return {
        "min": float(rel.min()),
        "max": float(rel.max()),
        "mean": float(rel.mean()),
        "std": float(rel.std()),
        "effective_sample_size": float(1.0 / np.sum(w * w)) if np.sum(w * w) > 0 else 0.0,
        "zero_fraction": float(np.mean(w <= 0.0)),
    }


# ----------------------------------------------------------------------------- wasserstein (linear)
def wasserstein_linear_value(residuals: np.ndarray, wnorm: float, radius: float, p: int, loss: str) -> float:
    """Worst-case mean loss of a linear model when features move within W_p ≤ radius (cost ‖·‖₂).

    square, p = 2: (√mean(r²) + radius‖w‖₂)²  (Blanchet, Kang, Murthy 2019)
    abs, p = 1 or 2: mean|r| + radius‖w‖₂     (Lipschitz loss; attained by shifting along w)
    square, p = 1: +∞ unless w = 0 (a vanishing mass moved far makes the square loss unbounded)
    """
    r = np.asarray(residuals, dtype=np.float64)
    if loss == "abs":
        return float(np.mean(np.abs(r)) + radius * wnorm)
    if loss != "square":
        raise ValueError(f"unknown linear loss '{loss}'")
    if p == 1:
        return float(np.mean(r * r)) if (radius <= 0.0 or wnorm == 0.0) else float("inf")
    return float((np.sqrt(np.mean(r * r)) + radius * wnorm) ** 2)


def shared_refusal(form: Any, name: str, validates_auto: bool = False) -> str | None:
    """The refusals the DRO backends make alike: `auto` values (chosen by validation, which only
    tcdro does) and general constraints (they handle variable domains only)."""
    auto: tuple[str, ...] = tuple(getattr(form, "auto", ()))
    if auto and not validates_auto:
        return f"{', '.join(auto)} = auto is chosen by validation, which {name} does not do; use tcdro or give a number"
    if form.constraints:
        return f"{name} handles variable domains only, not general constraints: " + "; ".join(form.constraints)
    return None
