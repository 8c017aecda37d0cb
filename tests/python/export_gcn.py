"""Trains the plain-PyTorch GCN of gcn.py on a graph in gnnaudit's .npz layout and exports what a
deployment would hand an auditor:

  OUT/model.pt        the trained model, torch.jit.script, forward(x, edge_index) -> logits
  OUT/model_traced.pt the trained model through torch.jit.trace
  OUT/model_init.pt   the same architecture untrained (gnnaudit's shadow models start from it)
  OUT/members.txt     the ids of the training nodes, one per line
  OUT/posteriors.npy  softmax(model(x, edge_index)) in eval mode, float32 [N, C] (row = node id)

Usage: python export_gcn.py --graph cora.npz --out DIR [--members 0.2] [--epochs 200] [--seed 0]
"""
import argparse
import os
import warnings

warnings.filterwarnings("ignore", message=".*NumPy.*")  # the venv has no NumPy, and needs none

import torch

from gcn import GCN, fit
from npyio import load_graph, save_npy

p = argparse.ArgumentParser()
p.add_argument("--graph", required=True)
p.add_argument("--out", required=True)
p.add_argument("--members", type=float, default=0.2, help="fraction of nodes trained on")
p.add_argument("--epochs", type=int, default=100)
p.add_argument("--hidden", type=int, default=16)
p.add_argument("--lr", type=float, default=0.01)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()

torch.manual_seed(a.seed)
x, edge_index, y, _ = load_graph(a.graph)
n, classes = x.size(0), int(y.max()) + 1
perm = torch.randperm(n)
members = perm[: int(a.members * n)].sort().values
mask = torch.zeros(n, dtype=torch.bool)
mask[members] = True

model = GCN(x.size(1), a.hidden, classes)
os.makedirs(a.out, exist_ok=True)
model.eval()
torch.jit.script(model).save(os.path.join(a.out, "model_init.pt"))
losses = fit(model, (x, edge_index), y, mask, a.epochs, a.lr)
torch.jit.script(model).save(os.path.join(a.out, "model.pt"))
torch.jit.trace(model, (x, edge_index)).save(os.path.join(a.out, "model_traced.pt"))
with torch.no_grad():
    post = torch.softmax(model(x, edge_index), dim=1)
save_npy(os.path.join(a.out, "posteriors.npy"), post)
with open(os.path.join(a.out, "members.txt"), "w") as f:
    f.write("".join(f"{int(v)}\n" for v in members))
acc = lambda m: (post.argmax(1)[m] == y[m]).float().mean().item()
print(f"loss {losses[0]:.3f} -> {losses[-1]:.4f}; accuracy members {acc(mask):.3f}, others {acc(~mask):.3f}")
