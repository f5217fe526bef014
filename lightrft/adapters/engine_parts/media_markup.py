"""The text a model's chat template writes for one media part (an image, a video, an audio
clip) of a user message: what a generative judge's prompt and a scalar reward model's media
response hold for each item, so that the layout is the template's own."""

from __future__ import annotations

from typing import Any


def media_markup(tokenizer: Any, kind: str) -> str:
    """What ``tokenizer``'s chat template writes for one ``kind`` part (e.g.
    ``<|vision_start|><|image_pad|><|vision_end|>``): the difference of a message with and
    without the part; ``ValueError`` when the template does not render it before text."""
    marker = "\x00judge-text\x00"

    def rendered(parts: list[dict[str, str]]) -> str:
        message = {"role": "user", "content": [*parts, {"type": "text", "text": marker}]}
        return str(tokenizer.apply_chat_template([message], tokenize=False))

    with_part, without = rendered([{"type": kind}]), rendered([])
    head = without.index(marker)
    if with_part[:head] != without[:head] or not with_part.endswith(without[head:]):
        raise ValueError(f"the chat template does not render a {kind} part before text")
    return with_part[head : len(with_part) - len(without) + head]
