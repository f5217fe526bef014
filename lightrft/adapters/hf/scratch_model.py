"""A randomly initialised small causal LM with a byte-level tokenizer, written as a model
directory every engine here loads (``config.json``, safetensors, tokenizer files).

What it is for: experiments that must run many RL steps on a CPU, where a pretrained model is
too slow (``lightrft demo --policy tiny prm``). It knows nothing until trained: the demo
teaches it its task by SFT first. The tokenizer maps each byte to one token (no merges), so no
vocabulary file is needed and any text round-trips; the chat template writes ``role: content``
lines, ends an assistant turn with ``<eos>`` and the prompt with ``assistant: ``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>")  # ids 0, 1, 2; the 256 bytes follow
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}"
    "{{ eos_token if m['role'] == 'assistant' else '' }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
"""``role: content`` lines; an assistant turn ends with ``<eos>`` (what SFT on chats teaches the
model to stop with)."""


@dataclass(frozen=True)
class ScratchModelSpec:
    """The model's size: a Llama of ``layers`` blocks of width ``hidden`` (heads of 32)."""

    hidden: int = 128
    layers: int = 4
    max_positions: int = 512
    seed: int = 0

    def problem(self) -> str | None:
        """What is wrong with the sizes (None: nothing)."""
        if self.hidden < 32 or self.hidden % 32:
            return f"hidden must be a positive multiple of 32, got {self.hidden}"
        if self.layers < 1:
            return f"layers must be >= 1, got {self.layers}"
        if self.max_positions < 16:
            return f"max_positions must be >= 16, got {self.max_positions}"
        return None


def byte_level_backend(specials: Sequence[str]) -> Tokenizer:
    """A tokenizers backend of ``specials`` (ids 0..) then one token per byte, no merges."""
    vocab = {name: i for i, name in enumerate(specials)}
    for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet())):
        vocab[symbol] = len(specials) + i
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    return backend


def byte_tokenizer(chat_template: str = CHAT_TEMPLATE) -> PreTrainedTokenizerFast:
    """One token per byte (ids 3..258) after ``<pad>``, ``<eos>``, ``<bos>``; left padding."""
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=byte_level_backend(SPECIAL_TOKENS),
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
    )
    tokenizer.chat_template = chat_template
    tokenizer.padding_side = "left"
    return tokenizer


def scratch_config(spec: ScratchModelSpec, vocab_size: int) -> LlamaConfig:
    heads = spec.hidden // 32
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=spec.hidden,
        num_hidden_layers=spec.layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=4 * spec.hidden,
        max_position_embeddings=spec.max_positions,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        tie_word_embeddings=True,
    )


def write_scratch_model(target: Path, spec: ScratchModelSpec = ScratchModelSpec()) -> Path:
    """Writes a random model of ``spec`` (deterministic given ``spec.seed``) and the byte
    tokenizer to ``target``, atomically (a temporary sibling renamed into place); an existing
    ``target`` is replaced. Returns ``target``."""
    problem = spec.problem()
    if problem is not None:
        raise ValueError(f"scratch model: {problem}")
    tokenizer = byte_tokenizer()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(spec.seed)
            model = LlamaForCausalLM(scratch_config(spec, len(tokenizer)))
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.rename(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
