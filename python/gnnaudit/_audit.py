"""`audit`: a Python model (e.g. a PyG module) audited in-process by the CLI's attacks and bounds."""
from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import torch

from . import _native

Model = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
TrainFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int], Model]
AttackSpec = Union[str, Mapping[str, Any], "tuple[str, Mapping[str, Any]]"]


def _as_posteriors(out: Any, who: str) -> torch.Tensor:
    """Class probabilities from a model's output: logits and log-probabilities go through softmax."""
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{who} returned {type(out).__name__}; expected a tensor of logits or posteriors [nodes, classes]")
    out = out.detach().to("cpu", torch.float32)
    if out.dim() != 2:
        raise ValueError(f"{who} returned a tensor of shape {list(out.shape)}; expected [nodes, classes]")
    is_probability = bool((out >= 0).all()) and bool(torch.allclose(out.sum(1), torch.ones(out.shape[0]), atol=1e-4))
    return out if is_probability else torch.softmax(out, dim=1)


def _predictor(model: Model, who: str = "model") -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """`model`'s posteriors, computed in eval mode under torch.no_grad() (its mode is restored)."""
    if not callable(model):
        raise TypeError(f"{who}: expected a callable (x, edge_index) -> logits, got {type(model).__name__}")

    def predict(x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        was_training = bool(getattr(model, "training", False))
        if isinstance(model, torch.nn.Module):
            model.eval()
        try:
            with torch.no_grad():
                device = _device_of(model)
                out = model(x.to(device), edge_index.to(device)) if device is not None else model(x, edge_index)
        finally:
            if was_training and isinstance(model, torch.nn.Module):
                model.train()
        return _as_posteriors(out, who)

    return predict


def _device_of(model: Any) -> Optional[torch.device]:
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            return p.device
    return None


def _shadow(train_fn: TrainFn) -> Callable[..., torch.Tensor]:
    """Trains a shadow model with the user's train_fn, then returns its posteriors on the same graph."""
    if not callable(train_fn):
        raise TypeError(f"train_fn: expected a callable (x, edge_index, y, train_mask, seed) -> model, got {type(train_fn).__name__}")

    def shadow(x: torch.Tensor, edge_index: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, seed: int) -> torch.Tensor:
        model = train_fn(x, edge_index, y, mask, seed)
        return _predictor(model, "the model train_fn returned")(x, edge_index)

    return shadow


def _members(members: Any, n: int) -> list[int]:
    """A boolean mask [n] or node ids as a sorted list of ids."""
    if members is None:
        raise TypeError("members: give the training nodes, as a boolean mask or an index tensor")
    m = members if isinstance(members, torch.Tensor) else torch.as_tensor(members)
    if m.dtype == torch.bool:
        if m.dim() != 1 or m.shape[0] != n:
            raise ValueError(f"members: a boolean mask must have one entry per node ({n}), got shape {list(m.shape)}")
        return m.nonzero().flatten().tolist()
    if m.dtype.is_floating_point or m.dim() != 1:
        raise TypeError(f"members: expected a boolean mask or 1-D integer node ids, got {m.dtype} of shape {list(m.shape)}")
    ids = sorted(set(m.tolist()))
    if ids and (ids[0] < 0 or ids[-1] >= n):
        bad = ids[0] if ids[0] < 0 else ids[-1]
        raise ValueError(f"members: node id {bad} is outside 0..{n - 1}")
    if not ids or len(ids) == n:
        raise ValueError(f"members: {len(ids)} of {n} nodes; a membership audit needs members and non-members")
    return ids


def _attacks(attacks: Union[AttackSpec, Iterable[AttackSpec]]) -> list[tuple[str, str]]:
    """Attack names, {"kind": name, **params} or (name, params), as (name, params JSON)."""
    if isinstance(attacks, (str, Mapping, tuple)):
        attacks = [attacks]
    out = []
    for a in attacks:
        if isinstance(a, str):
            name, params = a, {}
        elif isinstance(a, Mapping):
            params = dict(a)
            name = params.pop("kind", None)
        elif isinstance(a, tuple) and len(a) == 2:
            name, params = a[0], dict(a[1])
        else:
            raise TypeError(f"attacks: expected names, dicts with 'kind' or (name, params), got {a!r}")
        if not isinstance(name, str):
            raise TypeError(f"attacks: an attack needs a name (kind), got {a!r}")
        out.append((name, json.dumps(params)))
    if not out:
        raise ValueError("attacks: give at least one attack, e.g. attacks=['link-stealing', 'mia-metric']")
    return out


def _graph(x: Any, edge_index: Any, y: Any, members: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    """(x, edge_index, y, members), from tensors or from a PyG `Data` in place of x."""
    if not isinstance(x, torch.Tensor) and hasattr(x, "x") and hasattr(x, "edge_index"):
        data = x
        if members is None:
            members = edge_index if y is None else y
        x, edge_index, y = data.x, data.edge_index, data.y
    for name, t in (("x", x), ("edge_index", edge_index), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if edge_index.dtype.is_floating_point:
        raise TypeError(f"edge_index: expected integer node ids, got {edge_index.dtype}")
    return x, edge_index.to(torch.int64), y, members


@dataclass
class Report:
    """An audit's results: one row per (attack, seed), and per attack the bound over all seeds pooled."""

    rows: list[dict[str, Any]]
    """attack, seed, auc, tpr_at_1pct_fpr, eps_lb (this seed alone), verdict, game, note."""
    attacks: list[dict[str, Any]]
    """Per attack: eps_lb and certificate over every seed's scores pooled, verdict, runs (full results)."""
    claim: Optional[dict[str, Any]] = None
    """The declared claim as gnnaudit's accountant checked it (None: no claim)."""
    accuracy: Optional[dict[str, float]] = None
    """The model's accuracy on the members and on the other nodes."""
    baseline: Optional[dict[str, Any]] = None
    """What the model must beat on the non-members: chance and the members' majority class."""
    chance_test: Optional[dict[str, Any]] = None
    """Whether the accuracy on the non-members clears the majority class, with its named test."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    """Everything the audit returned, including the CLI-format report ("report")."""

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Report.to_pandas needs pandas: pip install pandas") from e
        return pd.DataFrame(self.rows)

    def save(self, directory: Union[str, "os.PathLike[str]"]) -> str:
        """Writes report.json, report.md and report.html into `directory`, as `gnnaudit audit` does.

        `gnnaudit check DIR --thresholds FILE` and `gnnaudit report diff` read them. Returns the
        path of report.json.
        """
        _native.save_report(json.dumps(self.raw["report"]), os.fspath(directory))
        return os.path.join(os.fspath(directory), "report.json")


def audit(
    model: Model,
    x: Any,
    edge_index: Any = None,
    y: Optional[torch.Tensor] = None,
    members: Any = None,
    *,
    attacks: Union[AttackSpec, Sequence[AttackSpec]],
    claim: Optional[Mapping[str, Any]] = None,
    control: Optional[Union[Model, TrainFn]] = None,
    train_fn: Optional[TrainFn] = None,
    seeds: Sequence[int] = (1,),
    out: Optional[str] = None,
) -> Report:
    """Audits `model` (any callable (x, edge_index) -> logits or posteriors) in-process.

    `members` (a boolean mask or node ids) are the nodes it trained on. A PyG `Data` may stand in
    for `x, edge_index, y`: `audit(model, data, members, ...)`. Attacks with shadow models (lira,
    mia) call `train_fn(x, edge_index, y, train_mask, seed) -> model`. `claim` is the deployment's
    `[claim]` table (mechanism, epsilon, delta, unit, ...); `control` is the same deployment with
    its noise off (a model, or a train_fn trained on the members), the positive control that lets a
    verdict say "not refuted". `out`: a folder to save the report to.
    """
    x, edge_index, y, members = _graph(x, edge_index, y, members)
    n = x.shape[0]
    ids = _members(members, n)
    specs = _attacks(attacks)
    seed_list = [int(s) for s in seeds]
    claim_json = None if claim is None else json.dumps(dict(claim))
    labels = y.detach().cpu().to(torch.int64).flatten().tolist()
    shadow = None if train_fn is None else _shadow(train_fn)
    controls = None
    if control is not None:
        control_model, control_train = _control_model(control, x, edge_index, y, ids, seed_list[0])
        # A control given as a train_fn also trains the control audit's shadow and canary models.
        control_shadow = shadow if control_train is None else _shadow(control_train)
        c = json.loads(
            _native.audit_json(
                _predictor(control_model, "control"), control_shadow, x, edge_index, labels, ids, specs, seed_list,
                claim_json, None,
            )
        )
        controls = [a["eps_lb"] for a in c["attacks"]]
    raw = json.loads(
        _native.audit_json(_predictor(model), shadow, x, edge_index, labels, ids, specs, seed_list, claim_json, controls)
    )
    report = Report(
        rows=raw["rows"],
        attacks=raw["attacks"],
        claim=raw.get("claim"),
        accuracy=raw.get("accuracy"),
        baseline=raw.get("baseline"),
        chance_test=raw.get("chance_test"),
        raw=raw,
    )
    if out is not None:
        report.save(out)
    return report


def _control_model(
    control: Any, x: torch.Tensor, edge_index: torch.Tensor, y: torch.Tensor, ids: list[int], seed: int
) -> tuple[Model, Optional[TrainFn]]:
    """The control as (model, its train_fn or None): a train_fn (five required parameters, as
    (x, edge_index, y, train_mask, seed); a model takes two) is trained on the members."""
    try:
        required = [
            p
            for p in inspect.signature(control).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):
        required = []
    if not isinstance(control, torch.nn.Module) and len(required) == 5:
        mask = torch.zeros(x.shape[0], dtype=torch.bool)
        mask[ids] = True
        return control(x, edge_index, y, mask, seed), control
    return control, None
