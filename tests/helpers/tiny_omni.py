"""A tiny random Qwen2.5-Omni thinker, its tokenizer and processors for tests (no download).

The tokenizer is byte-level (:func:`~tests.helpers.tiny_multimodal.byte_tokenizer`) plus the
thinker's special tokens; its chat template renders ``{"type": "image"}`` /
``{"type": "audio"}`` parts as the Qwen2.5-Omni template does:
``<|vision_bos|><|IMAGE|><|vision_eos|>`` and ``<|audio_bos|><|AUDIO|><|audio_eos|>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2_5OmniThinkerConfig,
    Qwen2_5OmniThinkerForConditionalGeneration,
)

from lightrft.adapters.hf.multimodal_loading import MediaProcessors
from lightrft.domain.types import PromptRecord
from tests.helpers.tiny_multimodal import (
    audio_encoder,
    byte_tokenizer,
    media_chat_template,
    qwen2_5_vl_vision,
    seeded_model,
    text_config,
    tiny_feature_extractor,
    tiny_image_processor,
)

OMNI_SPECIALS = (
    "<|endoftext|>",
    "<|im_end|>",
    "<|im_start|>",
    "<|vision_bos|>",
    "<|vision_eos|>",
    "<|IMAGE|>",
    "<|VIDEO|>",
    "<|audio_bos|>",
    "<|AUDIO|>",
    "<|audio_eos|>",
)
OMNI_TEMPLATE = media_chat_template(
    "<|vision_bos|><|IMAGE|><|vision_eos|>", "<|vision_bos|><|VIDEO|><|vision_eos|>"
)


def omni_token_id(token: str) -> int:
    """The id of a special token of :func:`tiny_omni_tokenizer`."""
    return OMNI_SPECIALS.index(token)


def tiny_omni_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokenizer with the thinker's special tokens (ids 0..9)."""
    return byte_tokenizer(OMNI_SPECIALS, OMNI_TEMPLATE)


def tiny_omni_thinker(seed: int = 0) -> Qwen2_5OmniThinkerForConditionalGeneration:
    """Text as the tiny Qwen2-VL's (hidden 64, head_dim 32, mrope 4+6+6); vision as the tiny
    Qwen2.5-VL's (width 128, out 64, window 56); audio 2 layers of width 32, 128 mel bins."""
    config = Qwen2_5OmniThinkerConfig(
        text_config=text_config(),
        vision_config=qwen2_5_vl_vision(),
        audio_config=audio_encoder(output_dim=64),
        image_token_index=omni_token_id("<|IMAGE|>"),
        video_token_index=omni_token_id("<|VIDEO|>"),
        audio_token_index=omni_token_id("<|AUDIO|>"),
        audio_start_token_id=omni_token_id("<|audio_bos|>"),
        audio_end_token_id=omni_token_id("<|audio_eos|>"),
        vision_start_token_id=omni_token_id("<|vision_bos|>"),  # read by get_rope_index
        vision_end_token_id=omni_token_id("<|vision_eos|>"),
    )
    return seeded_model(Qwen2_5OmniThinkerForConditionalGeneration, config, seed)


def tiny_omni_processors(chunk_seconds: int = 30) -> MediaProcessors:
    """The tiny image processor (4-16 merged tokens per image) and Whisper features."""
    return MediaProcessors(tiny_image_processor(), tiny_feature_extractor(chunk_seconds))


def save_tiny_omni_thinker(directory: Path, seed: int = 0) -> Path:
    """The tiny thinker saved with its tokenizer and processors (one merged
    ``preprocessor_config.json``, as a released Qwen2.5-Omni has); clips padded to 1 s."""
    tiny_omni_thinker(seed).save_pretrained(directory)
    tiny_omni_tokenizer().save_pretrained(directory)
    tiny_omni_processors(chunk_seconds=1).save_pretrained(directory)
    return directory


THINKER_SUPPRESSED = tuple(
    omni_token_id(t)
    for t in ("<|IMAGE|>", "<|VIDEO|>", "<|AUDIO|>", "<|vision_bos|>", "<|audio_bos|>")
)
"""The ids the policy keeps out of its distribution (placeholders and media start tokens)."""


def thinker_kwargs(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The thinker's own forward arguments for an encoded record's payload (its positions it
    computes itself: grids, ``video_second_per_grid``, audio lengths)."""
    keys = ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw")
    names = (*keys, "input_features", "feature_attention_mask")
    kwargs = {k: payload[k] for k in names if k in payload}
    if "second_per_grid_ts" in payload:
        kwargs["video_second_per_grid"] = payload["second_per_grid_ts"]
    return kwargs


def thinker_logprobs(
    model: Any, prompt: PromptRecord, response: Sequence[int], **replaced: Any
) -> torch.Tensor:
    """Log-probs (float64) of ``response`` after the encoded ``prompt`` from the thinker's own
    forward on the unpadded row, placeholders excluded as the policy does; ``replaced``
    overrides forward arguments (e.g. zeroed features)."""
    ids = torch.tensor([list(prompt.prompt_token_ids) + list(response)])
    kwargs = {**thinker_kwargs(prompt.multimodal or {}), **replaced}
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False, **kwargs)
    logits = out.logits[0].double()
    logits[:, list(THINKER_SUPPRESSED)] = float("-inf")
    logp = torch.log_softmax(logits, -1)[len(prompt.prompt_token_ids) - 1 : -1]
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)
