"""Loss aggregation modes, with normalizers that are global across micro-batches and ranks.

Shapes: B samples, R response tokens. A per-token loss ``l`` (B, R) becomes one scalar.
The denominators come from a :class:`LossNormalizer` computed once for the whole global
batch (every micro-batch, every data-parallel rank) before the first micro-batch, so the
sum of the micro-batch losses equals the full-batch loss and gradient accumulation gives
exactly the gradient of one big batch (see ALGORITHMS.md, "Loss aggregation modes").

| mode                      | value                                          |
|---------------------------|------------------------------------------------|
| token-mean                | sum_{i,t} m l / N_tokens                       |
| seq-mean-token-mean       | sum_i (sum_t m l / abs(y_i)) / N_seqs          |
| seq-mean-token-sum        | sum_i (sum_t m l) / N_seqs                     |
| seq-mean-token-sum-norm   | sum_{i,t} m l / (N_seqs * L_max)  (Dr. GRPO)   |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from lightrft.domain import algorithm_registries
from lightrft.domain.agg_modes import AGG_MODES as AGG_MODES
from lightrft.domain.agg_modes import AggMode as AggMode
from lightrft.domain.checks import check_positive, check_shape, check_token_tensor
from lightrft.domain.reduce import AllReduceSum, local_sum
from lightrft.domain.registry import Registry


@dataclass(frozen=True)
class LossNormalizer:
    """Denominators of the aggregation modes for one global batch.

    ``num_tokens``: masked tokens in the global batch; ``num_sequences``: samples in it;
    ``max_response_length``: L_max, the generation budget (only ``seq-mean-token-sum-norm``
    needs it).
    """

    num_tokens: float
    num_sequences: float
    max_response_length: int | None = None

    def __post_init__(self) -> None:
        check_positive("num_tokens", self.num_tokens)
        check_positive("num_sequences", self.num_sequences)
        if self.max_response_length is not None:
            check_positive("max_response_length", self.max_response_length)

    @classmethod
    def from_mask(
        cls,
        response_mask: Tensor,
        *,
        max_response_length: int | None = None,
        all_reduce_sum: AllReduceSum = local_sum,
    ) -> LossNormalizer:
        """Counts tokens and sequences of ``response_mask`` (B, R) summed over ranks.

        Call it on the whole local batch (all micro-batches), not on one micro-batch.
        """
        check_shape("response_mask", response_mask, (None, None))
        counts = torch.tensor(
            [float(response_mask.sum()), float(response_mask.shape[0])], dtype=torch.float64
        )
        counts = all_reduce_sum(counts)
        return cls(float(counts[0]), float(counts[1]), max_response_length)


def _token_mean(loss: Tensor, mask: Tensor, norm: LossNormalizer) -> Tensor:
    return (loss * mask).sum() / norm.num_tokens


def _seq_mean_token_mean(loss: Tensor, mask: Tensor, norm: LossNormalizer) -> Tensor:
    per_seq = (loss * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)  # [B]
    return per_seq.sum() / norm.num_sequences


def _seq_mean_token_sum(loss: Tensor, mask: Tensor, norm: LossNormalizer) -> Tensor:
    return (loss * mask).sum() / norm.num_sequences


def _seq_mean_token_sum_norm(loss: Tensor, mask: Tensor, norm: LossNormalizer) -> Tensor:
    if norm.max_response_length is None:
        raise ValueError(
            "aggregation 'seq-mean-token-sum-norm' needs LossNormalizer.max_response_length "
            "(the generation budget L_max)"
        )
    return (loss * mask).sum() / (norm.num_sequences * norm.max_response_length)


Aggregator = Callable[[Tensor, Tensor, LossNormalizer], Tensor]
AGGREGATIONS: Registry[Aggregator] = algorithm_registries.AGGREGATIONS
AGGREGATIONS.add("token-mean", _token_mean)
AGGREGATIONS.add("seq-mean-token-mean", _seq_mean_token_mean)
AGGREGATIONS.add("seq-mean-token-sum", _seq_mean_token_sum)
AGGREGATIONS.add("seq-mean-token-sum-norm", _seq_mean_token_sum_norm)


def aggregate(
    loss: Tensor,
    response_mask: Tensor,
    mode: str,
    normalizer: LossNormalizer | None = None,
) -> Tensor:
    """Reduces a per-token ``loss`` (B, R) to a scalar with aggregation ``mode``.

    ``response_mask`` (B, R) is 1 where a token counts; padding never contributes, even if
    ``loss`` holds NaN there. Without a ``normalizer`` the local batch is the global batch.
    """
    check_token_tensor("loss", loss, response_mask)
    aggregator = AGGREGATIONS.get(mode)
    if normalizer is None:
        normalizer = LossNormalizer.from_mask(response_mask)
    mask = response_mask.to(loss.dtype)
    safe = torch.where(response_mask.bool(), loss, torch.zeros_like(loss))
    return aggregator(safe, mask, normalizer)
