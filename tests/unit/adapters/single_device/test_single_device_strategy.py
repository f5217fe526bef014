"""SingleDeviceStrategy: steps, clipping, schedule, skip on non-finite, state round trips."""

from __future__ import annotations

import io
import math

import pytest
import torch
from torch import nn

from lightrft.adapters.single_device import SingleDeviceStrategy, lr_multiplier
from lightrft.domain.ports import Collective, Strategy
from lightrft.domain.types import OptimizerParams

CPU = torch.device("cpu")


def net(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def loss_of(module: nn.Module, seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x, y = torch.randn(16, 4, generator=gen), torch.randn(16, 1, generator=gen)
    return ((module(x) - y) ** 2).mean()


def prepared(optim: OptimizerParams, seed: int = 0) -> SingleDeviceStrategy:
    strategy = SingleDeviceStrategy(CPU, optim)
    strategy.prepare(net(seed))
    return strategy


def train(strategy: SingleDeviceStrategy, steps: int, start: int = 0) -> list[float]:
    lrs = []
    for i in range(steps):
        strategy.backward(loss_of(strategy.module, seed=start + i))
        lrs.append(strategy.step().lr)
    return lrs


def params(strategy: SingleDeviceStrategy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in strategy.module.parameters()]


def test_implements_the_ports() -> None:
    strategy = prepared(OptimizerParams())
    assert isinstance(strategy, Strategy) and isinstance(strategy, Collective)
    assert (strategy.rank, strategy.world_size) == (0, 1)
    t = torch.tensor([1.0, 2.0])
    summed = strategy.all_reduce_sum(t)
    assert torch.equal(summed, t) and summed is not t


def test_steps_lower_a_loss_and_zero_the_grads() -> None:
    strategy = prepared(OptimizerParams(lr=1e-2, max_grad_norm=None))
    before = loss_of(strategy.module).item()
    for _ in range(20):
        strategy.backward(loss_of(strategy.module))
        result = strategy.step()
        assert not result.skipped and result.grad_norm > 0
        assert all(p.grad is None for p in strategy.module.parameters())
    assert loss_of(strategy.module).item() < 0.8 * before


def test_grad_norm_is_reported_before_clipping_and_the_update_uses_the_clipped_grad() -> None:
    strategy = prepared(OptimizerParams(lr=1e-3, max_grad_norm=0.01, betas=(0.5, 0.999)))
    strategy.backward(loss_of(strategy.module))
    grads = [p.grad.clone() for p in strategy.module.parameters()]
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads))
    assert norm > 0.01
    result = strategy.step()
    assert result.grad_norm == pytest.approx(norm, rel=1e-5)
    # first AdamW step: exp_avg = (1 - beta1) * clipped grad, so its norm is 0.5 * 0.01
    optimizer = strategy.optimizer
    exp_avg = [optimizer.state[p]["exp_avg"] for p in strategy.module.parameters()]
    clipped_norm = math.sqrt(sum(float((m**2).sum()) for m in exp_avg)) / 0.5
    assert clipped_norm == pytest.approx(0.01, rel=1e-4)
    torch.testing.assert_close(exp_avg[0] / 0.5, grads[0] * (0.01 / norm), rtol=1e-4, atol=1e-9)


def test_cosine_schedule_with_warmup_by_hand() -> None:
    optim = OptimizerParams(
        lr=1.0,
        warmup_steps=2,
        total_steps=10,
        schedule="cosine",
        min_lr_ratio=0.1,
        max_grad_norm=None,
    )
    # warmup: 1/2, 2/2; then p = (s - 2) / 8: s=2 -> 1; s=6 -> 0.1 + 0.9 * (1 + cos(pi/2)) / 2
    # = 0.55; s=10 -> 0.1 (and stays there)
    expected = {0: 0.5, 1: 1.0, 2: 1.0, 6: 0.55, 10: 0.1, 12: 0.1}
    for step, value in expected.items():
        assert lr_multiplier(step, optim) == pytest.approx(value)
    lrs = train(prepared(optim), 11)
    assert [lrs[s] for s in (0, 1, 2, 6, 10)] == pytest.approx([0.5, 1.0, 1.0, 0.55, 0.1])


def test_linear_and_constant_schedules_by_hand() -> None:
    linear = OptimizerParams(lr=2.0, total_steps=4, schedule="linear", min_lr_ratio=0.0)
    # no warmup, p = s / 4: 1, 0.75, 0.5, 0.25, 0
    assert [lr_multiplier(s, linear) for s in range(5)] == pytest.approx([1, 0.75, 0.5, 0.25, 0])
    assert train(prepared(linear), 3) == pytest.approx([2.0, 1.5, 1.0])
    constant = OptimizerParams(lr=1.0, warmup_steps=4)
    assert [lr_multiplier(s, constant) for s in (0, 3, 4, 100)] == [0.25, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_loss_skips_the_step(bad: float) -> None:
    optim = OptimizerParams(lr=1.0, warmup_steps=3)
    strategy = prepared(optim)
    train(strategy, 1)
    before = params(strategy)
    strategy.backward(loss_of(strategy.module) * bad)
    result = strategy.step()
    assert result.skipped and result.reason is not None and "non-finite" in result.reason
    assert not math.isfinite(result.grad_norm)
    assert all(torch.equal(a, b) for a, b in zip(before, params(strategy), strict=True))
    assert all(p.grad is None for p in strategy.module.parameters())
    # the schedule did not advance: the next step uses warmup step 1 (2/3), not step 2
    assert train(strategy, 1) == pytest.approx([2 / 3])


def test_weight_decay_spares_biases() -> None:
    strategy = prepared(OptimizerParams(lr=0.1, weight_decay=0.5, max_grad_norm=None))
    before = params(strategy)
    for p in strategy.module.parameters():
        p.grad = torch.zeros_like(p)  # a zero gradient: only decay moves a weight
    strategy.step()
    after = params(strategy)
    torch.testing.assert_close(after[0], before[0] * (1 - 0.1 * 0.5))  # weight
    assert torch.equal(after[1], before[1])  # bias


def test_save_load_round_trip_continues_bitwise() -> None:
    optim = OptimizerParams(lr=1e-2, warmup_steps=2, total_steps=8, schedule="cosine")
    a = prepared(optim)
    train(a, 3)
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    lrs_a = train(a, 3, start=3)
    b = prepared(optim, seed=5)  # different initial weights, overwritten by the load
    buffer.seek(0)
    b.load_state_dict(torch.load(buffer, weights_only=True))
    lrs_b = train(b, 3, start=3)
    assert lrs_a == lrs_b
    assert all(torch.equal(x, y) for x, y in zip(params(a), params(b), strict=True))


def test_offload_onload_round_trip_continues_bitwise() -> None:
    optim = OptimizerParams(lr=1e-2)
    a, b = prepared(optim), prepared(optim)
    train(a, 2)
    train(b, 2)
    b.offload()
    optimizer = b.optimizer
    assert all(v.device == CPU for s in optimizer.state.values() for v in s.values())
    b.onload()
    train(a, 2, start=2)
    train(b, 2, start=2)
    assert all(torch.equal(x, y) for x, y in zip(params(a), params(b), strict=True))


def test_full_state_is_the_module_state() -> None:
    strategy = prepared(OptimizerParams())
    state = dict(strategy.full_state())
    expected = strategy.module.state_dict()
    assert state.keys() == expected.keys()
    assert all(torch.equal(state[k], expected[k]) for k in expected)
    assert not any(t.requires_grad for t in state.values())


def test_autocast_context() -> None:
    x = torch.randn(2, 4)
    plain = SingleDeviceStrategy(CPU, OptimizerParams())
    plain.prepare(net())
    with plain.autocast():
        assert plain.module(x).dtype == torch.float32
    mixed = SingleDeviceStrategy(CPU, OptimizerParams(), autocast_dtype=torch.bfloat16)
    mixed.prepare(net())
    with mixed.autocast():
        assert mixed.module(x).dtype == torch.bfloat16
    assert next(mixed.module.parameters()).dtype == torch.float32


def test_only_trainable_parameters_are_optimized() -> None:
    module = net()
    module[0].requires_grad_(False)
    strategy = SingleDeviceStrategy(CPU, OptimizerParams(lr=0.1))
    strategy.prepare(module)
    frozen = module[0].weight.detach().clone()
    strategy.backward(loss_of(module))
    strategy.step()
    assert torch.equal(module[0].weight, frozen)
    with pytest.raises(ValueError, match="requires_grad"):
        SingleDeviceStrategy(CPU, OptimizerParams()).prepare(net().requires_grad_(False))
    with pytest.raises(RuntimeError, match="prepare"):
        SingleDeviceStrategy(CPU, OptimizerParams()).step()


def test_skip_reason_zeroes_gradients_without_stepping() -> None:
    model = torch.nn.Linear(2, 1)
    strategy = SingleDeviceStrategy(torch.device("cpu"), OptimizerParams(lr=0.1))
    strategy.prepare(model)
    before = [p.detach().clone() for p in model.parameters()]
    strategy.backward(model(torch.ones(1, 2)).sum())
    result = strategy.step(skip_reason="non-finite policy loss (nan)")
    assert result.skipped and result.reason == "non-finite policy loss (nan)"
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
