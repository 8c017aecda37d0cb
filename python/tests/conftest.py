"""Shared fixtures: the repository's cora, the example's GCN (trained once), the CLI binary."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
CORA = REPO / "tests" / "fixtures" / "cora.npz"
EXAMPLE = REPO / "examples" / "python" / "pyg_gcn.py"
MEMBER_FRACTION = 0.2


def gnnaudit_binary() -> str:
    """The CLI the package must agree with: $GNNAUDIT_BIN, else the debug build in CARGO_TARGET_DIR."""
    explicit = os.environ.get("GNNAUDIT_BIN")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "gnnaudit" / "target"))
    for candidate in (target / "debug" / "gnnaudit", shutil.which("gnnaudit")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("no gnnaudit binary: build it (cargo build) or set GNNAUDIT_BIN")


@pytest.fixture(scope="session")
def cli() -> str:
    return gnnaudit_binary()


@pytest.fixture(scope="session")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pyg_gcn_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def cora():
    from gnnaudit.data import load_npz

    return load_npz(str(CORA))


@pytest.fixture(scope="session")
def members(cora) -> torch.Tensor:
    # A fifth of the nodes, as in the example (cora's usual split trains on fewer still).
    return torch.rand(cora.x.shape[0], generator=torch.Generator().manual_seed(0)) < MEMBER_FRACTION


@pytest.fixture(scope="session")
def gcn(example, cora, members):
    return example.train_gcn(cora.x, cora.edge_index, cora.y, members, seed=0)
