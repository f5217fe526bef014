"""PolicyOptimizer: PPO-style epochs over mini- and micro-batches of one Experience.

Shapes: B samples, R response tokens. Loss = policy loss + KL loss (when the estimator keeps
KL out of the reward) + entropy term, each aggregated with a normalizer computed once per
mini-batch over every micro-batch and rank, so the gradient does not depend on how the
mini-batch is split (ALGORITHMS.md, "Loss aggregation modes"). That is why the rows of a
mini-batch may be reordered so the samples of one group (one prompt) sit together before the
micro-batch split: a micro-batch then holds whole groups, and a policy that runs each
distinct prompt once (prefix sharing) shares it across the group.

With ``TrainParams.skip_zero_advantage_rows``, samples whose loss is exactly zero (every
advantage zero, and no loss term without the advantage: no KL or entropy term, no critic, not
CPGD) take no forward or backward: the normalizer still counts them, so the gradient is the
same up to float rounding. In GRPO these are the groups whose samples all scored alike, a
growing share of the batch as the policy learns. Metrics then describe the trained samples
(``train/trained_fraction`` says how many).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import structlog
import torch
from torch import Tensor

from lightrft.application.batching import (
    agreed_max,
    split_by_count,
    split_by_token_budget,
    trim_experience,
)
from lightrft.application.params import AlgorithmParams, TrainParams
from lightrft.application.trained_rows import rows_with_advantage, skips_zero_loss_rows
from lightrft.domain.aggregation import LossNormalizer
from lightrft.domain.groups import dense_group_ids
from lightrft.domain.kl import kl_loss
from lightrft.domain.policy_losses import PolicyLossInputs, compute_policy_loss
from lightrft.domain.ports import Collective, Critic, Policy, Strategy
from lightrft.domain.types import Experience
from lightrft.domain.value_loss import entropy_loss, value_loss

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class TrainResult:
    """What one :meth:`PolicyOptimizer.train` call did.

    ``optimizer_steps`` were attempted, ``skipped_steps`` of them did not update the weights;
    ``kl`` is the mean KL(policy || reference) the loss saw (None when no KL term ran);
    ``metrics`` are averaged over micro-batches and steps, for logging only.
    """

    metrics: dict[str, float]
    optimizer_steps: int
    skipped_steps: int
    kl: float | None

    @property
    def updated_policy(self) -> bool:
        """Whether at least one optimizer step changed the policy's weights."""
        return self.skipped_steps < self.optimizer_steps


class NonFiniteWeightsError(RuntimeError):
    """An optimizer step left the policy's weights inf or NaN (a learning rate far too
    large); raised at the step, before a later forward fails far from the cause."""


class PolicyOptimizer:
    """Trains the policy (and the critic, for GAE) on one experience batch."""

    def __init__(
        self,
        *,
        policy: Policy,
        strategy: Strategy,
        collective: Collective,
        algorithm: AlgorithmParams,
        train: TrainParams,
        critic: Critic | None = None,
        critic_strategy: Strategy | None = None,
    ) -> None:
        if (critic is None) != (critic_strategy is None):
            raise ValueError("critic and critic_strategy must be given together")
        self.policy, self.strategy, self.collective = policy, strategy, collective
        self.algorithm, self.train_params = algorithm, train
        self.critic, self.critic_strategy = critic, critic_strategy
        self.loss_params = algorithm.resolved_loss
        self.kl_in_loss = not algorithm.estimator.kl_in_reward

    def train(self, experience: Experience, *, kl_coef: float, step: int) -> TrainResult:
        """Runs ``epochs`` passes over ``experience``; one optimizer step per mini-batch."""
        sums: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        b = len(experience)
        mini = self.train_params.mini_batch_size or b
        steps = skipped = 0
        for epoch in range(self.train_params.epochs):
            order = self._order(b, step, epoch)
            for rows in split_by_count(order, mini):
                metrics, stepped = self._mini_batch(experience, rows, kl_coef)
                if stepped:
                    self._check_weights_finite(step, metrics["train/lr"])
                steps, skipped = steps + 1, skipped + (not stepped)
                for key, value in metrics.items():
                    sums[key] += value
                    counts[key] += 1
        means = {key: sums[key] / counts[key] for key in sums}
        return TrainResult(means, steps, skipped, means.get("train/kl"))

    def _order(self, b: int, step: int, epoch: int) -> Tensor:
        if not self.train_params.shuffle:
            return torch.arange(b)
        gen = torch.Generator().manual_seed(
            self.train_params.seed * 1_000_003 + step * 1009 + epoch
        )
        return torch.randperm(b, generator=gen)

    def _micro_batches(self, experience: Experience, rows: Tensor) -> list[Tensor]:
        """Index tensors of the micro-batches; with a token budget, or when zero-loss rows
        are left out, as many on every rank (some possibly empty, see
        :func:`split_by_token_budget`)."""
        rows = group_contiguous(rows, experience.group_index[rows])
        budget = self.train_params.max_tokens_per_micro_batch
        if budget is not None:
            tokens = experience.sequences.attention_mask[rows].sum(dim=-1)
            batches = split_by_token_budget(
                rows, tokens, budget, self.collective, groups=experience.group_index[rows]
            )
        else:
            batches = split_by_count(rows, self.train_params.micro_batch_size) if len(rows) else []
        if not self.train_params.skip_zero_advantage_rows:
            return batches
        # at least one (then a zero-weight padding micro-batch): the step's gradients exist
        # and are zero, as they would be had the rows been trained
        count = max(1, agreed_max(len(batches), self.collective))
        return batches + [rows.new_zeros(0)] * (count - len(batches))

    def _trained_rows(self, experience: Experience, rows: Tensor, kl_coef: float) -> Tensor:
        """``rows`` without the samples whose loss is exactly zero (module doc); all of them
        when that is off or some loss term does not carry the advantage."""
        skips = skips_zero_loss_rows(
            self.algorithm,
            skip_zero_advantage_rows=self.train_params.skip_zero_advantage_rows,
            critic=self.critic is not None,
            kl_term=self.kl_in_loss and kl_coef > 0 and experience.ref_logprobs is not None,
        )
        if not skips:
            return rows
        return rows[
            rows_with_advantage(experience.advantages[rows], experience.response_mask[rows])
        ]

    def _micro(self, experience: Experience, micro_rows: Tensor, rows: Tensor) -> Experience:
        """The micro-batch's experience; for an empty micro-batch, the first row of the
        mini-batch, whose loss the caller multiplies by 0 (a full forward and backward, so a
        sharded strategy's collectives run as often on every rank, with zero gradient)."""
        if len(micro_rows) == 0:
            return experience.select(rows[:1])
        micro = experience.select(micro_rows)
        if self.train_params.max_tokens_per_micro_batch is not None:
            micro = trim_experience(micro)
        return micro

    def _mini_batch(
        self, experience: Experience, rows: Tensor, kl_coef: float
    ) -> tuple[dict[str, float], bool]:
        """Accumulates the mini-batch ``rows`` and steps; returns its metrics and whether
        the step updated the weights."""
        normalizer = LossNormalizer.from_mask(
            experience.response_mask[rows],
            max_response_length=self.algorithm.max_response_length,
            all_reduce_sum=self.collective.all_reduce_sum,
        )
        metrics: dict[str, list[float]] = defaultdict(list)
        skip_reason: str | None = None
        trained = self._trained_rows(experience, rows, kl_coef)
        for micro_rows in self._micro_batches(experience, trained):
            micro = self._micro(experience, micro_rows, rows)
            loss, micro_metrics = self._policy_loss(micro, normalizer, kl_coef)
            skip_reason = self._agreed_skip_reason(loss)
            if skip_reason is not None:
                break  # every rank skips together: no rank waits in a collective backward
            # Strategies average gradients over ranks; the normalizer already divides by the
            # global count, so undo that average. A padding micro-batch weighs 0.
            padding = len(micro_rows) == 0
            scale = 0.0 if padding else float(self.collective.world_size)
            self.strategy.backward(loss * scale)
            if not padding:
                for key, value in micro_metrics.items():
                    metrics[key].append(float(value))
            if self.critic is not None:
                critic_metrics = self._critic_backward(micro, normalizer, scale)
                for key, critic_value in critic_metrics.items():
                    if not padding:
                        metrics[key].append(critic_value)
        result = {key: sum(values) / len(values) for key, values in metrics.items()}
        result["train/trained_fraction"] = len(trained) / max(1, len(rows))
        if skip_reason is not None:
            log.warning("train.step_skipped", reason=skip_reason)
        step_result = self.strategy.step(skip_reason=skip_reason)
        result.update(
            {
                "train/grad_norm": step_result.grad_norm,
                "train/lr": step_result.lr,
                "train/skipped_steps": float(step_result.skipped),
            }
        )
        if self.critic_strategy is not None:
            critic_step = self.critic_strategy.step(skip_reason=skip_reason)
            result["critic/grad_norm"] = critic_step.grad_norm
        return result, not step_result.skipped

    def _check_weights_finite(self, step: int, lr: float) -> None:
        """Raises :class:`NonFiniteWeightsError` (on every rank together) when the update
        left a weight inf or NaN on any rank: one max-abs reduction per parameter, one sync.
        ``step`` is the state's (from 0); the message numbers it as the metrics do."""
        named = [(n, p) for n, p in self.policy.module.named_parameters() if p.numel()]
        first_bad: str | None = None
        if named:
            peaks = [p.detach().abs().amax().float() for _, p in named]
            finite = torch.isfinite(torch.stack([peak.to(peaks[0].device) for peak in peaks]))
            if not bool(finite.all()):
                first_bad = named[int((~finite).nonzero()[0])][0]
        bad_ranks = int(self.collective.all_reduce_sum(torch.tensor([float(bool(first_bad))]))[0])
        if bad_ranks:
            where = f" ({first_bad} first)" if first_bad else ""
            raise NonFiniteWeightsError(
                f"the policy's weights are not finite (inf or NaN) after the optimizer step of "
                f"training step {step + 1} on {bad_ranks} rank(s){where}: the update diverged. "
                f"Lower optim.lr (the step used {lr:g}); earlier checkpoints are untouched"
            )

    def _agreed_skip_reason(self, loss: Tensor) -> str | None:
        """A reason to skip the step if the loss is not finite on any rank, else None."""
        local = torch.tensor([0.0 if bool(torch.isfinite(loss.detach())) else 1.0])
        bad_ranks = int(self.collective.all_reduce_sum(local)[0])
        if bad_ranks == 0:
            return None
        return f"non-finite policy loss on {bad_ranks} rank(s) (local value {float(loss)})"

    def _policy_loss(
        self, micro: Experience, normalizer: LossNormalizer, kl_coef: float
    ) -> tuple[Tensor, Mapping[str, Tensor]]:
        out = self.policy.forward(
            micro.sequences, temperature=self.algorithm.logprob_temperature, with_entropy=True
        )
        micro = micro.to(out.logprobs.device)  # the experience stays on the host until here
        mask = micro.response_mask
        kept = torch.where(mask.bool(), out.logprobs.detach(), torch.zeros_like(out.logprobs))
        if not bool(torch.isfinite(kept).all()):
            return torch.tensor(float("nan")), {}  # skipped by the caller, on every rank
        policy = compute_policy_loss(
            self.algorithm.policy_loss,
            PolicyLossInputs(
                logprobs=out.logprobs,
                old_logprobs=(
                    micro.old_logprobs if micro.old_logprobs is not None else out.logprobs.detach()
                ),
                advantages=micro.advantages,
                response_mask=mask,
                rollout_logprobs=micro.rollout_logprobs,
            ),
            self.loss_params,
            normalizer,
        )
        loss = policy.loss
        metrics: dict[str, Tensor] = dict(policy.metrics)
        metrics["train/policy_loss"] = policy.loss.detach()
        agg = self.loss_params.agg
        if self.kl_in_loss and kl_coef > 0 and micro.ref_logprobs is not None:
            kl = kl_loss(
                out.logprobs,
                micro.ref_logprobs,
                mask,
                self.algorithm.kl_estimator,
                kl_coef,
                agg,
                normalizer,
            )
            loss = loss + kl.loss
            metrics.update({f"train/{k}": v for k, v in kl.metrics.items()})
        if out.entropy is not None:
            entropy = out.entropy
            metrics["train/entropy"] = (entropy.detach() * mask).sum() / mask.sum()
            if self.algorithm.entropy_coef > 0:
                loss = loss + entropy_loss(
                    entropy, mask, self.algorithm.entropy_coef, agg, normalizer
                )
        return loss, metrics

    def _critic_backward(
        self, micro: Experience, normalizer: LossNormalizer, scale: float
    ) -> dict[str, float]:
        assert self.critic is not None and self.critic_strategy is not None
        if micro.values is None:
            raise ValueError("the experience has no values; the critic needs old values")
        values = self.critic.values(micro.sequences)
        micro = micro.to(values.device)
        assert micro.values is not None  # checked above; moving keeps it
        out = value_loss(
            values,
            micro.values,
            micro.returns,
            micro.response_mask,
            self.algorithm.value_clip,
            self.loss_params.agg,
            normalizer,
        )
        if not math.isfinite(float(out.loss.detach())):
            return {"critic/nonfinite_loss": 1.0}
        self.critic_strategy.backward(out.loss * scale)
        metrics = {key: float(value) for key, value in out.metrics.items()}
        metrics["critic/loss"] = float(out.loss.detach())
        return metrics


def group_contiguous(rows: Tensor, group_index: Tensor) -> Tensor:
    """``rows`` reordered so rows of one group are adjacent (stable).

    Groups keep the order of their first row, rows keep their order within a group.
    Shape: rows (N,), group_index (N,) the group of each row -> (N,).
    """
    ids, k = dense_group_ids(group_index.cpu())
    position = torch.arange(len(rows))
    first = torch.full((k,), len(rows), dtype=torch.long)
    first = first.scatter_reduce(0, ids, position, reduce="amin")  # [K] first row of each group
    return rows[torch.argsort(first[ids], stable=True).to(rows.device)]
