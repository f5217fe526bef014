"""Hugging Face ``transformers`` adapters: model loading, ``HfPolicy``, ``HfReferenceModel``,
``HfRolloutEngine``, the embedded default model (SmolLM2-135M-Instruct), and the inputs of
vision-language (Qwen2-VL, Qwen2.5-VL), audio-language (Qwen2-Audio) and omni
(Qwen2.5-Omni thinker) models."""

from lightrft.adapters.hf import audio_language, omni, vision_language  # noqa: F401  (registers)
from lightrft.adapters.hf.default_model import default_model_path
from lightrft.adapters.hf.loading import (
    ModelLoadParams,
    load_causal_lm,
    load_tokenizer,
    resolve_source,
)
from lightrft.adapters.hf.lora import LoraParams
from lightrft.adapters.hf.policy import HfPolicy
from lightrft.adapters.hf.reference import HfReferenceModel
from lightrft.adapters.hf.rollout import HfRolloutEngine

__all__ = [
    "HfPolicy",
    "HfReferenceModel",
    "HfRolloutEngine",
    "LoraParams",
    "ModelLoadParams",
    "default_model_path",
    "load_causal_lm",
    "load_tokenizer",
    "resolve_source",
]
