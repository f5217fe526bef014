"""RewardModelTrainer with the original's loss types and several named heads: the per-pair
loss against a hand computation, and one training step of each variant on a tiny model."""

from __future__ import annotations

import math

import pytest
import torch

from lightrft.adapters.datasets import PromptRenderer
from lightrft.adapters.datasets.preferences import in_memory_preferences, synthetic_preference_rows
from lightrft.adapters.reward_models import HfScalarRewardModel, RewardModelCard
from lightrft.adapters.reward_models.score_heads import HeadSpec
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.reward_model_training import (
    RewardModelTrainer,
    RewardTrainParams,
    evaluate_preferences,
    pair_loss,
)
from lightrft.domain.types import OptimizerParams, PreferencePair
from tests.helpers.threads import one_torch_thread
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

CPU = torch.device("cpu")
_one_thread = pytest.fixture(autouse=True)(one_torch_thread)


def _pair(i: int, labels: dict[str, str] | None = None, margin: float = 0.0) -> PreferencePair:
    return PreferencePair(f"u{i}", "p", "c", "r", margin=margin, head_labels=labels or {})


def _softplus(x: float) -> float:
    return math.log(1 + math.exp(x))


@pytest.mark.parametrize("loss_type", ["sigmoid", "logexp", "hps"])
def test_pair_loss_per_head_verdicts_by_hand(loss_type: str) -> None:
    heads = ("preference", "alignment")
    chunk = [
        _pair(0, margin=0.2),  # both heads: chosen wins
        _pair(1, {"alignment": "rejected"}),  # alignment prefers the other response
        _pair(2, {"preference": "tie", "alignment": "chosen"}),
    ]
    chosen = torch.tensor([[2.0, 0.5], [1.0, -1.0], [0.3, 0.9]], dtype=torch.float64)
    rejected = torch.tensor([[1.0, 1.5], [0.0, 2.0], [0.8, 0.1]], dtype=torch.float64)
    margin = 0.1  # the global margin, added to each pair's own

    def ranked(better: float, worse: float, m: float) -> float:
        gap = better - worse - (m if loss_type == "sigmoid" else 0.0)
        return _softplus(-gap)  # -log sigmoid(gap) = log(1 + e^-gap)

    expected = [
        ranked(2.0, 1.0, 0.3) + ranked(0.5, 1.5, 0.3),
        ranked(1.0, 0.0, 0.1) + ranked(2.0, -1.0, 0.1),
        0.01 * abs(0.3 - 0.8) + ranked(0.9, 0.1, 0.1),
    ]
    got = pair_loss(chosen, rejected, chunk, margin, loss_type, heads)
    assert got.tolist() == pytest.approx(expected, rel=1e-12)


def _pairs(n: int, seed: int) -> list[PreferencePair]:
    rows = synthetic_preference_rows(n, seed, kinds=("bare", "refuse"))
    return in_memory_preferences(rows, PromptRenderer(tiny_tokenizer()))[0]


VARIANTS = [
    ("hps", HeadSpec(pooling="attn", heads=("preference",), head_arch="mlp", scale_for_train=True)),
    ("logexp", HeadSpec(pooling="mean", probing_layer=1)),
    ("sigmoid", HeadSpec(pooling="last", probing_layer=-1, heads=("a", "b"), weights=(0.5, 0.5))),
]


@pytest.mark.parametrize(("loss_type", "spec"), VARIANTS, ids=lambda v: str(v)[:20])
def test_each_variant_trains_a_step(loss_type: str, spec: HeadSpec) -> None:
    train = _pairs(8, seed=0)
    if len(spec.names) > 1:  # the second head is taught the opposite on half the pairs
        train = [
            PreferencePair(p.uid, p.prompt, p.chosen, p.rejected, head_labels={"b": "rejected"})
            if i % 2
            else p
            for i, p in enumerate(train)
        ]
    rm = HfScalarRewardModel(
        tiny_classifier(seed=0), tiny_tokenizer(), CPU, card=RewardModelCard(heads=spec)
    )
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=1e-2, max_grad_norm=1.0))
    strategy.prepare(rm.module)
    before = {n: p.detach().clone() for n, p in rm.net.named_parameters()}
    params = RewardTrainParams(batch_size=8, micro_batch_size=4, loss_type=loss_type, margin=0.1)
    trainer = RewardModelTrainer(rm, strategy, train, params)
    metrics = trainer.train_step()
    assert math.isfinite(metrics["train/loss"]) and metrics["train/skipped"] == 0.0
    changed = {n for n, p in rm.net.named_parameters() if not torch.equal(p, before[n])}
    assert any(n.startswith("backbone.") for n in changed)
    if not spec.plain and spec.heads:
        assert any(n.startswith("scoring.") for n in changed)
    if len(spec.names) > 1:
        assert {"train/accuracy_a", "train/accuracy_b"} <= set(metrics)
        report = evaluate_preferences(rm, train, 4, loss_type=loss_type)
        assert set(report.head_accuracy) == {"a", "b"}
        assert "eval/accuracy_b" in report.metrics()
