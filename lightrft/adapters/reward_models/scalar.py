"""``HfScalarRewardModel``: a ``RewardSource`` scoring (prompt, response) with a scalar
reward model, and the trainable model behind ``lightrft rm train``.

Shape letters: B samples, K score heads. Scores are the network's output, by default at the
last attended token (:mod:`~lightrft.adapters.reward_models.scalar_net`; the card's
:class:`~lightrft.adapters.reward_models.score_heads.HeadSpec` may read another layer, pool
otherwise and have several named heads, combined by the card's weights), of
``prompt_text + response_text`` tokenized as during training
(:mod:`~lightrft.adapters.reward_models.encoding`), optionally normalized with the mean and
std saved with the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import structlog
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from typing_extensions import Unpack

from lightrft.adapters.model_parts.host_offload import HostOffload
from lightrft.adapters.reward_models.card import SCORING_FILE, RewardModelCard, ScoreNormalization
from lightrft.adapters.reward_models.encoding import (
    PaddingSide,
    encode_pairs,
    pad_rows,
    pair_rows,
)
from lightrft.adapters.reward_models.loading import (
    load_card,
    load_reward_classifier,
    load_reward_tokenizer,
)
from lightrft.adapters.reward_models.lora import RewardLoraParams, add_lora, merged_state
from lightrft.adapters.reward_models.media import PairMedia, expand_media_rows
from lightrft.adapters.reward_models.scalar_net import ScalarRewardNet
from lightrft.adapters.reward_models.scores import scalar_result, scoring_normalization
from lightrft.adapters.reward_parts.source_bases import ColocatedModelSource
from lightrft.domain.modality import Payload
from lightrft.domain.types import RewardResult, RewardSample

log = structlog.get_logger(__name__)


class ScoringOptions(TypedDict, total=False):
    """How :class:`HfScalarRewardModel` scores; the same keywords for its constructor and
    :meth:`HfScalarRewardModel.from_pretrained` (defaults in the class docstring)."""

    name: str
    normalize: bool
    micro_batch_size: int
    padding_side: PaddingSide


class HfScalarRewardModel(HostOffload, ColocatedModelSource):
    """Scores (B,) from a sequence-classification model with one output.

    Args:
        classifier: the HF model (``loading.load_reward_classifier``).
        tokenizer: its tokenizer (needs a pad token).
        device: where the weights live while onloaded.
        card: pair encoding and saved normalization.
        lora: add fresh LoRA adapters to the backbone (training only).
        media: the backbone family's media reader (vision- / audio-language reward models,
            :mod:`~lightrft.adapters.reward_models.media`); None: text only.
        init_seed: seeds the fresh scoring parts (pooling, named heads) of ``card.heads``;
            a card loaded from a directory loads their trained weights instead.
        name: the reward source's name (metrics, weights); default "reward_model".
        normalize: divide by the card's normalization (an error if it has none); default off.
        micro_batch_size: rows per forward pass when scoring; default 16.
        padding_side: how scoring batches are padded (scores do not depend on it); "right".
    """

    def __init__(
        self,
        classifier: Any,
        tokenizer: Any,
        device: torch.device,
        *,
        card: RewardModelCard | None = None,
        lora: RewardLoraParams | None = None,
        media: PairMedia | None = None,
        init_seed: int = 0,
        **scoring: Unpack[ScoringOptions],
    ) -> None:
        name = scoring.get("name", "reward_model")
        normalize = scoring.get("normalize", False)
        micro_batch_size = scoring.get("micro_batch_size", 16)
        if micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
        self.card = card or RewardModelCard()
        self._normalization = scoring_normalization(self.card, normalize, name)
        if tokenizer.pad_token_id is None:
            raise ValueError("the reward model's tokenizer needs a pad token")
        self.net = ScalarRewardNet(classifier, media, self.card.heads, init_seed=init_seed)
        if self.card.scoring_file is not None:
            self._load_scoring(self.card.scoring_file)
        if lora is not None:
            add_lora(self.net.backbone, lora)
        self.tokenizer = tokenizer
        self._name = name
        self._device = device
        self._micro_batch_size = micro_batch_size
        self._padding_side = scoring.get("padding_side", "right")
        self._placed = self.net
        self.net.to(device)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        device: torch.device,
        *,
        dtype: str = "float32",
        trust_remote_code: bool = False,
        init_seed: int = 0,
        **scoring: Unpack[ScoringOptions],
    ) -> HfScalarRewardModel:
        """Loads a reward model directory (its card included); weights frozen, eval mode.

        ``init_seed`` seeds the fresh score head of a causal LM checkpoint (the run's seed).
        """
        tokenizer = load_reward_tokenizer(path, trust_remote_code=trust_remote_code)
        classifier = load_reward_classifier(
            path,
            device,
            tokenizer=tokenizer,
            dtype=dtype,
            trust_remote_code=trust_remote_code,
            init_seed=init_seed,
        )
        return cls.for_scoring(classifier, tokenizer, device, card=load_card(path), **scoring)

    @classmethod
    def for_scoring(
        cls,
        classifier: Any,
        tokenizer: Any,
        device: torch.device,
        *,
        card: RewardModelCard,
        media: PairMedia | None = None,
        **scoring: Unpack[ScoringOptions],
    ) -> HfScalarRewardModel:
        """A loaded model for scoring only: ``classifier``'s weights frozen, eval mode."""
        classifier.requires_grad_(False)
        classifier.eval()
        return cls(classifier, tokenizer, device, card=card, media=media, **scoring)

    # -- RewardSource -------------------------------------------------------------------

    @property
    def module(self) -> nn.Module:
        """The network a training strategy wraps (backbone + head)."""
        return self.net

    @property
    def reads_media(self) -> bool:
        """Whether prompts' images / audio reach the score (a multimodal backbone)."""
        return self.net.media is not None

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 of ``prompt_text + completion.text`` (with the prompt's media
        for a multimodal model), normalized if asked."""
        return self._finish(self._raw(samples))

    def _raw(self, samples: Sequence[RewardSample]) -> Tensor:
        """(B, K + 1): each head's raw score, then the combined one."""
        if self._offloaded:
            raise RuntimeError(f"reward model {self._name!r} is offloaded; call onload() first")
        prompts = [s.prompt.prompt_text for s in samples]
        responses = [s.completion.text for s in samples]
        payloads = [s.prompt.multimodal for s in samples] if self.net.media else []
        step = self._micro_batch_size
        was_training = self.net.training
        self.net.eval()
        try:
            with torch.no_grad():
                raw = (
                    torch.cat(
                        [
                            self._with_combined(
                                self.pair_head_scores(
                                    prompts[i : i + step],
                                    responses[i : i + step],
                                    payloads[i : i + step],
                                )
                            ).cpu()
                            for i in range(0, len(samples), self._micro_batch_size)
                        ]
                    )
                    if samples
                    else torch.zeros(0, len(self.net.head_names) + 1)
                )
        finally:
            self.net.train(was_training)
        return raw

    def _with_combined(self, heads: Tensor) -> Tensor:
        return torch.cat([heads, self.combined(heads).unsqueeze(-1)], dim=-1)

    def _finish(self, raw: Tensor) -> RewardResult:
        result = scalar_result(raw[:, -1], self._normalization)
        if raw.shape[1] > 2 and len(raw):  # several heads: each one's mean as a metric
            heads = {f"{n}_mean": raw[:, k].mean() for k, n in enumerate(self.net.head_names)}
            return RewardResult(result.scores, {**result.metrics, **heads})
        return result

    def head_scores(self, samples: Sequence[RewardSample]) -> dict[str, Tensor]:
        """Each head's raw score (B,) of ``samples``, by head name (unnormalized)."""
        raw = self._raw(samples)
        return {name: raw[:, k] for k, name in enumerate(self.net.head_names)}

    def onload(self) -> None:
        """Moves the weights to the device."""
        super().onload()
        log.debug("reward_model.onload", name=self._name)

    def offload(self) -> None:
        """Moves the weights to host memory."""
        super().offload()
        log.debug("reward_model.offload", name=self._name)

    def close(self) -> None:
        """Nothing to release (the weights go with the object)."""

    # -- scoring and training ---------------------------------------------------------

    @property
    def head_names(self) -> tuple[str, ...]:
        """The score heads' names (the columns of :meth:`pair_head_scores`)."""
        return self.net.head_names

    def pair_scores(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        multimodal: Sequence[Payload] = (),
    ) -> Tensor:
        """Raw scores (B,) float32 of the pairs (the heads' combination); autograd follows
        the caller. ``multimodal``: one media payload per pair (``()``: text only)."""
        return self.combined(self.pair_head_scores(prompts, responses, multimodal))

    def combined(self, head_scores: Tensor) -> Tensor:
        """The card's combination of the heads' scores: (B, K) -> (B,)."""
        return self.net.scoring.combine(head_scores)

    def pair_head_scores(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        multimodal: Sequence[Payload] = (),
    ) -> Tensor:
        """Each head's raw score (B, K) float32 of the pairs; autograd follows the caller."""
        encoding = self.card.encoding
        if not any(multimodal):
            ids, mask = encode_pairs(
                self.tokenizer, prompts, responses, encoding, padding_side=self._padding_side
            )
            return self.net(ids.to(self._device), mask.to(self._device))
        rows = pair_rows(self.tokenizer, prompts, responses, encoding)
        rows, payloads = expand_media_rows(rows, multimodal, self.net.media, encoding.max_length)
        ids, mask = pad_rows(self.tokenizer, rows, self._padding_side)
        return self.net(ids.to(self._device), mask.to(self._device), payloads)

    def normalized(self, raw: Tensor) -> Tensor:
        """(raw - mean) / std with the card's normalization. Shape: (B,) -> (B,)."""
        norm = self.card.normalization
        if norm is None:
            raise ValueError(f"reward model {self._name!r} has no saved normalization")
        return (raw - norm.mean) / norm.std

    def export_hf(
        self,
        directory: str | Path,
        *,
        state: Mapping[str, Tensor] | None = None,
        normalization: ScoreNormalization | None = None,
    ) -> Path:
        """Writes an HF sequence-classification directory (LoRA merged), the tokenizer and
        ``lightrft_reward.json``; :meth:`from_pretrained` loads it.

        ``state`` is the network's full state when a sharded strategy gathered it.
        """
        directory = Path(directory)
        if state is not None:
            self.net.load_state_dict(dict(state))
        merged = merged_state(self.net)
        scoring = {k: v.contiguous() for k, v in merged.items() if k.startswith("scoring.")}
        classifier_state = {
            self.net.classifier_names(k): v for k, v in merged.items() if k not in scoring
        }
        self.net.classifier.save_pretrained(directory, state_dict=classifier_state)
        self.tokenizer.save_pretrained(directory)
        if scoring:
            save_file(scoring, str(directory / SCORING_FILE))
        card = RewardModelCard(
            self.card.encoding,
            normalization or self.card.normalization,
            self.card.modality,
            self.card.heads,
        )
        card.save(directory)
        log.info("reward_model.exported", directory=str(directory))
        return directory

    def _load_scoring(self, path: Path) -> None:
        """Loads the trained pooling / heads / scales of ``card.heads`` from ``path``."""
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: the card names scoring parts ({self.card.heads}) whose "
                "weights it holds"
            )
        state = {k.removeprefix("scoring."): v for k, v in load_file(str(path)).items()}
        try:
            self.net.scoring.load_state_dict(state, strict=True)
        except RuntimeError as error:
            raise ValueError(f"{path} does not match the card's scoring parts: {error}") from None
