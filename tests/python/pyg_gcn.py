"""A PyTorch Geometric user's deployment, exported the way the README's "Audit your PyTorch / PyG
model" section says: a 2-layer GCNConv model trained on a random 20% of the nodes, then

  OUT/model.pt        torch.jit.trace of the trained model in eval mode (dropout is traced out)
  OUT/model_init.pt   torch.jit.trace of the same architecture untrained, for shadow copies
  OUT/members.npy     the training mask, numpy.save(train_mask.numpy()) (bool, one entry per node)
  OUT/members.count   how many members the mask holds (for the test to compare with)

With --cached the layers are GCNConv(cached=True): the normalised training adjacency is cached
at the first forward and the trace bakes it in, so the export ignores the edge_index it is given.
With --wrong-formats it also writes what a user may hand over instead of a TorchScript file:

  OUT/pickled.pt      torch.save(model)
  OUT/state_dict.pt   torch.save(model.state_dict())
  OUT/exported.pt2    torch.export.save of a linear model (torch.export archive)
  OUT/members.pt      torch.save(train_mask)

Usage: python pyg_gcn.py --graph cora.npz --out DIR [--cached] [--wrong-formats] [--epochs 100]
"""
import argparse
import os
import warnings

import numpy
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv

from npyio import load_graph

warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)


class Net(torch.nn.Module):
    def __init__(self, features, hidden, classes, cached):
        super().__init__()
        self.conv1 = GCNConv(features, hidden, cached=cached)
        self.conv2 = GCNConv(hidden, classes, cached=cached)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


p = argparse.ArgumentParser()
p.add_argument("--graph", required=True)
p.add_argument("--out", required=True)
p.add_argument("--cached", action="store_true")
p.add_argument("--wrong-formats", action="store_true")
p.add_argument("--members", type=float, default=0.2)
p.add_argument("--epochs", type=int, default=100)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()

torch.manual_seed(a.seed)
x, edge_index, y, _ = load_graph(a.graph)
n, classes = x.size(0), int(y.max()) + 1
train_mask = torch.zeros(n, dtype=torch.bool)
train_mask[torch.randperm(n)[: int(a.members * n)]] = True

model = Net(x.size(1), 16, classes, a.cached)
os.makedirs(a.out, exist_ok=True)
init = Net(x.size(1), 16, classes, False).eval()
torch.jit.trace(init, (x, edge_index)).save(os.path.join(a.out, "model_init.pt"))

opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
for _ in range(a.epochs):
    model.train()
    opt.zero_grad()
    loss = F.cross_entropy(model(x, edge_index)[train_mask], y[train_mask])
    loss.backward()
    opt.step()
model.eval()
torch.jit.trace(model, (x, edge_index)).save(os.path.join(a.out, "model.pt"))
numpy.save(os.path.join(a.out, "members.npy"), train_mask.numpy())
with open(os.path.join(a.out, "members.count"), "w") as f:
    f.write(f"{int(train_mask.sum())}\n")
if a.wrong_formats:
    torch.save(model, os.path.join(a.out, "pickled.pt"))
    torch.save(model.state_dict(), os.path.join(a.out, "state_dict.pt"))
    torch.save(train_mask, os.path.join(a.out, "members.pt"))
    linear = torch.nn.Linear(x.size(1), classes).eval()
    torch.export.save(torch.export.export(linear, (x,)), os.path.join(a.out, "exported.pt2"))
with torch.no_grad():
    pred = model(x, edge_index).argmax(1)
acc = lambda m: (pred[m] == y[m]).float().mean().item()
print(f"loss {loss.item():.4f}; accuracy members {acc(train_mask):.3f}, others {acc(~train_mask):.3f}")
