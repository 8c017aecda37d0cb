"""gnnaudit.accountant against the golden file (tests/golden/accountant.json: Opacus, dp_accounting)."""
from __future__ import annotations

import json
import math

import pytest

import gnnaudit
from conftest import REPO

GOLDEN = json.loads((REPO / "tests" / "golden" / "accountant.json").read_text())


def cases(kind, **match):
    return [c for c in GOLDEN["cases"] if c["kind"] == kind and all(c["params"].get(k) == v for k, v in match.items())]


def tolerance(case, field):
    return (case.get("tolerance_rel_fields") or {}).get(field, case["tolerance_rel"])


def close(got, case, field):
    want = case["expected"][field]
    assert math.isclose(got, want, rel_tol=tolerance(case, field)), f"{case['id']} {field}: {got} vs {want}"


@pytest.mark.parametrize("case", cases("dpsgd_epsilon"), ids=lambda c: c["id"])
def test_dp_sgd_epsilon_rdp_and_pld(case):
    p = case["params"]
    b = gnnaudit.accountant.epsilon("dp-sgd", sigma=p["sigma"], sample_rate=p["q"], steps=p["steps"], delta=p["delta"])
    assert b.event == "dp-sgd" and b.privacy_unit == "node" and b.sigma == p["sigma"] and b.delta == p["delta"]
    # Balle et al. 2020's conversion on Opacus' order grid, as the CLI reports it.
    close(b.epsilon_rdp, case, "eps_rdp_opacus")
    close(b.epsilon_pld, case, "eps_pld_dp_accounting")
    assert b.epsilon == min(b.epsilon_rdp, b.epsilon_pld)


@pytest.mark.parametrize("case", cases("gap_edge", mode="epsilon"), ids=lambda c: c["id"])
def test_gaussian_aggregations_epsilon(case):
    p = case["params"]
    # The golden file prices the GAP paper's unit: one entry of A (sensitivity 1).
    b = gnnaudit.accountant.epsilon("gap-edp", sigma=p["sigma"], hops=p["K"], delta=p["delta"], directed_entry=True)
    assert b.privacy_unit == "edge"
    close(b.epsilon_rdp, case, "eps_rdp_dp_accounting")
    close(b.epsilon_pld, case, "eps_pld_dp_accounting")
    if p["K"] == 1:
        one = gnnaudit.accountant.epsilon("gaussian", sigma=p["sigma"], delta=p["delta"])
        assert (one.epsilon_rdp, one.epsilon_pld) == (b.epsilon_rdp, b.epsilon_pld)


@pytest.mark.parametrize("case", cases("calibrate_sigma"), ids=lambda c: c["id"])
def test_dp_sgd_calibrate(case):
    p = case["params"]
    b = gnnaudit.accountant.calibrate(
        "subsampled-gaussian", p["target_epsilon"], sample_rate=p["q"], steps=p["steps"], delta=p["delta"]
    )
    # The CLI calibrates on the RDP bound (valid whatever PLD says): Opacus' exact RDP search.
    close(b.sigma, case, "sigma_rdp_opacus_exact")
    assert b.epsilon_rdp <= p["target_epsilon"] * (1 + 1e-9)


@pytest.mark.parametrize("case", cases("gap_edge", mode="calibrate"), ids=lambda c: c["id"])
def test_gaussian_aggregations_calibrate(case):
    p = case["params"]
    b = gnnaudit.accountant.calibrate("gap-edp", p["target_epsilon"], hops=p["K"], delta=p["delta"], directed_entry=True)
    close(b.sigma, case, "sigma_rdp_opacus")


@pytest.mark.parametrize("event", ["gap-edp", "progap-edp"])
@pytest.mark.parametrize("sigma", [1.0, 2.5])
def test_an_undirected_edge_is_an_entry_at_sigma_over_sqrt2(event, sigma):
    # One undirected edge moves two entries of A: sensitivity sqrt(2), i.e. the entry's
    # mechanism at noise multiplier sigma / sqrt(2).
    edge = gnnaudit.accountant.epsilon(event, sigma=sigma, hops=3, delta=1e-6)
    entry = gnnaudit.accountant.epsilon(event, sigma=sigma / math.sqrt(2), hops=3, delta=1e-6, directed_entry=True)
    assert math.isclose(edge.epsilon_rdp, entry.epsilon_rdp, rel_tol=1e-9)
    assert math.isclose(edge.epsilon_pld, entry.epsilon_pld, rel_tol=1e-6)
    assert edge.epsilon_rdp > gnnaudit.accountant.epsilon(event, sigma=sigma, hops=3, delta=1e-6, directed_entry=True).epsilon_rdp
    # Calibration inverts it: the edge needs sqrt(2) times the entry's noise.
    cal_edge = gnnaudit.accountant.calibrate(event, 2.0, hops=3, delta=1e-6)
    cal_entry = gnnaudit.accountant.calibrate(event, 2.0, hops=3, delta=1e-6, directed_entry=True)
    assert math.isclose(cal_edge.sigma, math.sqrt(2) * cal_entry.sigma, rel_tol=1e-6)


def test_pure_ldp_events_spend_their_parameter():
    rr = gnnaudit.accountant.epsilon("randomized-response", ldp_epsilon=1.5)
    assert rr.event == "edge-rand" and rr.epsilon == 1.5
    mb = gnnaudit.accountant.epsilon("multi-bit", epsilon_x=1.0, epsilon_y=2.0)
    assert mb.event == "lpgnn" and mb.epsilon == pytest.approx(3.0)


def test_bad_input_raises_with_the_cli_message():
    with pytest.raises(ValueError, match=r"invalid --delta: give --delta or --units"):
        gnnaudit.accountant.epsilon("dp-sgd", sigma=1.0)
    with pytest.raises(ValueError, match=r"invalid --sample-rate: must be in \(0, 1\], got 2"):
        gnnaudit.accountant.epsilon("dp-sgd", sigma=1.0, sample_rate=2.0, delta=1e-5)
    with pytest.raises(ValueError, match="invalid value 'magic' for '--event"):
        gnnaudit.accountant.epsilon("magic", sigma=1.0)
    with pytest.raises(ValueError, match="unexpected argument '--colour'"):
        gnnaudit.accountant.epsilon("dp-sgd", sigma=1.0, delta=1e-5, colour=3)
    with pytest.raises(ValueError, match="has no noise to calibrate"):
        gnnaudit.accountant.calibrate("edge-rand", 1.0, ldp_epsilon=1.0)
    with pytest.raises(ValueError, match="invalid --directed-entry: only gap-edp and progap-edp price an edge"):
        gnnaudit.accountant.epsilon("dp-sgd", sigma=1.0, delta=1e-5, directed_entry=True)
    with pytest.raises(TypeError, match="steps"):
        gnnaudit.accountant.epsilon("dp-sgd", sigma=1.0, delta=1e-5, steps=[1])
