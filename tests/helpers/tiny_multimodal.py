"""Tiny random vision- and audio-language models, tokenizer and media for tests (no download).

The tokenizer is byte-level (one token per byte) plus the Qwen special tokens; its chat
template renders ``{"type": "image"}`` / ``{"type": "audio"}`` content parts the way the
Qwen2-VL and Qwen2-Audio templates do.
"""

from __future__ import annotations

import json
import random
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from PIL import Image
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2AudioConfig,
    Qwen2AudioForConditionalGeneration,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
    WhisperFeatureExtractor,
)
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from lightrft.adapters.hf.scratch_model import byte_level_backend

M = TypeVar("M", bound=torch.nn.Module)

SPECIALS = (
    "<|endoftext|>",
    "<|im_end|>",
    "<|im_start|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|audio_bos|>",
    "<|AUDIO|>",
    "<|audio_eos|>",
)
PAD, EOS = 0, 1
VOCAB = 272  # 10 specials + 256 bytes, rounded up


def media_chat_template(
    image: str, video: str = "<|vision_start|><|video_pad|><|vision_end|>"
) -> str:
    """The Qwen chat template, an image part rendered as ``image`` (the family's tokens), an
    audio part as ``<|audio_bos|><|AUDIO|><|audio_eos|>`` and a video part as ``video``
    (Qwen2-VL's ``<|vision_start|><|video_pad|><|vision_end|>`` by default)."""
    return (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
        "{% for c in m['content'] %}"
        f"{{% if c['type'] == 'image' %}}{image}"
        "{% elif c['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>"
        f"{{% elif c['type'] == 'video' %}}{video}"
        "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


CHAT_TEMPLATE = media_chat_template("<|vision_start|><|image_pad|><|vision_end|>")


def token_id(token: str) -> int:
    """The id of a special token of :func:`tiny_mm_tokenizer`."""
    return SPECIALS.index(token)


def tiny_mm_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokenizer with the Qwen special tokens (ids 0..9) and a chat template."""
    return byte_tokenizer(SPECIALS, CHAT_TEMPLATE)


def byte_tokenizer(specials: tuple[str, ...], chat_template: str) -> PreTrainedTokenizerFast:
    """Byte-level tokenizer: ``specials`` (ids 0.., the first two pad and EOS), then one
    token per byte; ``chat_template`` renders media parts."""
    return _qwen_tokenizer(byte_level_backend(specials), specials, chat_template)


def _qwen_tokenizer(
    backend: Tokenizer,
    specials: tuple[str, ...] = SPECIALS,
    chat_template: str = CHAT_TEMPLATE,
    **extra: str,
) -> PreTrainedTokenizerFast:
    """``backend`` with the Qwen pad / EOS / media tokens and the media chat template."""
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=specials[0],
        eos_token=specials[1],
        additional_special_tokens=list(specials[2:]),
        **extra,
    )
    tok.chat_template = chat_template
    tok.padding_side = "left"
    return tok


def text_config(hidden: int = 64) -> dict[str, object]:
    return {
        "vocab_size": VOCAB,
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "intermediate_size": 2 * hidden,
        "max_position_embeddings": 1024,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [4, 6, 6]},
        "pad_token_id": PAD,
        "eos_token_id": EOS,
        "bos_token_id": None,
    }


def seeded_model(model_class: Callable[[Any], M], config: Any, seed: int) -> M:
    """``model_class(config)`` with the tokenizers' EOS and pad ids, its random weights drawn
    from ``seed``, in eval mode."""
    config.eos_token_id, config.pad_token_id = EOS, PAD
    torch.manual_seed(seed)
    model = model_class(config)
    model.eval()
    return model


def qwen2_5_vl_vision() -> dict[str, object]:
    """The tiny Qwen2.5-VL vision tower: width 128 (out 64 = text hidden), window 56, one
    full-attention block."""
    return {
        "depth": 2,
        "hidden_size": 128,
        "out_hidden_size": 64,
        "intermediate_size": 128,
        "num_heads": 2,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 56,
        "fullatt_block_indexes": [1],
    }


def audio_encoder(**extra: object) -> dict[str, object]:
    """The tiny Whisper-style audio encoder: 2 layers of width 32, 128 mel bins."""
    return {
        "num_mel_bins": 128,
        "encoder_layers": 2,
        "encoder_attention_heads": 2,
        "encoder_ffn_dim": 64,
        "d_model": 32,
        **extra,
    }


def _vl_ids() -> dict[str, int]:
    return {
        "image_token_id": token_id("<|image_pad|>"),
        "video_token_id": token_id("<|video_pad|>"),
        "vision_start_token_id": token_id("<|vision_start|>"),
        "vision_end_token_id": token_id("<|vision_end|>"),
    }


def tiny_qwen2_vl(seed: int = 0) -> Qwen2VLForConditionalGeneration:
    """Qwen2-VL: text head_dim 32 (mrope 4+6+6 = 16), vision depth 2, width 32."""
    vision = {
        "depth": 2,
        "embed_dim": 32,
        "hidden_size": 64,
        "num_heads": 2,
        "mlp_ratio": 2,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    config = Qwen2VLConfig(text_config=text_config(), vision_config=vision, **_vl_ids())
    return seeded_model(Qwen2VLForConditionalGeneration, config, seed)


def tiny_qwen2_5_vl(seed: int = 0) -> Qwen2_5_VLForConditionalGeneration:
    """Qwen2.5-VL: tower width 128 (out 64 = text hidden), window 56, one full-attn block."""
    vision = qwen2_5_vl_vision()
    config = Qwen2_5_VLConfig(text_config=text_config(), vision_config=vision, **_vl_ids())
    return seeded_model(Qwen2_5_VLForConditionalGeneration, config, seed)


def tiny_image_processor() -> Qwen2VLImageProcessorPil:
    """4-16 merged tokens per image (min 28*28*4, max 28*28*16 pixels)."""
    return Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16)


def noise_image(width: int, height: int, seed: int) -> Image.Image:
    """A random RGB image."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def write_wav(path: Path, samples: np.ndarray, rate: int) -> str:
    """Writes ``samples`` (in [-1, 1]) as a mono 16-bit PCM ``.wav``; returns its name."""
    with wave.open(str(path), "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes((samples * 32767).astype("<i2").tobytes())
    return path.name


def tiny_qwen2_audio(
    seed: int = 0, *, max_source_positions: int = 1500
) -> Qwen2AudioForConditionalGeneration:
    """Qwen2-Audio: 2 encoder layers of width 32, 128 mel bins, qwen2 text of hidden 64.

    The encoder reads ``2 * max_source_positions`` feature frames (1500: Whisper's 30 s)."""
    text = text_config()
    text.pop("rope_parameters")
    text["model_type"] = "qwen2"
    audio = audio_encoder(max_source_positions=max_source_positions)
    config = Qwen2AudioConfig(
        text_config=text, audio_config=audio, audio_token_index=token_id("<|AUDIO|>")
    )
    return seeded_model(Qwen2AudioForConditionalGeneration, config, seed)


def tiny_feature_extractor(chunk_seconds: int = 30) -> WhisperFeatureExtractor:
    """Whisper features with 128 mel bins at 16 kHz, padded to ``chunk_seconds``."""
    return WhisperFeatureExtractor(feature_size=128, chunk_length=chunk_seconds)


TASK_WORDS = (
    "[UNK]", "user", "assistant", "What", "colour", "is", "the", "shape", "How", "many",
    "shapes", "are", "there", "Which", "tone", "higher", "first", "or", "second", "red",
    "blue", "green", "yellow", "1", "2", "3", "?", ",", ".", "image", "has", "more", "beeps",
)  # fmt: skip


VIDEO_WORDS = ("way", "does", "dot", "move", "left", "right")  # the video_motion task
CHOICE_WORDS = (
    "of", "choices", "describes", "clip", "Choose", "one", "these", "options", ":", "Give",
    "answer", "inside", "hum", "whistle", "hiss", "['", "',", "'", "'].",
)  # fmt: skip
"""The words of the ``sound_choice`` prompts beyond :data:`TASK_WORDS`."""
ANSWER_TAGS = ("<answer>", "</answer>")


def task_tokenizer(
    extra: tuple[str, ...] = (), *, choice_task: bool = False
) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the built-in tasks' words (and ``extra`` words after them)
    plus the Qwen special tokens: each answer ("red", "first" ...) is one token, so a tiny
    model learns it fast. ``choice_task``: also the ``sound_choice`` words, and ``<answer>`` /
    ``</answer>`` as one token each (an answer is then 3 tokens: ``<answer> hum </answer>``)."""
    vocab = {token: i for i, token in enumerate(SPECIALS)}
    for word in (*TASK_WORDS, *extra, *(CHOICE_WORDS if choice_task else ())):
        vocab[word] = len(vocab)
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = _qwen_tokenizer(backend, unk_token="[UNK]")
    if choice_task:
        tok.add_tokens(list(ANSWER_TAGS))
    return tok


def _save(
    directory: Path,
    model: torch.nn.Module,
    processor: object,
    tok: PreTrainedTokenizerFast | None = None,
) -> Path:
    tok = task_tokenizer() if tok is None else tok
    model.resize_token_embeddings(len(tok))  # type: ignore[operator]
    model.save_pretrained(directory)  # type: ignore[operator]
    tok.save_pretrained(directory)
    processor.save_pretrained(directory)  # type: ignore[attr-defined]
    return directory


def save_tiny_vl_model(
    directory: Path,
    seed: int = 0,
    *,
    byte_level: bool = False,
    words: tuple[str, ...] = (),
    family: str = "qwen2_vl",
) -> Path:
    """A from-scratch tiny Qwen2-VL (``family="qwen2_5_vl"``: Qwen2.5-VL) over
    :func:`task_tokenizer` (with ``words`` added, e.g. :data:`VIDEO_WORDS`; ``byte_level``:
    :func:`tiny_mm_tokenizer`, which spells any text), saved with its tokenizer and image
    processor (what ``model.path`` of a vision-language run points to)."""
    tok = tiny_mm_tokenizer() if byte_level else (task_tokenizer(words) if words else None)
    model = tiny_qwen2_5_vl(seed) if family == "qwen2_5_vl" else tiny_qwen2_vl(seed)
    return _save(directory, model, tiny_image_processor(), tok)


def save_tiny_audio_model(directory: Path, seed: int = 0, *, choice_task: bool = False) -> Path:
    """A from-scratch tiny Qwen2-Audio over :func:`task_tokenizer` (``choice_task``: with
    the ``sound_choice`` words and answer tags), saved with its tokenizer and feature
    extractor; clips are padded to 1 s (100 frames), not 30 s."""
    model = tiny_qwen2_audio(seed, max_source_positions=50)
    tok = task_tokenizer(choice_task=True) if choice_task else None
    return _save(directory, model, tiny_feature_extractor(chunk_seconds=1), tok)


def answer_format_rows(path: Path, seed: int, n: int = 256) -> Path:
    """Text-only chat rows of the ``sound_choice`` question (no clip) answered with a random
    option inside ``<answer></answer>``: an SFT warm start that teaches the answer format and
    the option words but not which one a clip is (what an instruction-tuned start brings)."""
    from lightrft.adapters.datasets.synthetic_sound_choice import (
        QUESTION,
        SOUNDS,
        multiple_choice_question,
    )

    rng = random.Random(f"format-{seed}")
    with path.open("w") as f:
        for _ in range(n):
            choices = list(SOUNDS)
            rng.shuffle(choices)
            user = multiple_choice_question(QUESTION, choices)
            answer = f"<answer> {rng.choice(SOUNDS)} </answer>"
            chat = [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
            f.write(json.dumps({"messages": chat}) + "\n")
    return path
