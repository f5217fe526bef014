"""FakeStrategy against hand-computed AdamW, clipping and schedule values."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor, nn

from lightrft.adapters.fakes import FakePolicy, FakeStrategy, make_sequence_batch
from lightrft.adapters.fakes.strategy import NON_FINITE_REASON
from lightrft.adapters.strategy_parts.lr_schedule import lr_multiplier as lr_factor
from lightrft.domain.ports import Strategy
from lightrft.domain.types import OptimizerParams


class Scalar(nn.Module):
    """One parameter w, for arithmetic by hand."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([value]))


def _strategy(module: nn.Module, **params: object) -> FakeStrategy:
    strategy = FakeStrategy(OptimizerParams(**params))  # type: ignore[arg-type]
    strategy.prepare(module)
    return strategy


def test_adamw_step_by_hand() -> None:
    module = Scalar(2.0)
    strategy = _strategy(module, lr=0.1, weight_decay=0.5, max_grad_norm=None)
    assert isinstance(strategy, Strategy)
    strategy.backward((3.0 * module.w).sum())  # grad 3
    result = strategy.step()
    # AdamW, step 1: w <- w (1 - lr wd) = 2 * 0.95 = 1.9; m_hat = g, v_hat = g^2, so
    # w <- 1.9 - lr * g / (|g| + eps) = 1.9 - 0.1 = 1.8
    assert module.w.item() == pytest.approx(1.8, abs=1e-6)
    assert result.grad_norm == pytest.approx(3.0)
    assert result.lr == pytest.approx(0.1)
    assert not result.skipped
    assert module.w.grad is None  # zeroed


def test_clipping_reports_pre_clip_norm_and_clips() -> None:
    module = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        module.weight.copy_(torch.tensor([[1.0, -1.0]]))
    strategy = _strategy(module, lr=0.1, max_grad_norm=1.0)
    seen: list[Tensor] = []

    def record_grad(*_: object) -> None:
        assert module.weight.grad is not None
        seen.append(module.weight.grad.clone())

    strategy.optimizer.register_step_pre_hook(record_grad)
    strategy.backward((module.weight * torch.tensor([[3.0, 4.0]])).sum())  # grad (3, 4)
    result = strategy.step()
    assert result.grad_norm == pytest.approx(5.0)
    torch.testing.assert_close(seen[0], torch.tensor([[0.6, 0.8]]), atol=1e-6, rtol=0)
    strategy.backward((module.weight * torch.tensor([[0.3, 0.4]])).sum())  # norm 0.5 <= 1
    assert strategy.step().grad_norm == pytest.approx(0.5)
    torch.testing.assert_close(seen[1], torch.tensor([[0.3, 0.4]]))


def test_non_finite_gradient_skips_the_step() -> None:
    module = Scalar(1.0)
    strategy = _strategy(module, lr=0.1, warmup_steps=4)
    strategy.backward((module.w * math.inf).sum())
    result = strategy.step()
    assert result.skipped and result.reason == NON_FINITE_REASON
    assert not math.isfinite(result.grad_norm)
    assert module.w.item() == 1.0
    assert module.w.grad is None
    assert result.lr == pytest.approx(0.1 * 1 / 4)
    strategy.backward(module.w.sum())
    assert strategy.step().lr == pytest.approx(0.1 * 1 / 4)  # schedule did not advance
    assert (strategy.steps, strategy.skipped_steps) == (1, 1)


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        # warmup 2: 1/2, 2/2; then 4 decay steps over total 6, progress 0, 1/4, 1/2, 3/4, 1
        ("constant", [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        ("linear", [0.5, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2]),  # 0.2 + 0.8 (1 - q)
        (
            "cosine",  # 0.2 + 0.8 (1 + cos(pi q)) / 2
            [
                0.5,
                1.0,
                1.0,
                0.2 + 0.4 * (1 + math.cos(math.pi / 4)),
                0.6,
                0.2 + 0.4 * (1 + math.cos(3 * math.pi / 4)),
                0.2,
            ],
        ),
    ],
)
def test_schedule_values(schedule: str, expected: list[float]) -> None:
    params = OptimizerParams(
        lr=1.0,
        warmup_steps=2,
        total_steps=6,
        schedule=schedule,  # type: ignore[arg-type]
        min_lr_ratio=0.2,
    )
    got = [lr_factor(step, params) for step in range(7)]
    assert got == pytest.approx(expected)
    module = Scalar(0.0)
    strategy = FakeStrategy(params)
    strategy.prepare(module)
    lrs = []
    for _ in range(7):
        strategy.backward(module.w.sum())
        lrs.append(strategy.step().lr)
    assert lrs == pytest.approx(expected)


def test_step_lowers_a_policy_loss() -> None:
    policy = FakePolicy(seed=0)
    strategy = _strategy(policy.module, lr=0.01)
    batch = make_sequence_batch([[5, 7, 2], [9, 2]], [[6, 1], [11, 1]])
    losses = []
    for _ in range(5):
        loss = -policy.forward(batch).logprobs.sum()
        losses.append(loss.item())
        strategy.backward(loss)
        strategy.step()
    assert losses[-1] < losses[0] - 0.5
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False))


def test_state_dict_is_a_deep_copy_and_resumes_exactly() -> None:
    def run(strategy: FakeStrategy, module: nn.Linear, steps: int) -> None:
        for _ in range(steps):
            strategy.backward(((module.weight - 1.0) ** 2).sum())
            strategy.step()

    torch.manual_seed(0)
    module = nn.Linear(3, 2)
    strategy = _strategy(module, lr=0.05, warmup_steps=2, total_steps=10, schedule="cosine")
    run(strategy, module, 3)
    saved = strategy.state_dict()
    saved_weight = saved["module"]["weight"].clone()
    run(strategy, module, 4)
    assert torch.equal(saved["module"]["weight"], saved_weight)  # later training did not touch it
    reference = module.weight.detach().clone()

    torch.manual_seed(1)
    other = nn.Linear(3, 2)
    resumed = _strategy(other, lr=0.05, warmup_steps=2, total_steps=10, schedule="cosine")
    resumed.load_state_dict(saved)
    assert resumed.current_lr == pytest.approx(strategy.step_results[3].lr)
    run(resumed, other, 4)
    torch.testing.assert_close(other.weight, reference, atol=0, rtol=0)
    run(resumed, other, 1)
    assert torch.equal(saved["module"]["weight"], saved_weight)  # loading copied it too


def test_offload_and_full_state() -> None:
    module = Scalar(1.5)
    strategy = _strategy(module)
    state = dict(strategy.full_state())
    assert list(state) == ["w"]
    state["w"].add_(1.0)
    assert module.w.item() == 1.5  # a clone
    assert not state["w"].requires_grad
    strategy.offload()
    with pytest.raises(RuntimeError, match="offloaded"):
        strategy.backward(module.w.sum())
    with pytest.raises(RuntimeError, match="offloaded"):
        strategy.step()
    strategy.onload()
    strategy.backward(module.w.sum())
    strategy.step()
    assert (strategy.offloads, strategy.onloads, strategy.backward_calls) == (1, 1, 1)


def test_prepare_once_and_before_use() -> None:
    strategy = FakeStrategy()
    with pytest.raises(RuntimeError, match="prepare"):
        strategy.step()
    strategy.prepare(Scalar(0.0))
    with pytest.raises(RuntimeError, match="already"):
        strategy.prepare(Scalar(0.0))
    assert strategy.step().grad_norm == 0.0  # no gradients: a zero-norm step
