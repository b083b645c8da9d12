"""Data loading (every format, never unpickling) and the seeded generators."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import optlang
from optlang import data as D
from optlang.errors import DataError


def test_erdos_renyi_is_simple_symmetric_and_seeded() -> None:
    g1 = D.erdos_renyi(200, 0.05, 7, "unit", None)
    g2 = D.erdos_renyi(200, 0.05, 7, "unit", None)
    assert (g1.W != g2.W).nnz == 0
    assert abs(g1.W - g1.W.T).max() == 0 and g1.W.diagonal().sum() == 0
    expected = 0.05 * 200 * 199 / 2
    assert abs(g1.m - expected) < 4 * np.sqrt(expected)
    i, j = sp.triu(g1.W, 1).nonzero()
    assert np.all(i < j) and np.all(j < 200)


def test_erdos_renyi_pair_decoding_covers_all_pairs() -> None:
    g = D.erdos_renyi(9, 1.0, 0, "unit", None)
    assert g.m == 36 and g.W.nnz == 72


def test_random_regular_degrees_and_signed_weights() -> None:
    g = D.random_regular(1000, 3, 1, "signed", None)
    deg = np.diff(g.W.indptr)
    assert np.all(deg == 3)
    assert set(np.unique(g.W.data)) <= {-1.0, 1.0}


def test_torus_and_ring() -> None:
    ring = D.torus(1, 5, None, "unit", None)
    assert ring.m == 5 and np.all(np.diff(ring.W.indptr) == 2)
    t = D.torus(4, 6, None, "unit", None)
    assert t.m == 48 and np.all(np.diff(t.W.indptr) == 4)


def test_generators_refuse_what_does_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTLANG_MAX_BYTES", "1e6")
    with pytest.raises(DataError, match="would need"):
        D.dense_generator("randn", [1000, 1000], 0, None)


def test_all_file_formats(tmp_path) -> None:
    A = np.arange(6.0).reshape(2, 3)
    np.save(tmp_path / "a.npy", A)
    np.savez(tmp_path / "b.npz", M=A, v=np.ones(3))
    (tmp_path / "c.json").write_text(json.dumps({"M": A.tolist()}))
    scipy.io.mmwrite(str(tmp_path / "d.mtx"), sp.csr_matrix(A))
    (tmp_path / "t.csv").write_text("u,v,w,y\n1,2,3,4\n5,6,7,8\n")
    (tmp_path / "g.txt").write_text("3 2\n1 2 1\n2 3 -2\n")
    text = """
param A1 = load("a.npy")
param A2 = load("b.npz", key = "M")
param A3 = load("c.json", key = "M")
param A4 = load("d.mtx")
data T = load("t.csv", target = "y")
graph G = load("g.txt")
var x[3]
minimize sumsq(A1 @ x) + sumsq(A2 @ x) + sumsq(A3 @ x) + sumsq(A4 @ x) + mean((T.X @ x - T.y)^2) + G.m
"""
    m = optlang.parse(text, base_dir=tmp_path)
    for k in ("A1", "A2", "A3"):
        np.testing.assert_array_equal(m.ir.params[k], A)
    np.testing.assert_array_equal(m.ir.params["A4"].toarray(), A)
    t = m.ir.tables["T"]
    assert t.columns == ("u", "v", "w") and t.y.tolist() == [4.0, 8.0]
    g = m.ir.graphs["G"]
    assert g.n == 3 and g.m == 2 and g.W[1, 2] == -2.0


def test_object_arrays_are_never_unpickled(tmp_path) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match="never unpickled"):
        optlang.parse('param A = load("obj.npy")\nvar x\nminimize x^2\n', base_dir=tmp_path)


def test_edge_list_header_mismatch(tmp_path) -> None:
    (tmp_path / "g.txt").write_text("3 5\n1 2 1\n")
    with pytest.raises(DataError, match="header says 5 edges"):
        optlang.parse('graph G = load("g.txt")\nmaxcut G\n', base_dir=tmp_path)


def test_overrides_from_the_api(tmp_path) -> None:
    (tmp_path / "g.txt").write_text("4 3\n1 2 1\n2 3 1\n3 4 1\n")
    m = optlang.parse("param n = 3\nvar x[n]\nminimize sumsq(x)\n", params={"n": 7})
    assert m.ir.variables["x"].shape == (7,)
    m = optlang.parse("param c = zeros(3)\nvar x[3]\nminimize sumsq(x - c)\n", params={"c": np.arange(3.0)})
    np.testing.assert_array_equal(m.ir.params["c"], [0, 1, 2])
    m = optlang.parse("graph G = torus(1, 5)\nmaxcut G\n", data={"G": str(tmp_path / "g.txt")})
    assert m.ir.graphs["G"].n == 4
    with pytest.raises(optlang.OptlangError, match="no param 'm'"):
        optlang.parse("param n = 3\nvar x[n]\nminimize sumsq(x)\n", params={"m": 1})


def test_matrix_market_graph_with_edges_in_both_triangles(tmp_path) -> None:
    A = sp.coo_matrix((np.ones(3), ([0, 2, 1], [1, 1, 3])), shape=(4, 4))
    scipy.io.mmwrite(str(tmp_path / "g.mtx"), A)
    g = optlang.parse('graph G = load("g.mtx")\nmaxcut G\n', base_dir=tmp_path).ir.graphs["G"]
    assert g.m == 3 and abs(g.W - g.W.T).max() == 0
    S = sp.coo_matrix((np.ones(6), ([0, 1, 1, 2, 1, 3], [1, 0, 2, 1, 3, 1])), shape=(4, 4))
    scipy.io.mmwrite(str(tmp_path / "s.mtx"), S)
    g = optlang.parse('graph G = load("s.mtx")\nmaxcut G\n', base_dir=tmp_path).ir.graphs["G"]
    assert g.m == 3 and g.W.max() == 1.0


def test_one_graph_generator_family() -> None:
    """benchmarks/graphs.py (benchmarks, tests, GNN training) draws through the language's generators:
    a model's `graph G = f(..., seed = k)` and the benchmark family with default_rng(k) are one graph."""
    import optlang
    from benchmarks import graphs

    m = optlang.parse(
        'graph A = erdos_renyi(60, 0.1, seed = 3, weights = "signed")\n'
        'graph B = random_regular(50, 3, seed = 4)\ngraph C = torus(4, 6, seed = 5, weights = "signed")\n'
        "spin s[60]\nmaximize cut(A, s)\n"
    )
    ref = {
        "A": graphs.erdos_renyi(60, 0.1, np.random.default_rng(3), signed=True),
        "B": graphs.random_regular(50, 3, np.random.default_rng(4)),
        "C": graphs.torus(4, 6, np.random.default_rng(5), signed=True),
    }
    for name, W in ref.items():
        assert abs(m.graphs[name].W - W).max() == 0, name
    assert graphs.generate("regular", 40, np.random.default_rng(0)).shape[0] in (40, 41)
