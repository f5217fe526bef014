"""A causal LM's logits at chosen sequence columns only.

transformers' ``logits_to_keep`` argument slices the hidden states before the LM head, so
the (B, T, V) logits of every column are never built: what the log-prob path needs at the
response columns, and what a process reward model needs at its step ends. A model whose
``forward`` does not take it gets the full logits, sliced after the head.
"""

from __future__ import annotations

import inspect
from typing import Any

from torch import Tensor, nn


def logits_at_columns(model: nn.Module, keep: Tensor, **inputs: Any) -> Tensor:
    """Logits at sequence indices ``keep`` (S,): shape (B, S, V); the LM head runs on those
    columns only when the model takes ``logits_to_keep``."""
    if _accepts_logits_to_keep(model):
        logits: Tensor = model(**inputs, use_cache=False, logits_to_keep=keep).logits
        return logits
    full: Tensor = model(**inputs, use_cache=False).logits
    return full[:, keep]


def _accepts_logits_to_keep(model: nn.Module) -> bool:
    unwrap: Any = getattr(model, "get_base_model", None)  # PEFT wrapper
    base = unwrap() if callable(unwrap) else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters
