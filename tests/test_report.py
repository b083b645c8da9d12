"""Tests of the report package: HTML parses and holds the table and plots, Markdown and JSON carry the
same content, kind panels (cut distribution, Pareto front, per-region errors), the SVG helpers.

Results come from small real computations (toy Max-Cut solvers from test_compare, a bi-objective
weighted-sum sweep, a reweighted regression); the end-to-end report of a real .opt model runs
when the language core is present.
"""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser

import numpy as np
import pytest
from test_compare import toy_comparison

from optlang import report
from optlang.backends.base import Status
from optlang.compare import Comparison
from optlang.report import panels, plots
from optlang.result import Check, Result

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "source", "wbr", "area", "base", "embed", "track"}


class StrictHTML(HTMLParser):
    """Collects tags and text, and fails on mismatched or unclosed elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.decl = ""

    def handle_decl(self, decl: str) -> None:
        self.decl = decl

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def count(self, tag: str, **attrs: str) -> int:
        return sum(t == tag and all(a.get(k) == v for k, v in attrs.items()) for t, a in self.tags)


def parse(html: str) -> StrictHTML:
    p = StrictHTML()
    p.feed(html)
    p.close()
    assert p.decl.lower() == "doctype html"
    assert not p.errors, p.errors[:5]
    assert not p.stack, f"unclosed: {p.stack}"
    return p


def summary_rows(html: str) -> list[list[str]]:
    """The text cells of the summary table's body rows."""

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.inside, self.rows, self.cell = False, [], None

        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag == "table" and ("class", "summary") in attrs:
                self.inside = True
            elif self.inside and tag == "tr":
                self.rows.append([])
            elif self.inside and tag == "td":
                self.cell = ""

        def handle_endtag(self, tag: str) -> None:
            if tag == "table":
                self.inside = False
            elif tag == "td" and self.cell is not None:
                self.rows[-1].append(self.cell)
                self.cell = None

        def handle_data(self, data: str) -> None:
            if self.cell is not None:
                self.cell += data

    p = Rows()
    p.feed(html)
    return [r for r in p.rows if r]


# ----------------------------------------------------------------------------- maxcut
def test_maxcut_html_holds_table_plots_and_panels() -> None:
    c = toy_comparison()
    html = report.render(c, "html")
    p = parse(html)
    text = " ".join(p.text)
    rows = summary_rows(html)
    assert [r[0] for r in rows] == ["brute", "local", "sampler"]
    by_name = {r[0]: r for r in rows}
    sums = {s.backend: s for s in c.summaries()}
    assert by_name["brute"][3] == str(int(sums["brute"].best)) and by_name["brute"][1] == "3/3"
    assert by_name["local"][4] == report.fmt.num(sums["local"].median)
    assert p.count("svg") >= 2  # convergence plot and cut distribution
    for b in c.backends:  # one solid line per backend, and its repeats' cuts in the distribution panel
        assert f'id="objective:{b}"' in html and f'id="value:{b}"' in html
    assert_series_match_runs(c)
    assert "Convergence" in text and "Cut distribution over repeats" in text
    assert "No contradictions" in text
    assert "maxcut G" in text  # the model source
    assert "python" in text and "numpy" in text  # environment section
    namespaces = ('xmlns="http://www.w3.org/2000/svg"', 'xmlns:xlink="http://www.w3.org/1999/xlink"')
    assert "<script" not in html and "http://" not in html.replace(namespaces[0], "").replace(namespaces[1], "")


def test_contradiction_is_flagged_in_html_and_markdown() -> None:
    c = toy_comparison(overclaim=True)
    html = report.render(c, "html")
    parse(html)
    assert "Contradictions found" in html and 'class="flagged"' in html and "CONTRADICTED" in html
    md = report.render(c, "md")
    assert "**CONTRADICTION**" in md and "| sampler |" in md


def test_markdown_and_json_carry_the_same_summary() -> None:
    c = toy_comparison()
    md = report.render(c, "md")
    for s in c.summaries():
        assert f"| {s.backend} | {s.solved}/{s.runs} |" in md
    assert "## Model source" in md and "maxcut G" in md and "## Environment" in md
    d = json.loads(report.render(c, "json"))
    assert d["format"] == "optlang-compare/1" and len(d["results"]) == 9
    assert [s["backend"] for s in d["summaries"]] == ["brute", "local", "sampler"]
    assert d["best_objective"] == c.best_objective
    assert Comparison.from_dict(d).best_objective == c.best_objective


def test_write_infers_nothing_and_writes_utf8(tmp_path) -> None:
    c = toy_comparison()
    out = report.write(c, tmp_path / "sub" / "r.html", "html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(Exception, match="unknown report format"):
        report.render(c, "pdf")


# ----------------------------------------------------------------------------- multiobjective
def weighted_sum_front(seed: int, k: int = 9) -> tuple[list[dict], list]:
    """Front of (x², (x − 2)²) by gradient descent on each weighted sum (a real sweep)."""
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    front, hist = [], []
    for lam in np.linspace(0, 1, k):
        x = rng.uniform(-1, 3)
        for _ in range(200):
            x -= 0.1 * (2 * lam * x + 2 * (1 - lam) * (x - 2))
        front.append({"objectives": {"f1": x**2, "f2": (x - 2) ** 2}, "weight": float(lam)})
        hist.append((time.perf_counter() - t0, float(len(front)), None))
    return front, hist


def random_front(seed: int, k: int = 40) -> list[dict]:
    """Non-dominated points among seeded random samples of x in [−1, 3]."""
    xs = np.random.default_rng(seed).uniform(-1, 3, k)
    pts = [(x**2, (x - 2) ** 2) for x in xs]
    nd = [p for p in pts if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts)]
    return [{"objectives": {"f1": a, "f2": b}} for a, b in nd]


def test_multiobjective_report_has_a_pareto_scatter() -> None:
    results = []
    for seed in range(2):
        front, hist = weighted_sum_front(seed)
        results.append(
            Result(
                Status.CONVERGED,
                None,
                {},
                "wsum",
                "multiobjective",
                history=tuple(hist),
                seed=seed,
                info={"front": front},
                timing={"total": hist[-1][0]},
            )
        )
        results.append(
            Result(
                Status.FEASIBLE,
                None,
                {},
                "random",
                "multiobjective",
                seed=seed,
                info={"front": random_front(seed)},
                timing={"total": 0.001},
            )
        )
    # the sweep is on the true front f2 = (sqrt(f1) - 2)^2 for x in [0, 2]
    for p in results[0].info["front"]:
        o = p["objectives"]
        assert o["f2"] == pytest.approx((np.sqrt(o["f1"]) - 2) ** 2, abs=1e-6)
    c = Comparison("zdt", "zdt.opt", "multiobjective", "minimize", ["wsum", "random"], results, repeats=2, seeds=[0, 1])
    html = report.render(c, "html")
    p = parse(html)
    assert "Pareto front" in " ".join(p.text)
    n_points = sum(len(r.info["front"]) for r in results)
    assert n_points > 0 and 'id="front:wsum"' in html and 'id="front:random"' in html
    md = report.render(c, "md")
    assert "## Pareto front" in md
    section = md[md.index("## Pareto front") :]
    row = next(line for line in section.splitlines() if line.startswith(f"| wsum | {2 * 9} | "))
    fh = c.front_hypervolumes()
    assert fh is not None and row == f"| wsum | {2 * 9} | {fh.median('wsum'):.6g} | f1, f2 |"


# ----------------------------------------------------------------------------- dro
def region_fit(seed: int, robust: bool) -> Result:
    """Least squares (ERM) or a multiplicative-weights fit that lowers the worst region's MSE."""
    rng = np.random.default_rng(seed)
    n = 240
    X = rng.normal(size=(n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + np.where(rng.random(n) < 0.1, 6.0, 0.0) + 0.1 * rng.normal(size=n)
    edges = np.quantile(y, [0, 0.25, 0.5, 0.75, 1.0])
    region = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, 3)
    A = np.c_[X, np.ones(n)]
    wts = np.ones(4)
    t0 = time.perf_counter()
    hist = []
    for _ in range(30 if robust else 1):
        sw = np.sqrt(wts[region])
        coef = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)[0]
        mse = np.array([np.mean((A[region == k] @ coef - y[region == k]) ** 2) for k in range(4)])
        hist.append((time.perf_counter() - t0, float(mse.max()), None))
        wts = wts * np.exp(0.5 * mse / mse.max())
    rows = [
        {
            "region": k,
            "lo": float(edges[k]),
            "hi": float(edges[k + 1]),
            "n": int((region == k).sum()),
            "mse": float(mse[k]),
        }
        for k in range(4)
    ]
    return Result(
        Status.CONVERGED,
        float(mse.max()),
        {"w": coef},
        "robust" if robust else "erm",
        "dro",
        history=tuple(hist),
        seed=seed,
        info={"regions": rows},
        timing={"total": hist[-1][0]},
        checks=(Check("regions cover the data", sum(r["n"] for r in rows) == n, f"{n} samples"),),
    )


def test_dro_report_renders_region_tables_and_bars() -> None:
    results = [region_fit(s, robust) for robust in (False, True) for s in range(2)]
    worst_erm = min(r.objective for r in results if r.backend == "erm")
    worst_rob = min(r.objective for r in results if r.backend == "robust")
    assert worst_rob <= worst_erm + 1e-9  # the reweighting does lower the worst region's error
    c = Comparison("tc", "tc.opt", "dro", "minimize", ["erm", "robust"], results, repeats=2, seeds=[0, 1])
    html = report.render(c, "html")
    p = parse(html)
    text = " ".join(p.text)
    assert "Per-region errors" in text and "per-region mse" in text
    assert 'id="region:erm"' in html and 'id="region:robust"' in html  # bars of both backends
    assert_series_match_runs(c)
    assert p.count("th", **{"class": "name"}) >= 1 and "mse" in text and "lo" in text
    md = report.render(c, "md")
    assert "## Per-region errors" in md and "| region | lo | hi | n | mse |" in md


# ----------------------------------------------------------------------------- svg and panels
def test_band_takes_median_min_max_over_runs() -> None:
    traces = [[(0.0, 4.0), (1.0, 2.0)], [(0.5, 6.0), (2.0, 1.0)], [(0.2, 5.0)]]
    xs, med, lo, hi = panels.band(traces, [0.0, 0.5, 1.0, 2.0])
    assert xs == [0.0, 0.5, 1.0, 2.0]
    assert med == [4.0, 5.0, 5.0, 2.0] and lo == [4.0, 4.0, 2.0, 1.0] and hi == [4.0, 6.0, 6.0, 5.0]


def test_direct_labels_are_spread_at_least_a_gap_apart() -> None:
    ys = [0.5] * 15 + [0.1, 0.95]  # 15 backends ending on the same value, plus two others
    pos = plots.spread(ys, 0.05)
    order = sorted(pos)
    assert all(b - a >= 0.05 - 1e-12 for a, b in zip(order, order[1:], strict=False))
    assert min(pos) >= -0.4 and max(pos) <= 1.0  # pushed down from the top when they do not fit
    st = plots.styles([f"b{i}" for i in range(15)])
    assert len({(s.color, s.marker) for s in st.values()}) == 15  # one look per backend


def test_empty_and_nonfinite_data_still_render_valid_svg() -> None:
    c = Comparison(
        "m",
        "m.opt",
        "smooth",
        "minimize",
        ["x", "y"],
        [
            Result(Status.ERROR, None, {}, "x", "smooth", info={"error": "boom"}),
            Result(Status.DIVERGED, float("nan"), {}, "y", "smooth", history=((0.1, float("inf"), None),)),
        ],
    )
    html = report.render(c, "html")
    parse(html)
    assert "boom" in html and "no run reported a scalar objective" in html


# ----------------------------------------------------------------------------- model quantities only
def assert_series_match_runs(c: Comparison) -> None:
    """Every plotted line against the run records: objective lines end at the median recomputed objective and
    never go beyond the backend's best recomputed objective (no relaxation value); bound lines are claimed,
    valid bounds ending at their median."""
    sign = 1.0 if c.sense == "maximize" else -1.0
    conv = panels.convergence(c)
    for ln in conv.lines:
        runs = c.runs(ln.backend)
        tol = 1e-4
        if ln.quantity == "objective":
            objs = [float(r.objective) for r in runs if panels.has_value(r)]
            assert ln.ys[-1] == pytest.approx(sorted(objs)[len(objs) // 2] if len(objs) % 2 else np.median(objs))
            best = max(sign * v for v in objs)
            assert all(sign * y <= best + tol * max(1.0, abs(best)) for y in ln.ys), (ln.backend, ln.ys, objs)
            allowed = objs + [float(h[1]) for r in runs for h in r.history if h[1] is not None]
            assert all(min(allowed) - 1e-9 <= y <= max(allowed) + 1e-9 for y in ln.ys)  # medians of run records
        else:
            bounds = [float(r.bound) for r in runs if r.bound is not None]
            assert bounds and ln.ys[-1] == pytest.approx(float(np.median(bounds)))
            if c.best_objective is not None:
                assert all(sign * (c.best_objective - y) <= 1e-5 * max(1.0, abs(y)) for y in ln.ys)


def relaxed_run(seed: int, backend: str, relax: float, cut: float, bound: float) -> Result:
    """An SDP-style run: the relaxation value first, then the rounded cut (what the model scores)."""
    return Result(
        Status.FEASIBLE,
        cut,
        {"s": np.ones(4)},
        backend,
        "maxcut",
        sense="maximize",
        bound=bound,
        gap=(bound - cut) / cut,
        history=((0.1, relax, bound), (0.2, cut, bound)),
        timing={"solve": 0.3, "total": 0.3},
        seed=seed,
        checks=(Check("bound_valid", True),),
    )


def test_relaxation_values_never_enter_an_objective_line() -> None:
    runs = [relaxed_run(s, "sdp", 22.15, 22.0 - s, 22.2) for s in range(2)]
    runs.append(
        Result(
            Status.TIME_LIMIT,
            22.0,
            {"s": np.ones(4)},
            "anneal",
            "maxcut",
            sense="maximize",
            history=((0.01, 18.0, None), (0.05, 21.0, None), (0.4, 22.0, None)),
            timing={"solve": 0.5},
        )
    )
    c = Comparison("g", "g.opt", "maxcut", "maximize", ["sdp", "anneal"], runs, repeats=2, seeds=[0, 1])
    conv = panels.convergence(c)
    sdp = next(ln for ln in conv.lines if ln.backend == "sdp" and ln.quantity == "objective")
    assert max(sdp.ys) <= 22.0 and 22.15 not in sdp.ys
    assert [v for pts in conv.own["sdp"] for _, v in pts] == [22.15, 22.15]  # shown apart, labelled
    anneal = next(ln for ln in conv.lines if ln.backend == "anneal")
    assert anneal.ys == [18.0, 21.0, 22.0, 22.0]  # a model-quantity history is kept as it is
    assert any(ln.quantity == "bound" and ln.backend == "sdp" for ln in conv.lines)
    assert_series_match_runs(c)
    html = report.render(c, "html")
    assert "not the model" in html and 'id="own:sdp"' in html


def test_a_backend_reporting_another_quantity_is_plotted_at_its_recomputed_objective() -> None:
    # erm reports its own mean loss (0.67) while the model's robust objective of its answer is 3.26
    erm = Result(
        Status.CONVERGED,
        3.26,
        {"w": np.ones(2)},
        "erm",
        "dro",
        history=((0.01, 0.9, None), (0.02, 0.67, None)),
        timing={"solve": 0.03},
    )
    rob = Result(
        Status.CONVERGED,
        2.94,
        {"w": np.ones(2)},
        "robust",
        "dro",
        history=((0.01, 3.5, None), (0.05, 2.94, None)),
        timing={"solve": 0.06},
    )
    c = Comparison("d", "d.opt", "dro", "minimize", ["robust", "erm"], [rob, erm])
    conv = panels.convergence(c)
    line = next(ln for ln in conv.lines if ln.backend == "erm")
    assert line.ys == [3.26] and conv.own["erm"] == [[(0.01, 0.9), (0.02, 0.67)]]
    assert_series_match_runs(c)


def test_an_invalid_bound_is_not_drawn() -> None:
    good = relaxed_run(0, "sdp", 12.5, 12.0, 12.5)
    bad = relaxed_run(0, "over", 11.0, 11.0, 11.5)  # claims 11.5 ≥ every cut, but sdp found 12
    c = Comparison("g", "g.opt", "maxcut", "maximize", ["sdp", "over"], [good, bad])
    bounds = {ln.backend for ln in panels.convergence(c).lines if ln.quantity == "bound"}
    assert bounds == {"sdp"}


# ----------------------------------------------------------------------------- status / gap rule
def test_optimal_with_a_positive_gap_is_a_flagged_contradiction() -> None:
    from optlang.result import consistent_status

    assert consistent_status(Status.OPTIMAL, 0.0077) == (Status.FEASIBLE, consistent_status(Status.OPTIMAL, 0.0077)[1])
    assert consistent_status(Status.OPTIMAL, 1e-9) == (Status.OPTIMAL, None)
    r = Result(Status.OPTIMAL, 22.0, {}, "sdp", "maxcut", sense="maximize", bound=22.17, gap=0.0077)
    assert r.inconsistencies() and "gap" in r.inconsistencies()[0]
    c = Comparison("g", "g.opt", "maxcut", "maximize", ["sdp"], [r])
    flags = c.contradictions()
    assert len(flags) == 1 and "claimed optimal" in flags[0].sentence(c.sense)
    assert c.summaries()[0].flagged
    html = report.render(c, "html")
    assert "Contradictions found" in html and "CONTRADICTED" in html
    assert "**CONTRADICTION**" in report.render(c, "md")


def test_solve_downgrades_an_optimal_claim_with_a_gap() -> None:
    r = Result(
        Status.FEASIBLE,
        22.0,
        {},
        "sdp",
        "maxcut",
        sense="maximize",
        bound=22.17,
        gap=0.0077,
        info={"status_claimed": "optimal", "status_note": "status optimal with a gap of 0.0077"},
    )
    c = Comparison("g", "g.opt", "maxcut", "maximize", ["sdp"], [r])
    assert [f.claim for f in c.contradictions()] == ["optimal"]


# ----------------------------------------------------------------------------- real models, one per kind
KIND_MODELS = ("maxcut", "ising", "bilevel", "minimax", "dro", "multiobjective", "smooth")


@pytest.mark.parametrize("kind", KIND_MODELS)
def test_report_of_a_small_model_of_each_kind(kind: str, tmp_path) -> None:
    optlang = pytest.importorskip("optlang.api")
    from test_compare import FIXTURES

    from optlang.compare import candidate_backends, compare

    path = FIXTURES / f"{kind}_small.opt"
    try:
        names, _ = candidate_backends(optlang.load(path), None)
    except Exception as e:  # no backend registered for this kind (yet)
        pytest.skip(f"{kind}: {e}")
    c = compare(
        path, backends=names[:2], repeats=2, time_limit=0.5, device="cpu", options={"max_iter": 30}, executor="inline"
    )  # at most 2 backends × 2 short runs: the report, not the solvers, is tested
    assert c.kind == kind or (kind == "maxcut" and c.kind in ("maxcut", "ising"))
    html = report.render(c, "html")
    p = parse(html)
    rows = summary_rows(html)
    assert [r[0] for r in rows] == c.backends
    assert p.count("svg") >= 1 and "Convergence" in html
    assert_series_match_runs(c)  # every plotted line is the model's quantity, checked against the runs
    for ln in panels.convergence(c).lines:
        assert f'id="{ln.quantity}:{ln.backend}"' in html
    assert "time limit <b>0.5 s (from --time-limit)</b>" in html
    if kind in ("maxcut", "ising"):
        assert "distribution over repeats" in html
    if kind == "multiobjective":
        assert panels.has_front(c) and "Pareto front" in html  # every multi-objective report has one
    if kind == "dro" and panels.has_regions(c):
        assert "Per-region errors" in html
    assert "Model source" in html and "Environment" in html
    md = report.render(c, "md")
    assert all(f"| {b} |" in md for b in c.backends)
    d = json.loads(report.render(c, "json"))
    assert len(d["results"]) == len(c.results) == 2 * len(c.backends)


# ----------------------------------------------------------------------------- time limit, solve --report, maths
def test_compare_takes_the_model_time_limit_unless_a_flag_overrides_it(tmp_path) -> None:
    optlang = pytest.importorskip("optlang.api")
    from test_compare import FIXTURES

    from optlang.compare.orchestrate import DEFAULT_TIME_LIMIT, resolve_time_limit

    own = tmp_path / "own.opt"
    own.write_text((FIXTURES / "maxcut_small.opt").read_text() + "solver auto { time_limit = 3 }\n")
    assert resolve_time_limit(optlang.load(own), None) == (3.0, "the model's solver block")
    assert resolve_time_limit(optlang.load(own), 0.5) == (0.5, "--time-limit")
    assert resolve_time_limit(optlang.load(FIXTURES / "maxcut_small.opt"), None) == (DEFAULT_TIME_LIMIT, "the default")
    from optlang.compare import compare

    c = compare(own, backends=["bruteforce"], device="cpu", executor="inline")
    assert c.time_limit == 3.0 and "3 s (from the model&#x27;s solver block)" in report.render(c, "html")
    assert "3 s (from the model's solver block)" in report.render(c, "md")


def test_solve_report_renders_one_run(tmp_path) -> None:
    pytest.importorskip("optlang.api")
    from test_compare import FIXTURES

    from optlang.cli import main

    out = tmp_path / "solve.html"
    code = main(["solve", str(FIXTURES / "maxcut_small.opt"), "-b", "bruteforce", "--quiet", "--report", str(out)])
    assert code == 0
    html = out.read_text(encoding="utf-8")
    p = parse(html)
    assert "optlang solve — " in html and [r[0] for r in summary_rows(html)] == ["bruteforce"]
    assert 'id="objective:bruteforce"' in html and 'id="bound:bruteforce"' in html  # convergence with its bound
    assert p.count("svg") >= 2 and "<summary>LaTeX source</summary>" in html  # plot and rendered maths
    assert "bound_valid" in html  # the checks
    md = tmp_path / "solve.md"
    assert main(["solve", str(FIXTURES / "maxcut_small.opt"), "-b", "bruteforce", "--quiet", "--report", str(md)]) == 0
    assert md.read_text(encoding="utf-8").startswith("# optlang solve — ")


def test_every_example_model_renders_its_maths() -> None:
    optlang = pytest.importorskip("optlang.api")
    from pathlib import Path

    from optlang.report import maths

    models = sorted((Path(__file__).parent.parent / "models").glob("*.opt"))
    assert models
    for path in models:
        try:
            latex = optlang.load(path).latex()
        except Exception:  # a model whose data is absent here is not this test's business
            continue
        svg_text, failed = maths.render_svg(latex)
        assert svg_text is not None and svg_text.startswith("<svg") and not failed, (path.name, failed)


@pytest.mark.parametrize("backend", ["sdp-cvxpy", "sdp-bm"])
def test_a_solve_never_reads_optimal_next_to_a_positive_gap(backend: str) -> None:
    optlang = pytest.importorskip("optlang.api")
    from test_compare import FIXTURES

    from optlang.result import OPTIMAL_GAP_TOL, status_gap_conflict

    try:
        r = optlang.load(FIXTURES / "maxcut_small.opt").solve(backend=backend, time_limit=20, seed=0, device="cpu")
    except Exception as e:  # backend not installed here
        pytest.skip(f"{backend}: {e}")
    assert status_gap_conflict(r.status, r.gap) is None
    if r.gap is not None and r.gap > OPTIMAL_GAP_TOL:
        assert r.status != Status.OPTIMAL
        if r.info.get("status_claimed"):  # the backend's own claim is kept, and reports flag it
            assert r.info["status_claimed"] == "optimal" and r.inconsistencies()


# ----------------------------------------------------------------------------- validation (auto)
AUTO_MODEL = """param X = randn(160, 3, seed = 1)
param y = X @ [1, -2, 0.5] + randn(160, seed = 2) ^ 3
var w[3]
var b
minimize robust mean((X @ w + b - y)^2) within {AMB}
"""


def svg_points(html: str, gid: str) -> list[tuple[float, float]]:
    """The (x, y) SVG coordinates of the markers drawn in the group `gid` (one <use> per marker)."""
    import xml.etree.ElementTree as ET

    start = html.rindex("<svg", 0, html.index(f'id="{gid}"'))
    root = ET.fromstring(html[start : html.index("</svg>", start) + len("</svg>")])
    group = next(el for el in root.iter() if el.get("id") == gid)
    return [(float(u.get("x")), float(u.get("y"))) for u in group.iter("{http://www.w3.org/2000/svg}use")]


def svg_hline_y(html: str, gid: str) -> float:
    import re
    import xml.etree.ElementTree as ET

    start = html.rindex("<svg", 0, html.index(f'id="{gid}"'))
    root = ET.fromstring(html[start : html.index("</svg>", start) + len("</svg>")])
    group = next(el for el in root.iter() if el.get("id") == gid)
    d = next(el for el in group.iter("{http://www.w3.org/2000/svg}path")).get("d")
    ys = [float(m) for m in re.findall(r"[ML] [-\d.]+ ([-\d.]+)", d)]
    assert len(set(ys)) == 1
    return ys[0]


def assert_affine(values: list[float], pixels: list[float]) -> tuple[float, float]:
    """Pixels are one affine image of the values (the plot draws exactly these numbers); returns (a, b)."""
    assert len(values) >= 3 and len(set(values)) >= 3
    a, b = np.polyfit(values, pixels, 1)
    assert abs(a) > 1e-9
    assert max(abs(a * v + b - p) for v, p in zip(values, pixels, strict=True)) < 0.05  # SVG coordinates
    return a, b


def auto_comparison(amb: str, tmp_path) -> tuple[Comparison, dict]:
    pytest.importorskip("optlang.api")
    from optlang.compare import compare

    path = tmp_path / "auto.opt"
    path.write_text(AUTO_MODEL.replace("{AMB}", amb))
    c = compare(path, backends=["tcdro"], device="cpu", executor="inline")
    (r,) = c.results
    assert r.ok and "auto" in r.info
    return c, r.info["auto"]


def test_auto_report_plots_the_recorded_validation_scores(tmp_path) -> None:
    c, rec = auto_comparison("chi2(radius = auto in [0.01, 0.1, 0.3, 3])", tmp_path)
    cands = rec["candidates"]
    v = panels.validation(c.results[0])
    assert v is not None and v.xs == [cd["radius"] for cd in cands] and v.scale == "log" and v.ticks is None
    assert v.mse == [cd["val_mse"] for cd in cands] and v.tail == [cd["val_tail"] for cd in cands]
    assert v.threshold == pytest.approx(rec["val_slack"] * rec["erm_val_mse"])
    assert v.params[v.chosen] == {k: rec["chosen"][k] for k in v.params[0]}
    html = report.render(c, "html")
    text = " ".join(parse(html).text)
    assert "Validation (auto)" in text and 'id="auto0:val_mse:chosen"' in html
    adm = [i for i, cd in enumerate(cands) if cd["admissible"]]
    rest = [i for i, cd in enumerate(cands) if not cd["admissible"]]
    assert adm and rest  # both kinds drawn (the 3.0 radius is far past ERM's mean loss)
    x_fit = None
    for name in ("val_mse", "val_tail"):
        pts = {}
        for tag, idx in (("admissible", adm), ("not-admissible", rest)):
            drawn = svg_points(html, f"auto0:{name}:{tag}")
            assert len(drawn) == len(idx)  # filled = admissible, hollow = not, one marker each
            pts.update(zip(idx, drawn, strict=True))
        order = sorted(pts)
        a, b = assert_affine([cands[i][name] for i in order], [pts[i][1] for i in order])  # y: the scores
        x_fit = assert_affine([float(np.log10(cands[i]["radius"])) for i in order], [pts[i][0] for i in order])
        (ring,) = svg_points(html, f"auto0:{name}:chosen")
        assert ring == pytest.approx(pts[v.chosen])
        if name == "val_mse":
            assert svg_hline_y(html, "auto0:threshold") == pytest.approx(a * rec["val_mse_threshold"] + b, abs=0.05)
    assert x_fit is not None
    from optlang.cli import main

    out = tmp_path / "solve.html"  # `optlang solve --report` carries the same panel
    assert main(["solve", str(tmp_path / "auto.opt"), "-b", "tcdro", "--quiet", "--report", str(out)]) == 0
    assert 'id="auto0:val_tail:chosen"' in out.read_text(encoding="utf-8")
    md = report.render(c, "md")
    assert "## Validation (auto)" in md and "| validation mean loss | validation tail loss | admissible |" in md
    for cd in cands:
        assert report.fmt.num(cd["val_mse"], 6) in md and report.fmt.num(cd["val_tail"], 6) in md


def test_auto_report_with_several_varying_parameters_plots_by_index(tmp_path) -> None:
    c, rec = auto_comparison("target_conditional(chi2, radius = auto in [0.01, 0.3, 3], by = y, bins = 5)", tmp_path)
    v = panels.validation(c.results[0])
    assert v is not None and v.varying == ["radius", "outer_radius"] and v.xs == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert v.ticks is not None and v.ticks[1] == "0 / 0.01" and "radius / outer_radius" in v.xlabel
    html = report.render(c, "html")
    parse(html)
    cands = rec["candidates"]
    pts = {}
    for tag, adm in (("admissible", True), ("not-admissible", False)):
        idx = [i for i, cd in enumerate(cands) if cd["admissible"] == adm]
        if idx:
            pts.update(zip(idx, svg_points(html, f"auto0:val_tail:{tag}"), strict=True))
    assert sorted(pts) == list(range(len(cands)))
    assert_affine(list(range(len(cands))), [pts[i][0] for i in range(len(cands))])
    assert_affine([cd["val_tail"] for cd in cands], [pts[i][1] for i in range(len(cands))])
    header, rows = panels.validation_rows(v)
    assert header[:4] == ["#", "radius", "bins", "outer_radius"] and [r[-1] for r in rows].count("✓") == 1


def test_a_report_without_auto_has_no_validation_panel(tmp_path) -> None:
    c, _ = auto_comparison("chi2(radius = auto in [0.01, 0.1, 0.3])", tmp_path)
    fixed = AUTO_MODEL.replace("{AMB}", "chi2(radius = 0.1)")
    (tmp_path / "fixed.opt").write_text(fixed)
    from optlang.compare import compare

    c2 = compare(tmp_path / "fixed.opt", backends=["tcdro"], device="cpu", executor="inline")
    assert "auto" not in c2.results[0].info and panels.validations(c2) == []
    for fmt_ in ("html", "md"):
        assert "Validation (auto)" not in report.render(c2, fmt_)
    assert "Validation (auto)" not in report.render(toy_comparison(), "html")
    # a malformed record (an `auto` error has no candidates) draws nothing rather than failing
    r = c.results[0]
    broken = Result(r.status, r.objective, r.values, r.backend, r.kind, info={"auto": {"error": "boom"}})
    assert panels.validation(broken) is None


def test_validation_panel_with_a_zero_radius_an_old_record_and_hostile_text() -> None:
    """symlog when 0 is a candidate and the rest span ≥ 100×; the threshold from ERM's score × slack when the
    record predates `val_mse_threshold`; every recorded string is escaped."""
    cands = [
        {"radius": r, "bins": 5, "val_mse": m, "val_tail": t, "admissible": m <= 2.2}
        for r, m, t in ((0.0, 2.0, 9.0), (0.01, 2.1, 8.0), (0.1, 2.3, 7.5), (3.0, 4.0, 7.0))
    ]
    rec = {
        "candidates": cands,
        "chosen": {"radius": 0.01, "bins": 5},
        "erm_val_mse": 2.0,
        "val_slack": 1.1,
        "method": "<script>alert(1)</script>",
        "how": "validation & <b>",
    }
    r = Result(Status.CONVERGED, 1.0, {}, "tcdro", "dro", info={"auto": rec})
    v = panels.validation(r)
    assert v is not None and v.scale == "symlog" and v.chosen == 1 and v.threshold == pytest.approx(2.2)
    c = Comparison("m", "m.opt", "dro", "minimize", ["tcdro"], [r])
    html = report.render(c, "html")
    parse(html)
    assert "<script" not in html and "&lt;script&gt;" in html and "validation &amp; &lt;b&gt;" in html
    assert len(svg_points(html, "auto0:val_mse:admissible")) == 2  # 2.0 and 2.1 ≤ 2.2
    assert len(svg_points(html, "auto0:val_mse:not-admissible")) == 2
    md = report.render(c, "md")
    assert "<script" not in md and "&lt;script&gt;" in md


# ----------------------------------------------------------------------------- auto options (lr = auto)
DRO_OPT = AUTO_MODEL.replace("{AMB}", "chi2(radius = 0.1)") + (
    "solver tcdro { lr = auto in [1e-3, 1e-2, 0.3], solver = adam, max_iter = 60, polish_iter = 0, select = holdout }\n"
)


def test_auto_options_report_plots_each_candidates_score(tmp_path) -> None:
    """The validation curve of `lr = auto`: one marker per candidate at (log lr, score), the choice ringed,
    the rule named; HTML and Markdown carry the candidates table."""
    pytest.importorskip("optlang.api")
    from optlang.compare import compare

    path = tmp_path / "opt.opt"
    path.write_text(DRO_OPT)
    c = compare(path, backends=["tcdro"], device="cpu", executor="inline")
    (r,) = c.results
    rec = r.info["auto_options"]
    cands = rec["candidates"]
    v = panels.auto_options(r)
    assert v is not None and v.logx and v.ticks is None and v.xs == [cd["lr"] for cd in cands]
    assert v.scores == [cd["score"] for cd in cands] and v.rule_text == "holdout 0.25 validation"
    assert v.params[v.chosen] == rec["chosen"]
    html = report.render(c, "html")
    parse(html)
    assert "Validation (auto options)" in " ".join(parse(html).text) and "holdout 0.25 validation" in html
    drawn = svg_points(html, "opt0:score")  # sorted by lr, as the candidates are
    assert len(drawn) == 3
    assert_affine([cd["score"] for cd in cands], [p[1] for p in drawn])
    assert_affine([float(np.log10(cd["lr"])) for cd in cands], [p[0] for p in drawn])  # a log lr axis
    (ring,) = svg_points(html, "opt0:chosen")
    assert ring == pytest.approx(drawn[v.chosen])
    md = report.render(c, "md")
    assert "## Validation (auto options)" in md and "| lr | score | standard error | fits converged | chosen |" in md
    for cd in cands:
        assert report.fmt.num(cd["score"], 6) in md
    assert "Validation (auto options)" not in report.render(toy_comparison(), "html")
    from optlang.cli import main

    out = tmp_path / "solve.html"  # `optlang solve --report` carries the same panel
    assert main(["solve", str(path), "--quiet", "--report", str(out)]) == 0
    assert 'id="opt0:chosen"' in out.read_text(encoding="utf-8")


def test_auto_options_panel_budget_rule_several_options_and_hostile_text() -> None:
    """No data rows: the rule reads 'equal budget — not statistical validation'; two auto options plot by
    candidate index; a diverged candidate (score None) is left out of the plot; recorded text is escaped."""
    cands = [
        {"lr": lr, "beta": b, "score": s}
        for lr, b, s in ((0.01, 0.5, 3.0), (0.01, 0.9, 2.0), (0.1, 0.5, None), (0.1, 0.9, 2.5))
    ]
    rec = {
        "parameters": ["lr", "beta"],
        "rule": "budget",
        "method": "budget: 200 iterations <script>alert(1)</script>",
        "criterion": "least objective & <b>",
        "candidates": cands,
        "chosen": {"lr": 0.01, "beta": 0.9},
        "how": "least score",
    }
    r = Result(Status.CONVERGED, 1.0, {}, "gd", "smooth", info={"auto_options": rec})
    v = panels.auto_options(r)
    assert v is not None and v.chosen == 1 and v.ticks == ["0.01 / 0.5", "0.01 / 0.9", "0.1 / 0.5", "0.1 / 0.9"]
    assert v.xs == [0.0, 1.0, 2.0, 3.0] and not v.logx and v.scores[2] is None
    assert "not statistical validation" in v.rule_text
    c = Comparison("m", "m.opt", "smooth", "minimize", ["gd"], [r])
    html = report.render(c, "html")
    parse(html)
    assert "<script" not in html and "&lt;script&gt;" in html and "least objective &amp; &lt;b&gt;" in html
    assert "objective under an equal budget — not statistical validation" in html
    drawn = svg_points(html, "opt0:score")
    assert len(drawn) == 3  # the diverged candidate is not drawn
    assert_affine([0.0, 1.0, 3.0], [p[0] for p in drawn])
    assert_affine([3.0, 2.0, 2.5], [p[1] for p in drawn])
    header, rows = panels.auto_option_rows(v)
    assert header == ["#", "lr", "beta", "score", "chosen"] and rows[2][3].startswith("—")
    assert [row[-1] for row in rows] == ["", "✓", "", ""]
    md = report.render(c, "md")
    assert "<script" not in md and "&lt;script&gt;" in md and "not statistical validation" in md
    broken = Result(Status.CONVERGED, 1.0, {}, "gd", "smooth", info={"auto_options": {"error": "x"}})
    assert panels.auto_options(broken) is None
    # a validation record with each candidate's standard error and convergence: two more columns
    rec2 = {
        **rec,
        "rule": "validation",
        "candidates": [{**c, "standard_error": 0.1, "converged": i != 2} for i, c in enumerate(cands)],
    }
    rec2["candidates"][0]["standard_error"] = None
    v2 = panels.auto_options(Result(Status.CONVERGED, 1.0, {}, "gd", "smooth", info={"auto_options": rec2}))
    assert v2 is not None
    header, rows = panels.auto_option_rows(v2)
    assert header == ["#", "lr", "beta", "score", "standard error", "fits converged", "chosen"]
    assert [row[4:6] for row in rows] == [["—", "yes"], ["0.1", "yes"], ["0.1", "no"], ["0.1", "yes"]]
