"""An in-process audit of a plain PyG GCNConv model on cora, through the CLI's attacks and bounds."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
import torch

import gnnaudit
from conftest import EXAMPLE, REPO


def test_link_stealing_and_lira_through_train_fn(example, cora, members, gcn):
    # LiRA's shadows are trained by the same function as the target (the example's train_gcn),
    # each on half of a pool of members and non-members, as in Carlini et al. 2022.
    report = gnnaudit.audit(
        gcn,
        cora.x,
        cora.edge_index,
        cora.y,
        members,
        attacks=["link-stealing", {"kind": "lira", "shadows": 8}],
        train_fn=example.train_gcn,
    )
    by_attack = {r["attack"]: r for r in report.rows}
    assert set(by_attack) == {"link-stealing", "lira"}
    for row in report.rows:
        assert {"attack", "seed", "auc", "tpr_at_1pct_fpr", "eps_lb", "verdict"} <= set(row)
        assert row["seed"] == 1
    assert by_attack["link-stealing"]["auc"] > 0.85, by_attack["link-stealing"]
    assert by_attack["lira"]["auc"] > 0.7, by_attack["lira"]
    # Link stealing on natural pairs measures homophily, never compared with an epsilon (the CLI's rule).
    assert by_attack["link-stealing"]["verdict"] == "not comparable"
    assert by_attack["lira"]["verdict"] == "no claim"
    pooled = {a["attack"]: a for a in report.attacks}
    assert pooled["lira"]["eps_lb"] >= 0.0
    assert pooled["lira"]["certificate"]["bound"] == "clopper-pearson"


def test_pyg_data_and_index_members_give_the_same_audit(cora, members, gcn):
    from torch_geometric.data import Data

    data = Data(x=cora.x, edge_index=cora.edge_index, y=cora.y)
    ids = members.nonzero().flatten()
    attacks = [{"kind": "mia-metric", "source": "target-split"}]
    a = gnnaudit.audit(gcn, data, ids, attacks=attacks, seeds=(1, 2))
    b = gnnaudit.audit(gcn, cora.x, cora.edge_index, cora.y, members, attacks=attacks, seeds=(1, 2))
    assert a.rows == b.rows
    assert [r["seed"] for r in a.rows] == [1, 2]
    # One test over both seeds' scores pooled, never a maximum over seeds. (The metric MIA: link
    # stealing on natural pairs certifies nothing, see test_link_stealing_and_lira_through_train_fn.)
    pooled = a.attacks[0]
    assert pooled["certificate"]["positives"] == sum(run["certificate"]["positives"] for run in pooled["runs"])
    assert pooled["certificate"]["confidence"] == 0.95
    assert all(run["certificate"]["confidence"] == 1 - (1 - 0.95) / 2 for run in pooled["runs"])  # Bonferroni per seed


def test_model_is_called_in_eval_mode_without_grad(cora, members, gcn):
    seen = []

    def model(x, edge_index):
        seen.append((torch.is_grad_enabled(), gcn.training))
        return gcn(x, edge_index)

    gcn.train()
    gnnaudit.audit(model, cora.x, cora.edge_index, cora.y, members, attacks=["mia-metric"])
    assert seen == [(False, True)]  # a plain callable: no_grad, and its mode is its own
    gcn.train()
    calls = []
    handle = gcn.register_forward_hook(lambda m, i, o: calls.append((torch.is_grad_enabled(), m.training)))
    gnnaudit.audit(gcn, cora.x, cora.edge_index, cora.y, members, attacks=["mia-metric"])
    handle.remove()
    assert calls == [(False, False)]
    assert gcn.training, "the module's mode is restored"
    gcn.eval()


def test_bad_input_raises_with_the_message(cora, members, gcn):
    x, ei, y = cora.x, cora.edge_index, cora.y
    with pytest.raises(ValueError, match=r"invalid attack nope.kind: unknown attack 'nope'"):
        gnnaudit.audit(gcn, x, ei, y, members, attacks=["nope"])
    with pytest.raises(ValueError, match=r"invalid attack lira.params.shadows"):
        gnnaudit.audit(gcn, x, ei, y, members, attacks=[{"kind": "lira", "shadows": "many"}])
    with pytest.raises(ValueError, match="members: a boolean mask must have one entry per node"):
        gnnaudit.audit(gcn, x, ei, y, members[:10], attacks=["link-stealing"])
    with pytest.raises(ValueError, match="edge_index.*names a node outside"):
        gnnaudit.audit(gcn, x, ei + 5000, y, members, attacks=["link-stealing"])
    with pytest.raises(TypeError, match="x: expected a torch.Tensor"):
        gnnaudit.audit(gcn, x.numpy(), ei, y, members, attacks=["link-stealing"])
    with pytest.raises(ValueError, match="train_fn"):
        gnnaudit.audit(gcn, x, ei, y, members, attacks=["lira"])
    with pytest.raises(ValueError, match=r"invalid claim"):
        gnnaudit.audit(gcn, x, ei, y, members, attacks=["link-stealing"], claim={"mechanism": "magic"})

    def broken(x, edge_index):
        raise RuntimeError("the user's bug")

    with pytest.raises(RuntimeError, match="the user's bug"):
        gnnaudit.audit(broken, x, ei, y, members, attacks=["link-stealing"])
    with pytest.raises(ValueError, match=r"shape \[2708\], expected \[2708, classes\]|expected \[nodes, classes\]"):
        gnnaudit.audit(lambda x, e: x[:, 0], x, ei, y, members, attacks=["link-stealing"])


def test_claim_with_control_gives_the_verdict_of_both_bounds(example, cora, members, gcn):
    # A node-level DP-SGD claim, audited by the metric MIA (node membership game, no shadows).
    claim = {
        "mechanism": "dp-sgd", "epsilon": 0.05, "delta": 1e-5, "sample_rate": 0.01, "noise_multiplier": 1.0,
        "steps": 100, "sampling": "poisson",
    }
    noisy = example.train_gcn(cora.x, cora.edge_index, cora.y, members, seed=0, noise=2.0)
    attacks = [{"kind": "mia-metric", "source": "target-split"}]
    # The noisy model draws fresh noise at every forward: the same seed before each audit makes
    # both see the same posteriors.
    torch.manual_seed(7)
    report = gnnaudit.audit(
        noisy, cora.x, cora.edge_index, cora.y, members, attacks=attacks, claim=claim, control=gcn
    )
    pooled = report.attacks[0]
    assert report.claim is not None and report.claim["stated_epsilon"] == 0.05
    control = pooled["control_eps_lb"]
    assert control is not None and control >= 0.0
    expected = "violated" if pooled["eps_lb"] > 0.05 else "not refuted" if control > 0.05 else "inconclusive"
    assert pooled["verdict"] == expected
    torch.manual_seed(7)
    alone = gnnaudit.audit(noisy, cora.x, cora.edge_index, cora.y, members, attacks=attacks, claim=claim)
    assert alone.attacks[0]["eps_lb"] == pooled["eps_lb"], "the control does not change the target's bound"
    assert alone.attacks[0]["verdict"] in ("violated", "inconclusive")


def test_ctrl_c_interrupts_a_long_audit(tmp_path):
    script = tmp_path / "long.py"
    script.write_text(
        f"""
import signal, sys, time, torch
# Python's Ctrl-C handler, as at a terminal, even when this test runs in a background job
# (whose children start with SIGINT ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {str(EXAMPLE.parent)!r})
import gnnaudit
from gnnaudit.data import load_npz
g = load_npz({str(REPO / 'tests' / 'fixtures' / 'cora.npz')!r})
members = torch.arange(g.x.shape[0]) % 2 == 0
def slow_train(x, ei, y, mask, seed):
    print("training", flush=True)
    time.sleep(0.5)
    return lambda x, ei: torch.zeros(x.shape[0], int(y.max()) + 1)
try:
    gnnaudit.audit(lambda x, ei: torch.zeros(x.shape[0], 7), g.x, g.edge_index, g.y, members,
                   attacks=[{{"kind": "lira", "shadows": 64}}], train_fn=slow_train)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""
    )
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "training"
    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=120)[0]
    assert p.returncode == 3, rest
    assert "interrupted" in rest


# The README's longer example, end to end (about ten trainings: 4 LiRA shadows, canary and control runs).
def test_example_runs(tmp_path):
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--quick"], capture_output=True, text=True, cwd=tmp_path, timeout=1800
    )
    assert done.returncode == 0, done.stderr
    assert "link-stealing" in done.stdout and "noisy GCN" in done.stdout
    # The noise-off control trains through its own train_fn (the example's train_gcn).
    assert "control eps_lb" in done.stdout


def test_saved_report_is_read_by_gnnaudit_check(cli, cora, members, gcn, tmp_path):
    report = gnnaudit.audit(
        gcn, cora.x, cora.edge_index, cora.y, members, attacks=["mia-metric"], seeds=(1, 2), out=str(tmp_path / "r")
    )
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "r" / name).is_file(), name
    saved = json.loads((tmp_path / "r" / "report.json").read_text())
    aucs = [c["attacks"][0]["auc"] for c in saved["cells"]]
    assert aucs == [r["auc"] for r in report.rows]
    # The baselines the CLI records: chance, and the members' majority class scored on the others.
    y = cora.y[~members]
    majority = int(torch.bincount(cora.y[members]).argmax())
    for cell in saved["cells"]:
        assert cell["baseline"]["chance"] == 1 / 7
        assert cell["baseline"]["majority_class"] == majority
        assert cell["baseline"]["majority_accuracy"] == int((y == majority).sum()) / y.shape[0]
        assert cell["baseline"]["test_nodes"] == int((~members).sum())
        assert cell["chance_test"]["at_chance"] is False  # a trained GCN beats the majority class
    (row,) = saved["summary"]
    assert row["baseline"]["tested_seeds"] == 2 and row["at_chance"] is False
    assert report.baseline == saved["cells"][0]["baseline"]
    assert report.chance_test == saved["cells"][0]["chance_test"]
    loose, strict = tmp_path / "loose.toml", tmp_path / "strict.toml"
    loose.write_text("max_auc = 1.0\nforbid_at_chance = true\n")
    assert min(aucs) > 0.5
    strict.write_text("max_auc = 0.5\n")
    ok = subprocess.run([cli, "check", str(tmp_path / "r"), "--thresholds", str(loose)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "check passed" in ok.stdout
    assert "forbid_at_chance not checked" not in ok.stdout + ok.stderr
    bad = subprocess.run([cli, "check", str(tmp_path / "r"), "--thresholds", str(strict)], capture_output=True, text=True)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "mia-metric" in bad.stdout
    # The same report saved again is identical to the CLI's view of it: `report diff` finds no change.
    report.save(tmp_path / "again")
    diff = subprocess.run(
        [cli, "report", "diff", str(tmp_path / "r"), str(tmp_path / "again")], capture_output=True, text=True
    )
    assert diff.returncode == 0, diff.stdout + diff.stderr
