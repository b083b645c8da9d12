"""A user's install: optional packages refuse with the install sentence (never crash), the planner
imports only what the model's kind needs (no torch for check/plan), and it sizes the problem —
exact methods first when their measured cost fits the budget, with the reason on each line."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import optlang
from optlang.backends import base, registry
from optlang.backends.base import Status
from optlang.errors import PlanError
from optlang.planner import exact_cost

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def test_module_present_survives_a_missing_parent_package() -> None:
    # importlib.util.find_spec("dwave.samplers") raises ModuleNotFoundError when `dwave` is absent
    assert base.module_present("optlang_no_such_package.samplers") is False
    assert base.module_present("numpy.linalg") is True


@pytest.mark.parametrize(
    "backend, module, package, extra",
    [("neal", "dwave.samplers", "dwave-samplers", "anchors"), ("sdp-cvxpy", "cvxpy", "cvxpy", "cvxpy")],
)
def test_missing_optional_package_is_a_clean_refusal(
    monkeypatch: pytest.MonkeyPatch, backend: str, module: str, package: str, extra: str
) -> None:
    real = base.module_present
    monkeypatch.setattr(base, "module_present", lambda name: False if name == module else real(name))
    sentence = f"needs optional package {package} (pip install 'optlang-dsl[{extra}]')"
    assert registry.get(backend).available() == sentence
    m = optlang.load(MODELS / "maxcut_petersen.opt")
    p = m.plan()
    cand = next(c for c in p.candidates if c.name == backend)
    assert not cand.accepted and cand.reason == sentence and p.chosen != backend
    with pytest.raises(PlanError) as info:
        m.plan(backend)
    assert info.value.code == "E804" and sentence in info.value.message
    assert m.solve().status == Status.OPTIMAL  # everything else still works


def test_cli_plan_prints_the_install_sentence_verbatim(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from optlang import cli

    real = base.module_present
    monkeypatch.setattr(base, "module_present", lambda name: False if name == "cvxpy" else real(name))
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(["plan", str(MODELS / "maxcut_petersen.opt")]) == 0
    assert "needs optional package cvxpy (pip install 'optlang-dsl[cvxpy]')" in capsys.readouterr().out


def test_dro_cvxpy_needs_the_cvxpy_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = base.module_present
    monkeypatch.setattr(base, "module_present", lambda name: False if name == "cvxpy" else real(name))
    p = optlang.load(MODELS / "chi2_regression.opt").plan()
    cand = next(c for c in p.candidates if c.name == "dro-cvxpy")
    assert "pip install 'optlang-dsl[cvxpy]'" in cand.reason and p.chosen == "tcdro"


def test_registry_kinds_match_each_backend_class() -> None:
    for name in registry.names():
        assert set(registry.BACKENDS[name].kinds.split()) == set(registry.get(name).kinds), name


def _in_fresh_python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_check_and_plan_import_no_torch_cvxpy_or_scipy_optimize() -> None:
    """`check` and `plan` stay light. The one exception: planning a smooth model with general constraints
    decides whether it is a disciplined convex program, which needs cvxpy (and so scipy.optimize, which cvxpy
    imports; models/hs71.opt, portfolio_target.opt): their `check` stays clean, they never import torch, and
    they are planned last."""
    out = _in_fresh_python(
        f"""
        import sys
        from pathlib import Path
        import optlang
        from optlang import cli
        heavy = ("torch", "cvxpy", "scipy.optimize")
        models = sorted(Path({str(MODELS)!r}).glob("*.opt"))
        convexity = [m for m in models if optlang.load(m).form.dcp_test is not None]
        assert len(convexity) >= 2, convexity
        for model in models:
            for cmd in ("check",) if model in convexity else ("check", "plan"):
                assert cli.main([cmd, str(model)]) == 0, (cmd, model)
                loaded = [m for m in heavy if m in sys.modules]
                assert not loaded, (cmd, model.name, loaded)
        for model in convexity:
            assert cli.main(["plan", str(model)]) == 0, model
            loaded = [m for m in heavy if m in sys.modules and m == "torch"]  # cvxpy imports scipy.optimize
            assert not loaded, ("plan", model.name, loaded)
        print("clean")
        """
    )
    assert out.strip().endswith("clean")


def test_a_numpy_only_solve_never_imports_torch() -> None:
    out = _in_fresh_python(
        f"""
        import sys
        import optlang
        r = optlang.load({str(MODELS / "qubo_small.opt")!r}).solve()
        print(r.backend, r.status.value, "torch" in sys.modules)
        """
    )
    assert out.split() == ["bruteforce", "optimal", "False"]


def _brute(m: optlang.Model) -> float:
    p = m.compiled.problem
    S = np.array(list(itertools.product([-1.0, 1.0], repeat=p.n)))
    e = p.energy(S)
    return float(m.compiled.sign * e.min() + m.compiled.offset)


TINY = {
    "qubo4": "param Q = [[1, -2, 0, 1], [-2, 1, 3, 0], [0, 3, -1, 2], [1, 0, 2, 1]]\n"
    "binary x[4]\nminimize quad(x, Q) - sum(x)\n",
    "ring21": "param n = 21\ngraph R = torus(1, n)\nspin s[n]\nminimize quad(s, adjacency(R)) / 2 + 0.1 * sum(s)\n",
    "maxcut20": 'graph G = erdos_renyi(20, 0.3, seed = 7, weights = "signed")\nmaxcut G\n',
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_models_are_solved_exactly_by_the_automatic_plan(name: str) -> None:
    m = optlang.parse(TINY[name])
    p = m.plan(time_limit=60)
    assert p.chosen == "bruteforce"
    assert "exact: 2^" in next(c.reason for c in p.candidates if c.name == "bruteforce")
    r = m.solve(time_limit=60)
    assert r.status == Status.OPTIMAL and r.gap == 0.0
    assert r.objective == pytest.approx(_brute(m), abs=1e-9)


def test_planner_sizes_maxcut_between_bruteforce_bnb_and_specann() -> None:
    mid = optlang.parse('graph G = erdos_renyi(32, 0.5, seed = 3)\nmaxcut G\n')
    assert mid.plan().chosen == "bnb"  # 2^32 states is too many; bnb closes 32 nodes in well under a second
    assert "exact: branch and bound on 32 nodes" in next(c.reason for c in mid.plan().candidates if c.name == "bnb")
    big = optlang.parse("graph G = torus(20, 20)\nmaxcut G\n")
    p = big.plan()
    assert p.chosen == "specann"
    assert "beyond" in next(c.reason for c in p.candidates if c.name == "bnb")
    # a budget too small for even the exact estimate: the heuristic goes first
    assert optlang.load(MODELS / "qubo_small.opt").plan(time_limit=0.01).chosen == "specann"


def test_exact_cost_is_the_measured_rule() -> None:
    form = optlang.load(MODELS / "qubo_small.opt").form
    c = exact_cost("bruteforce", form)
    assert c is not None and c.text.startswith("exact: 2^16 states") and c.seconds < 0.05
    assert exact_cost("specann", form) is None
