"""The root of ``lightrft chat``: a model directory loaded for generation on the first GPU
(else the CPU), behind a chat session with its tokenizer's chat template.

The model's modality comes from its checkpoint, as a run's (``model.modality: auto``): a
text model loads as a causal LM; a vision-language (or omni) one through its modality's
loader, with the prompt encoder that turns a turn's images into model inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from lightrft.adapters.hf import default_model_path, load_causal_lm, load_tokenizer
from lightrft.adapters.hf.chat import ChatMedia, HfChat
from lightrft.domain.types import SamplingParams
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.roots.policy_free import policy_free_context
from lightrft.entrypoints.wiring.registrations import register_builtins
from lightrft.entrypoints.wiring.registries import MODEL_LOADERS


@dataclass(frozen=True)
class ChatParts:
    """The session, and the model directory, its modality and the device it runs (for the
    greeting line)."""

    session: HfChat
    model: Path
    device: torch.device
    modality: str = "text"


def chat_parts(
    model: Path | None,
    sampling: SamplingParams,
    system: str | None,
    device: str | None = None,
) -> ChatParts:
    """The session of ``model`` (None: the embedded model) sampling with ``sampling``, on
    ``device`` (None: the first GPU, else the CPU)."""
    chosen = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    path = model or default_model_path()
    config = load_config(overrides={"model.path": str(path)})
    modality = config.model.modality
    if modality == "text":
        module: Any = load_causal_lm(path, chosen)
        session = HfChat(module.eval(), load_tokenizer(path), chosen, sampling, system=system)
        return ChatParts(session, path, chosen)
    register_builtins()
    loader = MODEL_LOADERS.get(modality)
    tokenizer = loader.tokenizer(config, path)
    context = replace(policy_free_context(config, path, chosen, who="chat"), tokenizer=tokenizer)
    module = loader.generation_model(context).eval()
    media = None
    if loader.prompt_encoder is not None and loader.engine_inputs is not None:
        encoder = loader.prompt_encoder(context)
        if encoder.requirements.image_placeholder is not None:  # it reads images
            media = ChatMedia(encoder, loader.engine_inputs(module))
    session = HfChat(module, tokenizer, chosen, sampling, system=system, media=media)
    return ChatParts(session, path, chosen, modality)
