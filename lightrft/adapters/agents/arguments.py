"""Checking a tool call's arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightrft.domain.agent import ToolError


def only_string_argument(arguments: Mapping[str, Any], key: str, tool: str) -> str:
    """``arguments[key]`` when it is the only argument and a string; ToolError otherwise."""
    value = arguments.get(key)
    if not isinstance(value, str) or set(arguments) != {key}:
        raise ToolError(f'{tool} takes one string argument "{key}"')
    return value
