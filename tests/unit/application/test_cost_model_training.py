"""A cost model (Safe RLHF) on a tiny random reward model: the per-pair loss is the
Bradley-Terry term plus the sign terms (by hand), and training on safe/unsafe rows of the
built-in safety task makes the score's sign the safety verdict on held-out rows."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.adapters.datasets import PromptRenderer
from lightrft.adapters.datasets.preferences import PreferenceSpec, in_memory_preferences
from lightrft.adapters.datasets.safety_preferences import cost_rows
from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.reward_model_training import (
    RewardModelTrainer,
    RewardTrainParams,
    pair_loss,
)
from lightrft.domain.types import OptimizerParams, PreferencePair
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

_one_thread = pytest.fixture(autouse=True)(one_torch_thread)
SPEC = PreferenceSpec(chosen_safe_key="chosen_safe", rejected_safe_key="rejected_safe")


def test_pair_loss_adds_the_sign_terms_by_hand() -> None:
    labeled = PreferencePair("a", "p", "harmful", "harmless", chosen_sign=1, rejected_sign=-1)
    plain = PreferencePair("b", "p", "better", "worse")
    chosen, rejected = torch.tensor([1.0, 1.0]), torch.tensor([-0.5, -0.5])
    loss = pair_loss(chosen, rejected, [labeled, plain], margin=0.0)
    bt = math.log1p(math.exp(-1.5))  # -log sigmoid(1 - (-0.5))
    # unsafe scored 1: log(1 + e^-1); safe scored -0.5: -log sigmoid(0.5) = log(1 + e^-0.5)
    signs = math.log1p(math.exp(-1.0)) + math.log1p(math.exp(-0.5))
    assert loss.tolist() == pytest.approx([bt + signs, bt], rel=1e-6)


def test_rows_read_safety_labels_into_signs() -> None:
    rows = cost_rows(4, seed=0)
    pairs, skipped = in_memory_preferences(rows, PromptRenderer(tiny_tokenizer()), SPEC)
    assert skipped == 0
    assert {(p.chosen_sign, p.rejected_sign) for p in pairs} == {(1, -1)}
    bad = [{**rows[0], "chosen_safe": "no"}]
    with pytest.raises(ValueError, match="chosen_safe"):
        in_memory_preferences(bad, PromptRenderer(tiny_tokenizer()), SPEC)


def test_tiny_cost_model_learns_the_sign() -> None:
    renderer = PromptRenderer(tiny_tokenizer())
    train = in_memory_preferences(cost_rows(96, seed=0), renderer, SPEC)[0]
    held_out = in_memory_preferences(cost_rows(32, seed=1), renderer, SPEC)[0]
    rm = HfScalarRewardModel(tiny_classifier(seed=0), tiny_tokenizer(), torch.device("cpu"))
    strategy = SingleDeviceStrategy(torch.device("cpu"), OptimizerParams(lr=3e-3))
    strategy.prepare(rm.module)
    params = RewardTrainParams(batch_size=16, micro_batch_size=16, epochs=3, seed=0)
    trainer = RewardModelTrainer(rm, strategy, train, params)
    before = trainer.evaluate(held_out)
    trainer.run(resume=False)
    after = trainer.evaluate(held_out)
    assert after.sign_accuracy is not None and before.sign_accuracy is not None
    # a tiny random model: from about chance (0.59: the rows' safe/unsafe mix) to 0.80 of the
    # held-out verdicts right (3 epochs; any capital letter as a placeholder since 2026-11-26)
    assert after.sign_accuracy >= 0.75, (before, after)
    assert after.sign_accuracy >= before.sign_accuracy + 0.15, (before, after)
    assert after.metrics()["eval/sign_accuracy"] == after.sign_accuracy
