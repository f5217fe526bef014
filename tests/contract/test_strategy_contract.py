"""Contract of the ``Strategy`` port. Append real backends to ``IMPLEMENTATIONS``.

A factory takes ``OptimizerParams`` and returns an unprepared strategy; the tests prepare
it on a small ``nn.Module`` of their own.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from lightrft.adapters.fakes import FakeStrategy
from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.domain.ports import Strategy
from lightrft.domain.types import OptimizerParams

StrategyFactory = Callable[[OptimizerParams], Strategy]


def make_fake_strategy(params: OptimizerParams) -> Strategy:
    return FakeStrategy(params)


def make_single_device_strategy(params: OptimizerParams) -> Strategy:
    return SingleDeviceStrategy(torch.device("cpu"), params)


def make_cuda_single_device_strategy(params: OptimizerParams) -> Strategy:
    return SingleDeviceStrategy(torch.device("cuda", 0), params)


IMPLEMENTATIONS: list[object] = [
    pytest.param(make_fake_strategy, id="fake"),
    pytest.param(make_single_device_strategy, id="single-device"),
    pytest.param(make_cuda_single_device_strategy, id="single-device-cuda", marks=pytest.mark.gpu),
]
PARAMS = OptimizerParams(lr=0.05, warmup_steps=1, total_steps=20, schedule="cosine")

# (test, implementation id) -> open adapter issue. Strict: once fixed, the test fails until
# the entry is removed.
KNOWN_BUGS: dict[tuple[str, str], str] = {}


@pytest.fixture(params=IMPLEMENTATIONS)
def factory(request: pytest.FixtureRequest) -> StrategyFactory:
    return request.param  # type: ignore[no-any-return]


def _module(seed: int) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


INPUTS = torch.linspace(-1, 1, 32).reshape(8, 4)
TARGETS = INPUTS.sum(dim=1, keepdim=True).sin()


def _loss(module: nn.Module) -> torch.Tensor:
    device = next(module.parameters()).device
    prediction: torch.Tensor = module(INPUTS.to(device))
    return ((prediction - TARGETS.to(device)) ** 2).mean()


def _train(strategy: Strategy, module: nn.Module, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        loss = _loss(module)
        losses.append(float(loss.detach()))
        strategy.backward(loss)
        result = strategy.step()
        assert not result.skipped and math.isfinite(result.grad_norm) and result.lr > 0
    return losses


def _params(strategy: Strategy) -> dict[str, torch.Tensor]:
    return {n: t.detach().cpu().clone() for n, t in strategy.full_state()}


def test_training_lowers_the_loss(factory: StrategyFactory) -> None:
    strategy, module = factory(PARAMS), _module(0)
    assert isinstance(strategy, Strategy)
    strategy.prepare(module)
    losses = _train(strategy, module, 15)
    assert losses[-1] < 0.8 * losses[0]


def test_full_state_is_the_whole_module(factory: StrategyFactory) -> None:
    strategy, module = factory(PARAMS), _module(0)
    reference = {n: p.detach().clone() for n, p in _module(0).named_parameters()}
    strategy.prepare(module)
    state = _params(strategy)
    assert set(state) == set(reference)
    for name, tensor in reference.items():
        torch.testing.assert_close(state[name], tensor)


def test_non_finite_gradient_skips(factory: StrategyFactory) -> None:
    strategy, module = factory(PARAMS), _module(0)
    strategy.prepare(module)
    before = _params(strategy)
    strategy.backward(_loss(module) * math.nan)
    result = strategy.step()
    assert result.skipped and result.reason
    after = _params(strategy)
    for name, tensor in before.items():
        torch.testing.assert_close(after[name], tensor)
    _train(strategy, module, 1)  # the next step works


def _check_resume(factory: StrategyFactory, keep: Callable[[dict[str, Any]], Any]) -> None:
    """Trains 3 steps, keeps ``keep(state_dict())``, trains 3 more; a fresh strategy on
    another module that loads what was kept must repeat those 3 steps exactly."""
    strategy, module = factory(PARAMS), _module(0)
    strategy.prepare(module)
    _train(strategy, module, 3)
    saved = keep(strategy.state_dict())
    expected_losses = _train(strategy, module, 3)
    expected = _params(strategy)

    resumed, other = factory(PARAMS), _module(1)
    resumed.prepare(other)
    resumed.load_state_dict(saved)
    assert _train(resumed, other, 3) == pytest.approx(expected_losses, rel=1e-5)
    for name, tensor in _params(resumed).items():
        torch.testing.assert_close(tensor, expected[name])


def _saved_and_loaded(state: dict[str, Any]) -> Any:
    """What a checkpoint store does at once: ``torch.save``, then a weights-only load."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_state_dict_resumes_exactly(factory: StrategyFactory) -> None:
    _check_resume(factory, lambda state: state)  # the state is a snapshot: later steps
    # must not change it


def test_state_dict_saved_at_once_resumes_exactly(factory: StrategyFactory) -> None:
    _check_resume(factory, _saved_and_loaded)


def test_offload_onload_round_trip(factory: StrategyFactory) -> None:
    strategy, module = factory(PARAMS), _module(0)
    strategy.prepare(module)
    _train(strategy, module, 2)
    before = _params(strategy)
    strategy.offload()
    strategy.onload()
    for name, tensor in _params(strategy).items():
        torch.testing.assert_close(tensor, before[name])
    _train(strategy, module, 1)


def _next_lr(strategy: Strategy, module: nn.Module) -> float:
    strategy.backward(_loss(module))
    return strategy.step().lr


def test_lr_scale_multiplies_later_rates_and_is_checkpointed(factory: StrategyFactory) -> None:
    plain, plain_module = factory(PARAMS), _module(0)
    scaled, scaled_module = factory(PARAMS), _module(0)
    plain.prepare(plain_module)
    scaled.prepare(scaled_module)
    _train(plain, plain_module, 2)
    _train(scaled, scaled_module, 2)
    scaled.set_lr_scale(0.25)
    for _ in range(2):  # the cosine schedule moves on; the scale stays
        assert _next_lr(scaled, scaled_module) == pytest.approx(
            0.25 * _next_lr(plain, plain_module), rel=1e-6
        )
    resumed, other = factory(PARAMS), _module(1)
    resumed.prepare(other)
    resumed.load_state_dict(_saved_and_loaded(scaled.state_dict()))
    assert _next_lr(resumed, other) == pytest.approx(0.25 * _next_lr(plain, plain_module), rel=1e-6)
    resumed.set_lr_scale(1.0)  # back to the schedule
    assert _next_lr(resumed, other) == pytest.approx(_next_lr(plain, plain_module), rel=1e-6)
    with pytest.raises(ValueError, match="lr scale"):
        resumed.set_lr_scale(0.0)
