"""``HfChat``: a conversation with a causal LM, turn by turn, through its chat template.

Each turn renders the whole conversation (optional system message, every user and
assistant message so far) with the tokenizer's chat template and samples the reply with
:class:`HfRolloutEngine` (the sampler rollouts use). A tokenizer without a chat template
gets a plain ``User:`` / ``Assistant:`` transcript.

The conversation is bounded by the model's context: a message that cannot fit with the reply
budget is refused (:class:`ChatInputTooLong`, one line) and the conversation stays as it was.
A message longer than the context could hold even at the vocabulary's longest token is
refused before it is tokenized (tokenizing a 3 MB word took minutes).
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.rollout import HfRolloutEngine
from lightrft.domain.types import PromptRecord, SamplingParams

UNBOUNDED_POSITIONS = 1 << 20
"""The context assumed for a model whose config names none."""


class ChatInputTooLong(ValueError):
    """A message that cannot fit in the model's context; the conversation is unchanged."""


def context_positions(model: PreTrainedModel) -> int:
    """The positions ``model`` attends over (its text model's ``max_position_embeddings``)."""
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    value = getattr(text, "max_position_embeddings", None)
    return int(value) if isinstance(value, int) and value > 0 else UNBOUNDED_POSITIONS


class HfChat:
    """The conversation so far and how to continue it."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        device: torch.device,
        sampling: SamplingParams,
        *,
        system: str | None = None,
    ) -> None:
        self._engine = HfRolloutEngine(model, tokenizer, device)
        self._tokenizer = tokenizer
        self._sampling = sampling
        self._system = system
        self.messages: list[dict[str, str]] = []
        self._positions = context_positions(model)
        self._longest_token = max((len(t) for t in tokenizer.get_vocab()), default=1)
        self.reset()

    def reset(self) -> None:
        """Forgets the conversation (the system message stays)."""
        self.messages = [{"role": "system", "content": self._system}] if self._system else []

    def reply(self, text: str) -> str:
        """Adds the user's ``text``, samples the assistant's reply, adds and returns it.
        Raises :class:`ChatInputTooLong` (the conversation unchanged) when the conversation
        with ``text`` and the reply budget would not fit in the model's context."""
        room = self._positions - self._sampling.max_new_tokens
        if len(text) > max(room, 0) * self._longest_token:
            raise ChatInputTooLong(
                f"a message of {len(text)} characters cannot fit in the model's context "
                f"({self._positions} positions, {self._sampling.max_new_tokens} kept for the "
                "reply); send a shorter one"
            )
        self.messages.append({"role": "user", "content": text})
        prompt = self._render()
        ids = self._tokenizer(prompt, add_special_tokens=False)["input_ids"]
        if len(ids) > room:
            self.messages.pop()
            raise ChatInputTooLong(
                f"the conversation with this message is {len(ids)} tokens and the model has "
                f"{self._positions} positions ({self._sampling.max_new_tokens} kept for the "
                "reply); send a shorter message, or /reset to forget the conversation"
            )
        record = PromptRecord(f"turn{len(self.messages)}", prompt, tuple(ids))
        answer = self._engine.generate([record], self._sampling)[0].text.strip()
        self.messages.append({"role": "assistant", "content": answer})
        return answer

    def _render(self) -> str:
        if getattr(self._tokenizer, "chat_template", None):
            return str(
                self._tokenizer.apply_chat_template(
                    self.messages, tokenize=False, add_generation_prompt=True
                )
            )
        lines = [f"{m['role'].capitalize()}: {m['content']}" for m in self.messages]
        return "\n".join([*lines, "Assistant:"])
