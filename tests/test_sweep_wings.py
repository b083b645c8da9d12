"""Sweeps batched by the wings: multi-objective preference weights (backends/multiobjective/batched.py)
and minimax (backends/minimax/batched.py). Every swept point equals its single solve (the preferred
point of paretom3; the saddle point of adasgda) and a known answer; points whose check fails are
reported as such; what cannot batch says why."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.backends.minimax import batched as mm_batched
from optlang.backends.multiobjective import batched as mo_batched

ZDT1_W = """param w = 0.5
var x[30] in [0, 1]
let g = 1 + 9 * mean(x[1:])
minimize {
  f1: x[0]
  f2: g * (1 - sqrt(x[0] / g))
}
prefer w * f1 + (1 - w) * f2
"""

# the swept param inside an objective: each point has its own front
SHIFTED = """param c = 1
var x[4] in [-2, 2]
minimize {
  f1: sumsq(x - c)
  f2: sumsq(x + 1) + 0.5 * x[0]^2
}
prefer 0.5 * f1 + f2
"""

GAME = """param B = randn(6, 5, seed = 21)
param a = randn(6, seed = 22)
param c = randn(5, seed = 23)
param lam = 1
var x[6]
var y[5]
minimize max over y: 0.5 * lam * sumsq(x) + dot(a, x) + x @ B @ y - sumsq(y) + dot(c, y)
"""


def zdt1_preferred(w: float) -> tuple[float, float]:
    """min w f1 + (1 − w) f2 on ZDT1's front f2 = 1 − √f1: f1* = ((1 − w) / 2w)², clipped to [0, 1]."""
    f1 = min(1.0, ((1 - w) / (2 * w)) ** 2)
    return f1, w * f1 + (1 - w) * (1 - np.sqrt(f1))


def test_preference_weight_sweep_is_batched_and_equals_single_solves_and_closed_form() -> None:
    ws = [0.4, 0.6, 0.85]
    sw = optlang.parse(ZDT1_W).sweep({"w": ws})
    assert sw.batched and "one shared front" in sw.plan and "3 of 3 polished" in sw.plan
    for w, r in zip(ws, sw.results, strict=True):
        assert r.ok and r.status.value == "converged" and r.backend == "batched-paretom3"
        assert {c.name for c in r.checks} >= {"weak_pareto_merit", "not_dominated_by_seen"}
        f1, phi = zdt1_preferred(w)
        assert r.objective == pytest.approx(phi, abs=1e-10)
        assert r.values["x"][0] == pytest.approx(f1, abs=1e-8)
        single = optlang.parse(ZDT1_W, params={"w": w}).solve(seed=0)
        assert single.backend == "paretom3"
        assert r.objective == pytest.approx(single.objective, rel=1e-8, abs=1e-10)
        assert np.allclose(r.values["x"], single.values["x"], atol=1e-6)


def test_param_inside_the_objectives_gives_each_point_its_front() -> None:
    cs = [0.0, 1.0]
    sw = optlang.parse(SHIFTED).sweep({"c": cs})
    assert sw.batched and "per point" in sw.plan
    for c, r in zip(cs, sw.results, strict=True):
        assert r.ok
        # convex quadratics: the preferred point minimizes 0.5 f1 + f2 (a weighted sum), in closed form:
        # x = (0.5 c − 1) / (0.5 + 1 + 0.5 e0) per coordinate (e0: the extra 0.5 x[0]^2 of f2)
        x = np.full(4, (0.5 * c - 1) / 1.5)
        x[0] = (0.5 * c - 1) / 2.0
        assert np.allclose(r.values["x"], x, atol=1e-7)
        single = optlang.parse(SHIFTED, params={"c": c}).solve(seed=0)
        assert r.objective == pytest.approx(single.objective, rel=1e-8)


def test_a_point_whose_polish_fails_is_solved_again_singly(monkeypatch) -> None:
    monkeypatch.setattr(mo_batched, "LM_ITERS", 0)  # no Newton step: no point is polished
    sw = optlang.parse(ZDT1_W).sweep({"w": [0.5, 0.7]})
    assert sw.batched and "0 of 2 polished" in sw.plan and "2 solved again singly" in sw.plan
    for w, r in zip([0.5, 0.7], sw.results, strict=True):
        assert r.backend == "paretom3" and r.ok
        assert r.objective == pytest.approx(zdt1_preferred(w)[1], abs=1e-9)


def test_what_cannot_batch_says_why() -> None:
    front = optlang.parse("var x[2] in [0, 1]\nminimize {\n  f1: sumsq(x)\n  f2: sumsq(x - 1)\n}\n")
    assert "no preference" in (mo_batched.cannot_batch([front], None) or "")
    simplex = optlang.parse(
        "param w = 0.5\nvar x[3] in simplex\nminimize {\n  f1: x[0]\n  f2: x[1]\n}\nprefer w * f1 + f2\n"
    )
    assert "simplex" in (mo_batched.cannot_batch([simplex], None) or "")
    named = optlang.parse(ZDT1_W)
    assert "weighted-sum" in (mo_batched.cannot_batch([named], "weighted-sum") or "")
    game = optlang.parse(open_model("robust_game.opt"))
    assert "domains" in (mm_batched.cannot_batch([game], None) or "")
    assert mm_batched.cannot_batch([optlang.parse(GAME)], None) is None


def open_model(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "models" / name).read_text()


def test_minimax_sweep_is_batched_and_each_point_is_the_saddle_point() -> None:
    lams = [0.3, 1.0, 3.0]
    m = optlang.parse(GAME)
    sw = m.sweep({"lam": lams})
    assert sw.batched and sw.plan.startswith("batched: 3 points as one minimax problem")
    B, a, c = (np.asarray(m.ir.params[k]) for k in ("B", "a", "c"))
    for lam, r in zip(lams, sw.results, strict=True):
        assert r.ok and r.status.value == "converged", [ch for ch in r.checks if not ch.passed]
        assert {ch.name for ch in r.checks} >= {"stationarity", "duality_gap"}
        # the saddle point: lam x + a + B y = 0, Bᵀx − 2y + c = 0
        K = np.block([[lam * np.eye(6), B], [-B.T, 2 * np.eye(5)]])
        z = np.linalg.solve(K, np.concatenate([-a, c]))
        assert np.allclose(r.values["x"], z[:6], atol=1e-7) and np.allclose(r.values["y"], z[6:], atol=1e-7)
        single = optlang.parse(GAME, params={"lam": lam}).solve(seed=0, dtype="float64")
        assert single.backend in ("adasgda", "gda")
        assert r.objective == pytest.approx(single.objective, rel=1e-6, abs=1e-8)
        assert np.allclose(r.values["x"], single.values["x"], atol=1e-4)


def test_minimax_point_with_an_unbounded_inner_max_is_diverged_and_the_others_unaffected() -> None:
    text = "param q = 1\nvar x[2]\nvar y[2]\nminimize max over y: 0.5 * sumsq(x) + dot(x, y) - q * sumsq(y) + sum(y)\n"
    sw = optlang.parse(text).sweep({"q": [-1.0, 1.0]})
    assert sw.batched
    assert sw.results[0].status.value == "diverged" and not sw.results[0].ok
    good = sw.results[1]
    # x + y = 0, x − 2y + 1 = 0  →  y = 1/3, x = −1/3
    assert good.ok and np.allclose(good.values["x"], [-1 / 3] * 2, atol=1e-7)
    assert np.allclose(good.values["y"], [1 / 3] * 2, atol=1e-7)


@pytest.mark.parametrize(
    ("name", "spec", "phrase"),
    [("zdt1_weight.opt", "w=[0.4, 0.8]", "preference points"), ("game_weight.opt", "lam=[0.5, 2]", "minimax")],
)
def test_cli_sweeps_the_shipped_examples_as_one_batched_problem(name: str, spec: str, phrase: str, capsys) -> None:
    from pathlib import Path

    from optlang.cli import main

    path = Path(__file__).resolve().parents[1] / "models" / name
    assert main(["sweep", str(path), "-p", spec]) == 0
    out = capsys.readouterr().out
    assert "2 points, batched" in out and phrase in out


def test_three_objective_reference_sweep_reaches_the_projection_on_the_sphere_front() -> None:
    # DTLZ2: the front is the unit sphere's positive part; the preference ‖F − r‖² is least at F = r / ‖r‖
    text = open_model("dtlz2_ref.opt").replace("param h", "param a = 0.4\nparam h").replace("(f1 - 0.4)", "(f1 - a)")
    sw = optlang.parse(text).sweep({"a": [0.2, 0.7]})
    assert sw.batched and "2 of 2 polished" in sw.plan
    for a, r in zip([0.2, 0.7], sw.results, strict=True):
        ref = np.array([a, 0.5, 0.6])
        assert r.ok and r.backend == "batched-paretom3"
        F = np.array([r.info["objectives"][k] for k in ("f1", "f2", "f3")])
        assert np.allclose(F, ref / np.linalg.norm(ref), atol=1e-8)
        assert r.objective == pytest.approx((np.linalg.norm(ref) - 1) ** 2, abs=1e-10)


def test_a_preferred_corner_of_the_front_is_polished_with_the_coordinate_held_at_its_bound() -> None:
    # for w < 1/3 the preferred point is ZDT1's corner x₁ = 1 (F = (1, 0)): the polish ends against the box,
    # holds x₁ there and solves again
    sw = optlang.parse(ZDT1_W).sweep({"w": [0.25, 0.5]})
    assert sw.batched and "2 of 2 polished" in sw.plan
    corner, inner = sw.results
    assert corner.ok and corner.backend == "batched-paretom3"
    assert corner.values["x"][0] == pytest.approx(1.0) and corner.objective == pytest.approx(0.25, abs=1e-12)
    assert inner.objective == pytest.approx(zdt1_preferred(0.5)[1], abs=1e-10)
