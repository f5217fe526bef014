"""Scalar reward models on vision- and audio-language backbones: pairs with media.

Shape letters: B pairs, T tokens.

A pair's prompt text holds one model placeholder per media item (``<|image_pad|>``,
``<|AUDIO|>``, rendered by the chat template as for the policy). Its payload is either the
decoded media (``{"images": [PIL images]}`` / ``{"audios": [(waveform, rate)]}``: preference
data, served requests) or a payload a prompt encoder already processed (RL prompts: the
policy's ``pixel_values`` ... and ``image_tokens``). :class:`PairMedia` (implemented next to
the model family's inputs, :mod:`lightrft.adapters.hf.media_reward`) expands the placeholders
of a tokenized row and gives the backbone's forward arguments.

``max_length`` counts the expanded tokens. A text row longer than it loses tokens from the
left (as always); a row with media is never cut (a cut would separate an image from its
placeholders): it is an error naming the pair and the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from torch import Tensor

from lightrft.domain.modality import Payload


class PairMedia(Protocol):
    """What a scalar reward model needs of its model family to read media."""

    @property
    def audio_sampling_rate(self) -> int | None:
        """The rate every audio clip must have (None: the model takes no audio)."""
        ...

    @property
    def requirements(self) -> Any:
        """The model's ``MediaRequirements``: its placeholders (which media it reads) and
        audio rate."""
        ...

    def expand(self, ids: Sequence[int], payload: Payload, where: str) -> tuple[list[int], Payload]:
        """``ids`` with its placeholders expanded and the processed payload (raises
        ``ValueError`` naming ``where`` when the placeholders do not match the media)."""
        ...

    def model_kwargs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> dict[str, Any]:
        """Backbone forward arguments for (B, T) rows, one payload per row."""
        ...


def expand_media_rows(
    rows: list[list[int]],
    payloads: Sequence[Payload],
    media: PairMedia | None,
    max_length: int | None,
) -> tuple[list[list[int]], tuple[Payload, ...]]:
    """Rows (untruncated) with media expanded, then bounded by ``max_length`` (see the
    module docstring); the processed payloads, one per row (``{}`` for text rows)."""
    if payloads and len(payloads) != len(rows):
        raise ValueError(f"{len(payloads)} media payloads for {len(rows)} pairs")
    out_rows, out_payloads = [], []
    for i, row in enumerate(rows):
        payload = payloads[i] if payloads else {}
        if payload:
            if media is None:
                raise ValueError(
                    f"pair {i} has media ({', '.join(sorted(payload))}) but the reward model "
                    "reads text only"
                )
            row, payload = media.expand(row, payload, f"pair {i}")
            if max_length is not None and len(row) > max_length:
                raise ValueError(
                    f"pair {i} is {len(row)} tokens with its media expanded, more than the "
                    f"reward model's max_length ({max_length}); media are never truncated: "
                    "raise max_length or send smaller images / shorter clips"
                )
        elif max_length is not None:
            row = row[-max_length:]
        out_rows.append(row)
        out_payloads.append(payload)
    return out_rows, tuple(out_payloads)
