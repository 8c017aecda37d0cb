"""gnnaudit from Python: the same Rust code as the `gnnaudit` CLI, called in-process.

- `certify(positives, negatives, ...)`: a lower bound on epsilon from any attack's scores.
- `audit(model, x, edge_index, y, members, attacks=...)`: a PyTorch Geometric model audited in-process.
- `train(dataset, method, epsilon=...)`: a built-in method, as `gnnaudit train`.
- `accountant.epsilon(...)` / `accountant.calibrate(...)`: the budget of a privacy event.
"""
from __future__ import annotations

# torch first: the native module resolves libtorch's symbols from the libraries torch loaded.
import torch as _torch  # noqa: F401

from . import accountant
from ._audit import Report, audit
from ._certify import Certificate, certify
from ._native import __version__
from ._train import TrainResult, train

__all__ = ["Certificate", "Report", "TrainResult", "accountant", "audit", "certify", "train", "__version__"]
