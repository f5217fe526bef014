"""``FakeCritic``: the ``Critic`` port on a tiny GRU value model.

Shape letters: B samples, T sequence tokens, R response tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.adapters.fakes.fake_model import SeededTinyModel
from lightrft.adapters.fakes.response_logprobs import predicting_columns
from lightrft.adapters.fakes.tiny_lm import TinyGruValueModel
from lightrft.domain.types import SequenceBatch


class FakeCritic(SeededTinyModel):
    """A trainable :class:`TinyGruValueModel`; records ``values_calls``.

    V_t, the value of response token ``t``, is read at the column that predicts the token
    (``T - R + t - 1``): the value of the state in which the token is chosen.
    """

    architecture = TinyGruValueModel
    values_calls = 0

    def values(self, batch: SequenceBatch) -> Tensor:
        """Values V_t. Shape (B, R), 0 where ``response_mask`` is 0."""
        self.values_calls += 1
        columns = predicting_columns(batch)
        all_values = self._module(
            batch.input_ids.to(self.device), batch.attention_mask.to(self.device)
        )  # [B, T]
        keep = batch.response_mask.to(self.device).bool()
        return torch.where(keep, all_values[:, columns], torch.zeros((), device=self.device))
