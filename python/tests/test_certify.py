"""gnnaudit.certify equals `gnnaudit certify` on the same scores, to every digit."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import torch

import gnnaudit

BOUNDS = ["clopper-pearson", "gdp", "one-run", "one-run-fdp"]
STRATEGIES = ["split", "split:0.3", "bonferroni", "explicit:0.75"]


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    rng = np.random.default_rng(5)
    pos, neg = rng.normal(1.5, 1.0, 300), rng.normal(0.0, 1.0, 300)
    d = tmp_path_factory.mktemp("scores")
    np.save(d / "pos.npy", pos)
    np.save(d / "neg.npy", neg)
    return pos, neg, d


@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_equals_cli(cli, scores, bound, strategy):
    pos, neg, d = scores
    delta = 1e-5 if bound in ("gdp", "one-run-fdp") else 0.0
    args = ["--bound", bound, "--strategy", strategy, "--confidence", "0.9", "--delta", repr(delta), "--seed", "3"]
    args += ["--claim", "0.5"]
    done = subprocess.run(
        [cli, "certify", "--positives", str(d / "pos.npy"), "--negatives", str(d / "neg.npy"), *args, "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    want = json.loads(done.stdout)
    got = gnnaudit.certify(pos, neg, bound=bound, strategy=strategy, confidence=0.9, delta=delta, claim=0.5, seed=3)
    for name in want:
        # Exact equality: JSON carries the shortest round-trip decimal of each float.
        assert getattr(got, name) == want[name], name
    assert got.eps_lb > 0.0
    assert got.verdict in ("violated", "inconclusive")


def test_inputs_as_numpy_tensor_and_list_agree(scores):
    pos, neg, _ = scores
    a = gnnaudit.certify(pos, neg)
    b = gnnaudit.certify(torch.tensor(pos), torch.tensor(neg))
    c = gnnaudit.certify(list(pos), list(neg))
    assert a == b == c
    assert a.bound == "clopper-pearson" and a.strategy == "split" and a.verdict == "no claim"
    assert a.positives == 300 and a.certified_positives + a.certified_negatives < 600


def test_bad_input_raises_with_the_cli_message():
    with pytest.raises(ValueError, match=r"invalid --bound: unknown bound 'exact'"):
        gnnaudit.certify([1.0, 2.0], [0.0, 1.0], bound="exact")
    with pytest.raises(ValueError, match=r"invalid --confidence: 1.5 is outside \(0, 1\)"):
        gnnaudit.certify([1.0, 2.0], [0.0, 1.0], confidence=1.5)
    with pytest.raises(ValueError, match="not finite"):
        gnnaudit.certify([1.0, float("nan")], [0.0, 1.0], strategy="bonferroni")
    with pytest.raises(ValueError, match="expected a 1-D array"):
        gnnaudit.certify(np.zeros((2, 2)), [0.0])
    with pytest.raises(TypeError, match="positives"):
        gnnaudit.certify("0.1 0.2", [0.0])
    with pytest.raises(TypeError, match="confidence"):
        gnnaudit.certify([1.0], [0.0], confidence="high")
