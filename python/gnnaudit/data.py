"""Graphs in the gnn-benchmark .npz format (what `gnnaudit datasets fetch` downloads), as tensors."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch


class Graph(NamedTuple):
    x: torch.Tensor
    """Node features [nodes, features], float32 (dense)."""
    edge_index: torch.Tensor
    """Both directions of every undirected edge, int64 [2, 2 * edges], self-loops dropped."""
    y: torch.Tensor
    """Class labels [nodes], int64."""


def _csr(d: "np.lib.npyio.NpzFile", prefix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    shape = tuple(int(s) for s in d[f"{prefix}_shape"])
    return d[f"{prefix}_data"], d[f"{prefix}_indices"], d[f"{prefix}_indptr"], (shape[0], shape[1])


def load_npz(path: str) -> Graph:
    """Reads a gnn-benchmark .npz (adj_* and attr_* CSR arrays, labels) as PyG-style tensors."""
    with np.load(path, allow_pickle=False) as d:
        missing = [k for k in ("adj_indices", "adj_indptr", "adj_shape", "attr_data", "labels") if k not in d.files]
        if missing:
            raise ValueError(f"{path}: not a gnn-benchmark .npz (missing {', '.join(missing)})")
        _, cols, ptr, (n, _) = _csr(d, "adj")
        rows = np.repeat(np.arange(n), np.diff(ptr))
        data, fcols, fptr, (fn, f) = _csr(d, "attr")
        x = np.zeros((fn, f), dtype=np.float32)
        x[np.repeat(np.arange(fn), np.diff(fptr)), fcols] = data
        labels = d["labels"].astype(np.int64)
    # Undirected: each pair once, then both directions.
    a, b = np.minimum(rows, cols), np.maximum(rows, cols)
    keep = a != b
    pairs = np.unique(np.stack([a[keep], b[keep]], 1), axis=0)
    both = np.concatenate([pairs, pairs[:, ::-1]], 0).T
    return Graph(torch.from_numpy(x), torch.from_numpy(np.ascontiguousarray(both)), torch.from_numpy(labels))
