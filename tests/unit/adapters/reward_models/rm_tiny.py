"""Tiny random sequence-classification reward models for the reward-model tests."""

from __future__ import annotations

import torch
from transformers import LlamaForSequenceClassification

from tests.unit.adapters.hf.hf_tiny import tiny_config


def tiny_classifier(seed: int = 0) -> LlamaForSequenceClassification:
    """A random 2-layer Llama with a one-output score head, eval mode."""
    torch.manual_seed(seed)
    config = tiny_config()
    config.num_labels = 1
    return LlamaForSequenceClassification(config).eval()


def teach(
    model: torch.nn.Module,
    prompts: list[list[int]],
    targets: list[list[int]],
    *,
    steps: int = 60,
    lr: float = 2e-2,
) -> torch.nn.Module:
    """``model`` (a causal LM) fitted by teacher forcing to answer each prompt with its
    target token ids; returned in eval mode."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = torch.zeros(())
        for prompt, target in zip(prompts, targets, strict=True):
            ids = torch.tensor([prompt + target])  # (1, P + L)
            logits = model(ids).logits[0, len(prompt) - 1 : -1]  # (L, V): predicts target
            loss = loss + torch.nn.functional.cross_entropy(logits, torch.tensor(target))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()
