"""``EngineScalarRewardModel``: a scalar reward model scored by an inference engine.

Shape letters: B samples. Each (prompt, response) pair is tokenized exactly as for the HF
path (:func:`~lightrft.adapters.reward_models.encoding.encode_pairs` with the model's card),
the padding dropped, and the token sequences handed to a :class:`SequenceScorer` (e.g.
``VllmRewardScorer``, vLLM's pooling runner), which returns the classifier head's output at
each sequence's last token. Normalization and metrics are the HF path's
(:mod:`~lightrft.adapters.reward_models.scores`). ``onload``/``offload`` wake the engine and
put it to sleep; ``close`` shuts it down.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import structlog
from torch import Tensor

from lightrft.adapters.reward_models.card import RewardModelCard
from lightrft.adapters.reward_models.encoding import encode_pairs
from lightrft.adapters.reward_models.loading import load_card, load_reward_tokenizer
from lightrft.adapters.reward_models.scores import scalar_result, scoring_normalization
from lightrft.adapters.reward_parts.source_bases import ColocatedModelSource
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)


class SequenceScorer(Protocol):
    """An engine giving one raw reward-model score per token sequence."""

    def scores(self, rows: Sequence[Sequence[int]]) -> Tensor:
        """Raw scores. Shape: (B,) float32, on the CPU."""
        ...

    def sleep(self) -> None:
        """Frees the engine's memory where it can."""
        ...

    def wake_up(self) -> None:
        """Restores what ``sleep`` freed."""
        ...

    def close(self) -> None:
        """Shuts the engine down."""
        ...


class EngineScalarRewardModel(ColocatedModelSource):
    """Scores (B,) of a scalar reward model run by ``scorer`` (see the module docstring).

    Args:
        scorer: the engine holding the reward model.
        tokenizer: the reward model's tokenizer.
        card: pair encoding and saved normalization.
        name: the reward source's name (metrics, weights).
        normalize: divide by the card's normalization (an error if it has none).
    """

    def __init__(
        self,
        scorer: SequenceScorer,
        tokenizer: Any,
        *,
        card: RewardModelCard | None = None,
        name: str = "reward_model",
        normalize: bool = False,
    ) -> None:
        self.card = card or RewardModelCard()
        if not self.card.heads.plain:
            raise ValueError(
                f"reward model {name!r} scores with {self.card.heads} (probing layer, pooling "
                "or named heads): the engine's pooling runner reads the last token's linear "
                "head only; use engine: hf"
            )
        self._normalization = scoring_normalization(self.card, normalize, name)
        self.scorer, self.tokenizer = scorer, tokenizer
        self._name = name

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        scorer: SequenceScorer,
        *,
        trust_remote_code: bool = False,
        name: str = "reward_model",
        normalize: bool = False,
    ) -> EngineScalarRewardModel:
        """The reward model directory ``path`` (tokenizer and card) scored by ``scorer``,
        which must hold the same directory's weights."""
        tokenizer = load_reward_tokenizer(path, trust_remote_code=trust_remote_code)
        return cls(scorer, tokenizer, card=load_card(path), name=name, normalize=normalize)

    def token_rows(self, samples: Sequence[RewardSample]) -> list[list[int]]:
        """The token ids of each ``prompt_text + completion.text``, as the HF path feeds them."""
        ids, mask = encode_pairs(
            self.tokenizer,
            [s.prompt.prompt_text for s in samples],
            [s.completion.text for s in samples],
            self.card.encoding,
        )
        return [row[keep.bool()].tolist() for row, keep in zip(ids, mask, strict=True)]

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32, normalized if asked."""
        rows = self.token_rows(samples) if samples else []
        return scalar_result(self.scorer.scores(rows), self._normalization)

    def onload(self) -> None:
        """Wakes the engine."""
        self.scorer.wake_up()
        log.debug("reward_model.onload", name=self._name)

    def offload(self) -> None:
        """Puts the engine to sleep."""
        self.scorer.sleep()
        log.debug("reward_model.offload", name=self._name)

    def close(self) -> None:
        """Shuts the engine down."""
        self.scorer.close()
