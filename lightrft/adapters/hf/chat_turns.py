"""``HfTurnRenderer``: observations rendered with a tokenizer's chat template, incrementally.

The model's own turns are never re-rendered or re-tokenized: the rollout keeps their ids as
generated. Only what follows a turn is rendered, once:

1. the rest of the assistant turn the model did not generate: the template's text after an
   assistant message's content (``<|im_end|>\\n`` for ChatML, ``<|eot_id|>`` for Llama 3),
   minus the end-of-turn token when the model generated it (a turn cut at a tool call's
   stop string gets the whole of it);
2. the observation messages and the next assistant header: the difference between the
   template applied to ``[user, assistant, *messages]`` with the generation prompt and to
   ``[user, assistant]``. All messages of one environment step are rendered together,
   because templates such as Qwen2.5's merge consecutive tool messages into one turn.

The text is tokenized without special-token additions. This equals re-tokenizing the whole
conversation when the template is prefix-stable (each message renders the same whatever
follows it) and the pieces meet at special tokens; ``docs/agents.md`` lists the templates
tested (SmolLM2, Qwen2.5, Llama 3) and where a template is not prefix-stable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.domain.agent import ChatMessage, ToolSpec

_SENTINEL = "\u2063lightrft-turn\u2063"
_BASE: list[dict[str, Any]] = [{"role": "user", "content": "q"}]


class TemplateNotPrefixStableError(ValueError):
    """The chat template renders the earlier conversation differently once the observation
    is appended, so no incremental rendering can match it."""


def _message(m: ChatMessage) -> dict[str, Any]:
    """``m`` as a template reads it; with images, content parts (the images, then the text),
    as vision-language templates take them."""
    content: Any = m.content
    if m.images:
        content = [*({"type": "image"} for _ in m.images), {"type": "text", "text": m.content}]
    out: dict[str, Any] = {"role": m.role, "content": content}
    if m.name is not None:
        out["name"] = m.name
    return out


class HfTurnRenderer:
    """The ``TurnRenderer`` port on an HF tokenizer's chat template (see the module doc).

    Args:
        tokenizer: with a ``chat_template`` (or pass ``chat_template``).
        tools: tool specs passed to the template (templates that describe tools in the
            system prompt need them to render the same system prompt as the dataset did).
        chat_template: overrides the tokenizer's template.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        *,
        tools: Sequence[ToolSpec] = (),
        chat_template: str | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.tools: list[dict[Any, Any] | Callable[..., Any]] | None = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in tools
        ] or None
        closed = self._render([*_BASE, {"role": "assistant", "content": _SENTINEL}], False)
        self._closed_text = closed
        self.turn_tail = closed[closed.rindex(_SENTINEL) + len(_SENTINEL) :]
        tail_ids = tokenizer.encode(self.turn_tail, add_special_tokens=False)
        special = set(tokenizer.all_special_ids) | set(
            getattr(tokenizer, "added_tokens_decoder", {})
        )
        self.end_of_turn_id: int | None = (
            tail_ids[0] if tail_ids and tail_ids[0] in special else None
        )
        self._after_end = (
            self.turn_tail[len(tokenizer.decode([self.end_of_turn_id])) :]
            if self.end_of_turn_id is not None
            else self.turn_tail
        )

    def _render(self, messages: list[dict[str, Any]], generation_prompt: bool) -> str:
        text = self.tokenizer.apply_chat_template(
            messages,
            tools=self.tools,
            chat_template=self.chat_template,
            add_generation_prompt=generation_prompt,
            tokenize=False,
        )
        return str(text)

    def observation_text(self, messages: Sequence[ChatMessage], generated: Sequence[int]) -> str:
        """The text :meth:`observation_ids` tokenizes."""
        conversation = [*_BASE, {"role": "assistant", "content": _SENTINEL}]
        full = self._render([*conversation, *(_message(m) for m in messages)], True)
        if not full.startswith(self._closed_text):
            raise TemplateNotPrefixStableError(
                "the chat template renders the assistant turn differently once "
                f"{[m.role for m in messages]} messages follow it; an incremental rendering "
                "cannot match it (see docs/agents.md, prefix stability)"
            )
        closed = bool(generated) and generated[-1] == self.end_of_turn_id
        rest = self._after_end if closed else self.turn_tail
        return rest + full[len(self._closed_text) :]

    def observation_ids(
        self, messages: Sequence[ChatMessage], generated: Sequence[int]
    ) -> tuple[int, ...]:
        """The ids after a model turn ``generated``: the rest of its assistant turn,
        ``messages`` and the next assistant header (see the module docstring)."""
        text = self.observation_text(messages, generated)
        return tuple(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of ``token_ids`` with special tokens kept."""
        return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=False))
