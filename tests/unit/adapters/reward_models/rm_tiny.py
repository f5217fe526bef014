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
