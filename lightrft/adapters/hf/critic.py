"""HfCritic: a value model from a Hugging Face backbone plus a linear value head.

Shape letters: B samples, T sequence tokens, R response tokens, H hidden size. The value of
response token t is read at the column that predicts it (``T - R - 1 + t``), the same place
the policy's log-prob of that token comes from, so V_t is the value of the state before t.

Two backbones: a causal LM's decoder (text), or the base model of a multimodal family
(Qwen2-VL / Qwen2.5-VL / Qwen2-Audio: ``model.model``, the vision or audio encoder plus the
language model, no LM head; the Qwen2.5-Omni thinker's ``model`` is its text model alone and
is refused), whose forward gets the same media
arguments as the policy's (pixels, token types, M-RoPE positions ...) from the family's
:class:`~lightrft.adapters.hf.multimodal_inputs.MultimodalInputs` and the batch's payloads.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.multimodal_inputs import MultimodalInputs, unwrapped
from lightrft.adapters.hf.weights import module_device
from lightrft.adapters.model_parts.seeds import seeded_init
from lightrft.domain.types import SequenceBatch

MEDIA_ENCODERS = ("visual", "audio_tower", "vision_tower")
"""Submodules of a multimodal base model that read the media (InternVL's is
``vision_tower``): a critic needs one (the Qwen2.5-Omni thinker keeps its encoders beside
its text model, not in it)."""


class _ValueModel(nn.Module):
    """A backbone (ids + media -> last hidden states (B, T, H)) and a value head, trained
    together."""

    def __init__(self, backbone: nn.Module, hidden: int, init_seed: int) -> None:
        super().__init__()
        self.backbone = backbone
        param = next(self.backbone.parameters())
        with seeded_init(init_seed, "critic.value_head"):  # nn.Linear draws a default init
            self.value_head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        self.value_head.to(device=param.device, dtype=param.dtype)

    def forward(self, **inputs: Any) -> Tensor:
        out = self.backbone(**inputs)
        values: Tensor = self.value_head(out.last_hidden_state).squeeze(-1)  # [B, T]
        return values


class HfCritic:
    """Critic port over a causal LM, or with ``multimodal`` (the family's input builder) over
    a multimodal model: values (B, R) of the response tokens, 0 on padding.

    The value head starts at zero (V = 0 everywhere); building it draws from the seed
    ``init_seed`` (the run's seed), never from torch's global random stream.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        *,
        init_seed: int = 0,
        multimodal: MultimodalInputs | None = None,
    ) -> None:
        self._multimodal = multimodal
        if multimodal is None:
            backbone, hidden = model.get_decoder(), int(model.config.hidden_size)
        else:  # the encoders and the language model, without the LM head
            base = unwrapped(model)
            backbone, hidden = base.model, int(base.config.get_text_config().hidden_size)
            if not any(hasattr(backbone, name) for name in MEDIA_ENCODERS):
                raise ValueError(
                    f"{type(base).__name__}: its base model ({type(backbone).__name__}) holds "
                    "no media encoder, so a critic on it would not see the media; no critic is "
                    "built for this family (use a critic-free advantage estimator)"
                )
        self._model = _ValueModel(backbone, hidden, init_seed)

    @property
    def module(self) -> nn.Module:
        """Backbone and value head: what the training strategy wraps."""
        return self._model

    def values(self, batch: SequenceBatch) -> Tensor:
        """V_t for each response token, shape (B, R), on the model's device (the batch is
        moved there); autograd follows the caller."""
        batch = batch.to(module_device(self._model))
        r = batch.response_length
        t = batch.input_ids.shape[1]
        if r >= t:
            raise ValueError(f"a response of {r} columns needs a prompt column before it (T={t})")
        values = self._model(**self._inputs(batch))[:, t - r - 1 : t - 1]
        keep = batch.response_mask.bool()
        return torch.where(keep, values.float(), torch.zeros_like(values, dtype=torch.float32))

    def _inputs(self, batch: SequenceBatch) -> dict[str, Any]:
        """The backbone's forward arguments: ids, mask and positions, plus the media ones."""
        ids, mask = batch.input_ids, batch.attention_mask
        if self._multimodal is None:
            return {
                "input_ids": ids,
                "attention_mask": mask,
                "position_ids": position_ids_from_mask(mask),
            }
        payloads = batch.multimodal or tuple({} for _ in range(int(ids.shape[0])))
        return self._multimodal.model_inputs(ids, mask, payloads).kwargs
