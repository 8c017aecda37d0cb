"""A training pipeline as gnnaudit's `command` target runs it: train on the graph gnnaudit wrote,
release the posteriors of every node.

  python train_gcn.py --graph {graph} --out {out} [--sigma 0] [--hops 2] [--epochs 100] [--seed 0]

{graph} is an .npz in gnnaudit's layout (CSR adjacency and features, labels, train/val/test
masks); the script trains on the nodes of `train_mask` and writes {out}/posteriors.npy (float32
[N, C], row = node id). The model is gcn.py's GAP-style decoupled GCN: the graph enters only
through `pma` (K hops of sum aggregation over row-normalised features, Gaussian noise of std
sigma on every sum), then an MLP classifies [x, h_1, .., h_K]. With --sigma 0 it is non-private;
with sigma > 0 it is edge-level DP: K Gaussian mechanisms of L2 sensitivity sqrt(2).
"""
import argparse
import os
import warnings

warnings.filterwarnings("ignore", message=".*NumPy.*")  # the venv has no NumPy, and needs none
import torch  # noqa: E402
from torch import nn  # noqa: E402

from gcn import GCN, fit, pma  # noqa: E402
from npyio import load_graph, save_npy  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--graph", required=True)
p.add_argument("--out", required=True)
p.add_argument("--model", choices=["pma", "gcn"], default="pma", help="gcn: the plain 2-layer GCN (non-private)")
p.add_argument("--sigma", type=float, default=0.0)
p.add_argument("--hops", type=int, default=2)
p.add_argument("--epochs", type=int, default=100)
p.add_argument("--hidden", type=int, default=16)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()

torch.manual_seed(a.seed)
gen = torch.Generator().manual_seed(a.seed + 1)
x, edge_index, y, masks = load_graph(a.graph)
if "train_mask" not in masks:
    raise SystemExit(f"{a.graph}: no train_mask")
classes = int(y.max()) + 1
if a.model == "gcn":
    if a.sigma > 0:
        raise SystemExit("--model gcn aggregates trained representations every step: noise there is not DP; use pma")
    model, inputs = GCN(x.size(1), a.hidden, classes), (x, edge_index)
else:
    with torch.no_grad():
        inputs = (pma(x, edge_index, a.hops, a.sigma, gen),)
    model = nn.Sequential(nn.Linear(inputs[0].size(1), a.hidden), nn.SELU(), nn.Linear(a.hidden, classes))
losses = fit(model, inputs, y, masks["train_mask"], a.epochs, 0.01)
with torch.no_grad():
    post = torch.softmax(model(*inputs), dim=1)
os.makedirs(a.out, exist_ok=True)
save_npy(os.path.join(a.out, "posteriors.npy"), post)
test = masks.get("test_mask", ~masks["train_mask"])
acc = (post.argmax(1)[test] == y[test]).float().mean().item()
print(f"sigma {a.sigma}: loss {losses[0]:.3f} -> {losses[-1]:.4f}, test accuracy {acc:.3f}")
