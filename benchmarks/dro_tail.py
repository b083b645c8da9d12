"""Tail-robust regression benchmark: ERM, global χ²-DRO, Wasserstein DRO, inverse-density
reweighting (LDS-style) and TC-DRO, on ../shared/data/regression and a generated set.

    .venv/bin/python benchmarks/dro_tail.py [--quick] [--variants] [--select-radius]
        [--model linear|mlp|rf] [--hidden 32] [--datasets boston,cpus]

Per dataset: 5 seeded 80/20 train/test splits; features standardized with the training
statistics, targets standardized for fitting and predictions mapped back (metrics in target
units). Prints test MSE, tail MSE (targets in the top decile of the training targets), SERA
(boxplot φ of the training targets) as mean ± std over splits, the ratios to ERM (mean of
per-split ratios, also for the MSE on the rarest target bins, `rare`) and the targets of issue 8.

--model: the model family every method fits, by the same tcdro / erm torch code: linear
(default), mlp (one tanh hidden layer of --hidden units, `dro_problems.mlp_dro_problem`) or rf
(--hidden seeded random tanh features + a linear layer, `ridge_dro_problem`). W-DRO always fits
the linear model (its closed form needs linear structure). For mlp / rf the weight decay is
chosen per split from WD_GRID by ERM's MSE on the inner validation split (below) and shared by
every method of that split.

--auto: the same choice made inside the backend — the radii of χ²-DRO and TC-DRO are `auto`
(candidates RADIUS_GRID, TC-DRO also inner radius 0 with outer r), chosen by tcdro on 5 seeded folds
of the training part in one batched fit (optlang/backends/dro/auto.py, docs/backends/tcdro.md).

--select-radius: for each split, the radius of global χ²-DRO and of TC-DRO is chosen on an
inner validation split of the TRAINING part only (VAL_FRAC held out, seeded by the split): each
candidate and ERM are fitted on the inner-training part and scored on the validation part; the
chosen candidate has the smallest validation tail MSE (validation targets ≥ the inner-training
targets' 90 % quantile) among those whose validation MSE is ≤ VAL_MSE_SLACK × ERM's validation
MSE; if none qualifies (or the validation part has no tail samples) the smallest radius is taken.
Candidates: RADIUS_GRID for χ²-DRO; for TC-DRO the outer (region-mass) radius r from RADIUS_GRID
and the inner (per-region) radius s·r, s from --tc-inner-scales (default 0 and 1: the χ² group
DRO over target regions and the default set with inner = outer radius). The model is then
refitted on the whole training part with the choice. The test part is never used for a choice.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.ndimage import gaussian_filter1d

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.dro_problems import (  # noqa: E402
    linear_dro_problem,
    mlp_dro_problem,
    mlp_predict,
    random_features,
    ridge_dro_problem,
)
from optlang.backends.base import RunContext  # noqa: E402
from optlang.backends.dro import metrics  # noqa: E402
from optlang.backends.dro.erm import ERM  # noqa: E402
from optlang.backends.dro.tcdro import TCDRO  # noqa: E402
from optlang.problem import Ambiguity  # noqa: E402

DATASETS = ("boston", "concrete", "forestfires_area", "forestfires_logarea", "cpus", "bikeshare", "synthetic")
CHI2_RADIUS = 0.3  # global χ²-DRO radius (the same code as TC-DRO with one region)
TC_RADIUS = 0.3  # TC-DRO base radius ρ₀ (regions' radii by the count rule; outer radius = ρ₀)
TC_BINS = 10
W_RADIUS = 0.01  # Wasserstein radius (standardized feature units; 0.1 already shrinks w far too much)
RADIUS_GRID = (0.03, 0.1, 0.3, 1.0)  # --select-radius: candidate radii (χ²-DRO ρ and TC-DRO ρ₀)
VAL_FRAC = 0.25  # --select-radius: share of the training part held out for validation
VAL_MSE_SLACK = 1.10  # --select-radius: admissible validation MSE, relative to ERM's (chosen on split seed 4000)
SELECTED = ("chi2-DRO", "TC-DRO")  # methods whose radius --select-radius chooses
AUTO = False  # --auto: those radii are `auto`, chosen inside tcdro (optlang/backends/dro/auto.py)
INNER_SCALES = (1.0,)  # TC-DRO: inner radius ρ₀ = scale × outer radius; --select-radius picks among these
MAX_ITER = 300  # L-BFGS iterations for every fit (every method, every model family)
WD_GRID = (1e-3, 1e-2, 1e-1)  # nonlinear models: weight decay chosen per split by ERM's validation MSE
MODELS = ("linear", "mlp", "rf")


@dataclasses.dataclass(frozen=True)
class Model:
    """The model family every method fits (W-DRO always fits the linear model: its closed form).

    linear: x ↦ xᵀw + b.  mlp: one tanh hidden layer of `hidden` units, seeded Glorot start,
    weight decay on the weights.  rf: `hidden` seeded random tanh features, then a ridge-decayed
    linear layer (convex in the trained weights).
    """

    kind: str = "linear"
    hidden: int = 32
    weight_decay: float = 0.0


def data_dir() -> Path:
    env = os.environ.get("OPTLANG_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features and target of a shared CSV (header row, target = last column `y`), or the generated set."""
    if name == "synthetic":
        return synthetic()
    path = data_dir() / "regression" / f"{name}.csv"
    arr = np.loadtxt(path, delimiter=",", skiprows=1)
    return arr[:, :-1], arr[:, -1]


def synthetic(n: int = 2000, p: int = 8, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """An imbalanced regression set: a log-normal-like target whose rare high values depend on the
    features nonlinearly, so a linear model trades the dense centre against the tail."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    beta = rng.standard_normal(p)
    z = X @ beta / np.linalg.norm(beta)
    y = 10.0 * np.exp(0.8 * z) + rng.standard_normal(n)
    return X, y


def lds_weights(y: np.ndarray, bins: int = 50, sigma: float = 2.0) -> np.ndarray:
    """LDS-style inverse-density weights: histogram of targets, Gaussian-smoothed, w ∝ 1/√density."""
    edges = np.linspace(y.min(), y.max(), bins + 1)
    counts = np.histogram(y, edges)[0].astype(np.float64)
    smooth = gaussian_filter1d(counts, sigma, mode="constant")
    which = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, bins - 1)
    w = 1.0 / np.sqrt(np.maximum(smooth[which], 1e-3))
    return w / w.mean()


def methods(variants: bool, bins: int = TC_BINS) -> list[tuple[str, str, Ambiguity | None, dict]]:
    """(label, backend, ambiguity, options); ambiguity None = ERM with LDS sample weights."""
    out = [
        ("ERM", "erm", Ambiguity("chi2", 0.0), {}),
        ("chi2-DRO", "tcdro", Ambiguity("chi2", CHI2_RADIUS), {}),
        ("W-DRO", "tcdro", Ambiguity("wasserstein", W_RADIUS, p=2), {}),
        ("IDR(LDS)", "erm", None, {}),
        ("TC-DRO", "tcdro", Ambiguity("target_conditional", TC_RADIUS, bins=bins), {}),
    ]
    if variants:
        tc = Ambiguity("target_conditional", TC_RADIUS, bins=bins)
        out += [
            ("TC-adaptive-density", "tcdro", tc, {"region_weights": "adaptive", "radius_rule": "density"}),
            (
                "TC-adaptive-unif-inv",
                "tcdro",
                tc,
                {"region_weights": "adaptive", "regions": "uniform", "radius_rule": "inverse"},
            ),
            ("TC-empirical", "tcdro", tc, {"region_weights": "empirical"}),
            (
                "TC-robust-inner0",
                "tcdro",
                Ambiguity("target_conditional", 0.0, bins=bins),
                {"outer_radius": TC_RADIUS},
            ),
        ]
    return out


def fit_predict(
    backend: str,
    amb: Ambiguity | None,
    opts: dict,
    Xtr: np.ndarray,
    ytr: np.ndarray,
    Xte: np.ndarray,
    seed: int,
    model: Model = Model(),
) -> tuple[np.ndarray, float]:
    weights = None
    if amb is None:
        weights = lds_weights(ytr)
        amb = Ambiguity("chi2", 0.0)
    kind = "linear" if amb.kind == "wasserstein" else model.kind
    if kind == "mlp":
        prob = mlp_dro_problem(
            Xtr, ytr, amb, hidden=model.hidden, weight_decay=model.weight_decay, sample_weights=weights, seed=seed
        )
    elif kind == "rf":
        Ftr = random_features(Xtr, model.hidden, seed=seed)
        prob = ridge_dro_problem(Ftr, ytr, amb, weight_decay=model.weight_decay, sample_weights=weights)
    else:
        prob = linear_dro_problem(Xtr, ytr, amb, sample_weights=weights)
    b = ERM() if backend == "erm" else TCDRO()
    t0 = time.perf_counter()
    sol = b.solve(prob, b.make_options(opts), RunContext(seed=seed, dtype="float64", max_iter=MAX_ITER))
    dt = time.perf_counter() - t0
    if kind == "mlp":
        return mlp_predict(sol.values, Xte), dt
    if kind == "rf":
        return random_features(Xte, model.hidden, seed=seed) @ sol.values["w"] + float(sol.values["b"]), dt
    return Xte @ sol.values["w"] + float(sol.values["b"]), dt


def with_radius(amb: Ambiguity, opts: dict, r: float, scale: float = 1.0) -> tuple[Ambiguity, dict]:
    """The ambiguity at radius r; for TC-DRO r is the outer (region-mass) radius and the inner
    radius ρ₀ is scale × r (1: both r, the default; 0: a χ² group DRO over the target regions)."""
    if amb.kind == "target_conditional" and scale != 1.0:
        return dataclasses.replace(amb, radius=scale * r), {**opts, "outer_radius": r}
    return dataclasses.replace(amb, radius=r), opts


def inner_split(Xtr: np.ndarray, ytr: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    """The inner (fit, validation) split of the training part used by every selection."""
    rng = np.random.default_rng(5000 + seed)
    perm = rng.permutation(len(ytr))
    n_val = int(round(VAL_FRAC * len(ytr)))
    va, fi = perm[:n_val], perm[n_val:]
    return Xtr[fi], ytr[fi], Xtr[va], ytr[va]


def select_weight_decay(Xtr: np.ndarray, ytr: np.ndarray, seed: int, model: Model) -> tuple[Model, float]:
    """Nonlinear models: the weight decay of WD_GRID with the least ERM validation MSE (inner split of
    the training part). Every method of the split then uses it. Returns the model and ERM's
    validation MSE at the chosen decay (the reference of the radius selection)."""
    Xf, yf, Xv, yv = inner_split(Xtr, ytr, seed)
    grid = WD_GRID if model.kind != "linear" else (model.weight_decay,)
    best, best_mse = model, np.inf
    for wd in grid:
        m = dataclasses.replace(model, weight_decay=wd)
        pred, _ = fit_predict("erm", Ambiguity("chi2", 0.0), {}, Xf, yf, Xv, seed, m)
        v = metrics.mse(yv, pred)
        if v < best_mse:
            best, best_mse = m, v
    return best, best_mse


def select_radius(
    backend: str,
    amb: Ambiguity,
    opts: dict,
    Xtr: np.ndarray,
    ytr: np.ndarray,
    seed: int,
    model: Model = Model(),
    erm_mse: float | None = None,
) -> tuple[float, float, str]:
    """Choose the radius on an inner validation split of the training data (never the test data).

    Returns the radius, the TC-DRO inner scale and a short note. Candidates: RADIUS_GRID, and for
    TC-DRO every (radius, scale) of RADIUS_GRID × INNER_SCALES. Criterion: smallest validation
    tail MSE among the candidates with validation MSE ≤ VAL_MSE_SLACK × ERM's; otherwise the
    smallest radius (with the first scale). `erm_mse`: ERM's validation MSE with the same model,
    if already known.
    """
    Xf, yf, Xv, yv = inner_split(Xtr, ytr, seed)
    if erm_mse is None:
        erm_pred, _ = fit_predict("erm", Ambiguity("chi2", 0.0), {}, Xf, yf, Xv, seed, model)
        erm_mse = metrics.mse(yv, erm_pred)
    scales = INNER_SCALES if amb.kind == "target_conditional" else (1.0,)
    best, best_tail = None, np.inf
    for sc in scales:
        for r in RADIUS_GRID:
            amb_r, opts_r = with_radius(amb, opts, r, sc)
            pred, _ = fit_predict(backend, amb_r, opts_r, Xf, yf, Xv, seed, model)
            mse_r, tail_r = metrics.mse(yv, pred), metrics.tail_mse(yv, pred, yf, 0.9)
            if mse_r <= VAL_MSE_SLACK * erm_mse and np.isfinite(tail_r) and tail_r < best_tail:
                best, best_tail = (r, sc), tail_r
    if best is None:
        return RADIUS_GRID[0], scales[0], "fallback"
    return best[0], best[1], "val"


def run_dataset(
    name: str,
    splits: int,
    variants: bool,
    select: bool = False,
    model: Model = Model(),
    tc_opts: dict | None = None,
    bins: int = TC_BINS,
    split_seed: int = 1000,
) -> tuple[dict[str, dict[str, list[float]]], dict[str, list[str]]]:
    X, y = load(name)
    res: dict[str, dict[str, list[float]]] = {}
    chosen: dict[str, list[str]] = {}
    for s in range(splits):
        rng = np.random.default_rng(split_seed + s)
        perm = rng.permutation(len(y))
        cut = int(0.8 * len(y))
        tr, te = perm[:cut], perm[cut:]
        mu, sd = X[tr].mean(0), X[tr].std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (X[tr] - mu) / sd, (X[te] - mu) / sd
        ym, ys = y[tr].mean(), y[tr].std()
        ytr = (y[tr] - ym) / ys
        phi = metrics.boxplot_relevance(y[tr])
        m, erm_val = model, None
        if model.kind != "linear":
            m, erm_val = select_weight_decay(Xtr, ytr, s, model)
            chosen.setdefault("weight decay", []).append(f"{m.weight_decay:g}")
        for label, backend, amb, opts in methods(variants, bins):
            if label == "TC-DRO" and tc_opts:
                opts = {**opts, **tc_opts}
            if AUTO and label in SELECTED:  # --auto: the backend chooses (radius = auto, tcdro's K-fold)
                amb = dataclasses.replace(amb, radius=float("nan"), auto={"radius": RADIUS_GRID})
                chosen.setdefault(label, []).append("auto")
            elif select and label in SELECTED:
                r, sc, how = select_radius(backend, amb, opts, Xtr, ytr, seed=s, model=m, erm_mse=erm_val)
                amb, opts = with_radius(amb, opts, r, sc)
                note = f"{r:g}" + (f"/{sc:g}" if len(INNER_SCALES) > 1 and label == "TC-DRO" else "")
                chosen.setdefault(label, []).append(note + ("*" if how == "fallback" else ""))
            elif label == "TC-DRO":
                amb, opts = with_radius(amb, opts, amb.radius, INNER_SCALES[0])
            pred_std, dt = fit_predict(backend, amb, opts, Xtr, ytr, Xte, seed=s, model=m)
            pred = pred_std * ys + ym
            row = res.setdefault(label, {"mse": [], "tail": [], "sera": [], "rare": [], "time": []})
            row["mse"].append(metrics.mse(y[te], pred))
            row["tail"].append(metrics.tail_mse(y[te], pred, y[tr], 0.9))
            row["sera"].append(metrics.sera(y[te], pred, phi))
            row["rare"].append(metrics.rare_mse(y[te], pred, y[tr]))
            row["time"].append(dt)
    return res, chosen


def describe(model: Model) -> str:
    if model.kind == "mlp":
        return (
            f"MLP models (1 tanh layer, {model.hidden} units, weight decay from {list(WD_GRID)} "
            "by ERM validation MSE; W-DRO linear)"
        )
    if model.kind == "rf":
        return (
            f"random-features models ({model.hidden} tanh features, ridge from {list(WD_GRID)} "
            "by ERM validation MSE; W-DRO linear)"
        )
    return "linear models"


def fmt(xs: list[float]) -> str:
    """mean ± std over splits; a split without tail test samples (NaN tail MSE) is left out."""
    a = np.asarray(xs)
    return f"{np.nanmean(a):.4g} ± {np.nanstd(a):.2g}"


def ratio(row: list[float], base: list[float]) -> float:
    """Mean over splits of the per-split ratio (splits with NaN left out)."""
    return float(np.nanmean(np.asarray(row) / np.asarray(base)))


def set_val_mse_slack(value: float) -> None:
    """--val-mse-slack: the admissible validation MSE (relative to ERM's) of the radius selection."""
    global VAL_MSE_SLACK
    VAL_MSE_SLACK = value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 splits, bikeshare subsampled out (a few minutes)")
    ap.add_argument("--variants", action="store_true", help="also run TC-DRO option variants")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument(
        "--val-mse-slack",
        type=float,
        default=VAL_MSE_SLACK,
        help="--select-radius: admissible validation MSE relative to ERM's",
    )
    ap.add_argument(
        "--split-seed",
        type=int,
        default=1000,
        help="base seed of the train/test permutations (another value gives fresh, never-seen test splits)",
    )
    ap.add_argument(
        "--select-radius",
        action="store_true",
        help="choose the χ²-DRO and TC-DRO radii per split on an inner validation split of the training data",
    )
    ap.add_argument("--model", choices=MODELS, default="linear", help="model family of every method but W-DRO")
    ap.add_argument("--hidden", type=int, default=32, help="mlp hidden units / rf feature count")
    ap.add_argument("--bins", type=int, default=TC_BINS, help="TC-DRO regions K")
    ap.add_argument(
        "--tc-options",
        default="",
        help="extra tcdro options for TC-DRO, e.g. radius_rule=density,region_weights=robust",
    )
    ap.add_argument("--radius-grid", default="", help="--select-radius candidates, e.g. 0.03,0.1,0.3,1,3")
    ap.add_argument(
        "--tc-inner-scales",
        default="",
        help="TC-DRO inner radius / outer radius; several (e.g. 0,1): --select-radius chooses among them "
        "(default: 0,1 with --select-radius, else 1)",
    )
    ap.add_argument(
        "--auto",
        action="store_true",
        help="χ²-DRO and TC-DRO radii = auto: chosen by tcdro's batched K-fold validation (the backend's "
        "version of --select-radius)",
    )
    args = ap.parse_args()
    global RADIUS_GRID, INNER_SCALES, AUTO
    AUTO = args.auto
    set_val_mse_slack(args.val_mse_slack)
    scales = args.tc_inner_scales or ("0,1" if args.select_radius else "1")
    INNER_SCALES = tuple(float(v) for v in scales.split(","))
    if args.radius_grid:
        RADIUS_GRID = tuple(float(r) for r in args.radius_grid.split(","))
    model = Model(args.model, args.hidden)
    tc_opts = dict(kv.split("=", 1) for kv in args.tc_options.split(",") if kv)
    for k in ("outer_radius", "lr"):
        if k in tc_opts:
            tc_opts[k] = float(tc_opts[k])
    torch.set_num_threads(1)  # small linear models: one thread, no oversubscription on a shared machine
    names = [d for d in args.datasets.split(",") if d]
    splits = 3 if args.quick else args.splits
    if args.quick and "bikeshare" in names and args.datasets == ",".join(DATASETS):
        names.remove("bikeshare")
    chi, tc = (" selected", " selected") if args.select_radius else (f"={CHI2_RADIUS}", f"={TC_RADIUS}")
    print(
        f"# dro_tail: {describe(model)}, {splits} splits (80/20, seed {args.split_seed}), χ² ρ{chi}, TC ρ₀{tc} "
        f"K={args.bins}{' ' + args.tc_options if args.tc_options else ''}, TC inner/outer radius "
        f"{'from ' if len(INNER_SCALES) > 1 else ''}{', '.join(f'{v:g}' for v in INNER_SCALES)}, "
        f"W r={W_RADIUS}; metrics in target units; "
        "tail = top decile of train targets; rare = rarest equal-width target bins holding ≥ 10 % of train"
    )
    if args.select_radius:
        print(
            f"# --select-radius: χ²-DRO ρ and TC-DRO outer radius r per split from {list(RADIUS_GRID)} "
            f"(TC inner radius s·r, s from {list(INNER_SCALES)}; shown r/s) on a {VAL_FRAC:.0%} validation "
            f"split of the training part: least validation tail MSE with validation MSE ≤ {VAL_MSE_SLACK} × "
            "ERM's (else the smallest radius, marked *)"
        )
    summary = []
    for name in names:
        t0 = time.perf_counter()
        res, chosen = run_dataset(
            name, splits, args.variants, args.select_radius, model, tc_opts, args.bins, args.split_seed
        )
        missing = int(np.sum(np.isnan(res["ERM"]["tail"])))
        note = f"; {missing} split(s) without tail test samples left out of tail MSE" if missing else ""
        print(f"\n## {name}  ({time.perf_counter() - t0:.1f} s{note})")
        print("| method | test MSE | tail MSE | SERA | tail/ERM | SERA/ERM | MSE/ERM | rare/ERM | fit s |")
        print("|---|---|---|---|---|---|---|---|---|")
        erm = res["ERM"]
        for label, row in res.items():
            rt, rs, rm = ratio(row["tail"], erm["tail"]), ratio(row["sera"], erm["sera"]), ratio(row["mse"], erm["mse"])
            print(
                f"| {label} | {fmt(row['mse'])} | {fmt(row['tail'])} | {fmt(row['sera'])} | {rt:.3f} | {rs:.3f} "
                f"| {rm:.3f} | {ratio(row['rare'], erm['rare']):.3f} | {np.mean(row['time']):.2f} |"
            )
        if chosen:
            print("\nchosen per split: " + "; ".join(f"{k} {', '.join(v)}" for k, v in chosen.items()))
        tc = res["TC-DRO"]
        rt, rm = ratio(tc["tail"], erm["tail"]), ratio(tc["mse"], erm["mse"])
        sera_tc = np.mean(tc["sera"])
        beats = sera_tc < np.mean(res["chi2-DRO"]["sera"]) and sera_tc < np.mean(res["W-DRO"]["sera"])
        summary.append((name, rt, rm, beats))
    print("\n## issue 8 targets (TC-DRO): tail MSE ≤ 0.8 × ERM with MSE ≤ 1.2 × ERM; SERA below χ² and W-DRO")
    print("| dataset | tail/ERM | MSE/ERM | tail target met | SERA beats χ² and W |")
    print("|---|---|---|---|---|")
    for name, rt, rm, beats in summary:
        print(
            f"| {name} | {rt:.3f} | {rm:.3f} | {'yes' if (rt <= 0.8 and rm <= 1.2) else 'no'} | "
            f"{'yes' if beats else 'no'} |"
        )
    real = [s for s in summary if s[0] != "synthetic"]
    met = sum(1 for _, rt, rm, _ in real if rt <= 0.8 and rm <= 1.2)
    won = sum(1 for *_, b in real if b)
    print(f"\nreal datasets meeting the tail target: {met} of {len(real)}; SERA better than both: {won} of {len(real)}")


if __name__ == "__main__":
    main()
