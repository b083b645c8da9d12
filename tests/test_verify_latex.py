"""verify.robust_mean against the exact duals of the DRO wing (two independent computations), and the LaTeX
of each objective form (latex.model_latex takes the IR)."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.backends.dro.common import chi2_dual, kl_dual
from optlang.latex import model_latex
from optlang.verify import robust_mean


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("radius", [0.01, 0.3, 2.0])
def test_robust_mean_matches_the_exact_duals(seed: int, radius: float) -> None:
    losses = np.random.default_rng(seed).gamma(2.0, size=200)
    assert robust_mean(losses, "chi2", radius) == pytest.approx(chi2_dual(losses, radius).value, rel=1e-8)
    assert robust_mean(losses, "kl", radius) == pytest.approx(kl_dual(losses, radius).value, rel=1e-6)
    assert losses.mean() < robust_mean(losses, "chi2", radius) <= losses.max() + 1e-12


def test_robust_mean_edges() -> None:
    losses = np.array([1.0, 2.0, 6.0])
    assert robust_mean(losses, "chi2", 0.0) == pytest.approx(3.0)
    assert robust_mean(losses, "kl", 50.0) == pytest.approx(6.0)  # the ball holds the point mass on the max
    with pytest.raises(ValueError):
        robust_mean(losses, "tv", 0.1)


@pytest.mark.parametrize(
    "text, pieces",
    [
        (
            "var x[2] in [0, 1]\nmaximize sum(x) - sumsq(x)\n",
            [r"\max", r"\lVert x \rVert_2^2", r"x \in \mathbb{R}^{2}"],
        ),
        ("graph G = torus(3, 3, seed = 1)\nmaxcut G\n", [r"\max_{s \in \{\pm 1\}^n}", "E(G)"]),
        (
            "var x[2]\nvar y[2] in ball(1)\nminimize max over y: dot(x, y) - sumsq(y)\n",
            [r"\min \max_{y}", r"\langle x, y \rangle"],
        ),
        (
            "var x[3]\nminimize sumsq(x)\nsubject to { x in argmin sum(x)^2 }\n",
            [r"\arg\min", r"\text{s.t. } x \in"],
        ),
        (
            "param X = randn(20, 2, seed = 1)\nparam y = randn(20, seed = 2)\nvar w[2]\n"
            "minimize robust mean((X @ w - y)^2) within kl(radius = 0.1)\n",
            [r"\sup_{Q \in \mathcal{U}_{\text{kl}}}", r"\mathbb{E}_Q"],
        ),
    ],
)
def test_latex_of_each_objective_form(text: str, pieces: list[str]) -> None:
    m = optlang.parse(text)
    tex = model_latex(m.ir)
    assert tex == m.latex()
    for piece in pieces:
        assert piece in tex, (piece, tex)
