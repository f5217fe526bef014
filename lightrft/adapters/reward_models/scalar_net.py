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

from torch import Tensor, nn
from transformers import PreTrainedModel

from lightrft.adapters.model_parts.positions import position_ids_from_mask
from lightrft.adapters.model_parts.seeds import seeded_init
from lightrft.adapters.reward_models.media import PairMedia
from lightrft.adapters.reward_models.score_heads import (
    HeadSpec,
    ScoreHeads,
    backbone_layers,
    probed_index,
)
from lightrft.domain.modality import Payload

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
    """Backbone + score heads; ``forward(input_ids, attention_mask)`` gives scores (B, K),
    one column per head (K = 1 for a plain classifier).

    The classifier itself is kept aside (not as a submodule: its parameters are the
    backbone's and the head's) for its config and ``save_pretrained``. Parameter names are
    ``backbone.*``, ``head.*`` (the classifier's own head) and ``scoring.*`` (the pooling,
    named heads and logit scales of a ``spec`` beyond the plain one,
    :mod:`~lightrft.adapters.reward_models.score_heads`, drawn from ``init_seed``);
    :meth:`classifier_names` maps the first two to the classifier's.
    """

    def __init__(
        self,
        classifier: PreTrainedModel,
        media: PairMedia | None = None,
        spec: HeadSpec | None = None,
        *,
        init_seed: int = 0,
    ) -> None:
        super().__init__()
        head_name = score_head_name(classifier)
        self.backbone: nn.Module = classifier.base_model
        self.head: nn.Linear = getattr(classifier, head_name)
        self.spec = spec or HeadSpec()
        self.probed = (
            None
            if self.spec.probing_layer is None
            else probed_index(self.spec.probing_layer, backbone_layers(classifier.config))
        )
        with seeded_init(init_seed, "reward_model.score_heads"):
            self.scoring = ScoreHeads(self.spec, self.head.in_features, self.head)
        self.scoring.to(device=self.head.weight.device, dtype=self.head.weight.dtype)
        self.train(classifier.training)  # the fresh parts in the classifier's mode
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

    @property
    def head_names(self) -> tuple[str, ...]:
        """The score heads' names, in the order of the score columns."""
        return self.spec.names

    def hidden(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload] = ()
    ) -> Tensor:
        """The hidden states (B, T, H) the heads read: the probed layer's, else the last."""
        media = self.media
        if media is not None and any(payloads):
            kwargs = media.model_kwargs(input_ids, attention_mask, payloads)
        else:
            kwargs = {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "position_ids": position_ids_from_mask(attention_mask),
            }
        if self.probed is None:
            return self.backbone(**kwargs, use_cache=False).last_hidden_state
        out = self.backbone(**kwargs, use_cache=False, output_hidden_states=True)
        hidden: Tensor = out.hidden_states[self.probed]
        return hidden

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, payloads: Sequence[Payload] = ()
    ) -> Tensor:
        """Scores (B, K) in float32 of ``input_ids`` (B, T) under ``attention_mask`` (B, T);
        ``payloads``: one media payload per row (``()`` when no row has media)."""
        hidden = self.hidden(input_ids, attention_mask, payloads)  # [B, T, H]
        return self.scoring(hidden, attention_mask)

    def classifier_names(self, name: str) -> str:
        """``backbone.x`` -> ``<prefix>.x``, ``head.x`` -> ``<head name>.x``."""
        root, _, rest = name.partition(".")
        if root == "backbone":
            return f"{self._aside['prefix']}.{rest}"
        if root == "head":
            return f"{self._aside['head_name']}.{rest}"
        raise KeyError(f"{name!r} is not a parameter name of the reward network")
