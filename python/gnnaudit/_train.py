"""`train`: a built-in method trained as `gnnaudit train` trains it."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from . import _native
from ._argv import flags

Param = Union[int, float, str, bool]


@dataclass(frozen=True)
class TrainResult:
    """Accuracy per seed and the privacy budget the method's accountant claims."""

    method: str
    dataset: str
    epsilon: Optional[float]
    """The target epsilon (None: no noise)."""
    claimed_epsilon: float
    test_accuracy: list[float]
    runs: list[dict[str, Any]] = field(repr=False)
    budget: dict[str, Any] = field(repr=False)
    raw: dict[str, Any] = field(repr=False, compare=False)


def train(dataset: str, method: str, *, epsilon: Optional[float] = None, **params: Param) -> TrainResult:
    """Trains `method` on `dataset` (a name in the data directory, a path, or "synthetic").

    Other keywords are `gnnaudit train`'s flags: seed, repeats, epochs, hops, delta, data_dir, ...
    """
    argv = ["--dataset", dataset, "--method", method]
    if epsilon is not None:
        argv += ["--epsilon", repr(float(epsilon))]
    argv += flags(params)
    v = json.loads(_native.train_json(argv))
    return TrainResult(
        method=v["method"],
        dataset=v["dataset"],
        epsilon=v["epsilon"],
        claimed_epsilon=v["claimed_epsilon"],
        test_accuracy=[r["test_accuracy"] for r in v["runs"]],
        runs=v["runs"],
        budget=v["budget"],
        raw=v,
    )
