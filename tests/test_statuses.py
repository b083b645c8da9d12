"""Honest statuses: `optimal` only with a proof. The relaxation backends (gnnsdp, sdp-cvxpy, sdp-bm)
return `feasible` with their bound and gap unless the proven bound meets the cut; with integer
weights the bound is rounded down to an integer cut (Petersen: SDP 12.5 proves the cut 12)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import optlang
from optlang.backends.base import RawSolution, RunContext, Status
from optlang.result import OPTIMAL_GAP_TOL
from optlang.verify import verify

MODELS = Path(__file__).resolve().parents[1] / "models"
UNIFORM = 'graph G = erdos_renyi(14, 0.5, seed = 1, weights = "uniform")\nmaxcut G\n'


@pytest.mark.parametrize("backend", ["gnnsdp", "sdp-cvxpy", "sdp-bm"])
def test_relaxation_not_tight_is_feasible_with_bound_and_gap(backend: str) -> None:
    if backend == "sdp-cvxpy":
        pytest.importorskip("cvxpy")
    m = optlang.parse(UNIFORM)
    exact = m.solve("bruteforce")
    r = m.solve(backend, seed=0)
    assert r.status == Status.FEASIBLE
    assert r.bound is not None and r.gap is not None and r.gap > 1e-3
    assert r.bound >= exact.objective - 1e-9 >= r.objective - 1e-9
    d = json.loads(r.to_json())  # the same status and gap in JSON and in the one-line summary
    assert d["status"] == "feasible" and d["gap"] == pytest.approx(r.gap)
    assert r.summary().startswith("feasible")


@pytest.mark.parametrize("backend", ["gnnsdp", "sdp-cvxpy", "sdp-bm", "bnb", "bruteforce"])
def test_integer_weights_rounded_bound_proves_petersen(backend: str) -> None:
    if backend == "sdp-cvxpy":
        pytest.importorskip("cvxpy")
    r = optlang.load(MODELS / "maxcut_petersen.opt").solve(backend, seed=0)
    assert r.objective == 12.0
    assert r.status == Status.OPTIMAL and r.bound == pytest.approx(12.0) and r.gap <= OPTIMAL_GAP_TOL


def test_bnb_proves_the_uniform_weight_optimum() -> None:
    m = optlang.parse(UNIFORM)
    r = m.solve("bnb")
    assert r.status == Status.OPTIMAL and r.gap <= OPTIMAL_GAP_TOL
    assert r.objective == pytest.approx(m.solve("bruteforce").objective, abs=1e-9)


def test_verify_downgrades_an_optimal_claim_with_a_gap() -> None:
    m = optlang.parse(UNIFORM)
    compiled = m.compiled
    s = m.solve("bruteforce").values["s"]
    energy = float(compiled.problem.energy(s))
    raw = RawSolution(Status.OPTIMAL, {"s": np.asarray(s, dtype=float)}, objective=energy, bound=energy - 1.0)
    r = verify(m.ir, m.form, compiled, raw, m.plan("bruteforce"), "bruteforce", {"solve": 0.0}, RunContext())
    assert r.status == Status.FEASIBLE and r.gap > OPTIMAL_GAP_TOL
    assert r.info["status_claimed"] == "optimal" and "does not prove" in r.info["status_note"]


def test_a_certified_bound_that_meets_a_heuristic_state_proves_it() -> None:
    m = optlang.load(MODELS / "maxcut_petersen.opt")
    r = m.solve("localsearch", options={"bound": "sdp"})  # integer weights: SDP 12.5 → bound 12
    assert r.objective == 12.0 and r.bound == pytest.approx(12.0)
    assert r.status == Status.OPTIMAL and "proves" in r.info["status_note"]
    assert m.solve("localsearch").status == Status.FEASIBLE  # no bound, no proof
