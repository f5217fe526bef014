"""The OpenAI chat-completions wire format: requests checked into
:class:`~lightrft.domain.gateway_calls.ChatRequest`, replies written as JSON.

Accepted: ``messages`` (objects with a string ``role``; ``content`` a string, ``null`` or a
list of ``{"type": "text", "text": ...}`` parts, joined), ``tools`` (``{"type":
"function", "function": {"name", "description", "parameters"}}``), ``n``, ``max_tokens`` (or
``max_completion_tokens``), ``temperature``; ``model`` and other sampling fields are
ignored. ``stream: true`` is refused (not built). A request that does not fit is a
:class:`WireError` naming the field.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Mapping
from typing import Any

from lightrft.domain.gateway_calls import ChatReply, ChatRequest

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


class WireError(ValueError):
    """A request body that is not a valid chat-completions request (HTTP 400)."""


def chat_request(body: Any) -> ChatRequest:
    """The checked request of a JSON body; raises :class:`WireError`."""
    if not isinstance(body, dict):
        raise WireError("the body must be a JSON object")
    if body.get("stream"):
        raise WireError("stream: true is not supported by the rollout gateway; ask without it")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError("'messages' must be a non-empty list")
    checked = tuple(_message(m, i) for i, m in enumerate(messages))
    tools = body.get("tools") or []
    if not isinstance(tools, list) or not all(_is_tool(t) for t in tools):
        raise WireError(
            "'tools' must be a list of {type: function, function: {name, parameters}} objects"
        )
    n = body.get("n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise WireError("'n' must be a positive integer")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise WireError("'max_tokens' must be a positive integer")
    temperature = body.get("temperature")
    if temperature is not None and (
        not isinstance(temperature, int | float)
        or isinstance(temperature, bool)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise WireError("'temperature' must be a number >= 0")
    return ChatRequest(
        checked,
        tuple(tools),
        n=n,
        max_tokens=max_tokens,
        temperature=None if temperature is None else float(temperature),
    )


def _message(message: Any, index: int) -> Mapping[str, Any]:
    where = f"messages[{index}]"
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        raise WireError(f"{where} needs a 'role', one of {sorted(ROLES)}")
    content = message.get("content")
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        if len(parts) != len(content) or not all(isinstance(p, str) for p in parts):
            raise WireError(f"{where}.content parts must be {{type: text, text: ...}} objects")
        content = "".join(parts)  # type: ignore[arg-type]
    elif content is not None and not isinstance(content, str):
        raise WireError(f"{where}.content must be a string, a list of text parts or null")
    out = {k: v for k, v in message.items() if k != "content"}
    out["content"] = content
    calls = message.get("tool_calls")
    if calls is not None and (
        not isinstance(calls, list)
        or not all(isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls)
    ):
        raise WireError(f"{where}.tool_calls must be a list of {{function: {{...}}}} objects")
    return out


def _is_tool(tool: Any) -> bool:
    if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
        return False
    return isinstance(tool["function"].get("name"), str)


def chat_reply(reply: ChatReply) -> dict[str, Any]:
    """The chat-completions JSON of ``reply`` (``system_fingerprint`` names the policy
    version that sampled it)."""
    choices = []
    for index, choice in enumerate(reply.choices):
        message: dict[str, Any] = {"role": "assistant", "content": choice.text or None}
        if choice.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{index}_{k}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                }
                for k, c in enumerate(choice.tool_calls)
            ]
        choices.append({"index": index, "message": message, "finish_reason": choice.finish_reason})
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "system_fingerprint": f"lightrft-policy-v{reply.policy_version}",
        "choices": choices,
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def error_body(message: str, kind: str) -> dict[str, Any]:
    """An OpenAI-style error object."""
    return {"error": {"message": message, "type": kind}}
