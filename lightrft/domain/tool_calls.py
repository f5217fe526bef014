"""Tool-call formats: strict parsers of the calls a model writes in its turn.

A format is registered under the name users type (``rollout.agent.tool_format``):

- ``hermes`` (Qwen2.5 / Qwen3, Hermes, SmolLM2 fine-tunes): each call is
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; text around the blocks is
  allowed. Generation stops at ``</tool_call>`` (one call per turn unless the engine
  goes on).
- ``json`` (Llama-3.1 style): the whole turn is one JSON object
  ``{"name": ..., "parameters": {...}}`` (``"arguments"`` is accepted too); a turn that does
  not start with ``{`` is a plain answer.

Parsing is strict: an unclosed block, invalid JSON, a missing or non-string ``name``, or
arguments that are not an object make the turn *malformed* (:attr:`ParsedTurn.error` says
why). The model's text is never evaluated; its size is bounded (``MAX_CALL_CHARS``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lightrft.domain.registry import Registry

MAX_CALL_CHARS = 16_384  # one call's JSON text; longer is malformed
MAX_CALLS_PER_TURN = 8


@dataclass(frozen=True)
class ToolCall:
    """One parsed call: the tool's name and its JSON-object arguments."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ParsedTurn:
    """The calls of one model turn. ``error`` (malformed) and ``calls`` exclude each other;
    neither means the turn is a plain answer."""

    calls: tuple[ToolCall, ...] = ()
    error: str | None = None

    @property
    def is_answer(self) -> bool:
        """A turn without calls and without a malformed call."""
        return not self.calls and self.error is None


@dataclass(frozen=True)
class ToolCallFormat:
    """A registered format: its parser and the stop strings that end a call."""

    name: str
    parse: Callable[[str], ParsedTurn]
    stop_strings: tuple[str, ...]


TOOL_CALL_FORMATS: Registry[ToolCallFormat] = Registry("tool-call format")


def _call_from_json(text: str, argument_keys: tuple[str, ...]) -> ToolCall | str:
    """A :class:`ToolCall` from one call's JSON text, or the reason it is malformed."""
    if len(text) > MAX_CALL_CHARS:
        return f"tool call longer than {MAX_CALL_CHARS} characters"
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        return f"tool call is not valid JSON ({error.__class__.__name__}: {error})"
    if not isinstance(value, dict):
        return "tool call must be a JSON object"
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return 'tool call needs a string "name"'
    present = [k for k in argument_keys if k in value]
    arguments = value[present[0]] if present else {}
    if not isinstance(arguments, dict):
        return f'tool call "{present[0]}" must be a JSON object'
    unknown = set(value) - {"name", *argument_keys}
    if unknown:
        return f"tool call has unknown keys {sorted(unknown)}"
    return ToolCall(name, arguments)


_HERMES_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def parse_hermes(text: str) -> ParsedTurn:
    """Calls in ``<tool_call>...</tool_call>`` blocks (see the module docstring)."""
    blocks = _HERMES_BLOCK.findall(text)
    rest = _HERMES_BLOCK.sub("", text)
    if "<tool_call>" in rest or "</tool_call>" in rest:
        return ParsedTurn(error="unbalanced <tool_call> tags")
    if len(blocks) > MAX_CALLS_PER_TURN:
        return ParsedTurn(error=f"more than {MAX_CALLS_PER_TURN} tool calls in one turn")
    calls: list[ToolCall] = []
    for block in blocks:
        call = _call_from_json(block.strip(), ("arguments",))
        if isinstance(call, str):
            return ParsedTurn(error=call)
        calls.append(call)
    return ParsedTurn(tuple(calls))


def parse_json(text: str) -> ParsedTurn:
    """The whole turn as one JSON call when it starts with ``{`` (see the module docstring)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return ParsedTurn()
    call = _call_from_json(stripped, ("parameters", "arguments"))
    if isinstance(call, str):
        return ParsedTurn(error=call)
    return ParsedTurn((call,))


TOOL_CALL_FORMATS.add("hermes", ToolCallFormat("hermes", parse_hermes, ("</tool_call>",)))
TOOL_CALL_FORMATS.add("json", ToolCallFormat("json", parse_json, ()))


def format_hermes_call(call: ToolCall) -> str:
    """The Hermes text of ``call`` (for tool-use traces and tests)."""
    payload = json.dumps({"name": call.name, "arguments": dict(call.arguments)})
    return f"<tool_call>\n{payload}\n</tool_call>"
