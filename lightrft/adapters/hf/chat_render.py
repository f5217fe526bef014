"""``HfChatRenderer``: the rollout gateway's ``ChatRenderer`` port on an HF tokenizer's chat
template, for OpenAI-format messages.

A whole conversation (an agent's first call, or a call that rewrote its history) is the
template applied with the generation prompt, tokenized without special-token additions; the
messages after a model turn the agent kept are rendered incrementally by
:class:`~lightrft.adapters.hf.chat_turns.HfTurnRenderer` (one per tool list), so the sampled
ids are never re-tokenised. OpenAI tool calls (``function.arguments`` a JSON string) are
given to the template as objects, as HF templates expect.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.domain.agent import ChatMessage, ToolSpec


def template_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` as HF chat templates read it (tool-call arguments parsed)."""
    out = dict(message)
    if out.get("content") is None:
        out["content"] = ""
    calls = out.get("tool_calls")
    if calls:
        parsed = []
        for call in calls:
            function = dict(call.get("function", {}))
            if isinstance(function.get("arguments"), str):
                try:
                    function["arguments"] = json.loads(function["arguments"])
                except ValueError:
                    pass
            parsed.append({**call, "type": "function", "function": function})
        out["tool_calls"] = parsed
    return out


def tool_specs(tools: Sequence[Mapping[str, Any]]) -> tuple[ToolSpec, ...]:
    """OpenAI tool objects as :class:`ToolSpec`."""
    out = []
    for tool in tools:
        function = tool["function"]
        out.append(
            ToolSpec(
                str(function["name"]),
                str(function.get("description", "")),
                dict(function.get("parameters") or {}),
            )
        )
    return tuple(out)


class HfChatRenderer:
    """The ``ChatRenderer`` port (see the module docstring)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tokenizer = tokenizer
        self._turns: dict[str, HfTurnRenderer] = {}

    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> tuple[int, ...]:
        """The conversation with the generation prompt, tokenized."""
        text = self.tokenizer.apply_chat_template(
            [template_message(m) for m in messages],
            tools=[dict(t) for t in tools] or None,
            add_generation_prompt=True,
            tokenize=False,
        )
        return tuple(self.tokenizer.encode(str(text), add_special_tokens=False))

    def observation_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        generated: Sequence[int],
        tools: Sequence[Mapping[str, Any]],
    ) -> tuple[int, ...]:
        """The rest of the model's turn, ``messages`` and the next assistant header."""
        key = json.dumps([dict(t) for t in tools], sort_keys=True)
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = HfTurnRenderer(self.tokenizer, tools=tool_specs(tools))
        chat = [
            ChatMessage(str(m.get("role")), str(m.get("content") or ""), m.get("name"))
            for m in messages
        ]
        return turns.observation_ids(chat, generated)

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of ``token_ids`` without special tokens."""
        return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=True))
