"""Exports TorchScript modules a deployment might hand over by mistake, for gnnaudit's bad-input
tests: OUT/wrong_signature.pt (forward(x) only) and OUT/nan_output.pt (forward(x, edge_index)
returning NaN scores). Usage: python bad_modules.py OUT FEATURES CLASSES
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore", message=".*NumPy.*")
import torch  # noqa: E402
from torch import nn  # noqa: E402


class WrongSignature(nn.Module):
    def __init__(self, f: int, c: int):
        super().__init__()
        self.lin = nn.Linear(f, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


class NanOutput(nn.Module):
    def __init__(self, f: int, c: int):
        super().__init__()
        self.lin = nn.Linear(f, c)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * float("nan")


out, f, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
torch.jit.script(WrongSignature(f, c)).save(os.path.join(out, "wrong_signature.pt"))
torch.jit.script(NanOutput(f, c)).save(os.path.join(out, "nan_output.pt"))
