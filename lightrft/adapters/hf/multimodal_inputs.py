"""From opaque per-sample payloads to the forward arguments of a multimodal HF model.

Shape letters: B rows, T tokens, R response tokens.

Two halves, both chosen by the model family (``config.model_type``) in the adapters, never
by the services:

- a *prompt encoder* turns a :class:`~lightrft.domain.types.PromptRecord` whose
  ``multimodal`` holds decoded media (``{"images": [PIL.Image, ...]}`` or
  ``{"audios": [(waveform, sampling_rate), ...]}``, one placeholder token per item in the
  prompt ids) into one whose ids have each placeholder expanded to the number of positions
  the item occupies and whose payload holds the processed tensors (``pixel_values`` ...);
  :class:`EncodedPromptSource` applies it to every record of a prompt source;
- :class:`MultimodalInputs` turns a batch's payloads (one per row, aligned with
  ``SequenceBatch.multimodal``) into forward keyword arguments, checking that every row's
  placeholder count matches its media (an error naming the row otherwise).

Every payload also holds ``"where"`` (the row's origin, for error messages) and
:data:`~lightrft.domain.modality.COST_KEY` (positions its media occupy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor, nn

from lightrft.adapters.hf.logprobs import logprobs_from_inputs
from lightrft.domain.modality import Payload
from lightrft.domain.ports import PolicyOutput, PromptSource
from lightrft.domain.registry import Registry
from lightrft.domain.types import PromptRecord, SequenceBatch


@dataclass(frozen=True)
class ModelInputs:
    """Forward keyword arguments for (B, T) rows, and the position offset (B, 1) of tokens
    appended after them (M-RoPE's ``rope_deltas``; zeros for 1-D positions)."""

    kwargs: dict[str, Any]
    position_offsets: Tensor


class MultimodalInputs(Protocol):
    """Builds the forward arguments of one model family from per-row payloads.

    ``suppressed_token_ids`` (S,) are the family's media placeholders: the engine never
    samples them and the policy's distribution excludes them (both alike, so engine and
    policy log-probs agree), since a placeholder in a response would not match the media.
    """

    @property
    def suppressed_token_ids(self) -> Tensor:
        """Token ids (S,) that are never generated."""
        ...

    def model_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> ModelInputs:
        """Arguments for ``input_ids`` / ``attention_mask`` (B, T); ``payloads`` has B entries
        (empty mappings for text-only rows)."""
        ...

    def packed_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload]
    ) -> dict[str, Any] | None:
        """Arguments of one packed row (1, N) holding the attended tokens of every row (each
        row's positions as it has them alone, attention confined to each row), or None when
        the family does not pack (:mod:`~lightrft.adapters.hf.packed_media`)."""
        ...


@dataclass(frozen=True)
class MediaRequirements:
    """What a prompt encoder needs of every row, for the data layer to check when it builds
    the dataset: the placeholder token (text) of one image / one audio clip / one video
    (None: the model takes no such media), and the sampling rate every audio clip must have."""

    image_placeholder: str | None = None
    audio_placeholder: str | None = None
    audio_sampling_rate: int | None = None
    video_placeholder: str | None = None


class PromptEncoder(Protocol):
    """Expands a record's media placeholders and processes its media (see module doc)."""

    @property
    def requirements(self) -> MediaRequirements:
        """The placeholders and audio rate :meth:`encode` expects of every record."""
        ...

    def encode(self, record: PromptRecord) -> PromptRecord:
        """The record ready for the model (unchanged when it has no media)."""
        ...


MULTIMODAL_INPUTS: Registry[Callable[[nn.Module], MultimodalInputs]] = Registry(
    "multimodal model family"
)


def multimodal_inputs_for(model: nn.Module) -> MultimodalInputs:
    """The :class:`MultimodalInputs` of ``model``'s family (``config.model_type``)."""
    base = unwrapped(model)
    return MULTIMODAL_INPUTS.get(str(base.config.model_type))(base)


def unwrapped(model: nn.Module) -> Any:
    """The transformers model under a PEFT wrapper (``model`` itself otherwise)."""
    unwrap: Any = getattr(model, "get_base_model", None)
    return unwrap() if callable(unwrap) else model


def multimodal_logprobs(
    model: nn.Module,
    batch: SequenceBatch,
    inputs: MultimodalInputs,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_size: int = 1024,
    packing: bool = False,
) -> PolicyOutput:
    """Response log-probs (B, R) of ``batch`` (rows with and without media) under ``model``:
    padded, or with ``packing`` one packed row when the family packs (padded otherwise)."""
    rows = int(batch.input_ids.shape[0])
    payloads = batch.multimodal or tuple({} for _ in range(rows))
    options: dict[str, Any] = {
        "temperature": temperature,
        "with_entropy": with_entropy,
        "chunk_size": chunk_size,
        "suppressed": inputs.suppressed_token_ids,
    }
    if packing:
        packed = inputs.packed_inputs(batch.input_ids, batch.attention_mask, payloads)
        if packed is not None:
            return logprobs_from_inputs(model, batch, packed, packed=True, **options)
    built = inputs.model_inputs(batch.input_ids, batch.attention_mask, payloads)
    return logprobs_from_inputs(model, batch, built.kwargs, **options)


def row_name(payload: Payload, row: int) -> str:
    """How errors name a batch row: its index and, when known, its origin."""
    where = payload.get("where") if payload else None
    return f"row {row} ({where})" if where else f"row {row}"


class EncodedPromptSource:
    """A ``PromptSource`` whose records went through a :class:`PromptEncoder` on access.

    Encoding happens when a record is read (the media of a large dataset are not held in
    memory); the last ``cache_size`` encoded records are kept. ``max_tokens`` (the data's
    ``max_prompt_length``) bounds the prompt *with its media expanded*: the row's text was
    bounded before its placeholders were expanded, and media are never cut (a cut image
    would no longer match its placeholders), so a longer record is an error naming the row.
    """

    def __init__(
        self,
        inner: PromptSource,
        encoder: PromptEncoder,
        cache_size: int = 256,
        *,
        max_tokens: int | None = None,
    ) -> None:
        self._inner, self._encoder, self._cache_size = inner, encoder, cache_size
        self._max_tokens = max_tokens
        self._cache: dict[int, PromptRecord] = {}

    def __len__(self) -> int:
        return len(self._inner)

    def __getitem__(self, index: int) -> PromptRecord:
        key = index % len(self._inner) if len(self._inner) else index
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        record = self._encoder.encode(self._inner[index])
        check_media_budget(record, self._max_tokens)
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = record
        return record

    def __getattr__(self, name: str) -> Any:  # stats, name ... of the wrapped source
        return getattr(self._inner, name)


def check_media_budget(record: PromptRecord, max_tokens: int | None) -> None:
    """Raises ``ValueError`` naming the row when ``record``'s ids (media expanded) are more
    than ``max_tokens``; see :class:`EncodedPromptSource`."""
    length = len(record.prompt_token_ids)
    if max_tokens is None or length <= max_tokens:
        return
    media = sum(
        sum(counts) for key, counts in record.multimodal.items() if key.endswith("_tokens")
    )  # image_tokens / audio_tokens: positions of each item
    where = record.metadata.get("where", record.uid)
    raise ValueError(
        f"{where}: the prompt is {length} tokens with its media expanded ({media} media "
        f"positions), more than max_prompt_length ({max_tokens}); media are never truncated "
        "(the placeholders would no longer match them): raise max_prompt_length, lower "
        "model.max_pixels, or shorten the clips"
    )
