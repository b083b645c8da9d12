"""Time limits are caps: anytime backends end early when they stop improving (stopping.py's rule)
or prove their answer, and say which in info["stop"]."""

from __future__ import annotations

import pytest

import optlang
from optlang.backends.base import Status, module_present
from optlang.backends.stopping import STOP_REASONS, Stagnation

RING = "param n = 21\ngraph R = torus(1, n)\nspin s[n]\nminimize quad(s, adjacency(R)) / 2 + 0.1 * sum(s)\n"


def test_stagnation_needs_patience_and_as_long_again() -> None:
    st = Stagnation(patience=3)
    assert not st.update(5.0, 0.0)
    assert not st.update(4.0, 1.0)  # best at round 2, 1 s
    assert not st.update(4.0, 1.5)
    assert not st.update(4.0, 1.9)  # 2 stale rounds < patience 3
    assert not st.update(4.0, 1.95)  # 3 stale rounds, but only 0.95 s since the best (took 1 s)
    assert st.update(4.0, 2.0)
    assert not Stagnation(patience=0).update(1.0, 10.0)


def test_stagnation_counts_only_real_improvements() -> None:
    st = Stagnation(patience=2, rtol=1e-2, floor=0.0)
    st.update(1.0, 0.0)
    assert not st.update(0.995, 0.0)  # 0.5% better: not an improvement at rtol 1%
    assert st.update(0.994, 0.0)


@pytest.mark.parametrize("backend", ["specann", "localsearch", "neal"])
def test_ising_heuristics_stop_when_they_stagnate(backend: str) -> None:
    if backend == "neal" and not module_present("dwave.samplers"):
        pytest.skip("the anchors extra is not installed")
    m = optlang.parse(RING)
    r = m.solve(backend, time_limit=60, seed=1)
    assert r.info["stop"] == "stagnated" and r.status == Status.FEASIBLE
    assert r.objective == pytest.approx(m.solve("bruteforce").objective)


def test_patience_zero_fills_the_limit() -> None:
    r = optlang.parse(RING).solve("localsearch", time_limit=0.3, options={"patience": 0})
    assert r.info["stop"] == "time_limit" and r.status == Status.TIME_LIMIT


def test_gda_stops_on_a_cycling_bilinear_saddle() -> None:
    r = optlang.parse("var x\nvar y\nminimize max over y: x * y\n").solve("gda", time_limit=60)
    assert r.info["stop"] == "stagnated" and r.status == Status.FEASIBLE
    assert r.iterations < 10_000


def test_bnb_reports_a_proof() -> None:
    r = optlang.parse('graph G = erdos_renyi(14, 0.5, seed = 1, weights = "uniform")\nmaxcut G\n').solve("bnb")
    assert r.info["stop"] == "proved" and r.info["stop"] in STOP_REASONS
