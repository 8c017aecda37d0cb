"""The privacy accountant of `gnnaudit account epsilon|calibrate`, with RDP and PLD epsilon.

The keyword arguments are the CLI's flags (`sample_rate=0.01` is `--sample-rate 0.01`), parsed by
the CLI's own parser: defaults, checks and error messages are the CLI's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from . import _native
from ._argv import flags

#: Event families `gnnaudit account` knows (its `--event` values), and friendlier names for some.
EVENTS = (
    "gap-edp",
    "gap-ndp",
    "progap-edp",
    "progap-ndp",
    "dpgnn",
    "dp-mlp",
    "dp-sgd",
    "lpgnn",
    "edge-rand",
    "dpar-gm",
    "dpar-em",
    "dpar-features",
    "class-dp-mlp",
    "subclass-dp-mlp",
)
ALIASES = {
    # One Gaussian release at sensitivity 1: GAP's aggregation with one hop, priced per entry of A.
    "gaussian": ("gap-edp", {"hops": 1, "directed_entry": True}),
    "subsampled-gaussian": ("dp-sgd", {}),
    "randomized-response": ("edge-rand", {}),
    "multi-bit": ("lpgnn", {}),
    "multibit": ("lpgnn", {}),
}

Param = Union[int, float, str, bool]


@dataclass(frozen=True)
class Budget:
    """The (epsilon, delta) an event spends: RDP and, where the PLD accountant applies, PLD."""

    event: str
    epsilon: float
    """The claimed epsilon: the tighter valid bound of the two."""
    epsilon_rdp: float
    epsilon_pld: Optional[float]
    rdp_order: Optional[float]
    delta: float
    sigma: Optional[float]
    """The noise multiplier (given to `epsilon`, found by `calibrate`); None for noiseless events."""
    privacy_unit: str
    raw: dict[str, Any] = field(repr=False, compare=False)
    """`gnnaudit account ... --json`'s whole output (components, PLD fallback, ...)."""

    @classmethod
    def from_json(cls, text: str) -> "Budget":
        v = json.loads(text)
        b = v["budget"]
        noise = dict(b.get("noise") or [])
        return cls(
            event=v["method"],
            epsilon=v["claimed_epsilon"],
            epsilon_rdp=b["epsilon_rdp"],
            epsilon_pld=b.get("epsilon_pld"),
            rdp_order=b.get("rdp_order"),
            delta=b["delta"],
            sigma=noise.get("sigma"),
            privacy_unit=b["privacy_unit"],
            raw=v,
        )


def _argv(command: str, event: str, params: dict[str, Optional[Param]]) -> list[str]:
    if not isinstance(event, str):
        raise TypeError(f"event: expected a string, got {type(event).__name__}")
    name = event.replace("_", "-")
    name, implied = ALIASES.get(name, (name, {}))
    argv = [command, "--event", name]
    # An alias's implied flags stand unless a keyword sets them (None: not set).
    given = {k: v for k, v in params.items() if v is not None}
    argv += flags({**implied, **given})
    return argv


def epsilon(
    event: str,
    *,
    sigma: Optional[float] = None,
    delta: Optional[float] = None,
    units: Optional[int] = None,
    directed_entry: bool = False,
    **params: Param,
) -> Budget:
    """The epsilon `event` spends at noise multiplier `sigma` (`gnnaudit account epsilon`).

    `delta` defaults to 1/10^digits(`units`) when the number of private units is given. gap-edp
    and progap-edp price one undirected edge (sensitivity sqrt(2)); `directed_entry=True` prices
    one entry of the adjacency matrix instead, the GAP and ProGAP papers' unit (sensitivity 1).
    Other keywords are the event's parameters: steps, sample_rate, hops, degree, num_nodes, ...
    """
    argv = _argv("epsilon", event, {"sigma": sigma, "delta": delta, "units": units, "directed_entry": directed_entry or None, **params})
    return Budget.from_json(_native.account_json(argv))


def calibrate(
    event: str,
    epsilon: float,
    *,
    delta: Optional[float] = None,
    units: Optional[int] = None,
    directed_entry: bool = False,
    **params: Param,
) -> Budget:
    """The smallest noise multiplier with which `event` spends at most `epsilon` (`gnnaudit account calibrate`).

    `directed_entry` as in `epsilon`.
    """
    argv = _argv("calibrate", event, {"epsilon": epsilon, "delta": delta, "units": units, "directed_entry": directed_entry or None, **params})
    return Budget.from_json(_native.account_json(argv))
