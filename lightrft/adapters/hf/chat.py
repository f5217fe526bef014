"""``HfChat``: a conversation with a causal LM, turn by turn, through its chat template.

Each turn renders the whole conversation (optional system message, every user and
assistant message so far) with the tokenizer's chat template and samples the reply with
:class:`HfRolloutEngine` (the sampler rollouts use). A tokenizer without a chat template
gets a plain ``User:`` / ``Assistant:`` transcript.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.adapters.hf.rollout import HfRolloutEngine
from lightrft.domain.types import PromptRecord, SamplingParams


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
        self.reset()

    def reset(self) -> None:
        """Forgets the conversation (the system message stays)."""
        self.messages = [{"role": "system", "content": self._system}] if self._system else []

    def reply(self, text: str) -> str:
        """Adds the user's ``text``, samples the assistant's reply, adds and returns it."""
        self.messages.append({"role": "user", "content": text})
        prompt = self._render()
        ids = self._tokenizer(prompt, add_special_tokens=False)["input_ids"]
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
