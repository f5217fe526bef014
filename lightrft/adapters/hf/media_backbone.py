"""The backbone of a multimodal model: ids plus media in, last hidden states (B, T, H) out,
no language-model head. Reward models (a score head) read it.

Shape letters: B rows, T tokens, H hidden size.

Most families keep their media encoders inside their base model (Qwen2-VL, Qwen2.5-VL,
Qwen2-Audio: ``model.model`` holds the vision tower or audio encoder and the language model),
so the backbone is ``model.model`` and its parameters are named ``model.*`` in the model. A
family whose encoders sit beside its text model (the Qwen2.5-Omni thinker) registers its own
backbone in :data:`MEDIA_BACKBONES` (keyed by ``config.model_type``), with the prefix its
parameter names have in the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from lightrft.adapters.hf.multimodal_inputs import unwrapped
from lightrft.domain.registry import Registry


@dataclass(frozen=True)
class MediaBackbone:
    """``module``: forward(**the family's model arguments) -> an output with
    ``last_hidden_state`` (and ``hidden_states`` when asked); ``prefix``: what its parameter
    names are prefixed with in the model's own state dict (``"model."``, or ``""``)."""

    module: nn.Module
    prefix: str


MEDIA_BACKBONES: Registry[Callable[[nn.Module], MediaBackbone]] = Registry(
    "multimodal backbone family", builtin_modules=("lightrft.adapters.hf.omni_backbone",)
)


def media_backbone(model: nn.Module) -> MediaBackbone:
    """The backbone of ``model``'s family (module docstring)."""
    base = unwrapped(model)
    family = str(base.config.model_type)
    if family in MEDIA_BACKBONES:
        return MEDIA_BACKBONES.get(family)(base)
    return MediaBackbone(base.model, "model.")
