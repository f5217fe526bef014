"""Building blocks for running the contract suites against the real adapters (no downloads).

The tiny random Llama and byte-level tokenizer of the HF adapter unit tests
(:mod:`tests.unit.adapters.hf.hf_tiny`), a few short prompts rendered through the real
prompt pipeline, and reward samples with real text and token ids.
"""

from __future__ import annotations

import torch
from torch import nn

from lightrft.adapters.datasets import InMemoryPromptSource
from lightrft.adapters.hf import HfPolicy, LoraParams
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from tests.unit.adapters.hf.hf_tiny import EOS, tiny_model, tiny_tokenizer

__all__ = [
    "CPU",
    "EOS",
    "ORDINARY_IDS",
    "PROMPT_ROWS",
    "REWARD_RESPONSES",
    "VOCAB_SIZE",
    "lora_policy",
    "randomize",
    "reward_samples",
    "short_prompts",
    "tiny_model",
    "tiny_tokenizer",
]

CPU = torch.device("cpu")
VOCAB_SIZE = 259  # tiny_config's vocabulary: <pad>, <eos>, <bos> and 256 byte tokens
ORDINARY_IDS = tuple(range(40, 60))  # byte tokens: no pad / EOS / BOS among them

PROMPT_ROWS = [
    {"prompt": "2+5=", "reference": "7"},
    {"prompt": "What is 3 times 4?", "reference": "12"},
    {"prompt": "9-1", "reference": "8"},
    {"prompt": "Add 10 and 6.", "reference": "16"},
]

# Responses to PROMPT_ROWS[0] (reference "7"), judged by the reward contract.
REWARD_RESPONSES = ("#### 7", "7", "<think>3 plus 4</think> #### 7", "#### 8", "no idea", "")


def short_prompts() -> list[PromptRecord]:
    """The records of ``PROMPT_ROWS``, rendered with the tiny tokenizer's chat template."""
    source = InMemoryPromptSource(PROMPT_ROWS, tiny_tokenizer(), name="contract")
    return [source[i] for i in range(len(source))]


def reward_samples() -> list[RewardSample]:
    """One sample per ``REWARD_RESPONSES`` entry: its byte tokens then EOS, ``"stop"``."""
    prompt = short_prompts()[0]
    tokenizer = tiny_tokenizer()
    samples = []
    for text in REWARD_RESPONSES:
        ids = (*tokenizer.encode(text, add_special_tokens=False), EOS)
        samples.append(RewardSample(prompt, Completion(0, ids, text, "stop", None)))
    return samples


def randomize(module: nn.Module, seed: int, std: float = 0.3) -> None:
    """Fills every parameter of ``module`` with N(0, std^2) values fixed by ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * std)


def lora_policy(seed: int = 0, *, packing: bool = False) -> HfPolicy:
    """A LoRA ``HfPolicy`` whose adapters were "trained": B != 0, so they change outputs."""
    policy = HfPolicy(tiny_model(seed), lora=LoraParams(rank=4, alpha=8), packing=packing)
    generator = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, param in policy.module.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.1)
    return policy
