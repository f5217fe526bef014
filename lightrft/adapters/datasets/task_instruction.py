"""A reward model's task instruction (the original LightRFT's ``--task_instruction``): the
system message of every training prompt, a template whose ``{prompt}`` is replaced by the
row's prompt text (the user's request the responses answer).

Only ``{prompt}`` is replaced (other braces stay as typed). The prompt text is the row's
prompt when it is a string, else the text of its last user message (its text parts joined by
newlines). A row's own system message gives way to the instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightrft.adapters.datasets.rendering import Content, PromptFormat, PromptRenderer


def prompt_text_of(content: Content) -> str:
    """The user's request in ``content`` (see the module docstring)."""
    if isinstance(content, str):
        return content
    users = [m for m in content if m.get("role") == "user"]
    if not users:
        return ""
    body = users[-1].get("content", "")
    if isinstance(body, str):
        return body
    return "\n".join(
        str(part.get("text", "")) for part in body if isinstance(part, Mapping) and "text" in part
    )


class TaskInstructionRenderer(PromptRenderer):
    """A :class:`PromptRenderer` whose system message is ``instruction`` with the row's
    prompt text in place of ``{prompt}``."""

    def __init__(
        self, tokenizer: Any, instruction: str, prompt_format: PromptFormat | None = None
    ) -> None:
        super().__init__(tokenizer, prompt_format)
        self.instruction = instruction

    def messages(self, content: Content) -> list[dict[str, Any]]:
        chat = [m for m in super().messages(content) if m.get("role") != "system"]
        system = self.instruction.replace("{prompt}", prompt_text_of(content))
        return [{"role": "system", "content": system}, *chat]
