"""Scores and masks given as numpy arrays, torch tensors or lists, as flat lists of floats."""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

ArrayLike = Union["np.ndarray", "Any", Sequence[float]]


def as_float_list(values: ArrayLike, name: str) -> list[float]:
    """A 1-D sequence of numbers as floats; anything else is a TypeError or ValueError naming `name`."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor, without importing torch
        values = values.detach().cpu().numpy()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") and not hasattr(values, "__array__"):
        raise TypeError(f"{name}: expected a numpy array, torch tensor or list of scores, got {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: expected numbers, could not convert ({e})") from None
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of scores, got shape {list(array.shape)}")
    return array.tolist()
