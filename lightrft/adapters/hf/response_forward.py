"""``ResponseForward``: the one forward path from a batch to response-token log-probs.

``HfPolicy`` and ``HfReferenceModel`` run the same forward (the reference is the policy
frozen); this class holds the choice of path so both share it. Shape letters as in
:mod:`lightrft.domain.types`: B samples, R response tokens.
"""

from __future__ import annotations

from typing import TypedDict

from torch import nn
from typing_extensions import Unpack

from lightrft.adapters.hf.fused_head import FusedHeadMode
from lightrft.adapters.hf.multimodal_inputs import MultimodalInputs, multimodal_logprobs
from lightrft.adapters.hf.prefix_sharing import (
    DEFAULT_MAX_ROW_TOKENS,
    PrefixSharing,
    PrefixSharingMode,
)
from lightrft.adapters.hf.weights import module_device
from lightrft.domain.ports import PolicyOutput
from lightrft.domain.types import SequenceBatch


class ForwardOptions(TypedDict, total=False):
    """The forward-path options ``HfPolicy`` and ``HfReferenceModel`` pass through."""

    packing: bool
    prefix_sharing: PrefixSharingMode
    max_shared_row_tokens: int
    chunk_size: int
    fused_head: FusedHeadMode
    multimodal: MultimodalInputs | None


class ResponseForward:
    """Which path a forward takes: multimodal inputs, prefix sharing, packing, or padded.

    With ``multimodal`` prefix sharing is off and ``packing`` packs the rows when the family
    packs (:mod:`~lightrft.adapters.hf.packed_media`), else the padded path runs; otherwise
    ``prefix_sharing`` / ``packing`` choose as documented in
    ``HfPolicy``. All paths give the same log-probs. ``model`` is checked once here
    (``prefix_sharing="on"`` refuses an attention that takes no dense mask).
    """

    def __init__(self, model: nn.Module, **options: Unpack[ForwardOptions]) -> None:
        multimodal = options.get("multimodal")
        mode: PrefixSharingMode = (
            "off" if multimodal is not None else options.get("prefix_sharing", "auto")
        )
        rows = options.get("max_shared_row_tokens", DEFAULT_MAX_ROW_TOKENS)
        self._prefix_sharing = PrefixSharing(mode, rows)
        self._prefix_sharing.check_model(model)
        self._packing = options.get("packing", False)
        self._chunk_size = options.get("chunk_size", 1024)
        self._fused_head: FusedHeadMode = options.get("fused_head", "auto")
        self._multimodal = multimodal

    def logprobs(
        self,
        model: nn.Module,
        batch: SequenceBatch,
        *,
        temperature: float = 1.0,
        with_entropy: bool = False,
    ) -> PolicyOutput:
        """Log-probs (B, R) of the response tokens (0 on padding), entropy (B, R) if asked,
        on the model's device (the batch is moved there: callers keep theirs on the host)."""
        batch = batch.to(module_device(model))
        if self._multimodal is not None:
            return multimodal_logprobs(
                model,
                batch,
                self._multimodal,
                temperature=temperature,
                with_entropy=with_entropy,
                chunk_size=self._chunk_size,
                packing=self._packing,
            )
        return self._prefix_sharing.logprobs(
            model,
            batch,
            temperature=temperature,
            with_entropy=with_entropy,
            packing=self._packing,
            chunk_size=self._chunk_size,
            fused_head=self._fused_head,
        )
