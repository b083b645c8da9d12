"""Declared option ranges and choices (Backend.option_ranges / option_choices) of the ising, maxcut and
smooth wings. Every default passes; one bad value per declared rule family per backend is refused (E700)
at the option's own line by `optlang check`'s path (Model.check_solver); the tables name only real
options; documented zeros (0 = none / automatic / fill the limit) stay accepted; and the values that used
to crash a solve (E900) or end it with a wrong answer are refused before any work."""

from __future__ import annotations

import dataclasses
from pathlib import Path

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
from optlang.backends.base import missing_package
from optlang.errors import OptlangError

KINDS = ("ising", "maxcut", "smooth")
BACKENDS = list(dict.fromkeys(name for kind in KINDS for name in registry.for_kind(kind)))

# a small model of each kind (models/ising_ring.opt and smooth_box.opt in miniature); the solver block
# follows its last line. The ising/maxcut backends are the same set: the ising model serves them all.
MODELS = {
    "ising": "graph R = torus(1, 12)\nspin s[12]\nminimize quad(s, adjacency(R)) / 2 + 0.1 * sum(s)\n",
    "smooth": "var x[2] in [-2, 0.5]\nminimize 100 * (x[1] - x[0]^2)^2 + (1 - x[0])^2\n",
    # slsqp takes smooth models with a general constraint only
    "smooth constrained": "var x[2] in [-2, 0.5]\nminimize 100 * (x[1] - x[0]^2)^2 + (1 - x[0])^2\n"
    "subject to { x[0] + x[1] <= 0.5 }\n",
    # convex takes disciplined convex ones only
    "smooth convex": "var x[2] in [-2, 0.5]\nminimize sumsq(x - 1)\nsubject to { x[0] + x[1] <= 0.5 }\n",
}



def kind_of(name: str) -> str:
    if name in ("slsqp", "convex"):
        return f"smooth {'convex' if name == 'convex' else 'constrained'}"
    return "smooth" if name in registry.for_kind("smooth") else "ising"


def installed(name: str) -> bool:
    return all(missing_package(mod) is None for mod in registry.get(name).requires)


BLOCKS = SolverBlocks(MODELS, kind_of)
model, line_of = BLOCKS.model, BLOCKS.line_of


def test_the_small_models_are_of_their_kind() -> None:
    for kind, src in MODELS.items():
        assert optlang.parse(src).form.kind == kind.split()[0]


@pytest.mark.parametrize("name", BACKENDS)
def test_defaults_pass(name: str) -> None:
    if not installed(name):
        pytest.skip(f"{name} needs {registry.get(name).requires}")
    backend = registry.get(name)
    backend.check_options(backend.Options())
    model(name).check_solver()  # an empty solver block: the defaults through make_options


@pytest.mark.parametrize("name", BACKENDS)
def test_tables_name_real_options(name: str) -> None:
    assert_tables_name_real_options(name)


def test_every_numeric_option_is_declared_or_known_free() -> None:
    """A new int/float option must get a range (or be listed here with the reason it has none)."""
    free = {
        ("gd", "max_iter"),  # the common option max_iter (checked with the common options)
        ("gd", "tol"),  # the common option tol
        ("slsqp", "max_iter"),  # the common options, as gd's
        ("slsqp", "tol"),
        ("convex", "tol"),
    }
    for name in BACKENDS:
        backend = registry.get(name)
        for f in dataclasses.fields(backend.Options):
            if f.type in ("int", "float", int, float) and (name, f.name) not in free:
                assert f.name in backend.option_ranges, f"{name}: numeric option '{f.name}' has no declared range"



@pytest.mark.parametrize(("name", "key", "value"), rule_cases(BACKENDS, every_choice=True))
def test_one_bad_value_per_rule_is_refused_at_its_line(name: str, key: str, value: str) -> None:
    if not installed(name):
        pytest.skip(f"{name} needs {registry.get(name).requires}")
    lines = bad_block(name, key, value)
    refused_at(model(name, *lines), line_of(name, len(lines) - 1), key)


def test_every_declared_choice_word_is_accepted() -> None:
    for name in BACKENDS:
        if not installed(name):
            continue
        for key, words in registry.get(name).option_choices.items():
            for word in words:
                if (name, key, word) == ("bnb", "bounder", "cvxpy") and missing_package("cvxpy"):
                    continue
                model(name, f'{key} = "{word}"').check_solver()


@pytest.mark.parametrize(
    ("name", "option", "key"),
    [
        # each of these used to run: E900 crashes, or a silently wrong or empty run
        ("bnb", "report_every = 0", "report_every"),  # E900: integer modulo by zero
        ("bnb", 'bounder = "bogus"', "bounder"),  # ended with status `error`, not an option error
        ("bnb", 'branching = "bogus"', "branching"),
        ("gnnsdp", 'shift = "bogus"', "shift"),  # ended with status `error`
        ("gnnsdp", 'weights = "no/such/file.safetensors"', "weights"),  # E900: FileNotFoundError
        ("gnnsdp", "target_gap = -0.5", "target_gap"),
        ("sdp-bm", "rank = -1", "rank"),  # E900: a tensor of negative size
        ("sdp-bm", 'shift = "bogus"', "shift"),  # E900: ValueError
        ("sdp-bm", "steps = 0", "steps"),  # a random start reported as the SDP
        ("sdp-cvxpy", "eps = -0.5", "eps"),  # E900: SCS's ValueError
        ("sdp-cvxpy", 'shift = "bogus"', "shift"),  # E900: ValueError
        ("neal", "num_sweeps = -1", "num_sweeps"),  # E900: dwave-samplers' ValueError
        ("neal", "num_reads = 0", "num_reads"),
        ("gd", "lr = 0", "lr"),  # E900: float division by zero
        ("gd", "lr = -0.5", "lr"),  # status `converged` at f = 3609 (the minimum is 0.25)
        ("gd", "restarts = 0", "restarts"),
        ("specann", "perturb = 1.5", "perturb"),  # a fraction of the spins
        ("specann", "spectral_fraction = 0", "spectral_fraction"),
        ("specann", "sweeps = -1", "sweeps"),
        ("specann", "tabu = 1.5", "tabu"),  # a fraction of each round's time
        ("localsearch", "batch = 0", "batch"),
    ],
)
def test_values_that_used_to_run_are_refused(name: str, option: str, key: str) -> None:
    if not installed(name):
        pytest.skip(f"{name} needs {registry.get(name).requires}")
    refused_at(model(name, "seed = 1", option), line_of(name, 1), key)


@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("specann", "tabu = 0"),  # no tabu (the default)
        ("specann", "tabu_tenure = 0"),  # max(10, n/50)
        ("specann", "patience = 0"),  # fill the time limit
        ("specann", "threads = 0"),  # leave torch's setting
        ("specann", "spectral_fraction = 1"),
        ("localsearch", "patience = 0"),
        ("localsearch", "threads = 0"),
        ("neal", "patience = 0"),
        ("gnnsdp", "refine_steps = 0"),  # the network only
        ("gnnsdp", "polish = 0"),
        ("gnnsdp", 'weights = ""'),  # the shipped weights
        ("sdp-bm", "rank = 0"),  # ⌈√(2n)⌉ + 1
        ("sdp-bm", "target_gap = 0"),
        ("bnb", "root_stall_checks = 0"),  # never stop the root refinement early
        ("bnb", "enumerate_below = 0"),
        ("gd", "polish_iter = 0"),  # no float64 polish
    ],
)
def test_documented_edge_values_are_accepted(name: str, option: str) -> None:
    if not installed(name):
        pytest.skip(f"{name} needs {registry.get(name).requires}")
    model(name, option).check_solver()


def test_gnnsdp_refuses_a_file_that_is_not_its_weights(tmp_path: Path) -> None:
    """A file that exists but is not a safetensors file of the proxy: an option error at the line, from solve."""
    bad = tmp_path / "w.safetensors"
    bad.write_bytes(b"not a safetensors file")
    m = model("gnnsdp", "seed = 1", f'weights = "{bad.as_posix()}"')
    m.check_solver()  # the file exists: check cannot tell more without reading it
    with pytest.raises(OptlangError) as info:
        m.solve(time_limit=5)
    assert info.value.code == "E700" and info.value.line == line_of("gnnsdp", 1), info.value
    assert "not a GNN-SDP weights file" in info.value.message


@pytest.mark.skipif(missing_package("cvxpy") is not None, reason="sdp-cvxpy needs cvxpy")
def test_sdp_cvxpy_names_a_solver_cvxpy_cannot_use() -> None:
    """It used to swallow cvxpy's SolverError and round the identity matrix instead of an SDP solution."""
    for solver in ("BOGUS", "OSQP"):  # unknown; installed with cvxpy but without PSD cones
        m = model("sdp-cvxpy", "seed = 1", f'solver = "{solver}"')
        with pytest.raises(OptlangError) as info:
            m.solve(time_limit=5)
        assert info.value.code == "E700" and info.value.line == line_of("sdp-cvxpy", 1), info.value
        assert solver in info.value.message


def test_options_built_by_hand_are_checked_in_solve() -> None:
    """A solve handed Options directly (not through make_options) checks them too, before any work."""
    m = model("gd")
    backend = registry.get("gd")
    bad = dataclasses.replace(backend.Options(), lr=-1.0)
    with pytest.raises(OptlangError) as info:
        backend.solve(m.compiled.problem, bad, None)  # type: ignore[arg-type]  # refused before ctx is used
    assert info.value.code == "E700" and "lr" in info.value.message


@pytest.mark.skipif(missing_package("cvxpy") is not None, reason="needs cvxpy")
def test_the_documented_cvxpy_solvers_both_run() -> None:
    """sdp-cvxpy's `solver = "CLARABEL"` (documented: SCS or CLARABEL) crashed with an internal E900
    (Clarabel's inverse step reads the solver options cvxpy was not given); dro-cvxpy's explicit solver
    with a time limit took the same path. Both solvers now give the same certified values."""
    got = {}
    for solver in ("SCS", "CLARABEL", "clarabel"):
        r = model("sdp-cvxpy", f'solver = "{solver}"').solve(time_limit=30)
        assert r.info["solver_status"] == "optimal", (solver, r.info)
        got[solver] = (r.objective, r.info["sdp_upper_bound"])
    assert got["CLARABEL"] == got["clarabel"]
    assert got["SCS"][0] == pytest.approx(got["CLARABEL"][0])
    assert got["SCS"][1] == pytest.approx(got["CLARABEL"][1], rel=1e-4)
    dro = (
        "param X = randn(40, 3, seed = 1)\nparam y = randn(40, seed = 2)\nvar w[3]\n"
        "minimize robust mean((X @ w - y)^2) within chi2(radius = 0.5)\n"
    )
    values = []
    for solver in ("CLARABEL", "SCS"):
        r = optlang.parse(dro + f'solver dro-cvxpy {{\n  solver = "{solver}"\n}}\n').solve(time_limit=30)
        assert r.status.value == "optimal", (solver, r.status)
        values.append(r.objective)
    assert values[0] == pytest.approx(values[1], rel=1e-4)
    with pytest.raises(OptlangError) as info:
        optlang.parse(dro + 'solver dro-cvxpy {\n  solver = "OSQP"\n}\n').solve(time_limit=30)
    assert info.value.code == "E700" and info.value.line == 6 and "OSQP" in info.value.message
