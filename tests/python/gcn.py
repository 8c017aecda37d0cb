"""A 2-layer GCN (Kipf & Welling 2017) in plain PyTorch, no PyTorch Geometric: the kind of model
a team exports with TorchScript and hands to gnnaudit. forward(x [N, F], edge_index [2, E]) ->
logits [N, C]; edge_index lists each undirected edge in both directions, without self loops (the
model adds them, with the symmetric normalisation D^-1/2 (A + I) D^-1/2).

Also the GAP-style decoupled variant the `command` example trains: the graph is used once, by
`pma`, which aggregates row-normalised features over K hops and adds Gaussian noise to every sum
(GAP's PMA, Sajadmanesh et al. 2023); the classifier only sees those cached aggregates, so its
training is post-processing and the release is (K Gaussian mechanisms)-DP at edge level.
"""
import torch
import torch.nn.functional as F
from torch import nn


def gcn_propagate(h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    n = h.size(0)
    loops = torch.arange(n, device=h.device)
    src = torch.cat([edge_index[0], loops])
    dst = torch.cat([edge_index[1], loops])
    deg = torch.zeros(n, device=h.device).index_add_(0, dst, torch.ones(src.numel(), device=h.device))
    norm = deg[src].rsqrt() * deg[dst].rsqrt()
    return torch.zeros(n, h.size(1), device=h.device).index_add_(0, dst, h[src] * norm.unsqueeze(1))


class GCN(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int, dropout: float = 0.0):
        super().__init__()
        self.lin1 = nn.Linear(features, hidden)
        self.lin2 = nn.Linear(hidden, classes)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        h = F.relu(gcn_propagate(self.lin1(x), edge_index))
        h = F.dropout(h, self.dropout, self.training)
        return gcn_propagate(self.lin2(h), edge_index)


def pma(x: torch.Tensor, edge_index: torch.Tensor, hops: int, sigma: float, gen: torch.Generator):
    """[x, h_1, .., h_K]: h_k = normalize(sum over in-neighbours of normalize(h_{k-1}) + N(0, sigma^2)).

    One undirected edge changes two rows of each sum by a unit vector: L2 sensitivity sqrt(2).
    """
    out = [F.normalize(x, dim=1)]
    h = out[0]
    for _ in range(hops):
        agg = torch.zeros_like(h).index_add_(0, edge_index[1], h[edge_index[0]])
        if sigma > 0:
            agg = agg + sigma * torch.randn(agg.shape, generator=gen)
        h = F.normalize(agg, dim=1)
        out.append(h)
    return torch.cat(out, dim=1)


def fit(model, inputs, labels, train_mask, epochs, lr, weight_decay=0.0):
    """Full-batch Adam on the cross-entropy of the training nodes; returns the loss per epoch."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    model.train()
    for _ in range(epochs):
        opt.zero_grad()
        loss = F.cross_entropy(model(*inputs)[train_mask], labels[train_mask])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses
