"""What the jobs use of a tokenizer (an HF tokenizer or a multimodal processor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Tokenizer(Protocol):
    """The pad token and decoding of a tokenizer or processor."""

    @property
    def pad_token_id(self) -> int | None: ...

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = ...) -> str: ...
