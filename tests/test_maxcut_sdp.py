"""Tests of the Max-Cut SDP backends: gnnsdp, bnb, sdp-cvxpy, sdp-bm and their parts."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from benchmarks.graphs import FAMILIES, erdos_renyi, generate, torus
from optlang.analysis import Form
from optlang.backends.base import RunContext, Status
from optlang.backends.ising.ops import brute_force_min, cut_value
from optlang.backends.maxcut.bnb import BnBOptions, BranchAndBound, contract
from optlang.backends.maxcut.bounds import (
    certificate,
    cs_dual,
    dense_weights,
    primal_value,
    shift_dual,
    try_shift,
)
from optlang.backends.maxcut.gnnsdp import GNNSDP, GNNSDPOptions, sdp_bound
from optlang.backends.maxcut.gw import gw_round
from optlang.backends.maxcut.model import GNNSDP as Net
from optlang.backends.maxcut.model import ProxyConfig, save_weights
from optlang.backends.maxcut.proxy import WEIGHTS, load_model, proxy_solve
from optlang.backends.maxcut.reduce import to_maxcut
from optlang.backends.maxcut.sdp_bm import SDPBM, SDPBMOptions
from optlang.backends.maxcut.sdp_cvxpy import SDPCvxpy, SDPCvxpyOptions, solve_sdp_cvxpy
from optlang.problem import IsingProblem
from scripts.train_gnnsdp import gap_loss

torch.set_num_threads(1)


def random_ising(n: int, seed: int, field: bool = True, integer: bool = False) -> IsingProblem:
    rng = np.random.default_rng(seed)
    A = rng.integers(-2, 3, size=(n, n)).astype(float) if integer else rng.normal(size=(n, n))
    A = np.triu(A * (rng.random((n, n)) < 0.6), 1)
    h = (rng.integers(-2, 3, size=n).astype(float) if integer else rng.normal(size=n)) if field else np.zeros(n)
    return IsingProblem(J=sp.csr_matrix(A + A.T), h=h, constant=float(rng.normal()))


def all_ok(checks: dict) -> bool:
    return all(v[0] for v in checks.values())


# ----------------------------------------------------------------------------- reduction
@pytest.mark.parametrize("field", [False, True])
def test_ising_to_maxcut_energy_identity(field: bool) -> None:
    """E(s) = offset − cut_W(t) with W = 4J (not −4J), for random spins, with and without a field."""
    p = random_ising(9, 3, field=field)
    mc = to_maxcut(p)
    assert mc.field_spin == field and mc.n == 9 + int(field)
    if not field:
        np.testing.assert_allclose(mc.W.toarray(), 4.0 * p.J.toarray())
    rng = np.random.default_rng(0)
    for _ in range(20):
        t = rng.choice([-1.0, 1.0], size=mc.n)
        assert p.energy(mc.spins(t)) == pytest.approx(mc.offset - mc.cut(t), abs=1e-10)
    # minimizing E is maximizing the cut: the brute-force minimizer has the largest cut
    e_min, s = brute_force_min(p)
    t = np.append(s, 1.0) if field else s
    assert mc.offset - mc.cut(t) == pytest.approx(e_min, abs=1e-9)


def test_maxcut_weights_used_directly() -> None:
    W = erdos_renyi(12, 0.5, np.random.default_rng(1))
    mc = to_maxcut(IsingProblem.from_maxcut(W))
    assert mc.offset == pytest.approx(0.0, abs=1e-12)
    t = np.random.default_rng(2).choice([-1.0, 1.0], size=12)
    assert mc.cut(t) == pytest.approx(cut_value(W, t))
    # a problem whose J no longer matches its stored weights is reduced from J, not from W
    p = IsingProblem.from_maxcut(W)
    q = IsingProblem(J=(2.0 * p.J).tocsr(), h=p.h, constant=p.constant, maxcut_weights=W)
    mq = to_maxcut(q)
    assert q.energy(mq.spins(t)) == pytest.approx(mq.offset - mq.cut(t))


# ----------------------------------------------------------------------------- bounds
@pytest.mark.parametrize("mode", ["uniform", "degree"])
def test_shift_makes_any_dual_feasible(mode: str) -> None:
    """Whatever y is (even random), the shifted y' passes the float64 certificate."""
    W = erdos_renyi(30, 0.3, np.random.default_rng(4), signed=True)
    W64 = dense_weights(W)
    y = torch.randn(30, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 5
    db = shift_dual(W64, y, mode)
    checks = certificate(W64, db.y, cut=0.0)
    assert checks["dual_slack_psd"][0], checks
    assert db.bound == pytest.approx(float(db.y.sum()))


def test_cholesky_shift_is_rigorous() -> None:
    """try_shift succeeds only when M(y) + tI is PSD (up to its δ) and its y' passes the eigen-check."""
    W64 = dense_weights(erdos_renyi(40, 0.3, np.random.default_rng(6), signed=True))
    V = torch.nn.functional.normalize(torch.randn(40, 8, dtype=torch.float64), dim=1)
    y = cs_dual(W64, V)
    lam = float(torch.linalg.eigvalsh(torch.diag(y - W64.sum(1) / 4) + W64 / 4)[0])
    assert lam < 0
    assert try_shift(W64, y, -lam - 1e-3) is None  # too small a shift: refused
    db = try_shift(W64, y, -lam + 1e-6)
    assert db is not None
    assert certificate(W64, db.y, cut=0.0)["dual_slack_psd"][0]
    assert db.bound == pytest.approx(float(y.sum()) + 40 * (-lam + 1e-6), rel=1e-9)


def test_cs_dual_sums_to_primal() -> None:
    W = dense_weights(erdos_renyi(20, 0.4, np.random.default_rng(5)))
    V = torch.nn.functional.normalize(torch.randn(20, 5, dtype=torch.float64), dim=1)
    assert float(cs_dual(W, V).sum()) == pytest.approx(float(primal_value(W, V)))
    X = V @ V.T
    L = torch.diag(W.sum(1)) - W
    assert float(primal_value(W, V)) == pytest.approx(float((L * X).sum()) / 4)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("refine", [0, 300])
def test_gnnsdp_bound_valid_against_enumeration(family: str, refine: int) -> None:
    """The certified bound is ≥ the exact max cut (n ≤ 20), checks pass, the cut is exact in float64."""
    rng = np.random.default_rng(hash(family) % 1000 + refine)
    W = generate(family, 16, rng)
    p = IsingProblem.from_maxcut(W)
    e_min, _ = brute_force_min(p)
    r = GNNSDP().solve(p, GNNSDPOptions(refine_steps=refine), RunContext(seed=1))
    assert all_ok(r.checks), r.checks
    assert r.bound <= e_min + 1e-9  # lower bound on the energy = −(upper bound on the cut)
    assert r.objective >= e_min - 1e-9
    assert r.objective == pytest.approx(p.energy(r.values["s"]))
    assert r.info["cut"] == pytest.approx(cut_value(W, r.values["s"]))


def test_gnnsdp_ising_with_field() -> None:
    p = random_ising(14, 7, field=True)
    e_min, _ = brute_force_min(p)
    r = GNNSDP().solve(p, GNNSDPOptions(), RunContext(seed=0))
    assert all_ok(r.checks)
    assert r.bound <= e_min + 1e-9 <= r.objective + 2e-9
    assert r.values["s"].shape == (14,)
    assert sdp_bound(p, RunContext(seed=0)) <= e_min + 1e-9
    json.dumps(r.info)  # info must be JSON-able


def test_bound_valid_with_untrained_weights(tmp_path) -> None:
    """Feasibility never depends on the weights: a random network still gives a valid bound."""
    torch.manual_seed(3)
    net = Net(ProxyConfig(hidden=8, layers=1, rank=4, unroll=1, n_random=2))
    for prm in net.parameters():
        prm.data.normal_(0, 3.0)
    path = tmp_path / "bad.safetensors"
    save_weights(net, str(path))
    W = erdos_renyi(18, 0.5, np.random.default_rng(8), signed=True)
    p = IsingProblem.from_maxcut(W)
    r = GNNSDP().solve(p, GNNSDPOptions(refine_steps=0, weights=str(path)), RunContext(seed=0))
    assert all_ok(r.checks)
    assert r.bound <= brute_force_min(p)[0] + 1e-9


def test_edgeless_graph() -> None:
    p = IsingProblem.from_maxcut(sp.csr_matrix((5, 5)))
    for backend, opts in [(GNNSDP(), GNNSDPOptions()), (BranchAndBound(), BnBOptions())]:
        r = backend.solve(p, opts, RunContext())
        assert r.status == Status.OPTIMAL and r.objective == pytest.approx(0.0)


def test_gw_round_cut_matches_float64() -> None:
    W = erdos_renyi(40, 0.2, np.random.default_rng(9))
    V = torch.nn.functional.normalize(torch.randn(40, 6), dim=1)
    t, cut = gw_round(W, V, 64, torch.Generator().manual_seed(0))
    assert set(np.unique(t)) <= {-1.0, 1.0}
    assert cut == pytest.approx(cut_value(W, t))


# ----------------------------------------------------------------------------- branch and bound
def test_contract_preserves_energy() -> None:
    p = random_ising(8, 11, field=False)
    J, c = p.J.toarray(), p.constant
    Jc, cc, rep, sign, _ = contract(J, c, np.arange(8), np.ones(8), 2, 5, -1.0)
    rng = np.random.default_rng(0)
    for _ in range(10):
        u = rng.choice([-1.0, 1.0], size=7)
        s = sign * u[rep]
        assert s[5] == -s[2]
        assert u @ Jc @ u + cc == pytest.approx(p.energy(s))


@pytest.mark.parametrize(("n", "signed", "seed"), [(18, False, 0), (20, True, 1), (22, True, 2), (22, False, 3)])
def test_bnb_equals_enumeration(n: int, signed: bool, seed: int) -> None:
    W = erdos_renyi(n, 0.5, np.random.default_rng(seed), signed=signed)
    p = IsingProblem.from_maxcut(W)
    e_min, _ = brute_force_min(p)
    r = BranchAndBound().solve(p, BnBOptions(enumerate_below=8), RunContext(seed=0))
    assert r.status == Status.OPTIMAL
    assert r.objective == pytest.approx(e_min)
    assert r.bound == pytest.approx(e_min)
    assert all_ok(r.checks)
    json.dumps(r.info)


def test_bnb_ising_with_real_field() -> None:
    p = random_ising(13, 5, field=True)
    e_min, _ = brute_force_min(p)
    r = BranchAndBound().solve(p, BnBOptions(enumerate_below=6), RunContext(seed=0))
    assert r.status == Status.OPTIMAL
    assert r.objective == pytest.approx(e_min, abs=1e-8)
    assert r.bound <= e_min + 1e-8


def test_bnb_node_limit_reports_gap() -> None:
    W = torus(6, 6, np.random.default_rng(2))
    p = IsingProblem.from_maxcut(W)
    r = BranchAndBound().solve(p, BnBOptions(enumerate_below=4), RunContext(seed=0, max_iter=3))
    assert r.status in (Status.ITERATION_LIMIT, Status.OPTIMAL)
    assert r.bound <= r.objective + 1e-9
    if r.status == Status.ITERATION_LIMIT:
        assert r.info["nodes"] <= 4 and r.info["gap"] >= 0


# ----------------------------------------------------------------------------- reference solvers
def test_sdp_cvxpy_and_bm_agree() -> None:
    W = erdos_renyi(20, 0.4, np.random.default_rng(12), signed=True)
    p = IsingProblem.from_maxcut(W)
    a = SDPCvxpy().solve(p, SDPCvxpyOptions(), RunContext(seed=0))
    b = SDPBM().solve(p, SDPBMOptions(target_gap=1e-6), RunContext(seed=0, dtype="float64"))
    assert all_ok(a.checks) and all_ok(b.checks)
    assert a.info["sdp_upper_bound"] == pytest.approx(b.info["sdp_upper_bound"], rel=1e-4)
    e_min, _ = brute_force_min(p)
    assert a.bound <= e_min + 1e-9 and b.bound <= e_min + 1e-9
    sdp = solve_sdp_cvxpy(W)
    assert sdp.primal <= sdp.dual.bound + 1e-9


# ----------------------------------------------------------------------------- network and training
def test_training_step_decreases_loss() -> None:
    torch.manual_seed(0)
    net = Net(ProxyConfig(hidden=16, layers=2, rank=8, unroll=4, n_random=4))
    Wd = dense_weights(erdos_renyi(30, 0.3, np.random.default_rng(0)), "cpu", torch.float32)

    def loss() -> torch.Tensor:
        return gap_loss(net, Wd, torch.Generator().manual_seed(0))

    before = float(loss().detach())
    for _ in range(3):  # plain gradient steps (torch.optim's first import is slow on a loaded machine)
        net.zero_grad()
        loss().backward()
        with torch.no_grad():
            for prm in net.parameters():
                if prm.grad is not None:
                    prm -= 1e-2 * prm.grad
    assert float(loss().detach()) < before


def test_shipped_weights_load_without_pickle_and_bound_quality() -> None:
    """The shipped file is safetensors (JSON header, no pickle) and meets its documented quality."""
    raw = WEIGHTS.read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + header_len])
    assert "config" in header["__metadata__"] and "command" in header["__metadata__"]
    note = json.loads(WEIGHTS.with_suffix(".json").read_text())
    assert note["seed"] == header["__metadata__"]["seed"]
    model = load_model("cpu", torch.float32)
    # held-out graphs (seeds not used in training): forward bound within the documented 3% of the SDP,
    # signed Erdős–Rényi (the hardest family) included
    for W in (erdos_renyi(80, 0.2, np.random.default_rng(424242)), erdos_renyi(150, 0.3, rng(424243), signed=True)):
        Wd = dense_weights(W, "cpu", torch.float32)
        fwd = proxy_solve(Wd, torch.Generator().manual_seed(0), model=model)
        ref = proxy_solve(Wd.double(), torch.Generator().manual_seed(0), refine_steps=2000, target_gap=1e-6)
        assert ref.bound <= fwd.bound
        assert fwd.bound <= 1.03 * ref.bound


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize("kind", ["dense", "G14"])
def test_forward_stable_on_dense_and_hub_graphs(kind: str) -> None:
    """The unrolled steps neither collapse V on a dense unsigned graph (full Perron deflation) nor
    blow up on Gset G14, whose hubs leave a localized positive eigenvalue of the step operator above 2
    (the step is scaled by the power-iteration radius): forward bound within 3%."""
    from benchmarks.graphs import read_gset, shared_data_dir
    from optlang.backends.maxcut.model import row_scale, step_radius

    if kind == "dense":
        W = erdos_renyi(300, 0.5, rng(31))
    else:
        path = shared_data_dir() / "gset" / "G14.txt"
        if not path.exists():
            pytest.skip("Gset G14 not available")
        W = read_gset(path)
    Wd = dense_weights(W, "cpu", torch.float32)
    dabs = Wd.abs().sum(1)
    rho = step_radius(Wd / row_scale(Wd)[:, None], dabs / torch.linalg.vector_norm(dabs))
    assert (rho > 2.5) if kind == "G14" else (rho < 2.0)
    fwd = proxy_solve(Wd, torch.Generator().manual_seed(0), model=load_model("cpu", torch.float32))
    ref = proxy_solve(Wd, torch.Generator().manual_seed(0), refine_steps=3000, target_gap=2e-3)
    assert ref.primal <= fwd.bound <= 1.03 * ref.bound
    assert fwd.primal >= 0.97 * ref.bound


def test_keep_rank_refinement_widens_when_the_target_is_missed(monkeypatch) -> None:
    """Refining at the network's rank (24) widens to ⌈√(2n)⌉+1 after RANK_PATIENCE steps without the
    target; the bound stays certified either way."""
    import optlang.backends.maxcut.proxy as proxy_mod
    from optlang.backends.maxcut.bm import default_rank

    monkeypatch.setattr(proxy_mod, "RANK_PATIENCE", 4)
    W = erdos_renyi(400, 0.05, rng(33), signed=True)
    Wd = dense_weights(W, "cpu", torch.float32)
    model = load_model("cpu", torch.float32)
    kw = dict(model=model, refine_steps=12, target_gap=1e-12, certify_forward=False, keep_rank=True)
    res = proxy_solve(Wd, torch.Generator().manual_seed(0), **kw)
    assert default_rank(400) > 24 and res.V.shape[1] == default_rank(400) and res.refine_steps == 12
    W64 = dense_weights(W)
    assert all_ok(certificate(W64, res.dual.y, res.primal))
    monkeypatch.setattr(proxy_mod, "RANK_PATIENCE", 150)
    res2 = proxy_solve(Wd, torch.Generator().manual_seed(0), **{**kw, "target_gap": 3e-3, "refine_steps": 300})
    assert res2.V.shape[1] == 24 and res2.gap <= 3e-3 and res2.stopped == "callback"


def test_gnnsdp_honours_the_time_limit() -> None:
    """An unreachable gap under a time limit: refinement stops early enough to certify and round,
    status time_limit, the bound still certified."""
    p = IsingProblem.from_maxcut(erdos_renyi(600, 0.3, rng(34), signed=True))
    ctx = RunContext(seed=0, time_limit=0.15)
    r = GNNSDP().solve(p, GNNSDPOptions(refine_steps=10**6, target_gap=1e-12), ctx)
    assert r.status == Status.TIME_LIMIT
    assert all_ok(r.checks), r.checks
    assert r.info["refine_steps"] > 0


def test_refuse_sentences() -> None:
    b = GNNSDP()
    assert b.refuse(Form(kind="maxcut", n_spins=10)) is None
    assert "smooth" in b.refuse(Form(kind="smooth"))
    assert "constraint" in b.refuse(Form(kind="ising", n_spins=10, constraints=("sum(s) == 0",)))
    assert "degree 3" in b.refuse(Form(kind="ising", n_spins=10, degree=3))
    assert b.refuse(Form(kind="ising", n_spins=10**6)) is not None


def test_options_are_validated() -> None:
    from optlang.errors import OptionError

    for backend in (GNNSDP(), BranchAndBound(), SDPCvxpy(), SDPBM()):
        assert backend.make_options({}) is not None
        with pytest.raises(OptionError):
            backend.make_options({"no_such_option": 1})
    assert GNNSDP().make_options({"refine_steps": 5, "time_limit": 3}).refine_steps == 5


def test_forward_certificate_needs_no_refinement_when_the_network_meets_the_target() -> None:
    """On an unsigned ER graph the network's own dual passes the Cholesky test at 0.3 %: zero
    refinement steps, one check, the bound certified in float64 and within the target; a target it
    cannot meet (or a signed graph, where the test is not tried) falls through to refinement."""
    # the forward pass meets 0.3 % on 18 of the ER(120, 0.2) draws of seeds 41-60 (not on 41 and 51): this is one
    W = erdos_renyi(120, 0.2, rng(43))
    Wd, W64 = dense_weights(W, "cpu", torch.float32), dense_weights(W)
    kw = dict(model=load_model("cpu", torch.float32), refine_steps=300, certify_forward=False, keep_rank=True)
    res = proxy_solve(Wd, torch.Generator().manual_seed(0), target_gap=3e-3, forward_check=True, **kw)
    assert res.stopped == "forward" and res.refine_steps == 0 and res.checks == 1
    assert res.gap <= 3e-3 and res.bound >= res.primal
    assert all_ok(certificate(W64, res.dual.y, res.primal))
    assert float(torch.linalg.eigvalsh(slack_of(W64, res.dual.y))[0]) >= 0.0
    tight = proxy_solve(Wd, torch.Generator().manual_seed(0), target_gap=2e-4, forward_check=True, **kw)
    assert tight.refine_steps > 0 and tight.gap <= 2e-4 and tight.checks >= 2  # the failed test is counted
    assert all_ok(certificate(W64, tight.dual.y, tight.primal))
    Ws = dense_weights(erdos_renyi(120, 0.2, rng(42), signed=True), "cpu", torch.float32)
    signed = proxy_solve(Ws, torch.Generator().manual_seed(0), target_gap=3e-3, forward_check=True, **kw)
    assert "forward_check" not in signed.timings and signed.refine_steps > 0


def slack_of(W64: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    from optlang.backends.maxcut.bounds import slack

    return slack(W64, y)


def test_gnnsdp_backend_uses_the_forward_certificate() -> None:
    """The backend returns the forward certificate when it meets ctx.tol, checks passing."""
    p = IsingProblem.from_maxcut(erdos_renyi(150, 0.3, rng(43)))
    r = GNNSDP().solve(p, GNNSDPOptions(), RunContext(seed=0, tol=3e-3))
    assert all_ok(r.checks), r.checks
    assert r.info["refine_steps"] == 0 and r.info["sdp_gap"] <= 3e-3


def test_refinement_stops_when_the_certified_gap_stagnates() -> None:
    """An unreachable target (1e-12 in float32) with stall_checks = 3: refinement ends after a few
    eigenvalue checks without 10 % progress, not at the step budget, with a certified bound."""
    W = erdos_renyi(30, 0.5, rng(44), signed=True)
    Wd, W64 = dense_weights(W, "cpu", torch.float32), dense_weights(W)
    kw = dict(model=load_model("cpu", torch.float32), refine_steps=500, target_gap=1e-12, check_every=5)
    kw.update(first_check=5, cholesky_checks=False)
    res = proxy_solve(Wd, torch.Generator().manual_seed(0), stall_checks=3, **kw)
    assert res.stopped == "stalled_gap" and 0 < res.refine_steps < 500
    assert all_ok(certificate(W64, res.dual.y, res.primal)) and res.gap < 1e-3
    full = proxy_solve(Wd, torch.Generator().manual_seed(0), **kw)
    assert full.refine_steps == 500 or full.stopped in ("grad", "stalled")
    assert res.bound <= full.bound * (1 + 1e-3)  # stopping early lost (almost) nothing


def test_bnb_root_refinement_stops_on_stagnation() -> None:
    """bnb's root no longer spends its 500-step budget on a 1e-4 gap float32 does not reach here
    (a tuning graph where it did: 500 root steps before); same optimum, tree closed."""
    p = IsingProblem.from_maxcut(erdos_renyi(30, 0.5, rng(3030), signed=True))
    r = BranchAndBound().solve(p, BnBOptions(), RunContext(seed=0))
    r0 = BranchAndBound().solve(p, BnBOptions(root_stall_checks=0), RunContext(seed=0))
    assert r.status == Status.OPTIMAL and r0.status == Status.OPTIMAL
    assert r0.info["root_steps"] == 500 and 0 < r.info["root_steps"] < 100
    assert abs(r.objective - r0.objective) < 1e-9


def test_fused_inference_matches_the_training_forward() -> None:
    """The inference path (B = κ·S⁻¹W(I − d̂d̂ᵀ) built once, one addmm a step; power iteration
    rescaled every 5 steps) computes the same V and y as the differentiable training path."""
    from optlang.backends.maxcut.model import operator_radius

    model = load_model("cpu", torch.float64)
    for W in (erdos_renyi(90, 0.3, rng(46), signed=True), erdos_renyi(90, 0.3, rng(47))):
        Wd = dense_weights(W)
        with torch.no_grad():
            V1, y1 = model(Wd, torch.Generator().manual_seed(0))
        with torch.enable_grad():
            V2, y2 = model(Wd, torch.Generator().manual_seed(0))
        assert torch.allclose(V1, V2.detach(), atol=1e-9) and torch.allclose(y1, y2.detach(), atol=1e-9)
    B = torch.randn(60, 60, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    B = B + B.T
    assert abs(operator_radius(B, iters=400) - float(torch.linalg.eigvalsh(B).abs().max())) < 1e-3


def test_sparse_inference_matches_dense(monkeypatch) -> None:
    """On a large sparse graph inference uses CSR products (use_sparse); same V and y as dense."""
    import optlang.backends.maxcut.model as model_mod

    model = load_model("cpu", torch.float64)
    Wd = dense_weights(generate("regular", 400, rng(48)))
    assert model_mod.use_sparse(Wd)
    with torch.no_grad():
        V1, y1 = model(Wd, torch.Generator().manual_seed(0))
        monkeypatch.setattr(model_mod, "use_sparse", lambda W: False)
        V2, y2 = model(Wd, torch.Generator().manual_seed(0))
    assert torch.allclose(V1, V2, atol=1e-9) and torch.allclose(y1, y2, atol=1e-9)


def test_sdp_bound_option_gets_its_own_time_budget() -> None:
    """`bound = "sdp"` runs after the solve has spent its time limit (an annealer uses all of it): the
    bound is computed on its own clock, so it equals the bound of an unlimited run (and is valid)."""
    import optlang

    src = 'graph T = torus(8, 8, weights = "signed", seed = 4)\nmaxcut T\nsolver auto { bound = "sdp" }\n'
    model = optlang.parse(src)
    limited = model.solve(time_limit=0.3, seed=0)
    unlimited = sdp_bound(model.compiled.problem, RunContext(seed=0))
    assert limited.info["sdp_energy_lower_bound"] == pytest.approx(unlimited, rel=1e-9)
    assert limited.bound is not None and limited.bound >= limited.objective - 1e-9
