"""`auto` optimizer options (backends/autotune.py): validation on data rows, the budget rule without
data, the record in Result.info["auto_options"], the plan line, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import optlang
from optlang.backends.autotune import folds, subset_function
from optlang.errors import OptionError

DRO = """param X = randn(120, 3, seed = 1)
param y = X @ [1, -2, 0.5] + randn(120, seed = 2) ^ 3
var w[3]
var b
minimize robust mean((X @ w + b - y)^2) within chi2(radius = 0.1)
"""


def test_tcdro_lr_auto_is_validated_and_tied_under_lbfgs() -> None:
    """The contract's example: under L-BFGS (tcdro's full-batch default) lr does not act, so every
    candidate scores the same and the default is kept — and the record says so."""
    m = optlang.parse(DRO + "solver tcdro { lr = auto }\n")
    p = m.plan()
    assert p.auto_options == ("lr",) and "5-fold validation" in p.auto_note and "auto options: lr in" in str(p)
    r = m.solve(seed=1)
    a = r.info["auto_options"]
    assert r.ok and a["rule"] == "validation" and a["parameters"] == ["lr"]
    assert [c["lr"] for c in a["candidates"]] == [0.001, 0.01, 0.1] and a["fits"] == 15
    assert a["how"].startswith("tied") and a["chosen"] == {"lr": 0.01}


def test_tcdro_adam_lr_auto_chooses_the_least_validation_loss_and_equals_the_fixed_solve() -> None:
    opts = "solver = adam, max_iter = 60, polish_iter = 0, select = holdout"
    m = optlang.parse(DRO + f"solver tcdro {{ lr = auto in [1e-3, 0.3], {opts} }}\n")
    r = m.solve(seed=1)
    a = r.info["auto_options"]
    assert "holdout 0.25" in a["method"] and a["fits"] == 2
    scores = {c["lr"]: c["score"] for c in a["candidates"]}
    assert scores[0.001] > scores[0.3]  # 60 Adam steps of 1e-3 barely move from the start
    assert a["chosen"] == {"lr": 0.3} and a["how"] == "least score"
    # the score is the held-out mean loss of the backend's own fit on the training rows
    tr, va = folds(120, "holdout", 5, 0.25, 1)[0]
    assert len(va) == 30 and len(set(tr) | set(va)) == 120
    fixed = optlang.parse(DRO + f"solver tcdro {{ lr = 0.3, {opts} }}\n").solve(seed=1)
    assert r.objective == pytest.approx(fixed.objective, rel=1e-9)


DOC_DRO = """param X = randn(200, 3, seed = 1)
param y = X @ [1, -2, 0.5] + randn(200, seed = 2)
var w[3]
minimize robust mean((X @ w - y)^2) within chi2(radius = 0.1)
"""


def test_validation_prefers_a_converged_candidate_within_one_standard_error() -> None:
    """docs/language.md's `lr = auto` example under Adam: lr = 0.01 scores least (0.93695) but every one of its
    fits stops at the 500-iteration limit (its early stop acts as a regularizer); lr = 0.1 converges on every
    fold and scores 0.93761, well within one standard error (0.094). The one-standard-error rule takes 0.1, so
    the final solve converges on the model as written — the L-BFGS optimum — instead of ending
    `iteration_limit` (as it did when the least score alone decided)."""
    r = optlang.parse(DOC_DRO + "solver tcdro { solver = adam, lr = auto in [0.01, 0.1] }\n").solve(seed=0)
    a = r.info["auto_options"]
    by = {c["lr"]: c for c in a["candidates"]}
    assert by[0.01]["score"] < by[0.1]["score"] <= by[0.01]["score"] + by[0.01]["standard_error"]
    assert by[0.01]["converged"] is False and by[0.1]["converged"] is True
    assert a["chosen"] == {"lr": 0.1} and a["how"].startswith("one standard error")
    exact = optlang.parse(DOC_DRO).solve(seed=0)
    assert r.status.value == "converged" and r.objective == pytest.approx(exact.objective, rel=1e-6)


@pytest.mark.parametrize(
    "scores, se, converged, chosen, how",
    [
        ([1.0, 1.01], [0.05, 0.05], [False, True], 1, "one standard error"),  # within: the converged one
        ([1.0, 1.2], [0.05, 0.05], [False, True], 0, "least score"),  # outside the standard error
        ([1.0, 1.01], [0.05, 0.05], [True, True], 0, "least score"),  # the least score converged
        ([1.0, 1.01], [float("nan"), 0.05], [False, True], 0, "least score"),  # one split: no standard error
        ([1.0, 1.01, 1.02], [0.05, 0.05, 0.05], [False, True, True], 1, "one standard error"),  # least of them
        ([1.0, 1.01], [0.05, 0.05], [False, False], 0, "least score"),  # none converged
    ],
)
def test_one_standard_error_rule(scores, se, converged, chosen, how) -> None:
    import dataclasses

    from optlang.backends.autotune import _choose

    @dataclasses.dataclass
    class Opts:
        lr: float = 0.5

    fields = {f.name: f for f in dataclasses.fields(Opts)}
    cands = [{"lr": 0.1 * (i + 1)} for i in range(len(scores))]
    i, note = _choose(scores, cands, fields, se, converged)
    assert i == chosen and note.startswith(how)


@pytest.mark.parametrize(
    "scores, chosen, how",
    [
        ([0.0596840, 0.0596839, 0.0700], 0, "the first listed"),  # within 1e-4 of each other: the first
        ([0.0596839, 0.0596840, 0.0700], 0, "the first listed"),  # ... whichever rounded lower
        ([0.07, 0.0596840, 0.0596839, 0.0596841], 1, "the first listed"),
        ([0.0596838, 0.0596840, 0.0596839, 0.07, 0.0596841], 4, "the default"),  # lr = 0.5: the default
        ([1.0, 1.001], 0, "least score"),  # 1e-3 apart: not a tie
    ],
)
def test_near_ties_do_not_follow_rounding(scores, chosen, how) -> None:
    """Scores within 1e-4 (relative) of the least are ties: the default among them, else the first listed,
    so a batched and a looped run of the same candidates (equal to ~1e-6) choose the same."""
    import dataclasses

    from optlang.backends.autotune import _choose

    @dataclasses.dataclass
    class Opts:
        lr: float = 0.5

    fields = {f.name: f for f in dataclasses.fields(Opts)}
    cands = [{"lr": 0.1 * (i + 1)} for i in range(len(scores))]
    i, note = _choose(scores, cands, fields)
    assert i == chosen and how in note


def test_smooth_with_data_rows_is_validated(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = X @ np.array([2.0, -1.0]) + 0.1 * rng.standard_normal(60)
    np.savetxt(tmp_path / "d.csv", np.c_[X, y], delimiter=",", header="a,b,y", comments="")
    text = (
        'data D = load("d.csv", target = "y")\nvar w[2]\nminimize mean((D.X @ w - D.y)^2) + 0.01 * sumsq(w)\n'
        "solver gd { method = adam, lr = auto in [0.001, 0.1], max_iter = 40, polish_iter = 0 }\n"
    )
    r = optlang.parse(text, base_dir=tmp_path).solve(seed=0)
    a = r.info["auto_options"]
    assert a["rule"] == "validation" and "objective on the held-out rows" in a["criterion"]
    assert a["chosen"] == {"lr": 0.1} and all(math.isfinite(c["score"]) for c in a["candidates"])


def test_no_data_uses_the_budget_rule_and_says_it_is_not_validation() -> None:
    m = optlang.parse(
        "var x[4]\nminimize sumsq(x - 3) + 0.1 * sum(x^4)\n"
        "solver gd { method = adam, lr = auto in [0.001, 0.3], polish_iter = 0, max_iter = 30 }\n"
    )
    assert "objective reached" in m.plan().auto_note
    r = m.solve(seed=0)
    a = r.info["auto_options"]
    assert a["rule"] == "budget" and "not validation in the statistical sense" in a["method"]
    assert "30 iterations" in a["method"]  # the user's max_iter caps the budget
    assert a["chosen"] == {"lr": 0.3} and a["candidates"][0]["score"] > a["candidates"][1]["score"]


def test_adasgda_step_scale_auto() -> None:
    m = optlang.parse(
        "var x[2] in [-1, 1]\nvar y[2] in [-1, 1]\nminimize max over y: sumsq(x) + x @ y - 0.5 * sumsq(y)\n"
        "solver adasgda { c_x = auto in [0.5, 2], max_iter = 100 }\n"
    )
    assert m.plan().auto_options == ("c_x",)
    r = m.solve(seed=0)
    a = r.info["auto_options"]
    assert r.status.has_solution and a["rule"] == "budget" and a["chosen"]["c_x"] in (0.5, 2.0)
    best = min(a["candidates"], key=lambda c: c["score"])
    assert a["chosen"]["c_x"] == best["c_x"] or a["how"].startswith("tied")


def test_subset_function_restricts_a_per_sample_loss() -> None:
    import torch

    p = optlang.parse(DRO).compiled.problem
    idx = np.array([3, 7, 50])
    sub = subset_function(p.loss, idx)
    v = {"w": np.array([0.3, 0.1, -0.2]), "b": np.array(0.5)}
    full = p.loss.value(v)
    assert sub.n_samples == 3 and np.allclose(sub.value(v), full[idx])
    fn = sub.compile("cpu", torch.float64)
    env = {k: torch.as_tensor(x) for k, x in v.items()}
    assert np.allclose(fn(env, batch=torch.tensor([2])).numpy(), full[[50]])


@pytest.mark.parametrize(
    "block, code, words",
    [
        ("solver gd { method = auto in [1, 2] }", "E703", "is not a number"),
        ("solver gd { restarts = auto in [1.5, 2] }", "E700", "must be an integer"),
        ("solver gd { max_iter = auto }", "E702", "max_iter"),
    ],
)
def test_auto_option_errors_point_at_the_option(block: str, code: str, words: str) -> None:
    m = optlang.parse("var x[2]\nminimize sumsq(x - 1)\n" + block + "\n")
    with pytest.raises(OptionError) as e:
        m.solve()
    assert e.value.code == code and words in e.value.message
    assert e.value.span is not None and (e.value.span.line, e.value.span.col) == (3, 13)


def test_auto_option_without_default_grid() -> None:
    m = optlang.parse(DRO + "solver tcdro {\n  batch_size = auto\n}\n")
    with pytest.raises(OptionError) as e:
        m.plan()
    assert e.value.code == "E703" and "no default candidates" in e.value.message and "auto in [" in e.value.hint
    assert (e.value.span.line, e.value.span.col) == (7, 3)


def test_string_option_auto_stays_a_value() -> None:
    m = optlang.parse("var x[2]\nminimize sumsq(x - 1)\nsolver gd { method = auto }\n")
    assert m.plan().auto_options == ()
    assert "auto_options" not in m.solve().info


SMOOTH_DATA = (
    'data D = load("d.csv", target = "y")\nvar w[2]\nminimize mean((D.X @ w - D.y)^2) + 0.01 * sumsq(w)\n'
    "solver gd {{ method = adam, lr = auto in [0.001, 0.01, 0.1, 1, 30], max_iter = {it}{extra} }}\n"
)


def _data(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = X @ np.array([2.0, -1.0]) + 0.1 * rng.standard_normal(60)
    np.savetxt(tmp_path / "d.csv", np.c_[X, y], delimiter=",", header="a,b,y", comments="")


@pytest.mark.parametrize("extra", [", polish_iter = 0", ""])
def test_gd_adam_candidates_run_batched_and_score_as_the_looped_fits(tmp_path, monkeypatch, extra) -> None:
    """The lr candidates × folds as one batched Adam run per fold: the same scores (float tolerance) as one
    fit per candidate and fold, and the same choice; the record says which way they ran."""
    from optlang.backends.smooth.gd import GD

    _data(tmp_path)
    m = optlang.parse(SMOOTH_DATA.format(it=300, extra=extra), base_dir=tmp_path)
    batched = m.solve(seed=0).info["auto_options"]
    monkeypatch.setattr(GD, "solve_candidates", lambda self, p, o, c: None)
    looped = optlang.parse(SMOOTH_DATA.format(it=300, extra=extra), base_dir=tmp_path).solve(seed=0)
    looped = looped.info["auto_options"]
    assert batched["execution"].startswith("batched") and looped["execution"].startswith("looped")
    assert batched["fits"] == looped["fits"] == 25 and batched["chosen"] == looped["chosen"]
    for b, s in zip(batched["candidates"], looped["candidates"], strict=True):
        if s["score"] is None:  # lr = 30 diverges in float32 either way
            assert b["score"] is None
        else:
            assert b["score"] == pytest.approx(s["score"], rel=1e-4, abs=1e-6)


def test_batched_candidates_equal_their_single_fits_with_convergence_divergence_and_the_limit() -> None:
    """Each copy of the batched run ends as its own fit: converged (frozen while others go on), diverged
    (its best iterate), or at the iteration limit; projected onto a box."""
    from optlang.backends.base import RunContext
    from optlang.backends.smooth.gd import GD, GDOptions

    m = optlang.parse("var x[3] in [-2, 2]\nvar z\nminimize sumsq(x - 1.5) + 0.1 * sum(x^4) + (z - 0.3)^2 + exp(z)\n")
    p = m.compiled.problem
    gd = GD()
    opts = [GDOptions(method="adam", lr=lr, max_iter=400, tol=1e-6, polish_iter=50) for lr in (1e-3, 0.05, 0.5, 1e6)]
    for dtype in ("float64", "float32"):  # float64: no polish, the Adam phase's own ends are the statuses
        stats = _compare_candidates(gd, p, opts, dtype)
        if dtype == "float64":
            assert stats == {"converged", "diverged", "iteration_limit"}
    assert gd.solve_candidates(p, [opts[0], GDOptions(method="pgd")], RunContext(seed=3)) is None


def _compare_candidates(gd, p, opts, dtype: str) -> set[str]:
    from optlang.backends.base import RunContext

    raws = gd.solve_candidates(p, opts, RunContext(seed=3, dtype=dtype))
    assert raws is not None
    stats = set()
    for o, rb in zip(opts, raws, strict=True):
        rs = gd.solve(p, o, RunContext(seed=3, dtype=dtype))
        assert rb.status == rs.status and rb.iterations == rs.iterations
        assert rb.objective == pytest.approx(rs.objective, rel=1e-5, abs=1e-6)
        for k in rs.values:
            assert np.allclose(rb.values[k], rs.values[k], rtol=1e-4, atol=1e-5)
        stats.add(rs.status.value)
    return stats


def test_an_objective_vmap_cannot_batch_falls_back_to_one_fit_per_candidate(monkeypatch) -> None:
    import torch

    import optlang.backends.smooth.gd_batched as gb
    from optlang.backends.base import RunContext
    from optlang.backends.smooth.gd import GD, GDOptions

    x0 = {"x": torch.zeros(3)}
    assert gb.vmappable(lambda v: (v["x"] ** 2).sum(), x0)
    assert not gb.vmappable(lambda v: v["x"].sum() * float(v["x"].sum().item()), x0)  # reads a value back
    p = optlang.parse("var x[2]\nminimize sumsq(x - 1)\n").compiled.problem
    opts = [GDOptions(method="adam", lr=lr, max_iter=20) for lr in (0.01, 0.1)]
    assert GD().solve_candidates(p, opts, RunContext(seed=0)) is not None
    monkeypatch.setattr(gb, "vmappable", lambda f, x: False)
    assert GD().solve_candidates(p, opts, RunContext(seed=0)) is None
    m = optlang.parse("var x[2]\nminimize sumsq(x - 1)\nsolver gd { method = adam, lr = auto, max_iter = 20 }\n")
    assert m.solve(seed=0).info["auto_options"]["execution"].startswith("looped")
