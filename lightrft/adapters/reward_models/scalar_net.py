"""The trainable scalar reward network: an HF sequence-classification model read at the last
attended token.

Shape letters: B sequences, T tokens, H hidden size. The network is the classifier's
backbone (its ``base_model``, a decoder without LM head) and its one-output score head
(``score`` or ``classifier``, a linear layer). The score of a row is the head applied to the
hidden state of the row's last attended token (:func:`~lightrft.domain.preference.
last_token_index`), found from the attention mask, so left and right padding give the same
scores (unlike pooling by pad id, which breaks when pad = EOS). Position ids count attended
tokens only.

A vision- or audio-language backbone reads media: with ``media``
(:class:`~lightrft.adapters.reward_models.media.PairMedia`), rows that carry a payload run with
the family's forward arguments (pixels, M-RoPE positions ...).

A causal LM checkpoint loads as such a classifier with a fresh head (``from_pretrained`` with
``num_labels=1``), which is how reward-model training starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from lightrft.adapters.model_parts.positions import position_ids_from_mask
from lightrft.adapters.reward_models.media import PairMedia
from lightrft.domain.modality import Payload
from lightrft.domain.preference import last_token_index

HEAD_NAMES = ("score", "classifier")


def score_head_name(classifier: PreTrainedModel) -> str:
    """The attribute holding the classifier's linear head; ``ValueError`` if there is none."""
    for name in HEAD_NAMES:
        head = getattr(classifier, name, None)
        if isinstance(head, nn.Linear):
            if head.out_features != 1:
                raise ValueError(
                    f"a scalar reward model needs a head with 1 output, {name} has "
                    f"{head.out_features} (load with num_labels=1)"
                )
            return name
    raise ValueError(
        f"{type(classifier).__name__} has no linear score head named {' or '.join(HEAD_NAMES)}"
    )


class ScalarRewardNet(nn.Module):
    """Backbone + linear head; ``forward(input_ids, attention_mask)`` gives scores (B,).

    The classifier itself is kept aside (not as a submodule: its parameters are the
    backbone's and the head's) for its config and ``save_pretrained``. Parameter names are
    ``backbone.*`` and ``head.*``; :meth:`classifier_names` maps them to the classifier's.
    """

    def __init__(self, classifier: PreTrainedModel, media: PairMedia | None = None) -> None:
        super().__init__()
        head_name = score_head_name(classifier)
        self.backbone: nn.Module = classifier.base_model
        self.head: nn.Linear = getattr(classifier, head_name)
        self._aside: dict[str, Any] = {
            "classifier": classifier,
            "head_name": head_name,
            "prefix": classifier.base_model_prefix,
            "media": media,
        }

    @property
    def classifier(self) -> PreTrainedModel:
        """The HF sequence-classification model these weights belong to."""
        classifier: PreTrainedModel = self._aside["classifier"]
        return classifier

    @property
    def media(self) -> PairMedia | None:
        """The family's media reader (None: a text model)."""
        media: PairMedia | None = self._aside["media"]
        return media

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload] = ()
    ) -> Tensor:
        """Scores (B,) in float32 of ``input_ids`` (B, T) under ``attention_mask`` (B, T);
        ``payloads``: one media payload per row (``()`` when no row has media)."""
        media = self.media
        if media is not None and any(payloads):
            kwargs = media.model_kwargs(input_ids, attention_mask, payloads)
        else:
            kwargs = {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "position_ids": position_ids_from_mask(attention_mask),
            }
        out = self.backbone(**kwargs, use_cache=False)
        hidden = out.last_hidden_state  # [B, T, H]
        last = last_token_index(attention_mask)
        pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]  # [B, H]
        return self.head(pooled).squeeze(-1).float()

    def classifier_names(self, name: str) -> str:
        """``backbone.x`` -> ``<prefix>.x``, ``head.x`` -> ``<head name>.x``."""
        root, _, rest = name.partition(".")
        if root == "backbone":
            return f"{self._aside['prefix']}.{rest}"
        if root == "head":
            return f"{self._aside['head_name']}.{rest}"
        raise KeyError(f"{name!r} is not a parameter name of the reward network")
