"""RewardModelTrainer on a tiny random reward model: learns a synthetic preference set,
resumes exactly, reports held-out accuracy and margins."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from lightrft.adapters.checkpoint import LocalCheckpointStore
from lightrft.adapters.datasets import PromptRenderer
from lightrft.adapters.datasets.preferences import in_memory_preferences, synthetic_preference_rows
from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.reward_model_training import RewardModelTrainer, RewardTrainParams
from lightrft.domain.types import OptimizerParams, PreferencePair
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

CPU = torch.device("cpu")
KINDS = ("bare", "ramble", "refuse")


_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


def pairs(n: int, seed: int) -> list[PreferencePair]:
    rows = synthetic_preference_rows(n, seed, kinds=KINDS)
    return in_memory_preferences(rows, PromptRenderer(tiny_tokenizer()))[0]


def trainer(
    train: list[PreferencePair], params: RewardTrainParams, store: Path | None = None, **kw: object
) -> tuple[RewardModelTrainer, HfScalarRewardModel]:
    rm = HfScalarRewardModel(tiny_classifier(seed=0), tiny_tokenizer(), CPU)
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=3e-3, max_grad_norm=1.0))
    strategy.prepare(rm.module)
    checkpoints = LocalCheckpointStore(store) if store is not None else None
    return RewardModelTrainer(rm, strategy, train, params, checkpoints=checkpoints, **kw), rm  # type: ignore[arg-type]


def test_tiny_model_learns_synthetic_preferences() -> None:
    train, held_out = pairs(96, seed=0), pairs(48, seed=1)
    params = RewardTrainParams(batch_size=16, micro_batch_size=16, epochs=1, seed=0)
    t, _ = trainer(train, params, eval_pairs=held_out)
    before = t.evaluate(held_out)
    started = time.perf_counter()
    history = t.run()
    elapsed = time.perf_counter() - started
    after = t.evaluate(held_out)
    assert len(history) == 6  # 96 pairs / 16 per step
    assert after.accuracy >= 0.9, (before.accuracy, after.accuracy)
    assert history[-1]["eval/accuracy"] == after.accuracy
    assert after.margins.shape == (48,)
    assert float(after.margins.mean()) > float(before.margins.mean())
    assert elapsed < 20


def test_resume_is_exact(tmp_path: Path) -> None:
    train = pairs(64, seed=0)
    params = RewardTrainParams(batch_size=8, micro_batch_size=4, total_steps=4, checkpoint_every=2)
    straight, rm_straight = trainer(train, params)
    straight.run(resume=False)
    first, _ = trainer(train, RewardTrainParams(**{**params.__dict__, "total_steps": 2}), tmp_path)
    first.run()
    resumed, rm_resumed = trainer(train, params, tmp_path)
    assert resumed.resume() and resumed.step == 2
    resumed.run(resume=False)
    for (name, a), (_, b) in zip(
        rm_straight.module.state_dict().items(), rm_resumed.module.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_batch_order_is_a_function_of_the_step() -> None:
    t, _ = trainer(pairs(40, seed=0), RewardTrainParams(batch_size=8, epochs=2, seed=3))
    epoch0 = [i for s in range(5) for i in t.batch_indices(s)]
    assert sorted(epoch0) == list(range(40))  # every pair once per epoch
    assert t.batch_indices(5) != t.batch_indices(0)  # a new permutation in epoch 1
    assert t.batch_indices(7) == t.batch_indices(7)


def test_too_few_pairs() -> None:
    with pytest.raises(ValueError, match="fewer than one batch"):
        trainer(pairs(4, seed=0), RewardTrainParams(batch_size=8))


@pytest.mark.slow  # FSDP2 set-up on a one-process gloo group
def test_fsdp2_strategy_trains_like_a_single_device(one_rank_group: None) -> None:
    from lightrft.adapters.fsdp import Fsdp2Strategy

    train = pairs(32, seed=0)
    params = RewardTrainParams(batch_size=8, micro_batch_size=4, total_steps=3)
    single, rm_single = trainer(train, params)
    single.run(resume=False)
    rm = HfScalarRewardModel(tiny_classifier(seed=0), tiny_tokenizer(), CPU)
    strategy = Fsdp2Strategy(OptimizerParams(lr=3e-3, max_grad_norm=1.0), device=CPU)
    strategy.prepare(rm.module)
    sharded = RewardModelTrainer(rm, strategy, train, params)
    history = sharded.run(resume=False)
    assert [round(m["train/loss"], 4) for m in history] == [
        round(m["train/loss"], 4) for m in single.history
    ]
    full = dict(strategy.full_state())
    for name, tensor in rm_single.module.state_dict().items():
        torch.testing.assert_close(full[name], tensor, atol=1e-5, rtol=1e-4)
