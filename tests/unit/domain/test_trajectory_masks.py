"""Multi-turn rows: the loss mask marks generated tokens only, and every estimator, KL and
policy loss treats observation tokens as absent (hypothesis).

The invariant tested: a multi-turn row with observation tokens gives, on its generated
tokens, the same advantages, KL and loss as the row with the observation columns removed;
the observation positions get 0 and no gradient.
"""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    AdvantageParams,
    compute_advantages,
)
from lightrft.domain.aggregation import LossNormalizer
from lightrft.domain.kl import KL_ESTIMATORS, kl_estimate
from lightrft.domain.policy_losses import POLICY_LOSSES, PolicyLossInputs, compute_policy_loss
from lightrft.domain.reduce import local_sum
from lightrft.domain.trajectory import Episode, Segment
from lightrft.domain.types import Completion, PromptRecord

SETTINGS = settings(max_examples=40, deadline=None)
PARAMS = AdvantageParams(gamma=0.9, lam=0.8, kl_coef=0.05)


@st.composite
def episodes(draw: st.DrawFn) -> Episode:
    """1-4 model turns of 1-5 tokens, with 1-4 observation tokens between turns."""
    turns = draw(st.integers(1, 4))
    segments: list[Segment] = []
    for turn in range(turns):
        if turn:
            obs = draw(st.lists(st.integers(10, 19), min_size=1, max_size=4))
            segments.append(Segment(tuple(obs), "obs", False))
        ids = draw(st.lists(st.integers(20, 29), min_size=1, max_size=5))
        lps = draw(st.lists(st.floats(-5, -0.0625, width=32), min_size=len(ids), max_size=len(ids)))
        segments.append(Segment(tuple(ids), "gen", True, tuple(lps)))
    return Episode(tuple(segments), (0.0,) * (turns - 1), "done")


@st.composite
def multi_turn_batches(draw: st.DrawFn) -> tuple[list[Episode], Tensor, Tensor]:
    """Groups of 2-3 episodes; (episodes, rewards (B,), group_index (B,))."""
    sizes = draw(st.lists(st.integers(2, 3), min_size=1, max_size=3))
    eps = [draw(episodes()) for _ in range(sum(sizes))]
    rewards = draw(st.lists(st.floats(-2, 2, width=32), min_size=len(eps), max_size=len(eps)))
    group = torch.tensor([g for g, size in enumerate(sizes) for _ in range(size)])
    return eps, torch.tensor(rewards), group


def completion(episode: Episode, prompt_index: int = 0) -> Completion:
    return Completion(
        prompt_index,
        episode.token_ids,
        episode.segments[-1].text,
        "stop",
        episode.logprobs,
        episode.loss_mask,
        episode,
    )


def compact(values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """The masked entries of each row moved to the left; (values (B, R'), mask (B, R'))."""
    counts = mask.sum(-1)
    width = int(counts.max())
    out = torch.zeros((mask.shape[0], width), dtype=values.dtype)
    out_mask = torch.zeros((mask.shape[0], width), dtype=torch.long)
    for row in range(mask.shape[0]):
        kept = values[row][mask[row].bool()]
        out[row, : len(kept)] = kept
        out_mask[row, : len(kept)] = 1
    return out, out_mask


@SETTINGS
@given(episodes())
def test_episode_mask_marks_generated_tokens_and_logprobs_are_zero_on_observations(
    episode: Episode,
) -> None:
    mask = episode.loss_mask
    assert len(mask) == len(episode.token_ids)
    assert sum(mask) == sum(len(s.token_ids) for s in episode.segments if s.trained)
    assert episode.logprobs is not None
    for m, lp, token in zip(mask, episode.logprobs, episode.token_ids, strict=True):
        assert (m == 1) == (token >= 20)  # generated ids are 20..29, observations 10..19
        if not m:
            assert lp == 0.0
    assert [episode.token_ids[e] >= 20 for e in episode.turn_ends()] == [True] * episode.turns


@SETTINGS
@given(multi_turn_batches())
def test_rollout_tensors_carry_the_loss_mask_and_attend_every_token(
    batch: tuple[list[Episode], Tensor, Tensor],
) -> None:
    eps, _, _ = batch
    prompt = PromptRecord("p", "p", (1, 2, 3))
    tensors = build_rollout_tensors([prompt], [completion(e) for e in eps], pad_token_id=0)
    seq = tensors.sequences
    for row, e in enumerate(eps):
        r = len(e.token_ids)
        assert seq.response_mask[row, :r].tolist() == list(e.loss_mask)
        assert int(seq.response_mask[row, r:].sum()) == 0
        response = seq.input_ids[row, -seq.response_length :]
        assert response[:r].tolist() == list(e.token_ids)
        assert int(seq.attention_mask[row].sum()) == 3 + r
        assert int(tensors.response_lengths[row]) == sum(e.loss_mask)
        assert tensors.rollout_logprobs is not None and e.logprobs is not None
        assert tensors.rollout_logprobs[row, :r].tolist() == list(e.logprobs)


def _inputs(rewards: Tensor, mask: Tensor, group: Tensor, seed: int) -> AdvantageInputs:
    gen = torch.Generator().manual_seed(seed)
    shape = tuple(mask.shape)
    return AdvantageInputs(
        rewards,
        mask,
        group,
        values=torch.randn(shape, generator=gen),
        kl=torch.rand(shape, generator=gen),
        baseline_rewards=torch.zeros_like(rewards),
        logprobs=-3 * torch.rand(shape, generator=gen),
        teacher_logprobs=-3 * torch.rand((1, *shape), generator=gen),
        # process rewards (process_grpo): step ends on trained tokens only, each with a score
        step_rewards=torch.rand(shape, generator=gen) * mask,
        step_mask=(torch.rand(shape, generator=gen) < 0.5) & mask.bool(),
    )


def _compacted(inputs: AdvantageInputs) -> AdvantageInputs:
    mask = inputs.response_mask
    assert inputs.values is not None and inputs.kl is not None
    values, small = compact(inputs.values, mask)
    kl, _ = compact(inputs.kl, mask)
    assert inputs.logprobs is not None and inputs.teacher_logprobs is not None
    logprobs, _ = compact(inputs.logprobs, mask)
    teacher, _ = compact(inputs.teacher_logprobs[0], mask)
    assert inputs.step_rewards is not None and inputs.step_mask is not None
    step_rewards, _ = compact(inputs.step_rewards, mask)
    step_mask, _ = compact(inputs.step_mask.to(mask.dtype), mask)
    return AdvantageInputs(
        inputs.rewards,
        small,
        inputs.group_index,
        values,
        kl,
        inputs.baseline_rewards,
        logprobs,
        teacher.unsqueeze(0),
        step_rewards=step_rewards,
        step_mask=step_mask.bool(),
    )


@SETTINGS
@given(multi_turn_batches(), st.integers(0, 2**16))
def test_every_estimator_treats_observation_tokens_as_absent(
    batch: tuple[list[Episode], Tensor, Tensor], seed: int
) -> None:
    eps, rewards, group = batch
    prompt = PromptRecord("p", "p", (1,))
    mask = build_rollout_tensors([prompt], [completion(e) for e in eps], 0).sequences.response_mask
    inputs = _inputs(rewards, mask, group, seed)
    for name in ADVANTAGE_ESTIMATORS.names():
        full = compute_advantages(name, inputs, PARAMS, local_sum)
        small = compute_advantages(name, _compacted(inputs), PARAMS, local_sum)
        assert bool((full.advantages[mask == 0] == 0).all()), name
        got, _ = compact(full.advantages, mask)
        torch.testing.assert_close(got, small.advantages, msg=name)
        got_returns, _ = compact(full.returns, mask)
        torch.testing.assert_close(got_returns, small.returns, msg=name)


@SETTINGS
@given(multi_turn_batches(), st.integers(0, 2**16))
def test_kl_and_every_policy_loss_ignore_observation_tokens(
    batch: tuple[list[Episode], Tensor, Tensor], seed: int
) -> None:
    eps, _, _ = batch
    prompt = PromptRecord("p", "p", (1,))
    mask = build_rollout_tensors([prompt], [completion(e) for e in eps], 0).sequences.response_mask
    gen = torch.Generator().manual_seed(seed)
    shape = tuple(mask.shape)
    logprobs = -torch.rand(shape, generator=gen) * 3
    old = logprobs + 0.1 * torch.randn(shape, generator=gen)
    ref = logprobs + 0.1 * torch.randn(shape, generator=gen)
    advantages = torch.randn(shape, generator=gen) * mask
    for name in KL_ESTIMATORS.names():
        k = kl_estimate(name, logprobs, ref, mask)
        assert bool((k[mask == 0] == 0).all())
        small_k = kl_estimate(
            name, compact(logprobs, mask)[0], compact(ref, mask)[0], compact(ref, mask)[1]
        )
        torch.testing.assert_close(compact(k, mask)[0], small_k)
    small_mask = compact(logprobs, mask)[1]
    normalizer = LossNormalizer(float(mask.sum()), float(mask.shape[0]), max_response_length=32)
    for name in POLICY_LOSSES.names():
        leaf = logprobs.clone().requires_grad_(True)
        out = compute_policy_loss(
            name, PolicyLossInputs(leaf, old, advantages, mask), normalizer=normalizer
        )
        out.loss.backward()
        assert leaf.grad is not None and bool((leaf.grad[mask == 0] == 0).all()), name
        small_leaf = compact(logprobs, mask)[0].requires_grad_(True)
        small = compute_policy_loss(
            name,
            PolicyLossInputs(
                small_leaf, compact(old, mask)[0], compact(advantages, mask)[0], small_mask
            ),
            normalizer=normalizer,
        )
        torch.testing.assert_close(out.loss, small.loss, msg=name)
