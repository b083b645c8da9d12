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
from optlang.report import panels, svg
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
    assert p.count("path") >= 3 and p.count("circle") >= 9  # curves, and one dot per run
    assert "Convergence" in text and "Cut distribution over repeats" in text
    assert "No contradictions" in text
    assert "maxcut G" in text  # the model source
    assert "python" in text and "numpy" in text  # environment section
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


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
    assert html.count("<title>wsum</title>") + html.count("<title>random</title>") >= n_points
    md = report.render(c, "md")
    assert "## Pareto front" in md and f"| wsum | {2 * 9} | f1, f2 |" in md


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
    assert p.count("rect") >= 8  # bars: 4 regions × 2 backends
    assert p.count("th", **{"class": "name"}) >= 1 and "mse" in text and "lo" in text
    md = report.render(c, "md")
    assert "## Per-region errors" in md and "| region | lo | hi | n | mse |" in md


# ----------------------------------------------------------------------------- svg and panels
def test_band_takes_median_min_max_over_runs() -> None:
    traces = [[(0.0, 4.0), (1.0, 2.0)], [(0.5, 6.0), (2.0, 1.0)], [(0.2, 5.0)]]
    xs, med, lo, hi = panels.band(traces, [0.0, 0.5, 1.0, 2.0])
    assert xs == [0.0, 0.5, 1.0, 2.0]
    assert med == [4.0, 5.0, 5.0, 2.0] and lo == [4.0, 4.0, 2.0, 1.0] and hi == [4.0, 6.0, 6.0, 5.0]


def test_ticks_are_round_and_cover_the_range() -> None:
    t = svg.nice_ticks(0.13, 9.7)
    assert t[0] >= 0.13 and t[-1] <= 9.7 and all(abs(x * 2 - round(x * 2)) < 1e-9 for x in t)
    assert svg.log_ticks(0.01, 100) == [0.01, 0.1, 1, 10, 100]
    assert svg.log_ticks(1, 16, base=2) == [1, 2, 4, 8, 16]


def test_empty_and_nonfinite_data_still_render_valid_svg() -> None:
    s = svg.line_chart([svg.Series("a", [1.0, 2.0], [float("nan"), float("inf")])], title="t")
    parse("<!DOCTYPE html><html><body>" + s + "</body></html>")
    c = Comparison(
        "m",
        "m.opt",
        "smooth",
        "minimize",
        ["x"],
        [Result(Status.ERROR, None, {}, "x", "smooth", info={"error": "boom"})],
    )
    html = report.render(c, "html")
    parse(html)
    assert "boom" in html and "no run reported a scalar objective" in html


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
    if kind in ("maxcut", "ising"):
        assert "distribution over repeats" in html
    if kind == "multiobjective" and panels.has_front(c):
        assert "Pareto front" in html
    if kind == "dro" and panels.has_regions(c):
        assert "Per-region errors" in html
    assert "Model source" in html and "Environment" in html
    md = report.render(c, "md")
    assert all(f"| {b} |" in md for b in c.backends)
    d = json.loads(report.render(c, "json"))
    assert len(d["results"]) == len(c.results) == 2 * len(c.backends)
