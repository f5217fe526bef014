"""What the vLLM engine needs to know per media model family (keyed by ``model_type``).

- Weight names: most vLLM models map the names of the current transformers layout
  themselves (their ``hf_to_vllm_mapper``: Qwen2-VL, Qwen2.5-VL, text LMs). vLLM 0.32's
  Qwen2-Audio does not: it loads the original checkpoint layout (``language_model.model.*``,
  ``language_model.lm_head.*``, ``audio_tower.*``, ``multi_modal_projector.*``), while a
  transformers 5 policy names them ``model.language_model.*``, ``lm_head.*``,
  ``model.audio_tower.*``, ``model.multi_modal_projector.*``. ``sync_prefixes`` are the
  replacements a weight sync applies (the first prefix that matches).
- Never-sampled tokens: the HF policy and engine keep media placeholders (and Qwen2.5-Omni's
  media start tokens) out of the distribution (they are never generated and their
  probability mass is renormalized away). vLLM is given a logit bias of
  :data:`SUPPRESS_BIAS` on them, the most negative it accepts, so its log-probs are the
  policy's: the bias leaves each suppressed token exp(-100) of its probability, which
  changes the others' log-probs by less than 1e-40.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.engine_parts.weight_buckets import NamedTensor

SUPPRESS_BIAS = -100.0  # vLLM clamps logit_bias to [-100, 100]


@dataclass(frozen=True)
class VllmFamily:
    """``sync_prefixes``: (trainer prefix, vLLM prefix) pairs; ``never_sampled``: the config
    keys of token ids never generated."""

    sync_prefixes: tuple[tuple[str, str], ...] = ()
    never_sampled: tuple[str, ...] = ()


_VISION = ("image_token_id", "video_token_id")
FAMILIES: dict[str, VllmFamily] = {
    "qwen2_audio": VllmFamily(
        sync_prefixes=(
            ("model.language_model.", "language_model.model."),
            ("lm_head.", "language_model.lm_head."),
            ("model.", ""),  # audio_tower, multi_modal_projector
        ),
        never_sampled=("audio_token_id",),
    ),
    "qwen2_vl": VllmFamily(never_sampled=_VISION),
    "qwen2_5_vl": VllmFamily(never_sampled=_VISION),
    "qwen2_5_omni_thinker": VllmFamily(
        never_sampled=(*_VISION, "audio_token_id", "vision_start_token_id", "audio_start_token_id")
    ),
}
TEXT = VllmFamily()

UNVERIFIED: dict[str, str] = {
    "internvl": (
        "InternVL on vLLM was not run here (vLLM's InternVL image path needs torchvision, "
        "which does not import beside the CPU torch); use rollout.engine=hf"
    ),
}
"""Media families vLLM is not started for (``model_type`` -> why): their prompt conversion
(e.g. InternVL's ``<img>`` ... ``</img>`` around each image's placeholders) is unverified."""


def family(model_type: str) -> VllmFamily:
    """The family of ``model_type`` (text models and unknown types: no mapping)."""
    return FAMILIES.get(model_type, TEXT)


def reads_media(model_type: str) -> bool:
    """Whether ``model_type`` is a media family (its encoder cache must be reset after a
    weight sync)."""
    return model_type in FAMILIES


def engine_names(weights: Iterable[NamedTensor], model_type: str) -> Iterator[NamedTensor]:
    """``weights`` with the family's ``sync_prefixes`` applied to their names."""
    prefixes = family(model_type).sync_prefixes
    for name, tensor in weights:
        for old, new in prefixes:
            if name.startswith(old):
                name = new + name[len(old) :]
                break
        yield name, tensor


def suppression_bias(config: Any) -> dict[int, float]:
    """vLLM's ``logit_bias`` keeping the family's never-sampled tokens out (``{}`` for text
    models); ``config`` is the served checkpoint's HF config."""
    keys = family(str(getattr(config, "model_type", ""))).never_sampled
    ids = sorted(
        {int(getattr(config, key)) for key in keys if getattr(config, key, None) is not None}
    )
    return dict.fromkeys(ids, SUPPRESS_BIAS)
