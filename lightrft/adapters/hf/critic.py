"""HfCritic: a value model from a Hugging Face causal LM backbone plus a linear value head.

Shape letters: B samples, T sequence tokens, R response tokens, H hidden size. The value of
response token t is read at the column that predicts it (``T - R - 1 + t``), the same place
the policy's log-prob of that token comes from, so V_t is the value of the state before t.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from lightrft.adapters.hf.logprobs import position_ids_from_mask
from lightrft.adapters.hf.weights import module_device
from lightrft.adapters.model_parts.seeds import seeded_init
from lightrft.domain.types import SequenceBatch


class _ValueModel(nn.Module):
    """The causal LM's decoder (no LM head) and a value head, trained together."""

    def __init__(self, causal_lm: PreTrainedModel, init_seed: int) -> None:
        super().__init__()
        self.backbone = causal_lm.get_decoder()
        hidden = int(causal_lm.config.hidden_size)
        param = next(self.backbone.parameters())
        with seeded_init(init_seed, "critic.value_head"):  # nn.Linear draws a default init
            self.value_head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        self.value_head.to(device=param.device, dtype=param.dtype)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        out = self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids_from_mask(attention_mask),
        )
        return self.value_head(out.last_hidden_state).squeeze(-1)  # [B, T]


class HfCritic:
    """Critic port over a causal LM: values (B, R) of the response tokens, 0 on padding.

    The value head starts at zero (V = 0 everywhere); building it draws from the seed
    ``init_seed`` (the run's seed), never from torch's global random stream.
    """

    def __init__(self, causal_lm: PreTrainedModel, *, init_seed: int = 0) -> None:
        self._model = _ValueModel(causal_lm, init_seed)

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
        values = self._model(batch.input_ids, batch.attention_mask)[:, t - r - 1 : t - 1]
        keep = batch.response_mask.bool()
        return torch.where(keep, values.float(), torch.zeros_like(values, dtype=torch.float32))
