"""One multimodal input builder with per-modality parts (images, audio clips).

Shape letters: B rows, T tokens.

Both halves of :mod:`~lightrft.adapters.hf.multimodal_inputs` do the same thing for every
modality, and only one step differs; the common steps are here once:

- :class:`MediaEncoder` (the prompt encoder): take the record's media items (checked against
  its placeholders), let the modality :meth:`~MediaEncoder.process` them into tensors and a
  position count per item, expand each placeholder to its count, and store the payload
  (the tensors, ``<noun>_tokens``, ``where`` and the cost); the payload's other entries
  stay, so encoders of two media applied one after the other (a model that reads images
  and audio) leave both media's tensors in one payload, their costs added; a prompt record
  also keeps its raw items (:mod:`~lightrft.adapters.engine_parts.source_media`) for engines
  that process media themselves (vLLM);
- :class:`MediaInputs` (the forward arguments): check every row's placeholder count, give
  text positions (1-D, counting attended tokens, zero offsets), and let the modality add its
  media arguments (and its own positions, e.g. M-RoPE) when some row has media.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from lightrft.adapters.engine_parts.source_media import SourceMedia, with_source_media
from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.multimodal_inputs import (
    MediaRequirements,
    ModelInputs,
    row_name,
    unwrapped,
)
from lightrft.adapters.hf.packed_media import pack_model_inputs
from lightrft.domain.modality import COST_KEY, Payload, media_cost
from lightrft.domain.types import PromptRecord


def check_placeholders(
    input_ids: Tensor, payloads: Sequence[Payload], token_id: int, count_key: str, what: str
) -> None:
    """Every row holds as many ``token_id`` tokens as its payload's ``count_key`` entries sum
    to; raises ``ValueError`` naming the first row that does not."""
    found = (input_ids == token_id).sum(-1).tolist()  # [B]
    for row, (have, payload) in enumerate(zip(found, payloads, strict=True)):
        if payload and COST_KEY not in payload:  # raw media, e.g. {"images": [PIL ...]}
            raise ValueError(
                f"{row_name(payload, row)}: its media were not encoded (payload keys "
                f"{sorted(payload)}); records must go through the model's prompt encoder "
                "(EncodedPromptSource) before they are batched"
            )
        want = sum(payload.get(count_key, ())) if payload else 0
        if have != want:
            raise ValueError(
                f"{row_name(payload, row)}: {have} {what} placeholder tokens but its media "
                f"need {want}; the prompt's placeholders do not match its media"
            )


def checked_media(record: PromptRecord, key: str, placeholder: int, what: str) -> list[Any]:
    """The media items ``record.multimodal[key]``, checked to match the prompt's count of
    ``placeholder`` tokens; raises ``ValueError`` naming the record's row otherwise."""
    items = list(record.multimodal.get(key, ()))
    pads = record.prompt_token_ids.count(placeholder)
    if pads != len(items):
        where = record.metadata.get("where", record.uid)
        raise ValueError(
            f"{where}: the prompt holds {pads} {what} placeholder token(s) (id {placeholder}) "
            f"but multimodal[{key!r}] has {len(items)} item(s); expected one placeholder per item"
            " (ids whose placeholders were already expanded, e.g. by a processor, must be "
            "rendered again with one per item)"
        )
    return items


def expand_placeholders(
    ids: Sequence[int],
    placeholder: int,
    counts: Sequence[int],
    item_ids: Callable[[int], Sequence[int]] | None = None,
) -> tuple[int, ...]:
    """``ids`` with the i-th ``placeholder`` repeated ``counts[i]`` times (or replaced by
    ``item_ids(counts[i])``, for a family that wraps an item's placeholders in other tokens)."""
    out: list[int] = []
    item = 0
    for token in ids:
        if token == placeholder:
            count = counts[item]
            out.extend([placeholder] * count if item_ids is None else item_ids(count))
            item += 1
        else:
            out.append(token)
    return tuple(out)


def concat_payload_tensors(payloads: Sequence[Payload], key: str) -> Tensor | None:
    """``payload[key]`` of every row that has it, concatenated along dim 0 (or ``None``)."""
    parts = [p[key] for p in payloads if p and key in p]
    return torch.cat(parts) if parts else None


def model_dtype(model: nn.Module) -> torch.dtype:
    """The floating dtype of ``model``'s parameters (media features are cast to it)."""
    for param in model.parameters():
        if param.is_floating_point():
            return param.dtype
    return torch.float32


@dataclass(frozen=True)
class ProcessedMedia:
    """A record's media as model tensors: ``counts[i]`` positions for item i, ``cost`` in all."""

    tensors: dict[str, Tensor]
    counts: list[int]
    cost: int


@dataclass(frozen=True)
class MediaArguments:
    """A modality's forward arguments for a batch; ``position_offsets`` (B, 1) when it sets
    its own ``position_ids`` (None: the text positions stand)."""

    kwargs: dict[str, Any]
    position_offsets: Tensor | None = None


class MediaEncoder(ABC):
    """Prompt encoder of one modality: ``media_key`` items, one ``token`` placeholder each."""

    media_key: ClassVar[str]  # the record's multimodal key ("images", "audios")
    noun: ClassVar[str]  # in messages and the payload's "<noun>_tokens" ("image", "audio")

    def __init__(self, tokenizer: Any, token: str, processor: Any) -> None:
        self._token, self._processor = token, processor
        self._pad = int(tokenizer.convert_tokens_to_ids(token))

    @property
    @abstractmethod
    def requirements(self) -> MediaRequirements:
        """The placeholders and audio rate :meth:`encode` expects of every record."""

    @abstractmethod
    def process(self, items: list[Any], where: str) -> ProcessedMedia:
        """The tensors and position counts of ``items`` (``where`` names the row in errors)."""

    def encode(self, record: PromptRecord) -> PromptRecord:
        """``record`` with its media processed and placeholders expanded (text: unchanged);
        ``ValueError`` for a record encoded already (expanding its placeholders again would
        misalign them with the media)."""
        done = record.multimodal.get(f"{self.noun}_tokens")
        if done is not None:
            where = record.metadata.get("where", record.uid)
            raise ValueError(
                f"{where}: the record is encoded already (its {self.noun} placeholders were "
                f"expanded to {tuple(done)} positions); encode each record once"
            )
        items = checked_media(record, self.media_key, self._pad, self.noun)
        if not items:
            return record
        where = str(record.metadata.get("where", record.uid))
        # other media, raw or processed by another encoder (a composite's), stay
        rest = {k: v for k, v in record.multimodal.items() if k != self.media_key}
        ids, payload = self.encode_ids(record.prompt_token_ids, items, where, rest=rest)
        counts = tuple(payload[f"{self.noun}_tokens"])
        raw = SourceMedia(self.noun, self._pad, tuple(items), counts)
        return replace(record, prompt_token_ids=ids, multimodal=with_source_media(payload, raw))

    def encode_ids(
        self,
        ids: Sequence[int],
        items: list[Any],
        where: str,
        *,
        rest: dict[str, Any] | None = None,
    ) -> tuple[tuple[int, ...], dict[str, Any]]:
        """``ids`` (one placeholder per item of ``items``) with each placeholder expanded to
        its item's positions, and the payload of the processed items plus ``rest`` (SFT rows
        and reward pairs, whose ids are more than a prompt, use this directly)."""
        media = self.process(items, where)
        rest = rest or {}
        payload: dict[str, Any] = {
            **rest,  # other media, raw or processed by another encoder (a composite's)
            **media.tensors,
            f"{self.noun}_tokens": tuple(media.counts),
            "where": where,
            COST_KEY: media_cost(rest) + media.cost,
        }
        return self.expand_ids(ids, media.counts), payload

    def item_ids(self, count: int) -> tuple[int, ...]:
        """The ids one item's placeholder becomes: ``count`` placeholders (a family may wrap
        them in start / end tokens)."""
        return (self._pad,) * count

    def expand_ids(self, ids: Sequence[int], counts: Sequence[int]) -> tuple[int, ...]:
        """``ids`` with the i-th placeholder replaced by :meth:`item_ids` of ``counts[i]``."""
        return expand_placeholders(ids, self._pad, counts, self.item_ids)

    @property
    def processor(self) -> Any:
        """The media processor (image processor, feature extractor) it runs."""
        return self._processor

    @property
    def placeholder_id(self) -> int:
        """The token id of one item's placeholder before expansion."""
        return self._pad


class MediaInputs(ABC):
    """Forward arguments of one model family for rows with and without media."""

    token_id_key: ClassVar[str]  # the model config's placeholder id ("image_token_id")
    noun: ClassVar[str]  # as in MediaEncoder
    token_keys: ClassVar[tuple[str, ...]] = ()  # other (B, T) arguments, packed like the ids
    mrope: ClassVar[bool] = False  # positions are M-RoPE (3, B, T) when some row has media
    packs: ClassVar[bool] = True  # whether :meth:`packed_inputs` is proven equal to padded

    def __init__(self, model: nn.Module) -> None:
        base = unwrapped(model)
        self._model = base
        self._token_id = int(getattr(base.config, self.token_id_key))
        ids = sorted(self.placeholder_ids(base.config))
        self._suppressed = torch.tensor(ids, dtype=torch.long)

    def placeholder_ids(self, config: Any) -> set[int]:
        """The ids never generated: the placeholder (a family may add more)."""
        return {self._token_id}

    @property
    def suppressed_token_ids(self) -> Tensor:
        """The media placeholder ids (never generated)."""
        return self._suppressed

    def payload_tensor(
        self, payloads: Sequence[Payload], key: str, input_ids: Tensor, *, features: bool = False
    ) -> Tensor | None:
        """``payload[key]`` of the rows that have it, concatenated along dim 0 on the device of
        ``input_ids`` (media ``features`` cast to the model's floating dtype); None if none."""
        tensor = concat_payload_tensors(payloads, key)
        if tensor is None:
            return None
        if features:
            return tensor.to(input_ids.device, model_dtype(self._model))
        return tensor.to(input_ids.device)

    @abstractmethod
    def media_arguments(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> MediaArguments | None:
        """The media arguments of the batch, or None when no row has media."""

    def check_rows(self, input_ids: Tensor, payloads: Sequence[Payload]) -> None:
        """Raises ``ValueError`` naming the first row whose placeholders do not match its
        media (a family reading several media checks each)."""
        check_placeholders(input_ids, payloads, self._token_id, f"{self.noun}_tokens", self.noun)

    def model_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> ModelInputs:
        """See :class:`~lightrft.adapters.hf.multimodal_inputs.MultimodalInputs`."""
        self.check_rows(input_ids, payloads)
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids_from_mask(attention_mask),
        }
        offsets = torch.zeros(input_ids.shape[0], 1, dtype=torch.long, device=input_ids.device)
        media = self.media_arguments(input_ids, attention_mask, payloads)
        if media is not None:
            kwargs.update(media.kwargs)
            if media.position_offsets is not None:
                offsets = media.position_offsets
        return ModelInputs(kwargs, offsets)

    def packed_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> dict[str, Any] | None:
        """Arguments of one packed row (1, N) of the attended tokens of every row, or None
        when the family does not pack (see :mod:`~lightrft.adapters.hf.packed_media`)."""
        if not self.packs:
            return None
        built = self.model_inputs(input_ids, attention_mask, payloads)
        return pack_model_inputs(built.kwargs, attention_mask, self.token_keys, mrope=self.mrope)
