"""The Qwen2.5-Omni thinker as a backbone: ids plus images, videos and audio in, the text
model's last hidden states (B, T, H) out, without the language-model head.

Shape letters: B rows, T tokens, H hidden size.

The thinker keeps its encoders (``visual``, ``audio_tower``) beside its text model
(``model``), so ``thinker.model`` alone would not see the media. :class:`OmniBackbone` holds
the three as its own children, under the names they have in the thinker (its parameter
names are the thinker's, prefix ``""``), and does what the thinker's forward does before its
head, through the thinker's own methods: embed the ids, run the audio encoder, the vision
tower on images and on videos, scatter their outputs onto the ``<|AUDIO|>`` /
``<|IMAGE|>`` / ``<|VIDEO|>`` positions, and run the text model with the M-RoPE positions
it is given (:class:`~lightrft.adapters.hf.omni.OmniInputs` builds them with the thinker's
``get_rope_index``). Registered in
:data:`~lightrft.adapters.hf.media_backbone.MEDIA_BACKBONES` for reward models.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from lightrft.adapters.hf.media_backbone import MEDIA_BACKBONES, MediaBackbone

FAMILY = "qwen2_5_omni_thinker"


class OmniBackbone(nn.Module):
    """See the module docstring; ``thinker`` is a ``Qwen2_5OmniThinkerForConditionalGeneration``."""

    def __init__(self, thinker: nn.Module) -> None:
        super().__init__()
        self.model = thinker.model
        self.visual = thinker.visual
        self.audio_tower = thinker.audio_tower
        self.config = thinker.config
        self._aside = {"thinker": thinker}  # its methods, not a second copy of its weights

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        *,
        pixel_values: Tensor | None = None,
        image_grid_thw: Tensor | None = None,
        pixel_values_videos: Tensor | None = None,
        video_grid_thw: Tensor | None = None,
        input_features: Tensor | None = None,
        feature_attention_mask: Tensor | None = None,
        **kwargs: Any,
    ) -> Any:
        """The text model's output (``last_hidden_state`` (B, T, H)); ``kwargs`` go to it
        (``use_cache``, ``output_hidden_states``)."""
        thinker = self._aside["thinker"]
        embeds = thinker.get_input_embeddings()(input_ids)  # [B, T, H]
        image_mask, video_mask, audio_mask = thinker.get_placeholder_mask(
            input_ids, inputs_embeds=embeds
        )  # each [B, T, 1]
        if input_features is not None:
            audio = thinker.get_audio_features(
                input_features, feature_attention_mask, return_dict=True
            ).last_hidden_state
            embeds = embeds.masked_scatter(audio_mask, audio.to(embeds.dtype))
        for pixels, grid, mask, encode in (
            (pixel_values, image_grid_thw, image_mask, thinker.get_image_features),
            (pixel_values_videos, video_grid_thw, video_mask, thinker.get_video_features),
        ):
            if pixels is not None:
                parts = encode(pixels, grid, return_dict=True).pooler_output
                features = parts if isinstance(parts, Tensor) else _cat(parts)
                embeds = embeds.masked_scatter(mask, features.to(embeds.dtype))
        return self.model(
            attention_mask=attention_mask,
            position_ids=position_ids,
            inputs_embeds=embeds,
            return_dict=True,
            **kwargs,
        )


def _cat(parts: Any) -> Tensor:
    return torch.cat(list(parts), dim=0)  # the encoder's per-item outputs, in item order


MEDIA_BACKBONES.add(FAMILY, lambda thinker: MediaBackbone(OmniBackbone(thinker), ""))
