"""A tiny random InternVL (transformers' ``InternVLForConditionalGeneration``), its tokenizer
and image processor for tests (no download, no remote code).

The tokenizer is byte-level (:func:`~tests.helpers.tiny_multimodal.byte_tokenizer`) plus the
InternVL special tokens; its chat template renders ``{"type": "image"}`` parts as the
released InternVL-hf template does, ``<IMG_CONTEXT>\\n`` (``InternVLProcessor`` then writes
``<img>`` + context tokens + ``</img>``). The vision tower reads 56-pixel tiles of 14-pixel
patches (16 patches, 4 tokens after the 0.5 pixel shuffle); an image is cut into at most 4
tiles (plus a thumbnail).
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import InternVLConfig, InternVLForConditionalGeneration, PreTrainedTokenizerFast
from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

from lightrft.adapters.hf.internvl import InternVLImageTiles
from tests.helpers.tiny_multimodal import (
    TASK_WORDS,
    _qwen_tokenizer,
    byte_tokenizer,
    media_chat_template,
    seeded_model,
    text_config,
)

INTERNVL_SPECIALS = (
    "<|endoftext|>",
    "<|im_end|>",
    "<|im_start|>",
    "<img>",
    "</img>",
    "<IMG_CONTEXT>",
    "<video>",
)
INTERNVL_TEMPLATE = media_chat_template("<IMG_CONTEXT>\n", "<video>\n")
TILE = 56  # pixels a side: the vision tower's image_size
TOKENS_PER_TILE = (TILE // 14) ** 2 // 4  # 16 patches, pixel-shuffled by 0.5: 4


def internvl_token_id(token: str) -> int:
    """The id of a special token of :func:`tiny_internvl_tokenizer`."""
    return INTERNVL_SPECIALS.index(token)


def tiny_internvl_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokenizer with the InternVL special tokens (ids 0..6)."""
    return byte_tokenizer(INTERNVL_SPECIALS, INTERNVL_TEMPLATE)


def internvl_task_tokenizer(extra: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the built-in tasks' words (each answer one token) plus the
    InternVL special tokens (a tiny model reads the built-in visual tasks with it)."""
    vocab = {token: i for i, token in enumerate(INTERNVL_SPECIALS)}
    for word in (*TASK_WORDS, *extra):
        vocab[word] = len(vocab)
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return _qwen_tokenizer(backend, INTERNVL_SPECIALS, INTERNVL_TEMPLATE, unk_token="[UNK]")


def tiny_internvl(seed: int = 0) -> InternVLForConditionalGeneration:
    """InternVL: qwen2 text of hidden 64 (2 layers, 2 heads, 1 KV head), vision tower of
    width 32 (2 layers) on 56-pixel tiles, projector to 64."""
    text = text_config()
    text.pop("rope_parameters")
    text["model_type"] = "qwen2"
    vision = {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "image_size": TILE,
        "patch_size": 14,
    }
    config = InternVLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=internvl_token_id("<IMG_CONTEXT>"),
        image_seq_length=TOKENS_PER_TILE,
    )
    return seeded_model(InternVLForConditionalGeneration, config, seed)


def tiny_internvl_image_processor() -> GotOcr2ImageProcessorPil:
    """56-pixel tiles, at most 4 a image (a thumbnail besides when there are several)."""
    return GotOcr2ImageProcessorPil(size={"height": TILE, "width": TILE}, max_patches=4)


def tiny_internvl_tiles() -> InternVLImageTiles:
    """The tiny image processor with the tiny model's tile sizes (4 tokens, 16 patches)."""
    return InternVLImageTiles(tiny_internvl_image_processor(), TOKENS_PER_TILE, (TILE // 14) ** 2)


def save_tiny_internvl(directory: Path, seed: int = 0, *, byte_level: bool = False) -> Path:
    """A from-scratch tiny InternVL over :func:`internvl_task_tokenizer` (``byte_level``:
    :func:`tiny_internvl_tokenizer`), saved with its tokenizer and image processor (what
    ``model.path`` of a vision-language run points to)."""
    tok = tiny_internvl_tokenizer() if byte_level else internvl_task_tokenizer()
    model = tiny_internvl(seed)
    model.resize_token_embeddings(len(tok))
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    tiny_internvl_image_processor().save_pretrained(directory)
    return directory
