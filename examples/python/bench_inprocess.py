"""Wall time of the same LiRA audit (16 shadow models, cora, the example's PyG GCN) in-process
(`gnnaudit.audit` with train_fn) and through the CLI's command target (one Python process per
model, reading the graph gnnaudit writes and writing posteriors.npy). In-process must not be
slower than 1.2x the command target.

Usage: python examples/python/bench_inprocess.py [--gnnaudit BIN] [--shadows 16] [--epochs 100]
On a machine shared with other work, run it with OMP_NUM_THREADS=1 (both halves inherit it):
torch's thread pool contending for busy cores made one training 6x slower here.
The script is also the command target's pipeline: `bench_inprocess.py train --graph G --out O --seed S`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def train_command(argv: list[str]) -> None:
    """The command target's pipeline: train on the graph's train_mask, release every node's posteriors."""
    from pyg_gcn import train_gcn

    from gnnaudit.data import load_npz

    p = argparse.ArgumentParser()
    p.add_argument("--graph", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=100)
    a = p.parse_args(argv)
    x, edge_index, y = load_npz(a.graph)
    with np.load(a.graph) as d:
        mask = torch.from_numpy(d["train_mask"].astype(bool))
    model = train_gcn(x, edge_index, y, mask, a.seed, epochs=a.epochs)
    with torch.no_grad():
        post = torch.softmax(model(x, edge_index), 1)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "posteriors.npy"), post.numpy().astype(np.float32))


def main() -> None:
    import gnnaudit
    from gnnaudit.data import load_npz
    from pyg_gcn import train_gcn

    p = argparse.ArgumentParser()
    p.add_argument("--gnnaudit", default=os.environ.get("GNNAUDIT_BIN", "gnnaudit"), help="the CLI binary")
    p.add_argument("--graph", default=os.path.join(HERE, "..", "..", "tests", "fixtures", "cora.npz"))
    p.add_argument("--shadows", type=int, default=16)
    p.add_argument("--epochs", type=int, default=100)
    a = p.parse_args()

    x, edge_index, y = load_npz(a.graph)
    members = torch.arange(x.shape[0]) % 2 == 0
    model = train_gcn(x, edge_index, y, members, 0, epochs=a.epochs)

    def train_fn(x, edge_index, y, mask, seed):
        return train_gcn(x, edge_index, y, mask, seed, epochs=a.epochs)

    start = time.perf_counter()
    report = gnnaudit.audit(
        model, x, edge_index, y, members, attacks=[{"kind": "lira", "shadows": a.shadows}], train_fn=train_fn
    )
    inprocess = time.perf_counter() - start
    # The target model is trained before the clock starts; the command target trains it too
    # (one more run), so its time is scaled to the same number of trainings.
    print(f"in-process: {inprocess:.1f} s (LiRA AUC {report.rows[0]['auc']:.3f}, {a.shadows} shadows)")

    work = tempfile.mkdtemp(prefix="gnnaudit-bench-")
    try:
        np.save(os.path.join(work, "members.npy"), members.numpy())
        data_dir = os.path.dirname(os.path.abspath(a.graph))
        command = f"{sys.executable} {os.path.abspath(__file__)} train --graph {{graph}} --out {{out}} --seed {{seed}} --epochs {a.epochs}"
        argv = [
            a.gnnaudit, "attack", "--attack", "lira", "--dataset", os.path.splitext(os.path.basename(a.graph))[0],
            "--data-dir", data_dir, "--command", command,
            "--members", os.path.join(work, "members.npy"), "--work-dir", os.path.join(work, "runs"),
            "--shadows", str(a.shadows), "--json",
        ]
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        command_time = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"the command target failed: {done.stderr.strip()}")
        runs = a.shadows + 1
        scaled = command_time * a.shadows / runs
        print(f"command target: {command_time:.1f} s for {runs} runs ({scaled:.1f} s for {a.shadows}, as in-process)")
        ratio = inprocess / scaled
        print(f"ratio in-process / command: {ratio:.2f} (must be <= 1.2)")
        if ratio > 1.2:
            sys.exit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "train":
        train_command(sys.argv[2:])
    else:
        main()
