"""``FakeChatRenderer``: the gateway's ``ChatRenderer`` port over the synthetic task's
vocabulary (:mod:`lightrft.adapters.fakes.task`): a message renders as the digits of its
content followed by ``=`` (an assistant message: its digits then EOS)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.adapters.fakes import task


def _digits(message: Mapping[str, Any]) -> tuple[int, ...]:
    content = message.get("content") or ""
    return task.encode_digits("".join(c for c in content if c in task.DIGIT_CHARS))


class FakeChatRenderer:
    """Renders OpenAI-format messages into the task's ids. Records ``whole`` (full
    renderings) and ``incremental`` (observation renderings)."""

    def __init__(self) -> None:
        self.whole = 0
        self.incremental = 0

    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> tuple[int, ...]:
        """Each message's digits, then ``=`` (EOS after an assistant's)."""
        self.whole += 1
        out: list[int] = []
        for m in messages:
            end = task.EOS_ID if m.get("role") == "assistant" else task.EQUALS_ID
            out.extend((*_digits(m), end))
        if messages and messages[-1].get("role") == "assistant":
            out.append(task.EQUALS_ID)
        return tuple(out)

    def observation_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        generated: Sequence[int],
        tools: Sequence[Mapping[str, Any]],
    ) -> tuple[int, ...]:
        """EOS if the turn did not end with one, then each message's digits and ``=``."""
        self.incremental += 1
        close = () if generated and generated[-1] == task.EOS_ID else (task.EOS_ID,)
        body = tuple(t for m in messages for t in (*_digits(m), task.EQUALS_ID))
        return (*close, *body)

    def decode(self, token_ids: Sequence[int]) -> str:
        """The task's text of ``token_ids`` (EOS and pad dropped)."""
        return task.decode(token_ids)
