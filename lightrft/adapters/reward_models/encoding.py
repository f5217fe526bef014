"""Tokenizing (prompt, response) pairs for a scalar reward model, the same way at training
and at scoring time.

Shape letters: B pairs, T tokens. The prompt text is used as given (already rendered by the
chat template, as the policy saw it: :mod:`lightrft.adapters.datasets.rendering`); the
response text follows it. Both are tokenized separately and concatenated, the prompt with the
tokenizer's special tokens only when ``prompt_special_tokens`` (plain-text prompts; a chat
template already holds them), the response never. A pair longer than ``max_length`` loses
tokens from the left of the prompt, so the response (whose last token is scored) survives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

PaddingSide = Literal["left", "right"]


@dataclass(frozen=True)
class PairEncoding:
    """How pairs become token ids (saved with the model, so scoring matches training)."""

    prompt_special_tokens: bool = False
    max_length: int | None = None

    def __post_init__(self) -> None:
        if self.max_length is not None and self.max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {self.max_length}")


def encode_pairs(
    tokenizer: Any,
    prompts: Sequence[str],
    responses: Sequence[str],
    encoding: PairEncoding,
    *,
    padding_side: PaddingSide = "right",
) -> tuple[Tensor, Tensor]:
    """Token ids and attention mask, both (B, T), of ``prompt + response`` per pair."""
    rows = pair_rows(tokenizer, prompts, responses, encoding)
    if encoding.max_length is not None:
        rows = [row[-encoding.max_length :] for row in rows]
    return pad_rows(tokenizer, rows, padding_side)


def pair_rows(
    tokenizer: Any, prompts: Sequence[str], responses: Sequence[str], encoding: PairEncoding
) -> list[list[int]]:
    """The untruncated token ids of ``prompt + response`` per pair."""
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    if not prompts:
        raise ValueError("encode_pairs needs at least one pair")
    prompt_ids = tokenizer(list(prompts), add_special_tokens=encoding.prompt_special_tokens)
    response_ids = tokenizer(list(responses), add_special_tokens=False)
    rows = []
    for i, (p, r) in enumerate(
        zip(prompt_ids["input_ids"], response_ids["input_ids"], strict=True)
    ):
        row = list(p) + list(r)
        if not row:
            raise ValueError(f"pair {i} has no tokens (empty prompt and response)")
        rows.append(row)
    return rows


def pad_rows(
    tokenizer: Any, rows: Sequence[Sequence[int]], padding_side: PaddingSide = "right"
) -> tuple[Tensor, Tensor]:
    """``rows`` padded to one width: ids and attention mask, both (B, T)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        start = 0 if padding_side == "right" else width - len(row)
        ids[i, start : start + len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, start : start + len(row)] = 1
    return ids, mask
