"""Constrained fronts whose random starts say little about the front: a constraint ~1e6 at the starts and
O(1) on the front (feasibility is also relative to the size of the constraint's two sides at the point,
not only to the first batch's scale, so a point the solve calls feasible passes the Result's own
constraint check), and a feasible set that no start hits (a feasibility phase by Rprop finds it before
the rays start)."""

from __future__ import annotations

import numpy as np
import pytest

import optlang
from optlang.backends.multiobjective.common import BatchEval
from optlang.verify import constraint_check

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# the front is the segment x0 + x1 = 1; at random starts in [0, 10]² the constraint is up to ~1e6
STEEP = """var x[2] in [0, 10]
minimize {
  f1: x[0]
  f2: x[1]
}
subject to {
  (1 - x[0] - x[1]) * (1 + sumsq(x))^2 <= 0
}
"""

# MW1's feasible set with six distance variables: g ≤ 1.05 − 0.15 x needs every y_i^13 within ~0.07 of
# its centre; the front is f2 = 1 − 0.85 f1 for f1 ∈ [0, 1/3]
WELLS = """var x in [0, 1]
var y[6] in [0, 1]
param c = [0.55, 0.6, 0.65, 0.7, 0.75, 0.8]
let g = 1 + sum(1 - exp(-10 * (y^13 - c)^2))
minimize {
  f1: x
  f2: g - 0.85 * x
}
subject to {
  x + g - 0.85 * x <= 1.05
}
"""


def _front(res: optlang.Result) -> np.ndarray:
    return np.array([[p["objectives"]["f1"], p["objectives"]["f2"]] for p in res.info["front"]]).reshape(-1, 2)


def test_a_steep_constraints_front_keeps_it() -> None:
    # with the first batch's scale (~1e6) front points ended up to 0.4 inside the constraint (x0 + x1 = 0.61), the
    # front's hypervolume was 1.25 of the true one's and the Result's check of the constraint failed
    from optlang.backends.multiobjective.metrics import hypervolume

    res = optlang.parse(STEEP).solve(seed=0)
    assert res.status.value in ("converged", "iteration_limit")
    assert all(c.passed for c in res.checks), [c for c in res.checks if not c.passed]
    F = _front(res)
    assert F.shape[0] >= 50
    assert F.sum(1).min() >= 1 - 1e-6  # no point inside the constraint beyond what the tolerance allows
    t = np.linspace(0, 1, 10001)
    ref = np.array([1.1, 1.1])
    ratio = hypervolume(F[np.all(F < ref, axis=1)], ref) / hypervolume(np.stack([t, 1 - t], 1), ref)
    assert 0.94 <= ratio <= 1.0


def test_feasibility_is_relative_to_the_constraints_size() -> None:
    import torch

    from optlang.backends.base import RunContext

    problem = optlang.parse(STEEP + "subject to {\n  10000 * x[0] <= 13600\n}\n").compiled.problem
    ev = BatchEval(problem, RunContext(device="cpu", dtype="float64"), with_preference=False, with_constraints=True)
    eps = 5e-6
    X = {"x": torch.tensor([[10.0, 10.0], [0.5 - eps, 0.5 - eps], [0.5, 0.5], [1.36 + 1e-5, 0.0]], dtype=torch.float64)}
    out = ev(X)
    ev.violations(out)
    assert float(ev.scale[0]) > 7e5  # the first batch's scale: (1 − 20)(1 + 200)²
    ok = ev.feasible(out, 1e-6).tolist()
    # 2.25e-5 outside a constraint of size ~1.5: outside (by the first batch's scale it was 3e-11: inside); on the
    # boundary: inside; 0.1 outside a limit of 13 600 (relative 3.7e-6): outside, as 1e-5 / 13 600 would not be
    assert ok == [False, False, True, False]
    X2 = {"x": torch.tensor([[1.36 + 1e-8, 0.6]], dtype=torch.float64)}
    assert ev.feasible(ev(X2), 1e-6).tolist() == [True]  # 1e-4 outside 13 600: within 1e-6 of its size


def test_the_results_constraint_check_is_relative_to_the_sides() -> None:
    ir = optlang.parse("var x in [0, 10]\nminimize (x - 5)^2\nsubject to {\n  10000 * x <= 13600\n}\n").ir
    (c,) = ir.constraints
    # 1 over a limit of 13 600 (an absolute 1e-4 failed it): 3.7e-5 of 1 + 13 601 + 13 600; 10 over it: 3.7e-4
    assert constraint_check(c, {"x": np.array(1.36 + 1e-4)}).passed
    assert not constraint_check(c, {"x": np.array(1.36 + 1e-3)}).passed
    small = optlang.parse("var x in [0, 10]\nminimize (x - 5)^2\nsubject to {\n  x <= 1\n}\n").ir.constraints[0]
    assert constraint_check(small, {"x": np.array(1 + 1.5e-4)}).passed  # size ~2: 1e-4 of 1 + 2
    assert not constraint_check(small, {"x": np.array(1 + 5e-4)}).passed


@pytest.mark.parametrize("seed", [0, 2])
def test_a_feasible_set_no_start_hits_is_found(seed: int) -> None:
    # before the feasibility phase: "no feasible point among the 2600 evaluated" with 1 400 evaluations unspent
    res = optlang.parse(WELLS).solve(seed=seed)
    assert res.status.value in ("converged", "iteration_limit"), res.info.get("error")
    assert all(c.passed for c in res.checks), [c for c in res.checks if not c.passed]
    F = _front(res)
    assert F.shape[0] >= 50
    assert F[:, 0].min() <= 0.01 and F[:, 0].max() >= 0.33
    assert np.median(np.abs(F[:, 1] - (1 - 0.85 * F[:, 0]))) <= 1e-2
    assert res.info["evaluations"] <= 4000


def test_the_feasibility_phase_leaves_equalities_and_feasible_starts_alone() -> None:
    import torch

    from optlang.backends.base import RunContext
    from optlang.backends.multiobjective.common import Archive
    from optlang.backends.multiobjective.front import _feasible_starts
    from optlang.backends.multiobjective.paretom3 import ParetoM3Options

    ctx = RunContext(device="cpu", dtype="float32", seed=0)
    o = ParetoM3Options()
    X0 = {"x": torch.tensor([[0.2, 0.3], [0.9, 0.8]])}
    for text in (
        "var x[2] in [0, 1]\nminimize {\n  f1: x[0]\n  f2: x[1]\n}\nsubject to {\n  x[0] + x[1] == 1\n}\n",
        "var x[2] in [0, 1]\nminimize {\n  f1: x[0]\n  f2: x[1]\n}\nsubject to {\n  x[0] + x[1] >= 1.5\n}\n",
    ):
        problem = optlang.parse(text).compiled.problem
        ev = BatchEval(problem, ctx, with_preference=False, with_constraints=True)
        X, first = _feasible_starts(problem, o, ctx, Archive(), ev, X0, 10**6, 10**6)
        assert X is X0 and first is not None and ev.count == 2  # one evaluation, which stage 0 reuses
    # no start keeps the inequality: the phase moves them (and the archive holds the feasible points it found)
    problem = optlang.parse(text.replace("1.5", "1.9")).compiled.problem
    ev = BatchEval(problem, ctx, with_preference=False, with_constraints=True)
    archive = Archive()
    X, first = _feasible_starts(problem, o, ctx, archive, ev, X0, 10**6, 10**6)
    assert first is None and bool((X["x"].sum(1) >= 1.9 - 1e-5).all())
    assert archive.front()[0].shape[0] >= 1


def test_a_point_the_solve_calls_feasible_passes_the_results_check_fuzz() -> None:
    """Random constraints of sizes 1e-3 … 1e5 (a scaled quadratic against a constant, either way round, or an
    equality), a first batch far from the points checked: every point `BatchEval.feasible` admits (float64)
    passes `verify.constraint_check`, and every point 1e-3 of the size outside is refused by both."""
    import torch

    from optlang.backends.base import RunContext

    rng = np.random.default_rng(7)
    ctx = RunContext(device="cpu", dtype="float64")
    for _ in range(40):
        k = float(10.0 ** rng.uniform(-3, 5))
        c = float(rng.uniform(0.2, 2.0))
        sense = rng.choice(["<=", ">=", "=="])
        lhs, rhs = (f"{k!r} * sumsq(x)", f"{k * c!r}") if rng.random() < 0.5 else (f"{k * c!r}", f"{k!r} * sumsq(x)")
        text = "var x[2] in [-10, 10]\nminimize {\n  f1: x[0]\n  f2: x[1]\n}\n"
        text += f"subject to {{\n  {lhs} {sense} {rhs}\n}}\n"
        model = optlang.parse(text)
        ev = BatchEval(model.compiled.problem, ctx, with_preference=False, with_constraints=True)
        ev.violations(ev({"x": torch.tensor([[10.0, 10.0], [-10.0, 3.0]], dtype=torch.float64)}))  # the scale
        (decl,) = model.ir.constraints
        for rel in (0.0, 1e-9, 5e-7, 1e-3, -1e-3):  # a point on the boundary, then moved in or out by rel · size
            r = np.sqrt(c * (1 + rel))
            th = rng.uniform(0, 2 * np.pi)
            x = np.array([r * np.cos(th), r * np.sin(th)])
            ok = bool(ev.feasible(ev({"x": torch.tensor(x[None], dtype=torch.float64)}), 1e-6)[0])
            passed = constraint_check(decl, {"x": x}).passed
            if ok:
                assert passed, (text, rel)
            if abs(rel) == 1e-3 and (sense == "==" or (rel > 0) == ((sense == "<=") == lhs.startswith(f"{k!r} *"))):
                if k * c >= 1e-2:  # outside by k c 1e-3 ≥ 1e-5: more than 1e-6 of either scale
                    assert not ok, (text, rel)
                if k * c >= 1:  # ... and at least 3.3e-4 of 1 + |a| + |b|
                    assert not passed, (text, rel)
