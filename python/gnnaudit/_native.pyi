"""The Rust extension: each function returns the CLI's JSON output as a string."""

from typing import Any, Callable, Optional

__version__: str

def certify_json(
    positives: list[float],
    negatives: list[float],
    bound: str,
    strategy: str,
    confidence: float,
    delta: float,
    claim: Optional[float],
    seed: int,
) -> str: ...
def account_json(args: list[str]) -> str: ...
def audit_json(
    predict: Callable[..., Any],
    shadow: Optional[Callable[..., Any]],
    x: Any,
    edge_index: Any,
    y: list[int],
    members: list[int],
    attacks: list[tuple[str, str]],
    seeds: list[int],
    claim: Optional[str],
    controls: Optional[list[Optional[float]]],
) -> str: ...
def save_report(report: str, dir: str) -> None: ...
def train_json(args: list[str]) -> str: ...
