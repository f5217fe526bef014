"""Tiny in-test models, tokenizer and batches for the HF adapter tests (no downloads)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gguf
import numpy as np
import torch
from torch import Tensor
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from lightrft.adapters.hf.scratch_model import byte_tokenizer
from lightrft.domain.types import SequenceBatch

PAD, EOS, BOS = 0, 1, 2
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokenizer: one token per byte (ids 3..258) plus <pad>, <eos>, <bos>."""
    return byte_tokenizer(CHAT_TEMPLATE)


FAMILY_SIZES = {
    "vocab_size": 259,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 128,
    "pad_token_id": PAD,
    "eos_token_id": EOS,
    "bos_token_id": BOS,
    "initializer_range": 0.3,
}
"""Config sizes of the tiny Qwen2 / Qwen3 / Mistral models (the byte tokenizer's vocabulary)."""


def tiny_config(*, tie: bool = False, attn: str = "sdpa") -> LlamaConfig:
    config = LlamaConfig(
        vocab_size=259,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=PAD,
        eos_token_id=EOS,
        bos_token_id=BOS,
        tie_word_embeddings=tie,
        initializer_range=0.3,  # peaky distributions: sampling and greedy differ clearly
    )
    config._attn_implementation = attn
    return config


def tiny_model(seed: int = 0, *, tie: bool = False, attn: str = "sdpa") -> LlamaForCausalLM:
    """A random 2-layer Llama, deterministic given ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_config(tie=tie, attn=attn)).eval()


def make_batch(
    prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
) -> SequenceBatch:
    """Left-padded prompts + right-padded responses (pad id 0, mask 0 on padding)."""
    p = max(len(x) for x in prompts)
    r = max(len(x) for x in responses)
    ids = torch.full((len(prompts), p + r), PAD, dtype=torch.long)
    mask = torch.zeros_like(ids)
    response_mask = torch.zeros((len(prompts), r), dtype=torch.bool)
    for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        ids[i, p - len(prompt) : p] = torch.tensor(prompt)
        ids[i, p : p + len(response)] = torch.tensor(response)
        mask[i, p - len(prompt) : p + len(response)] = 1
        response_mask[i, : len(response)] = True
    return SequenceBatch(ids, mask, response_mask)


def direct_logprobs(
    model: torch.nn.Module, prompt: Sequence[int], response: Sequence[int], temperature: float = 1.0
) -> tuple[Tensor, Tensor]:
    """Reference: one unpadded sequence, full logits, float64 log_softmax. Returns (L,), (L,)."""
    ids = torch.tensor([list(prompt) + list(response)])
    with torch.no_grad():
        logits = model(ids, use_cache=False).logits[0].double() / temperature  # [T, V]
    logp = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1]  # [L, V]
    chosen = logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return chosen, entropy


PROMPTS = [[5, 9, 12, 40], [7, 8], [100, 3, 44, 45, 46, 47]]
RESPONSES = [[20, 21, 22], [30, 31, 32, 33, 34], [60]]


def write_tiny_gguf(path: Path, model: LlamaForCausalLM) -> Path:
    """Writes ``model`` (float32) and :func:`tiny_tokenizer` as a llama GGUF file.

    Like llama.cpp's converter, q/k projection rows are permuted (transformers undoes it).
    """
    cfg = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    vocab = sorted(tiny_tokenizer().get_vocab().items(), key=lambda kv: kv[1])
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([token for token, _ in vocab])
    writer.add_token_types([3 if i < 3 else 1 for _, i in vocab])  # 3: control token
    writer.add_token_scores([0.0] * len(vocab))
    writer.add_token_merges([])
    writer.add_bos_token_id(BOS)
    writer.add_eos_token_id(EOS)
    writer.add_pad_token_id(PAD)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        array = tensor.detach().float().numpy()
        if name.endswith("q_proj.weight"):
            array = _permute(array, cfg.num_attention_heads)
        if name.endswith("k_proj.weight"):
            array = _permute(array, cfg.num_key_value_heads)
        writer.add_tensor(names.get_name(name.removesuffix(".weight")) + ".weight", array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _permute(array: np.ndarray, heads: int) -> np.ndarray:
    rows = array.shape[0]
    return array.reshape(heads, 2, rows // heads // 2, -1).swapaxes(1, 2).reshape(array.shape)
