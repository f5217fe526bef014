"""A tiny random Qwen2-Audio that vLLM's CPU backend loads offline, and encoded audio
prompts for it.

What vLLM 0.32 needs that the HF tests' tiny model (``tests/helpers/tiny_multimodal.py``)
does not give: the original checkpoint layout of the weight names (transformers 5.19 saves
this model as ``language_model.model.model.*``, which neither vLLM nor a released
checkpoint uses), a ``Qwen2AudioProcessor`` (vLLM builds its prompts with it), and 30 s
feature chunks (vLLM's Qwen2-Audio checks ``input_features`` of 3000 frames). The text
model has 2 heads of 32 (vLLM's smallest CPU head size); the audio encoder runs in
transformers' own module inside vLLM, so its heads of 16 are fine. Prompts: the HF tests'
``audio_prompts`` (``tests/unit/adapters/hf/test_audio_language.py``), encoded as in a run.
"""

from __future__ import annotations

from pathlib import Path

from safetensors.torch import save_file
from transformers import Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor

from tests.helpers.tiny_multimodal import tiny_feature_extractor, tiny_mm_tokenizer

CHECKPOINT_PREFIXES = (
    ("model.language_model.", "language_model.model."),
    ("lm_head.", "language_model.lm_head."),
    ("model.", ""),
)


def checkpoint_name(name: str) -> str:
    """A transformers 5 parameter name in the released Qwen2-Audio checkpoint layout."""
    for old, new in CHECKPOINT_PREFIXES:
        if name.startswith(old):
            return new + name[len(old) :]
    return name


def save_for_vllm(directory: Path, model: Qwen2AudioForConditionalGeneration) -> Path:
    """``model`` (config, weights in the checkpoint layout), the byte tokenizer and a
    ``Qwen2AudioProcessor`` with 30 s Whisper features, as vLLM loads them."""
    tok = tiny_mm_tokenizer()
    model.config.architectures = [type(model).__name__]  # vLLM picks its model class by it
    model.config.save_pretrained(directory)
    state = {checkpoint_name(n): t.detach().contiguous() for n, t in model.state_dict().items()}
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    tok.save_pretrained(directory)
    processor = Qwen2AudioProcessor(
        feature_extractor=tiny_feature_extractor(), tokenizer=tok, chat_template=tok.chat_template
    )
    processor.save_pretrained(directory)
    processor.feature_extractor.save_pretrained(directory)  # what the policy's loader reads
    return directory
