"""`certify`: the CLI's `gnnaudit certify` on in-memory scores."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from . import _native
from ._scores import ArrayLike, as_float_list


@dataclass(frozen=True)
class Certificate:
    """A lower bound on epsilon with what a reviewer needs to judge it (the fields of `gnnaudit certify --json`)."""

    eps_lb: float
    """The bound: with probability >= confidence, the mechanism's epsilon at `delta` is at least this."""
    max_certifiable: float
    """The bound a perfect attack would reach with the same trials: claims above it cannot be refuted."""
    threshold: Optional[float]
    """The test certified ("score >= threshold" means positive, or "<" when `reversed`); None: no test."""
    reversed: bool
    top_guesses: Optional[int]
    """One-run bounds under `bonferroni`: the rule certified guessed "included" for this many highest scores."""
    verdict: str
    """Against `claim`: "violated", "inconclusive" or "no claim"."""
    claim: Optional[float]
    bound: str
    strategy: str
    confidence: float
    delta: float
    positives: int
    negatives: int
    certified_positives: int
    certified_negatives: int
    cannot_certify: Optional[str]
    """When `max_certifiable` is 0: why this bound and strategy cannot certify anything here, and what would."""
    assumption: str

    @classmethod
    def from_json(cls, text: str) -> "Certificate":
        v: dict[str, Any] = json.loads(text)
        return cls(**{f: v[f] for f in cls.__dataclass_fields__})


def certify(
    positives: ArrayLike,
    negatives: ArrayLike,
    *,
    bound: str = "clopper-pearson",
    strategy: str = "split",
    confidence: float = 0.95,
    delta: float = 0.0,
    claim: Optional[float] = None,
    seed: int = 0,
) -> Certificate:
    """A lower bound on epsilon from attack scores (higher = "positive"), as `gnnaudit certify` computes it.

    `positives` are the scores of trials with the private unit present (members, inserted canaries),
    `negatives` of trials without it. `bound` is clopper-pearson, gdp, one-run or one-run-fdp;
    `strategy` is split, split:FRACTION, bonferroni, explicit:THRESHOLD or planned:THRESHOLD; `claim` is the claimed
    epsilon the verdict is about. Bad input raises ValueError or TypeError with the CLI's message.
    """
    pos = as_float_list(positives, "positives")
    neg = as_float_list(negatives, "negatives")
    for name, v in (("bound", bound), ("strategy", strategy)):
        if not isinstance(v, str):
            raise TypeError(f"{name}: expected a string, got {type(v).__name__}")
    for name, x in (("confidence", confidence), ("delta", delta), ("claim", claim)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
            raise TypeError(f"{name}: expected a number, got {type(x).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TypeError(f"seed: expected a non-negative integer, got {seed!r}")
    text = _native.certify_json(
        pos, neg, bound, strategy, float(confidence), float(delta), None if claim is None else float(claim), seed
    )
    return Certificate.from_json(text)
