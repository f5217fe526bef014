"""``HfChat``: a conversation with a causal LM, turn by turn, through its chat template.

Each turn renders the whole conversation (optional system message, every user and
assistant message so far) with the tokenizer's chat template and samples the reply with
:class:`HfRolloutEngine` (the sampler rollouts use). A tokenizer without a chat template
gets a plain ``User:`` / ``Assistant:`` transcript. A vision-language model's turn may carry
images (:class:`ChatMedia`: its prompt encoder and the engine's media inputs): they are
image parts of that user message, for that turn only (the history keeps its text).

The conversation is bounded by the model's context: a message that cannot fit with the reply
budget is refused (:class:`ChatInputTooLong`, one line) and the conversation stays as it was.
A message longer than the context could hold even at the vocabulary's longest token is
refused before it is tokenized (tokenizing a 3 MB word took minutes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.multimodal_inputs import MultimodalInputs
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


@dataclass(frozen=True)
class ChatMedia:
    """What a model reading images needs to answer a turn that has some: the prompt
    encoder (processes the images, expands their placeholders) and the engine's inputs."""

    encoder: Any
    inputs: MultimodalInputs


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
        media: ChatMedia | None = None,
    ) -> None:
        inputs = None if media is None else media.inputs
        self._engine = HfRolloutEngine(model, tokenizer, device, multimodal=inputs)
        self._media = media
        self._tokenizer = tokenizer
        self._sampling = sampling
        self._system = system
        self.messages: list[dict[str, Any]] = []
        self._positions = context_positions(model)
        self._longest_token = max((len(t) for t in tokenizer.get_vocab()), default=1)
        self.reset()

    def reset(self) -> None:
        """Forgets the conversation (the system message stays)."""
        self.messages = [{"role": "system", "content": self._system}] if self._system else []

    @property
    def reads_images(self) -> bool:
        """Whether a turn may carry images."""
        return self._media is not None

    def reply(self, text: str, images: Sequence[Any] = ()) -> str:
        """Adds the user's ``text`` (with ``images``, PIL images, for this turn), samples the
        assistant's reply, adds and returns it. Raises :class:`ChatInputTooLong` (the
        conversation unchanged) when the conversation with ``text`` and the reply budget
        would not fit in the model's context."""
        if images and self._media is None:
            raise ValueError("images need a vision-language model; this model reads text only")
        room = self._positions - self._sampling.max_new_tokens
        if len(text) > max(room, 0) * self._longest_token:
            raise ChatInputTooLong(
                f"a message of {len(text)} characters cannot fit in the model's context "
                f"({self._positions} positions, {self._sampling.max_new_tokens} kept for the "
                "reply); send a shorter one"
            )
        parts = [{"type": "image"} for _ in images] + [{"type": "text", "text": text}]
        self.messages.append({"role": "user", "content": parts if images else text})
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
        if images and self._media is not None:
            record = self._media.encoder.encode(replace(record, multimodal={"images": [*images]}))
        answer = self._engine.generate([record], self._sampling)[0].text.strip()
        self.messages[-1] = {"role": "user", "content": text}  # images: this turn only
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
