"""The planner: every backend answers for every kind, research backends are preferred, refusals
are sentences that `plan` quotes, and a forced backend that refuses is an error."""

from __future__ import annotations

import importlib.util

import pytest

import optlang
from optlang.backends import registry
from optlang.errors import PlanError

SMOOTH_WITH_CONSTRAINT = "var x[2]\nminimize sumsq(x)\nsubject to { sum(x) == 1 }\n"


def test_every_registered_backend_declares_itself() -> None:
    for name in registry.names():
        b = registry.get(name)
        assert b.name == name and b.kinds and b.summary
        assert isinstance(b.priority, int)


def test_refusal_is_quoted_and_no_silent_fallback() -> None:
    """A smooth model with a general constraint goes to slsqp; gd's refusal is quoted in the plan, and
    forcing gd is an error (E804) that names the backend that can, never a silent switch."""
    m = optlang.parse(SMOOTH_WITH_CONSTRAINT)
    p = m.plan()
    assert p.chosen == ("convex" if importlib.util.find_spec("cvxpy") else "slsqp")  # a DCP model
    gd = next(c for c in p.candidates if c.name == "gd")
    assert not gd.accepted and "cannot honour general constraints" in gd.reason
    with pytest.raises(PlanError) as info:
        m.plan("gd")
    assert info.value.code == "E804" and "slsqp" in (info.value.hint or "")
    with pytest.raises(PlanError) as info:
        optlang.parse("var x\nminimize x^2\n").plan("slsqp")
    assert info.value.code == "E804" and "gd solves the others" in info.value.message


def test_unknown_backend_has_did_you_mean() -> None:
    m = optlang.parse("var x\nminimize x^2\n")
    with pytest.raises(PlanError) as info:
        m.plan("gdd")
    assert "did you mean 'gd'" in (info.value.hint or "")


def test_unknown_backend_without_a_near_name_lists_every_backend() -> None:
    """Computed from the registry, so adding a backend edits no golden file."""
    m = optlang.parse("var x\nminimize x^2\n")
    with pytest.raises(PlanError) as info:
        m.plan("lbfgsb")
    assert info.value.code == "E803"
    assert info.value.hint == "backends: " + ", ".join(registry.names())


@pytest.mark.parametrize(
    "text, kind, default",
    [
        ("var x\nminimize (x - 1)^2\n", "smooth", "gd"),
        ("var x[3]\nminimize sumsq(x)\nsubject to { x in argmin sum(x)^2 }\n", "bilevel", "sdbpg"),
        ("var x[2]\nvar y[2] in ball(1)\nminimize max over y: dot(x, y) - sumsq(y) + sumsq(x)\n", "minimax", "adasgda"),
        (
            "param X = randn(20, 2, seed = 1)\nparam y = randn(20, seed = 2)\nvar w[2]\n"
            "minimize robust mean((X @ w - y)^2) within kl(radius = 0.1)\n",
            "dro",
            "tcdro",
        ),
    ],
)
def test_default_backend_per_kind(text: str, kind: str, default: str) -> None:
    m = optlang.parse(text)
    p = m.plan()
    assert (p.kind, p.chosen) == (kind, default)
    assert default in p.explain()


def test_baselines_are_never_chosen_automatically() -> None:
    m = optlang.parse(
        "param X = randn(20, 2, seed = 1)\nparam y = randn(20, seed = 2)\nvar w[2]\n"
        "minimize robust mean((X @ w - y)^2) within chi2(radius = 0.1)\n"
    )
    p = m.plan()
    erm = next(c for c in p.candidates if c.name == "erm")
    assert erm.accepted and not erm.auto and p.chosen != "erm"
    assert m.plan("erm").chosen == "erm"
