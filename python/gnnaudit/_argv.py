"""Keyword arguments to CLI flags, shared by the wrappers that call a `gnnaudit` subcommand in-process."""

from __future__ import annotations

from typing import Any, Mapping


def flags(params: Mapping[str, Any]) -> list[str]:
    """`key=value` to `--key value`; True to a bare `--key`; None and False to nothing.

    Floats go through repr, which keeps every digit (the CLI parses them back exactly).
    """
    argv: list[str] = []
    for key, value in params.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, (int, float, str)):
            argv += [flag, value if isinstance(value, str) else repr(value)]
        else:
            raise TypeError(f"{key}: expected a number, string or bool, got {type(value).__name__}")
    return argv
