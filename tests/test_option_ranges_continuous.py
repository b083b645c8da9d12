"""Declared option ranges and choices (Backend.option_ranges / option_choices) of the continuous wings:
bilevel, general_bilevel, minimax and dro. Every default passes; one bad value per declared rule family
per backend is refused (E700) at the option's own line by `optlang check`'s path (Model.check_solver);
the tables name only real options; the checks that a table cannot say (−1 beside a range, b ≤ a,
folds ≥ 2) name the option the user wrote."""

from __future__ import annotations

import dataclasses

import pytest
from option_tables import (
    SolverBlocks,
    assert_tables_name_real_options,
    bad_block,
    refused_at,
    rule_cases,
)

import optlang
from optlang.backends import registry
from optlang.errors import OptlangError

KINDS = ("bilevel", "general_bilevel", "minimax", "dro")
BACKENDS = [name for kind in KINDS for name in registry.for_kind(kind)]

# a small model of each kind (models/minnorm.opt, ridge_hyper.opt, quadratic_game.opt, chi2_regression.opt
# in miniature); the solver block follows its last line
MODELS = {
    "bilevel": (
        "param A = randn(4, 6, seed = 1)\nparam b = randn(4, seed = 2)\nvar x[6]\n"
        "minimize 0.5 * sumsq(x)\nsubject to { x in argmin 0.5 * sumsq(A @ x - b) }\n"
    ),
    "general_bilevel": (
        "param X = randn(8, 3, seed = 1)\nparam y = randn(8, seed = 2)\nvar t\nvar w[3]\n"
        "minimize 0.5 * mean((X @ w - y)^2)\nsubject to { w in argmin over w: 0.5 * exp(t) * sumsq(w) "
        "+ mean((X @ w - y)^2) }\n"
    ),
    "minimax": "param B = randn(3, 2, seed = 1)\nvar x[3]\nvar y[2]\n"
    "minimize max over y: 0.5 * sumsq(x) + x @ B @ y - sumsq(y)\n",
    "dro": "param X = randn(40, 3, seed = 1)\nparam y = randn(40, seed = 2)\nvar w[3]\n"
    "minimize robust mean((X @ w - y)^2) within chi2(radius = 0.5)\n",
}



def kind_of(name: str) -> str:
    return next(k for k in KINDS if name in registry.for_kind(k))


BLOCKS = SolverBlocks(MODELS, kind_of)
model, line_of = BLOCKS.model, BLOCKS.line_of


def test_the_small_models_are_of_their_kind() -> None:
    for kind, src in MODELS.items():
        assert optlang.parse(src).form.kind == kind


@pytest.mark.parametrize("name", BACKENDS)
def test_defaults_pass(name: str) -> None:
    backend = registry.get(name)
    backend.check_options(backend.Options())
    model(name).check_solver()  # an empty solver block: the defaults through make_options


@pytest.mark.parametrize("name", BACKENDS)
def test_tables_name_real_options(name: str) -> None:
    assert_tables_name_real_options(name)



@pytest.mark.parametrize(("name", "key", "value"), rule_cases(BACKENDS))
def test_one_bad_value_per_rule_is_refused_at_its_line(name: str, key: str, value: str) -> None:
    lines = bad_block(name, key, value)
    refused_at(model(name, *lines), line_of(name, len(lines) - 1), key)


def test_every_declared_choice_word_is_accepted() -> None:
    for name in BACKENDS:
        for key, words in registry.get(name).option_choices.items():
            for word in words:
                model(name, f'{key} = "{word}"').check_solver()


@pytest.mark.parametrize(
    ("name", "option", "key"),
    [
        ("sdbpg", "momentum = 1.5", "momentum"),
        ("sdbpg", "momentum = -0.5", "momentum"),
        ("sdbpg", "lam_target = 0", "lam_target"),
        ("sdbpg", "lam_growth = 0.5", "lam_growth"),  # used to be reported under lam_target
        ("sdbpg", "lam_smoothing = 2", "lam_smoothing"),
        ("sdbpg", "momentum = auto in [0.5, 1.5]", "momentum"),
        ("penalty", "momentum = 1", "momentum"),
        ("penalty", "eps0 = 0", "eps0"),  # used to be reported under eps_decay
        ("adasgda", "c_y = 0", "c_y"),  # used to be reported under c_x
        ("adasgda", "ns_polish = -1", "ns_polish"),  # used to be reported under r_eps
        ("adasgda", "b = 0.8", "b"),  # b ≤ a: the power the user changed
        ("adasgda", "a = 0.1", "a"),
        ("adasgda", "b = auto in [0.1, 0.9]", "b"),  # autotune would run every candidate against a
        ("adasgda", "a = auto in [0.1, 0.6]", "a"),
        ("gda", "lr_y = -0.1", "lr_y"),  # used to be reported under lr_x
        ("gda", "lr_x = auto in [0.1, -0.1]", "lr_x"),
        ("itd", "unroll_step = 0", "unroll_step"),  # used to be reported under unroll
        ("hgms", "clip_delta = 0", "clip_delta"),  # used to be reported under krylov_iters
        ("aid", "lower_tol = 0", "lower_tol"),  # used to be reported under outer_tol
        ("kkt", 'solver = "scipy"', "solver"),
        ("tcdro", "folds = 1", "folds"),  # crashed (E900: need at least one array to concatenate)
        ("tcdro", "folds = auto in [1, 5]", "folds"),
        ("tcdro", "val_frac = 1", "val_frac"),
        ("tcdro", 'select = "loo"', "select"),
        ("erm", "lr = auto in [0.01, 0]", "lr"),
        ("dro-cvxpy", 'region_weights = "none"', "region_weights"),
    ],
)
def test_checks_beyond_the_rule_families(name: str, option: str, key: str) -> None:
    refused_at(model(name, "seed = 1", option), line_of(name, 1), key)


@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("sdbpg", "momentum = -1"),
        ("sdbpg", "momentum = 0"),
        ("sdbpg", "lam_target = -1"),
        ("sdbpg", "step = 0"),
        ("sdbpg", "lipschitz_iters = 0"),
        ("sdbpg", "momentum = auto in [0, 0.5, 0.9]"),
        ("penalty", "momentum = 0.9"),
        ("adasgda", "b = 0.6"),
        ("adasgda", "b = auto in [0.1, 0.5]"),
        ("hgms", "select_iters = 0"),
        ("hgms", "krylov_tol = -1"),
        ("tcdro", "outer_radius = -1"),
        ("tcdro", "folds = 2"),
        ("dro-cvxpy", 'solver = "SCS"'),
    ],
)
def test_documented_edge_values_are_accepted(name: str, option: str) -> None:
    model(name, option).check_solver()


def test_tcdro_folds_1_is_refused_before_the_solve() -> None:
    """folds = 1 used to crash the k-fold validation of `radius = auto` (an internal E900)."""
    src = MODELS["dro"].replace("radius = 0.5", "radius = auto") + "solver tcdro {\n  folds = 1\n}\n"
    with pytest.raises(OptlangError) as info:
        optlang.parse(src).solve()
    assert info.value.code == "E700" and info.value.line == line_of("tcdro", 0) and "folds" in info.value.message


def test_options_built_by_hand_are_checked_in_solve() -> None:
    """A solve handed Options directly (not through make_options) checks them too, before any work."""
    m = model("gda")
    backend = registry.get("gda")
    bad = dataclasses.replace(backend.Options(), lr_y=-1.0)
    with pytest.raises(OptlangError) as info:
        backend.solve(m.compiled.problem, bad, None)  # type: ignore[arg-type]  # refused before ctx is used
    assert info.value.code == "E700" and "lr_y" in info.value.message
