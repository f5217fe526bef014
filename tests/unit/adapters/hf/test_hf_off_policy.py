"""Off-policy rollouts on the real HF adapters (tiny random Llama): staleness 0 equals the
synchronous cycle bitwise, one step off trains one version behind, and a weight sync that
loses a LoRA adapter's effect is an error."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from lightrft.adapters.fakes import FakeCollective, InMemoryTracker, synthetic_prompts
from lightrft.adapters.hf import HfPolicy, HfRolloutEngine, LoraParams
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.cycle import CycleComponents, CycleSettings, RLCycle
from lightrft.application.off_policy_params import OffPolicyParams
from lightrft.application.params import CycleParams, RolloutParams, TrainParams
from lightrft.application.weight_sync import sync_engine_weights
from lightrft.domain.async_errors import WeightSyncMismatchError
from lightrft.domain.ports import NamedTensors
from lightrft.domain.types import OptimizerParams, RewardResult, RewardSample, SamplingParams
from tests.unit.adapters.hf.hf_tiny import make_batch, tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
STEPS = 2


class TokenSumReward:
    """A dense reward from the response's token ids (differs between most samples)."""

    name = "token_sum"

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        return RewardResult(torch.tensor([sum(s.completion.token_ids) % 11 / 10 for s in samples]))

    def onload(self) -> None: ...

    def offload(self) -> None: ...

    def close(self) -> None: ...


def _cycle(mode: str, staleness: int, lora: LoraParams | None = None) -> RLCycle:
    policy = HfPolicy(tiny_model(0), lora=lora)
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=0.05, max_grad_norm=1.0))
    strategy.prepare(policy.module)
    components = CycleComponents(
        prompts=synthetic_prompts(16, seed=0),
        engine=HfRolloutEngine(tiny_model(1), tiny_tokenizer(), CPU),  # its own copy
        policy=policy,
        policy_strategy=strategy,
        reward_sources=[TokenSumReward()],
        collective=FakeCollective(),
        tracker=InMemoryTracker(),
    )
    settings = CycleSettings(
        rollout=RolloutParams(
            prompts_per_step=2, sampling=SamplingParams(n=2, max_new_tokens=4), pad_token_id=0
        ),
        train=TrainParams(micro_batch_size=4),
        cycle=CycleParams(total_steps=STEPS, log_samples_per_step=0),
        off_policy=OffPolicyParams(mode=mode, max_staleness=staleness),  # type: ignore[arg-type]
    )
    return RLCycle(components, settings)


def _weights(cycle: RLCycle) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in cycle.components.policy.module.named_parameters()}


def test_staleness_zero_equals_sync_bitwise_on_a_tiny_llama() -> None:
    sync, zero = _cycle("sync", 0), _cycle("async", 0)
    before = _weights(sync)
    sync.run(), zero.run()
    after = _weights(sync)
    assert any(not torch.equal(before[n], after[n]) for n in before)  # it trained
    for name, tensor in _weights(zero).items():
        assert torch.equal(tensor, after[name]), name
    off = _cycle("one_step_off", 1)
    history = off.run()
    assert [row["async/staleness_max"] for row in history] == [0.0, 1.0]
    assert any(not torch.equal(t, after[n]) for n, t in _weights(off).items())


class DropsNames:
    """An engine wrapper whose sync silently skips weights whose name contains ``part``."""

    def __init__(self, engine: HfRolloutEngine, part: str) -> None:
        self.engine, self.part = engine, part
        self.weights_dtype = engine.weights_dtype
        self.shares_policy_weights = False

    def load_weights(self, weights: NamedTensors) -> None:
        self.engine.load_weights((n, t) for n, t in weights if self.part not in n)

    def weights_checksum(self, names: Sequence[str]) -> str:
        return self.engine.weights_checksum(names)


def test_a_sync_that_loses_the_lora_update_is_an_error() -> None:
    policy = HfPolicy(tiny_model(0), lora=LoraParams(rank=4, alpha=8.0))
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=0.05, max_grad_norm=None))
    strategy.prepare(policy.module)
    batch = make_batch([[5, 9, 12], [7, 8]], [[20, 21], [30, 31, 32]])
    strategy.backward(-(policy.forward(batch).logprobs * batch.response_mask).sum())
    assert not strategy.step().skipped  # LoRA B != 0: merged weights differ from the base
    engine = HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU)
    checksum = sync_engine_weights(
        engine, policy.weights_for_sync(strategy.full_state()), 1, verify=True
    )
    assert checksum is not None
    lossy = DropsNames(HfRolloutEngine(tiny_model(0), tiny_tokenizer(), CPU), "q_proj")
    with pytest.raises(WeightSyncMismatchError, match="version 2"):
        sync_engine_weights(
            lossy,  # type: ignore[arg-type]
            policy.weights_for_sync(strategy.full_state()),
            2,
            verify=True,
        )
