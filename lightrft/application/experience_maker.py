"""ExperienceMaker: prompts -> rollouts -> rewards -> log-probs -> advantages -> Experience.

Shapes: B samples (prompts x n), R response tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import structlog
import torch
from torch import Tensor

from lightrft.application.agent_metrics import episode_metrics
from lightrft.application.batching import (
    RolloutTensors,
    agreed_max,
    build_rollout_tensors,
    split_by_count,
    split_by_token_budget,
    trim_padding,
)
from lightrft.application.constraint_step import ConstraintState, apply_constraints
from lightrft.application.params import AlgorithmParams, RewardShapingParams, RolloutParams
from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.application.reward_scoring import (
    Scores,
    score_completions,
    score_truncated_as,
    shape_rewards,
)
from lightrft.application.trained_rows import rows_with_advantage, skips_zero_loss_rows
from lightrft.domain.advantages import AdvantageInputs, compute_advantages
from lightrft.domain.groups import zero_group_fraction
from lightrft.domain.kl import kl_estimate
from lightrft.domain.ports import (
    Collective,
    Critic,
    Policy,
    ReferenceModel,
    RewardSource,
    RolloutEngine,
)
from lightrft.domain.rewards import RunningMoments, clip_values
from lightrft.domain.rollout_correction import mismatch_metrics
from lightrft.domain.sampling import (
    DynamicSamplingState,
    high_entropy_token_mask,
    informative_group_mask,
)
from lightrft.domain.turn_credit import turn_token_rewards
from lightrft.domain.types import Completion, Experience, PromptRecord, SequenceBatch

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ExperienceBatch:
    """An experience plus what the cycle logs about it."""

    experience: Experience
    prompts: list[PromptRecord]
    completions: list[Completion]
    metrics: dict[str, float]
    reward_moments: RunningMoments
    generated_tokens: int
    kl: float | None = None  # mean KL(old policy || reference) over response tokens
    reward_by_source: dict[str, Tensor] = field(default_factory=dict)  # each (B,), unshaped
    constraints: ConstraintState = field(default_factory=ConstraintState)  # after this batch


@dataclass(frozen=True)
class _Advantages:
    """Advantages (B, R) as the optimizer gets them, returns (B, R), the constraint state
    after this batch and the advantage and constraint metrics."""

    advantages: Tensor
    returns: Tensor
    constraints: ConstraintState
    metrics: dict[str, float]


@dataclass(frozen=True)
class _Rollout:
    prompts: list[PromptRecord]
    completions: list[Completion]
    scores: Scores


@dataclass(frozen=True)
class CollectedRollout:
    """What :meth:`ExperienceMaker.collect` produced: completions with their scores, the
    collection metrics and (ReMax) the greedy baseline rewards (B,)."""

    rollout: _Rollout
    metrics: dict[str, float]
    baseline: Tensor | None = None


class ExperienceMaker:
    """Builds one step's :class:`Experience` from a batch of prompts through the ports.

    Old log-probs on the trained rows only: when the loss ratio is their only reader (no
    KL, no teachers, no high-entropy selection, no mismatch metrics, no critic) and the
    optimizer leaves the zero-advantage samples out (``skip_zero_advantage_rows``, same
    rule: :mod:`lightrft.application.trained_rows`), the advantages, which then do not
    depend on them, come first and the no-grad old-policy forward (and the one at the
    sampling temperature for the rollout correction) runs only on the samples with a
    non-zero advantage. The other rows of ``Experience.old_logprobs`` are 0, unset and
    never read (the optimizer does not train them); ``logprobs/old_forwarded_fraction``
    logs the share forwarded.
    """

    def __init__(
        self,
        *,
        engine: RolloutEngine,
        policy: Policy,
        reward_sources: Sequence[RewardSource],
        collective: Collective,
        phases: PhaseSwitcher,
        rollout: RolloutParams,
        algorithm: AlgorithmParams,
        shaping: RewardShapingParams,
        reference: ReferenceModel | None = None,
        critic: Critic | None = None,
        recompute_old_logprobs: bool = True,
        teachers: Sequence[ReferenceModel] = (),
        skip_zero_advantage_rows: bool = False,
    ) -> None:
        """``skip_zero_advantage_rows``: the optimizer's ``TrainParams`` flag (the class doc:
        old log-probs on the trained rows only)."""
        if not reward_sources:
            raise ValueError("reward_sources is empty; need at least one reward source")
        self.engine, self.policy, self.reward_sources = engine, policy, list(reward_sources)
        self.collective, self.phases = collective, phases
        self.rollout, self.algorithm, self.shaping = rollout, algorithm, shaping
        self.reference, self.critic, self.teachers = reference, critic, list(teachers)
        self.recompute_old_logprobs = recompute_old_logprobs
        self.skip_zero_advantage_rows = skip_zero_advantage_rows
        self.estimator = algorithm.estimator
        if self.estimator.needs_values and critic is None:
            raise ValueError(f"advantage estimator {self.estimator.name!r} needs a critic")
        if algorithm.kl_coef > 0 and reference is None:
            raise ValueError("kl_coef > 0 needs a reference model")
        weights = algorithm.advantage.teacher_weights
        if self.estimator.needs_teachers and len(self.teachers) != len(weights):
            raise ValueError(
                f"advantage estimator {self.estimator.name!r} weighs {len(weights)} teacher(s) "
                f"but {len(self.teachers)} teacher model(s) were given"
            )

    def make(
        self, prompts: Sequence[PromptRecord], *, seed: int, kl_coef: float, moments: RunningMoments
    ) -> ExperienceBatch:
        """One step's experience from ``prompts`` (each sampled ``sampling.n`` times)."""
        return self.annotate(self.collect(prompts, seed=seed), kl_coef=kl_coef, moments=moments)

    def collect(self, prompts: Sequence[PromptRecord], *, seed: int) -> CollectedRollout:
        """The generation half of :meth:`make`: samples and scores (and the greedy
        baseline when the estimator needs one); uses the engine and reward sources only."""
        rollout, metrics = self._collect(list(prompts), seed)
        baseline = self._greedy_baseline(rollout) if self.estimator.needs_baseline_rewards else None
        return CollectedRollout(rollout, metrics, baseline)

    def annotate(
        self,
        collected: CollectedRollout,
        *,
        kl_coef: float,
        moments: RunningMoments,
        constraints: ConstraintState | None = None,
    ) -> ExperienceBatch:
        """The training half of :meth:`make`: rewards shaped, log-probs, advantages (with
        ``shaping.constraints``: their multipliers updated from ``constraints``, the initial
        state when None, and the cost advantages folded in)."""
        if constraints is None:
            constraints = ConstraintState.initial(self.shaping.constraints)
        rollout, baseline = collected.rollout, collected.baseline
        metrics = dict(collected.metrics)
        tensors = build_rollout_tensors(
            rollout.prompts, rollout.completions, self.rollout.pad_token_id
        )
        group_index = torch.tensor([c.prompt_index for c in rollout.completions], dtype=torch.long)
        rewards, moments = shape_rewards(
            rollout.scores.total,
            tensors.response_lengths,
            self.shaping,
            self.rollout.sampling.max_new_tokens,
            moments,
            self.collective.all_reduce_sum,
        )
        token_rewards = None
        if self.algorithm.turn_credit:
            episodes = [c.episode for c in rollout.completions]
            token_rewards = turn_token_rewards(episodes, rewards, tensors.sequences.response_mask)
        with self.phases.phase(Phase.REFERENCE):
            experience, ref_metrics, constraints = self._annotate(
                tensors,
                rewards,
                group_index,
                baseline,
                kl_coef,
                (rollout.scores, constraints),
                token_rewards,
            )
        metrics.update(ref_metrics)
        metrics.update(_rollout_metrics(rollout, tensors, rewards))
        return ExperienceBatch(
            experience,
            rollout.prompts,
            rollout.completions,
            metrics,
            moments,
            int(tensors.response_lengths.sum()),
            ref_metrics.get("kl/mean"),
            dict(rollout.scores.by_source),
            constraints,
        )

    def _constrain(
        self,
        advantages: Tensor,
        inputs: AdvantageInputs,
        constraints: tuple[Scores, ConstraintState],
    ) -> tuple[Tensor, ConstraintState, dict[str, float]]:
        """``advantages`` (B, R) with the cost advantages of ``shaping.constraints`` folded in
        (costs from the scores), the updated multipliers and the ``constraint/*`` metrics."""
        scores, state = constraints
        if not self.shaping.constraints:
            return advantages, state, {}
        result = apply_constraints(
            self.shaping.constraints,
            state,
            scores.by_source,
            advantages,
            inputs,
            self.estimator.name,
            self.algorithm.advantage,
            self.collective.all_reduce_sum,
        )
        return result.advantages, result.state, result.metrics

    def _score(self, prompts: Sequence[PromptRecord], completions: Sequence[Completion]) -> Scores:
        s = self.shaping
        scores = score_completions(
            self.reward_sources,
            prompts,
            completions,
            dict(s.weights),
            s.gates,
            s.gate_value,
            s.concurrency,
            s.recipes,
        )
        if s.truncated_reward is None:
            return scores
        return score_truncated_as(scores, completions, s.truncated_reward)

    def _generate_and_score(self, prompts: list[PromptRecord], seed: int) -> _Rollout:
        with self.phases.phase(Phase.ROLLOUT):
            completions = self.engine.generate(prompts, replace(self.rollout.sampling, seed=seed))
        with self.phases.phase(Phase.REWARD):
            scores = self._score(prompts, completions)
        return _Rollout(prompts, completions, scores)

    def _collect(self, prompts: list[PromptRecord], seed: int) -> tuple[_Rollout, dict[str, float]]:
        """Generates and scores; with dynamic sampling, refills until enough groups."""
        if not self.rollout.dynamic_sampling:
            return self._generate_and_score(prompts, seed), {}
        state = DynamicSamplingState(
            target_groups=len(prompts), max_rounds=self.rollout.max_sampling_rounds
        )
        kept: list[_Rollout] = []
        last: _Rollout | None = None
        while not state.done:
            last = self._generate_and_score(prompts, seed + 7919 * state.rounds)
            group = torch.tensor([c.prompt_index for c in last.completions])
            informative = informative_group_mask(last.scores.total, group)
            kept_prompts = sorted({int(g) for g in group[informative]})
            kept_prompts = kept_prompts[: state.target_groups - state.kept_groups]
            if kept_prompts:
                kept.append(_select_groups(last, kept_prompts))
            state = state.after_round(len(kept_prompts))
        metrics = {
            "dynamic_sampling/rounds": float(state.rounds),
            "dynamic_sampling/kept_groups": float(state.kept_groups),
            "dynamic_sampling/hit_round_limit": float(state.hit_round_limit),
        }
        if state.hit_round_limit:
            log.warning(
                "dynamic_sampling.round_limit",
                rounds=state.rounds,
                kept_groups=state.kept_groups,
                target_groups=state.target_groups,
            )
        if not kept:
            assert last is not None
            rollout = last  # every group uninformative: advantages are 0, train on it
        else:
            rollout = _concat(kept)
        rollout, trimmed = self._same_group_count_on_every_rank(rollout)
        metrics["dynamic_sampling/trimmed_groups"] = float(trimmed)
        return rollout, metrics

    def _same_group_count_on_every_rank(self, rollout: _Rollout) -> tuple[_Rollout, int]:
        """Keeps the first k groups, k the fewest any rank kept; returns it and the drop count.

        Dynamic sampling keeps a different number of groups on each rank; sharded
        strategies (FSDP, ZeRO) need every rank to run the same number of forwards and
        micro-batches, or their collectives wait forever.
        """
        c = self.collective
        if c.world_size == 1:
            return rollout, 0
        counts = torch.zeros(c.world_size, dtype=torch.float64)
        counts[c.rank] = len(rollout.prompts)
        fewest = int(c.all_reduce_sum(counts).min())
        dropped = len(rollout.prompts) - fewest
        if dropped == 0:
            return rollout, 0
        return _select_groups(rollout, list(range(fewest))), dropped

    def _greedy_baseline(self, rollout: _Rollout) -> Tensor:
        """ReMax: the reward of one greedy rollout of each prompt, per sample (B,)."""
        greedy = replace(self.rollout.sampling, n=1, temperature=0.0)
        with self.phases.phase(Phase.ROLLOUT):
            completions = self.engine.generate(rollout.prompts, greedy)
        with self.phases.phase(Phase.REWARD):
            scores = self._score(rollout.prompts, completions)
        per_prompt = scores.total  # (number of prompts,)
        return per_prompt[torch.tensor([c.prompt_index for c in rollout.completions])]

    def _sampling_logprobs(
        self, seq: SequenceBatch, batches: list[Tensor], old: Tensor | None
    ) -> Tensor:
        """The trainer's log-probs (B, R) at the temperature the engine sampled with (its
        log-probs are those of that distribution; greedy decoding reports temperature-1
        ones); ``old`` itself when it was computed at that temperature."""
        temperature = self.rollout.sampling.logprob_temperature
        if old is not None and temperature == self.algorithm.logprob_temperature:
            return old
        logprobs, _ = self._forward_no_grad(self.policy, seq, batches, False, temperature)
        return logprobs

    def _forward_batches(
        self, seq: SequenceBatch, group_index: Tensor, rows: Tensor | None = None
    ) -> list[Tensor]:
        """Row indices of each no-grad forward over ``rows`` (default: every row):
        ``forward_micro_batch_size`` rows, or with ``max_tokens_per_forward`` balanced
        token-budget micro-batches (groups kept together when they fit). As many on every
        rank, the extra ones empty: a token budget or a subset of ``rows`` (its size differs
        between ranks) makes the counts differ, and sharded strategies need them equal."""
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

    def _micro_inputs(self, seq: SequenceBatch, rows: Tensor) -> SequenceBatch:
        """The rows of one forward (padding columns trimmed under a token budget); an empty
        micro-batch runs row 0 and its result is dropped, so every rank forwards as often."""
        if len(rows) == 0:
            return seq.select(torch.zeros(1, dtype=torch.long))
        micro = seq.select(rows)
        return micro if self.rollout.max_tokens_per_forward is None else trim_padding(micro)

    def _forward_no_grad(
        self,
        model: Policy | ReferenceModel,
        seq: SequenceBatch,
        batches: list[Tensor],
        entropy: bool,
        temperature: float | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Log-probs (B, R) and, if asked, entropies (B, R) over the micro-batches, at
        ``temperature`` (None: the loss's, ``AlgorithmParams.logprob_temperature``)."""
        if temperature is None:
            temperature = self.algorithm.logprob_temperature
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

    def _teacher_logprobs(self, seq: SequenceBatch, batches: list[Tensor]) -> Tensor | None:
        """Each teacher's log-probs of the sampled tokens (K, B, R), or None without
        teachers (the estimator needs none)."""
        if not self.estimator.needs_teachers:
            return None
        return torch.stack(
            [self._forward_no_grad(t, seq, batches, False)[0] for t in self.teachers]
        )

    def _values_no_grad(self, critic: Critic, seq: SequenceBatch, batches: list[Tensor]) -> Tensor:
        """Values (B, R) over the micro-batches."""
        values = torch.zeros(tuple(seq.response_mask.shape))
        with torch.no_grad():
            for rows in batches:
                out = critic.values(self._micro_inputs(seq, rows)).float().cpu()
                values[rows, : out.shape[1]] = out[: len(rows)]
        return values

    def _old_logprobs_on_trained_rows_only(self, kl_coef: float, need_entropy: bool) -> bool:
        """Whether the loss ratio is the only reader of the old log-probs and the optimizer
        trains only the rows with a non-zero advantage (the class doc)."""
        kl_term = self.reference is not None and kl_coef > 0  # in the loss or in the reward
        only_the_loss_reads_old = not (
            self.estimator.needs_teachers or need_entropy or self.rollout.measure_mismatch
        )
        return only_the_loss_reads_old and skips_zero_loss_rows(
            self.algorithm,
            skip_zero_advantage_rows=self.skip_zero_advantage_rows,
            critic=self.critic is not None,
            kl_term=kl_term,
        )

    def _advantages(
        self,
        inputs: AdvantageInputs,
        kl_coef: float,
        constraints: tuple[Scores, ConstraintState],
    ) -> _Advantages:
        """The estimator's advantages (``kl_coef``: KL in the reward, else 0), the
        constraints' cost advantages folded in, clipped."""
        params = replace(self.algorithm.advantage, kl_coef=kl_coef)
        out = compute_advantages(
            self.estimator.name, inputs, params, self.collective.all_reduce_sum
        )
        advantages, state, metrics = self._constrain(
            out.advantages,
            AdvantageInputs(inputs.rewards, inputs.response_mask, inputs.group_index),
            constraints,
        )
        if self.shaping.advantage_clip is not None:
            advantages = clip_values(advantages, self.shaping.advantage_clip) * inputs.response_mask
        metrics.update({k: float(v) for k, v in out.metrics.items()})
        return _Advantages(advantages, out.returns, state, metrics)

    def _annotate(
        self,
        tensors: RolloutTensors,
        rewards: Tensor,
        group_index: Tensor,
        baseline: Tensor | None,
        kl_coef: float,
        constraints: tuple[Scores, ConstraintState],
        token_rewards: Tensor | None = None,
    ) -> tuple[Experience, dict[str, float], ConstraintState]:
        seq = tensors.sequences
        mask = seq.response_mask
        need_entropy = self.algorithm.high_entropy_fraction is not None
        kl_in_reward = self.estimator.kl_in_reward and kl_coef > 0 and self.reference is not None
        need_old = (
            self.recompute_old_logprobs
            or self.estimator.needs_teachers
            or kl_in_reward
            or need_entropy
            or self.algorithm.resolved_loss.tis_cap is not None
        )
        inputs = AdvantageInputs(
            rewards,
            mask,
            group_index,
            baseline_rewards=baseline,
            token_rewards=token_rewards,
        )
        metrics: dict[str, float] = {}
        batches = self._forward_batches(seq, group_index)
        old_batches = batches
        early: _Advantages | None = None  # computed before the old log-probs (class doc)
        if need_old and self._old_logprobs_on_trained_rows_only(kl_coef, need_entropy):
            early = self._advantages(inputs, 0.0, constraints)
            trained = rows_with_advantage(early.advantages, mask)
            old_batches = self._forward_batches(seq, group_index, torch.nonzero(trained).flatten())
            metrics["logprobs/old_forwarded_fraction"] = float(trained.float().mean())
        old: Tensor | None = None
        entropy: Tensor | None = None
        if need_old:
            old, entropy = self._forward_no_grad(self.policy, seq, old_batches, need_entropy)
        ref = None
        if self.reference is not None and kl_coef > 0:
            ref, _ = self._forward_no_grad(self.reference, seq, batches, False)
        teacher = self._teacher_logprobs(seq, batches)
        values = None
        if self.critic is not None:
            values = self._values_no_grad(self.critic, seq, batches)
        rollout_logprobs = tensors.rollout_logprobs
        correcting = self.algorithm.resolved_loss.tis_cap is not None
        if rollout_logprobs is not None and (self.rollout.measure_mismatch or correcting):
            trainer = self._sampling_logprobs(seq, old_batches, old)
            if self.rollout.measure_mismatch:
                mismatch = mismatch_metrics(trainer, rollout_logprobs, mask)
                metrics.update({k: float(v) for k, v in mismatch.items()})
            if correcting and old is not None and trainer is not old:
                # The loss weighs by exp(old - rollout) with old at the loss's temperature;
                # shift the engine's log-probs so that difference is the mismatch at the
                # sampling temperature: old - shifted = trainer_T - engine_T.
                rollout_logprobs = (old - trainer + rollout_logprobs) * mask
        kl = None
        if ref is not None and old is not None:
            kl = kl_estimate(self.algorithm.kl_estimator, old, ref, mask)
            metrics["kl/mean"] = float(kl.sum() / mask.sum())
        use_kl_in_reward = self.estimator.kl_in_reward and kl is not None
        annotated = early
        if annotated is None:
            annotated = self._advantages(
                replace(
                    inputs,
                    values=values,
                    kl=kl if use_kl_in_reward else None,
                    logprobs=old if teacher is not None else None,
                    teacher_logprobs=teacher,
                ),
                kl_coef if use_kl_in_reward else 0.0,
                constraints,
            )
        advantages = annotated.advantages
        metrics.update(annotated.metrics)
        if entropy is not None and self.algorithm.high_entropy_fraction is not None:
            keep = high_entropy_token_mask(entropy, mask, self.algorithm.high_entropy_fraction)
            advantages = advantages * keep
            metrics["high_entropy/kept_fraction"] = float(keep.sum() / mask.sum())
        metrics["advantages/zero_groups_fraction"] = float(
            zero_group_fraction(advantages, mask, group_index)
        )
        experience = Experience(
            sequences=seq,
            old_logprobs=old,
            advantages=advantages,
            returns=annotated.returns,
            rewards=rewards,
            group_index=group_index,
            ref_logprobs=ref,
            rollout_logprobs=rollout_logprobs,
            values=values,
        )
        return experience, metrics, annotated.constraints


def _select_groups(rollout: _Rollout, prompt_indices: list[int]) -> _Rollout:
    """The completions of the given prompts only, re-indexed to the kept prompt list."""
    position = {old: new for new, old in enumerate(prompt_indices)}
    rows = [i for i, c in enumerate(rollout.completions) if c.prompt_index in position]
    completions = [
        replace(rollout.completions[i], prompt_index=position[rollout.completions[i].prompt_index])
        for i in rows
    ]
    index = torch.tensor(rows)
    scores = Scores(
        {k: v[index] for k, v in rollout.scores.by_source.items()},
        rollout.scores.total[index],
        rollout.scores.metrics,
    )
    return _Rollout([rollout.prompts[i] for i in prompt_indices], completions, scores)


def _concat(parts: list[_Rollout]) -> _Rollout:
    """One rollout from several rounds; prompt indices shifted so groups stay distinct."""
    prompts: list[PromptRecord] = []
    completions: list[Completion] = []
    for part in parts:
        offset = len(prompts)
        prompts.extend(part.prompts)
        completions.extend(
            replace(c, prompt_index=c.prompt_index + offset) for c in part.completions
        )
    by_source = {
        k: torch.cat([p.scores.by_source[k] for p in parts]) for k in parts[0].scores.by_source
    }
    total = torch.cat([p.scores.total for p in parts])
    return _Rollout(prompts, completions, Scores(by_source, total, parts[-1].scores.metrics))


def _rollout_metrics(
    rollout: _Rollout, tensors: RolloutTensors, rewards: Tensor
) -> dict[str, float]:
    lengths = tensors.response_lengths.float()
    truncated = sum(c.finish_reason == "length" for c in rollout.completions)
    metrics = dict(rollout.scores.metrics)
    metrics.update(
        {
            "reward/mean": float(rollout.scores.total.mean()),
            "reward/std": float(rollout.scores.total.std()) if len(rewards) > 1 else 0.0,
            "reward/shaped_mean": float(rewards.mean()),
            "response_length/mean": float(lengths.mean()),
            "response_length/max": float(lengths.max()),
            "response_length/truncated_fraction": truncated / len(rollout.completions),
            "rollout/samples": float(len(rollout.completions)),
        }
    )
    metrics.update(episode_metrics(rollout.completions))
    return metrics
