"""Property tests of the advantage estimators (hypothesis)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from lightrft.domain.advantages import (
    ADVANTAGE_ESTIMATORS,
    AdvantageInputs,
    AdvantageOutput,
    AdvantageParams,
    compute_advantages,
)

ALL = ADVANTAGE_ESTIMATORS.names()
GROUP_BASELINES = ("grpo", "dr_grpo", "rloo", "opo", "cpgd", "reinforce_pp_baseline")
GLOBAL_WHITENING = ("reinforce_pp", "reinforce_pp_baseline", "gae")
PARAMS = AdvantageParams(gamma=0.9, lam=0.8, kl_coef=0.05)
FAST = settings(max_examples=50, deadline=None)
HEAVY = settings(max_examples=25, deadline=None)  # tests that run every estimator twice
NAN = float("nan")


@dataclass(frozen=True)
class Batch:
    inputs: AdvantageInputs
    sizes: tuple[int, ...]  # group sizes; rows are ordered group by group


@st.composite
def batches(draw: st.DrawFn, min_groups: int = 1, equal_rewards: bool = False) -> Batch:
    """Groups of 2..4 samples, each row with 1..R counted tokens, all optional inputs set."""
    sizes = tuple(draw(st.lists(st.integers(2, 4), min_size=min_groups, max_size=3)))
    b, r = sum(sizes), draw(st.integers(1, 5))
    reward = st.sampled_from([0.0, 0.5, 1.0]) | st.floats(-3, 3, allow_nan=False)
    if equal_rewards:
        per_group = draw(st.lists(reward, min_size=len(sizes), max_size=len(sizes)))
        rewards = [v for v, size in zip(per_group, sizes, strict=True) for _ in range(size)]
    else:
        rewards = draw(st.lists(reward, min_size=b, max_size=b))
    lengths = torch.tensor(draw(st.lists(st.integers(1, r), min_size=b, max_size=b)))
    mask = (torch.arange(r) < lengths[:, None]).long()  # left-aligned, trailing padding
    seed = draw(st.integers(0, 2**16))
    gen = torch.Generator().manual_seed(seed)
    values = torch.randn(b, r, generator=gen, dtype=torch.float64)
    kl = torch.rand(b, r, generator=gen, dtype=torch.float64)
    logprobs = -3 * torch.rand(b, r, generator=gen, dtype=torch.float64)
    teacher = -3 * torch.rand(1, b, r, generator=gen, dtype=torch.float64)
    steps = (torch.rand(b, r, generator=gen) < 0.4) & mask.bool()  # process_grpo's step ends
    step_rewards = torch.where(steps, torch.rand(b, r, generator=gen, dtype=torch.float64), 0.0)
    group_index = torch.repeat_interleave(
        torch.tensor([10, 3, 7][: len(sizes)]), torch.tensor(sizes)
    )
    inputs = AdvantageInputs(
        rewards=torch.tensor(rewards, dtype=torch.float64),
        response_mask=mask,
        group_index=group_index,
        values=torch.where(mask.bool(), values, NAN),
        kl=torch.where(mask.bool(), kl, NAN),
        baseline_rewards=torch.tensor(
            draw(st.lists(reward, min_size=b, max_size=b)), dtype=torch.float64
        ),
        logprobs=torch.where(mask.bool(), logprobs, NAN),
        teacher_logprobs=torch.where(mask.bool(), teacher, NAN),
        step_rewards=torch.where(mask.bool(), step_rewards, NAN),
        step_mask=steps,
    )
    return Batch(inputs, sizes)


def rows(inputs: AdvantageInputs, index: Tensor) -> AdvantageInputs:
    """The samples ``index`` of a batch (every per-sample field)."""

    def take(x: Tensor | None) -> Tensor | None:
        return None if x is None else x[index]

    return AdvantageInputs(
        inputs.rewards[index],
        inputs.response_mask[index],
        inputs.group_index[index],
        take(inputs.values),
        take(inputs.kl),
        take(inputs.baseline_rewards),
        take(inputs.logprobs),
        None if inputs.teacher_logprobs is None else inputs.teacher_logprobs[:, index],
        step_rewards=take(inputs.step_rewards),
        step_mask=take(inputs.step_mask),
    )


def per_sample(out: AdvantageOutput, mask: Tensor) -> Tensor:
    return out.advantages.sum(-1) / mask.sum(-1)


@HEAVY
@given(batches(), st.data())
def test_padding_columns_never_change_a_result(batch: Batch, data: st.DataObject) -> None:
    # insert masked-out columns holding NaN anywhere (also inside a row's tokens)
    inputs = batch.inputs
    r = inputs.response_mask.shape[1]
    extra = data.draw(st.lists(st.integers(0, r), min_size=1, max_size=3))
    order = sorted([(p, 0, i) for i, p in enumerate(range(r))] + [(p, 1, -1) for p in extra])
    keep = torch.tensor([i for *_, i in order if i >= 0])
    is_old = torch.tensor([i >= 0 for *_, i in order])
    source = torch.tensor([max(i, 0) for *_, i in order])

    def widen(x: Tensor, fill: float) -> Tensor:
        return torch.where(is_old, x[:, source].to(torch.float64), fill)

    padded = replace(
        inputs,
        response_mask=widen(inputs.response_mask, 0.0).long(),
        values=widen(inputs.values, NAN),  # type: ignore[arg-type]
        kl=widen(inputs.kl, NAN),  # type: ignore[arg-type]
        logprobs=widen(inputs.logprobs, NAN),  # type: ignore[arg-type]
        teacher_logprobs=widen(inputs.teacher_logprobs[0], NAN).unsqueeze(0),  # type: ignore[index]
        step_rewards=widen(inputs.step_rewards, NAN),  # type: ignore[arg-type]
        step_mask=widen(inputs.step_mask, 0.0).bool(),  # type: ignore[arg-type]
    )
    for name in ALL:
        base = compute_advantages(name, inputs, PARAMS)
        wide = compute_advantages(name, padded, PARAMS)
        for field in ("advantages", "returns"):
            got = getattr(wide, field)
            torch.testing.assert_close(got[:, is_old], getattr(base, field)[:, keep], msg=name)
            assert torch.equal(got[:, ~is_old], torch.zeros_like(got[:, ~is_old])), name


@HEAVY
@given(batches(), st.randoms(use_true_random=False))
def test_permuting_samples_permutes_advantages(batch: Batch, rnd: object) -> None:
    b = batch.inputs.rewards.shape[0]
    order = list(range(b))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    perm = torch.tensor(order)
    for name in ALL:
        base = compute_advantages(name, batch.inputs, PARAMS)
        moved = compute_advantages(name, rows(batch.inputs, perm), PARAMS)
        torch.testing.assert_close(moved.advantages, base.advantages[perm], msg=name)
        torch.testing.assert_close(moved.returns, base.returns[perm], msg=name)


@FAST
@given(batches())
def test_group_baselines_center_each_group(batch: Batch) -> None:
    inputs = batch.inputs
    lengths = inputs.response_mask.sum(-1).double()
    for name in ("grpo", "dr_grpo", "rloo", "cpgd", "opo"):
        score = per_sample(compute_advantages(name, inputs), inputs.response_mask)
        for g in set(inputs.group_index.tolist()):
            members = inputs.group_index == g
            if name == "opo":  # the length-weighted mean is the baseline: sum |y| A = 0
                total = (lengths[members] * score[members]).sum()
            else:
                total = score[members].mean()
            torch.testing.assert_close(
                total, torch.zeros((), dtype=torch.float64), atol=1e-9, rtol=0
            )


@FAST
@given(batches())
def test_grpo_scales_each_informative_group_to_unit_std(batch: Batch) -> None:
    inputs = batch.inputs
    score = per_sample(compute_advantages("grpo", inputs), inputs.response_mask)
    for g in set(inputs.group_index.tolist()):
        members = inputs.group_index == g
        std = inputs.rewards[members].std()
        if std > 1e-3:  # std / (std + 1e-6) is within 1e-3 of 1
            torch.testing.assert_close(score[members].std(), std / (std + 1e-6), msg=str(g))


@FAST
@given(batches(equal_rewards=True))
def test_equal_rewards_give_zero_never_nan(batch: Batch) -> None:
    inputs = replace(batch.inputs, baseline_rewards=batch.inputs.rewards)
    for name in ALL:
        out = compute_advantages(name, inputs, PARAMS)
        assert bool(torch.isfinite(out.advantages).all()), name
        if name in GROUP_BASELINES or name == "remax":
            assert torch.equal(out.advantages, torch.zeros_like(out.advantages)), name


@FAST
@given(batches())
def test_rloo_is_dr_grpo_scaled_by_g_over_g_minus_one(batch: Batch) -> None:
    inputs = batch.inputs
    size = torch.tensor([s for s in batch.sizes for _ in range(s)], dtype=torch.float64)
    rloo = compute_advantages("rloo", inputs).advantages
    dr = compute_advantages("dr_grpo", inputs).advantages
    torch.testing.assert_close(rloo, (size / (size - 1))[:, None] * dr)


class TwoRankSum:
    """A fake data-parallel all-reduce for two threads: each adds its tensor, both get the sum."""

    def __init__(self) -> None:
        self._barrier = threading.Barrier(2, timeout=10)
        self._slots: list[Tensor] = [torch.zeros(()), torch.zeros(())]
        self.calls = [0, 0]

    def rank(self, r: int) -> Callable[[Tensor], Tensor]:
        def all_reduce_sum(tensor: Tensor) -> Tensor:
            self._slots[r] = tensor.clone()
            self.calls[r] += 1
            self._barrier.wait()
            total = self._slots[0] + self._slots[1]
            self._barrier.wait()  # nobody overwrites a slot before both have read it
            return total

        return all_reduce_sum


@HEAVY
@given(batches(min_groups=2))
def test_whitening_split_over_two_ranks_equals_one_batch(batch: Batch) -> None:
    # rank 0 holds the first group, rank 1 the others (groups never straddle ranks)
    inputs, cut = batch.inputs, batch.sizes[0]
    b = inputs.rewards.shape[0]
    halves = [rows(inputs, torch.arange(0, cut)), rows(inputs, torch.arange(cut, b))]
    for name in GLOBAL_WHITENING:
        fake = TwoRankSum()
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [
                pool.submit(compute_advantages, name, halves[r], PARAMS, fake.rank(r))
                for r in (0, 1)
            ]
            parts = [f.result() for f in futures]
        assert fake.calls[0] == fake.calls[1] > 0
        whole = compute_advantages(name, inputs, PARAMS)
        split = torch.cat([p.advantages for p in parts])
        torch.testing.assert_close(split, whole.advantages, msg=name)
