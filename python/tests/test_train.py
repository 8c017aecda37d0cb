"""gnnaudit.train: the built-in methods, as `gnnaudit train` trains them."""
from __future__ import annotations

import json
import math
import subprocess

import pytest

import gnnaudit
from conftest import CORA


def test_gap_edp_on_cora_meets_its_budget_and_matches_the_cli(cli):
    r = gnnaudit.train(str(CORA), "gap-edp", epsilon=4.0, epochs=20, seed=3)
    assert r.method == "gap-edp" and r.epsilon == 4.0
    assert r.claimed_epsilon <= 4.0 * (1 + 1e-6)
    assert r.budget["privacy_unit"] == "edge"
    assert 0.3 < r.test_accuracy[0] <= 1.0  # 7 classes: chance is about 0.3 at most
    done = subprocess.run(
        [cli, "train", "--dataset", str(CORA), "--method", "gap-edp", "--epsilon", "4.0", "--epochs", "20",
         "--seed", "3", "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    want = json.loads(done.stdout)
    assert want["budget"] == r.budget
    assert want["test_accuracy"]["runs"] == r.test_accuracy


def test_non_private_method_claims_no_privacy_and_uses_torchs_threads():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        r = gnnaudit.train(str(CORA), "gcn", epochs=20)
    finally:
        torch.set_num_threads(before)
    # One libtorch in the process: the Rust side runs on the thread pool Python's torch set.
    assert r.raw["threads"] == 1
    assert r.epsilon is None
    assert r.claimed_epsilon is None or math.isinf(r.claimed_epsilon)  # JSON writes infinity as null
    assert r.test_accuracy[0] > 0.5


def test_bad_input_raises_with_the_cli_message():
    with pytest.raises(ValueError, match="invalid value 'gnn' for '--method"):
        gnnaudit.train(str(CORA), "gnn")
    with pytest.raises(ValueError, match="no-such-graph"):
        gnnaudit.train("no-such-graph", "gcn")


def test_ctrl_c_stops_a_training_that_never_calls_python(tmp_path):
    # gnnaudit.train runs Rust only: the Ctrl-C must be noticed inside its epoch loop (which
    # polls Python's signal handlers), not when the call returns hours later.
    import signal
    import sys
    import time

    script = tmp_path / "long_train.py"
    script.write_text(
        f"""
import signal, sys
import gnnaudit
# Python's Ctrl-C handler, as at a terminal, even when this test runs in a background job
# (whose children start with SIGINT ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
print("training", flush=True)
try:
    gnnaudit.train({str(CORA)!r}, "gcn", epochs=1_000_000)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""
    )
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "training"
    time.sleep(3)  # let the call reach its epoch loop (a million epochs: hours)
    p.send_signal(signal.SIGINT)
    try:
        rest = p.communicate(timeout=300)[0]
    finally:
        p.kill()
    assert p.returncode == 3, rest
    assert "interrupted" in rest
