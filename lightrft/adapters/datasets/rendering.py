"""Turning prompt content into the text and token ids of a :class:`PromptRecord`.

Content is either a user message (``str``) or a chat (a list of ``{"role", "content"}``
messages). With a chat template (``render="chat"``, or ``"auto"`` when the tokenizer has
one) the messages, a configured system prompt first, go through
``tokenizer.apply_chat_template(add_generation_prompt=True)`` and the text is tokenized
without adding special tokens (the template holds them). As plain text (``render="plain"``,
or ``"auto"`` without a template) the message contents are joined by blank lines and the
tokenizer adds its usual special tokens. Prompts longer than ``max_prompt_tokens``
(``on_overlong``) lose tokens from the left ("left": the end of a prompt, where the question
and the generation prompt sit, survives), from the right ("right": the beginning survives;
a chat loses its generation prompt), are dropped ("skip"), or raise
:class:`PromptTooLongError` ("error").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

RenderMode = Literal["auto", "chat", "plain"]
OverlongPolicy = Literal["left", "right", "skip", "error"]
OVERLONG_POLICIES = ("left", "right", "skip", "error")
Content = str | Sequence[Mapping[str, Any]]

_TOKENIZE_BATCH = 1024


@dataclass(frozen=True)
class PromptFormat:
    """How prompts are rendered and bounded (shared by every prompt source)."""

    system_prompt: str | None = None
    render: RenderMode = "auto"
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_prompt_tokens: int | None = None
    on_overlong: OverlongPolicy = "left"

    def __post_init__(self) -> None:
        if self.render not in ("auto", "chat", "plain"):
            raise ValueError(f"render must be auto, chat or plain, got {self.render!r}")
        if self.on_overlong not in OVERLONG_POLICIES:
            raise ValueError(
                f"on_overlong must be one of {', '.join(OVERLONG_POLICIES)}, "
                f"got {self.on_overlong!r}"
            )
        if self.max_prompt_tokens is not None and self.max_prompt_tokens < 1:
            raise ValueError(f"max_prompt_tokens must be >= 1, got {self.max_prompt_tokens}")


class PromptTooLongError(ValueError):
    """A prompt longer than ``max_prompt_tokens`` under ``on_overlong="error"``."""

    def __init__(self, tokens: int, limit: int) -> None:
        super().__init__(f"prompt of {tokens} tokens is longer than max_prompt_length ({limit})")
        self.tokens, self.limit = tokens, limit


@dataclass(frozen=True)
class RenderedPrompt:
    """Text and token ids of one prompt; ``truncated_tokens`` were cut from it."""

    text: str
    token_ids: tuple[int, ...]
    truncated_tokens: int = 0


class PromptRenderer:
    """Renders and tokenizes prompt content with a Hugging Face tokenizer (or processor)."""

    def __init__(self, tokenizer: Any, prompt_format: PromptFormat | None = None) -> None:
        self.tokenizer = tokenizer
        self.format = prompt_format or PromptFormat()
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if self.format.render == "chat" and not has_template:
            raise ValueError("render='chat' but the tokenizer has no chat_template")
        self.uses_chat_template = self.format.render == "chat" or (
            self.format.render == "auto" and has_template
        )

    def messages(self, content: Content) -> list[dict[str, Any]]:
        """The chat of ``content``: the system prompt (unless the chat has one), then it."""
        chat = (
            [{"role": "user", "content": content}]
            if isinstance(content, str)
            else [dict(message) for message in content]
        )
        system = self.format.system_prompt
        if system is not None and not (chat and chat[0].get("role") == "system"):
            chat.insert(0, {"role": "system", "content": system})
        return chat

    def text(self, content: Content) -> str:
        """The rendered prompt text of ``content``."""
        chat = self.messages(content)
        if self.uses_chat_template:
            rendered = self.tokenizer.apply_chat_template(
                chat,
                tokenize=False,
                add_generation_prompt=True,
                **dict(self.format.chat_template_kwargs),
            )
            return str(rendered)
        return "\n\n".join(str(message["content"]) for message in chat)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each rendered text (batched through the fast tokenizer)."""
        ids: list[list[int]] = []
        add_special = not self.uses_chat_template
        for start in range(0, len(texts), _TOKENIZE_BATCH):
            batch = list(texts[start : start + _TOKENIZE_BATCH])
            ids.extend(self.tokenizer(batch, add_special_tokens=add_special)["input_ids"])
        return ids

    def fit(self, text: str, token_ids: Sequence[int]) -> RenderedPrompt | None:
        """Applies ``max_prompt_tokens``: truncated (text re-decoded), ``None`` (skip), or
        :class:`PromptTooLongError`."""
        limit = self.format.max_prompt_tokens
        if limit is None or len(token_ids) <= limit:
            return RenderedPrompt(text, tuple(token_ids))
        policy = self.format.on_overlong
        if policy == "skip":
            return None
        if policy == "error":
            raise PromptTooLongError(len(token_ids), limit)
        kept = tuple(token_ids[-limit:] if policy == "left" else token_ids[:limit])
        decoded = self.tokenizer.decode(list(kept), skip_special_tokens=False)
        return RenderedPrompt(str(decoded), kept, truncated_tokens=len(token_ids) - limit)

    def render(self, content: Content) -> RenderedPrompt | None:
        """One prompt, start to end (``None`` if dropped for length)."""
        text = self.text(content)
        return self.fit(text, self.tokenize([text])[0])
