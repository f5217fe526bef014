"""The root of ``lightrft chat``: a model directory loaded for generation on the first GPU
(else the CPU), behind a chat session with its tokenizer's chat template."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.hf import default_model_path, load_causal_lm, load_tokenizer
from lightrft.adapters.hf.chat import HfChat
from lightrft.domain.types import SamplingParams


@dataclass(frozen=True)
class ChatParts:
    """The session, and the model directory and device it runs (for the greeting line)."""

    session: HfChat
    model: Path
    device: torch.device


def chat_parts(model: Path | None, sampling: SamplingParams, system: str | None) -> ChatParts:
    """The session of ``model`` (None: the embedded model) sampling with ``sampling``."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    path = model or default_model_path()
    module: Any = load_causal_lm(path, device)
    session = HfChat(module.eval(), load_tokenizer(path), device, sampling, system=system)
    return ChatParts(session, path, device)
