"""No-grad forwards over micro-batches (old, reference and teacher log-probs, values), and
the plan stage that splits the rows into those micro-batches.

``forward_micro_batch_size`` rows per forward, or with ``max_tokens_per_forward`` balanced
token-budget micro-batches (groups kept together when they fit, padding columns trimmed).
As many forwards on every rank: a token budget or a subset of the rows (its size differs
between ranks) makes the counts differ, so the short ranks add empty micro-batches (which
run row 0 and drop the result), as sharded strategies need.

Shapes: B samples, R response tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightrft.application.batching import (
    agreed_max,
    split_by_count,
    split_by_token_budget,
    trim_padding,
)
from lightrft.application.params import RolloutParams
from lightrft.application.stages.records import Annotation
from lightrft.domain.ports import Collective, Critic, Policy, ReferenceModel
from lightrft.domain.types import SequenceBatch


class NoGradForward:
    """Micro-batched no-grad forwards; ``temperature`` is the loss's (the default of
    :meth:`logprobs`)."""

    def __init__(self, rollout: RolloutParams, collective: Collective, temperature: float):
        self.rollout, self.collective, self.temperature = rollout, collective, temperature

    def batches(
        self, seq: SequenceBatch, group_index: Tensor, rows: Tensor | None = None
    ) -> list[Tensor]:
        """Row indices of each forward over ``rows`` (default: every row)."""
        subset = rows is not None
        if rows is None:
            rows = torch.arange(seq.input_ids.shape[0])
        budget = self.rollout.max_tokens_per_forward
        if budget is not None:
            tokens = seq.attention_mask[rows].sum(dim=-1)
            return split_by_token_budget(
                rows, tokens, budget, self.collective, groups=group_index[rows]
            )
        size = self.rollout.forward_micro_batch_size
        if not subset:
            return split_by_count(rows, size)
        batches = split_by_count(rows, size) if len(rows) else []
        count = agreed_max(len(batches), self.collective)
        return batches + [rows.new_zeros(0)] * (count - len(batches))

    def logprobs(
        self,
        model: Policy | ReferenceModel,
        seq: SequenceBatch,
        batches: list[Tensor],
        entropy: bool,
        temperature: float | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Log-probs (B, R) and, if asked, entropies (B, R) at ``temperature`` (None: the
        loss's); rows outside ``batches`` stay 0."""
        if temperature is None:
            temperature = self.temperature
        shape = tuple(seq.response_mask.shape)
        logprobs = torch.zeros(shape)
        entropies = torch.zeros(shape)
        got_entropy = False
        with torch.no_grad():
            for rows in batches:
                out = model.forward(
                    self._micro_inputs(seq, rows), temperature=temperature, with_entropy=entropy
                )
                r = out.logprobs.shape[1]
                logprobs[rows, :r] = out.logprobs.float().cpu()[: len(rows)]
                if entropy and out.entropy is not None:
                    entropies[rows, :r] = out.entropy.float().cpu()[: len(rows)]
                    got_entropy = True
        return logprobs, entropies if got_entropy else None

    def values(self, critic: Critic, seq: SequenceBatch, batches: list[Tensor]) -> Tensor:
        """Values (B, R) over the micro-batches."""
        values = torch.zeros(tuple(seq.response_mask.shape))
        with torch.no_grad():
            for rows in batches:
                out = critic.values(self._micro_inputs(seq, rows)).float().cpu()
                values[rows, : out.shape[1]] = out[: len(rows)]
        return values

    def _micro_inputs(self, seq: SequenceBatch, rows: Tensor) -> SequenceBatch:
        """The rows of one forward (padding columns trimmed under a token budget); an empty
        micro-batch runs row 0."""
        if len(rows) == 0:
            return seq.select(torch.zeros(1, dtype=torch.long))
        micro = seq.select(rows)
        return micro if self.rollout.max_tokens_per_forward is None else trim_padding(micro)


class PlanForwards:
    """Sets ``batches`` (and ``old_batches``, the same until a selection narrows them)."""

    def __init__(self, forward: NoGradForward) -> None:
        self.forward = forward

    def __call__(self, work: Annotation) -> None:
        """Splits every row of ``work`` into the forwards' micro-batches."""
        work.batches = self.forward.batches(work.tensors.sequences, work.group_index)
        work.old_batches = work.batches
