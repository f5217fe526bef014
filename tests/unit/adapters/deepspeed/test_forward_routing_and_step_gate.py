"""The two pieces of ``DeepSpeedStrategy`` that need no DeepSpeed: the forward router and
the gate on the client optimizer's step (plain torch; DeepSpeed not required)."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from lightrft.adapters.deepspeed.engine_forward import route_forward_through_engine
from lightrft.adapters.deepspeed.rank_state import to_host
from lightrft.adapters.deepspeed.step_gate import StepGate


class Scale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([2.0, -1.0]))

    def forward(self, x: Tensor, *, bias: float = 0.0) -> Tensor:
        return x * self.weight + bias


class RecordingEngine:
    """Like ``DeepSpeedEngine.forward``: bookkeeping, then a call of the module itself."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.module(*args, **kwargs)


def test_calls_of_the_module_go_through_the_engine_once() -> None:
    module = Scale()
    engine = RecordingEngine(module)
    route_forward_through_engine(module, engine)
    out = module(torch.tensor([1.0, 3.0]), bias=0.5)
    # [1 * 2 + 0.5, 3 * -1 + 0.5]: the original forward ran, once, inside the engine
    assert out.tolist() == [2.5, -2.5]
    assert len(engine.calls) == 1
    assert engine.calls[0][1] == {"bias": 0.5}


def test_routing_keeps_the_signature_and_refuses_a_second_engine() -> None:
    module = Scale()
    before = inspect.signature(module.forward)
    route_forward_through_engine(module, RecordingEngine(module))
    assert inspect.signature(module.forward) == before  # HF generate inspects it
    with pytest.raises(RuntimeError, match="already forwards"):
        route_forward_through_engine(module, RecordingEngine(module))


def test_routing_survives_an_exception_inside_the_engine() -> None:
    module = Scale()
    engine = RecordingEngine(module)
    route_forward_through_engine(module, engine)
    with pytest.raises(RuntimeError):
        module(torch.ones(3))  # shape mismatch inside the original forward
    module(torch.ones(2))
    assert len(engine.calls) == 2  # the second call entered the engine again


def _adamw_case() -> tuple[nn.Parameter, torch.optim.AdamW]:
    param = nn.Parameter(torch.tensor([1.0, -2.0]))
    param.grad = torch.tensor([0.3, 0.4])
    return param, torch.optim.AdamW([param], lr=0.1, weight_decay=0.0)


def test_an_open_gate_steps_like_the_optimizer() -> None:
    param, optimizer = _adamw_case()
    gate = StepGate(optimizer)
    gate.arm(open_=True)
    optimizer.step()
    # first AdamW step moves every coordinate by lr * g / (|g| + eps) ~= lr * sign(g)
    assert param.detach().tolist() == pytest.approx([0.9, -2.1], abs=1e-6)
    assert (gate.calls, gate.applied) == (1, 1)


def test_a_closed_gate_leaves_weights_and_optimizer_state_untouched() -> None:
    param, optimizer = _adamw_case()
    gate = StepGate(optimizer)
    gate.arm(open_=False)
    optimizer.step()
    assert param.detach().tolist() == [1.0, -2.0]
    assert len(optimizer.state) == 0  # no moment, no step count
    assert (gate.calls, gate.applied) == (1, 0)
    gate.arm(open_=True)
    optimizer.step()
    assert float(optimizer.state[param]["step"]) == 1.0


def test_stage0_gate_measures_clips_and_closes_on_a_non_finite_norm() -> None:
    first = nn.Parameter(torch.zeros(2))
    second = nn.Parameter(torch.zeros(1))
    first.grad, second.grad = torch.tensor([3.0, 0.0]), torch.tensor([4.0])
    optimizer = torch.optim.SGD([first, second], lr=1.0)
    gate = StepGate(optimizer, clip_params=[first, second], max_norm=1.0)
    gate.arm(open_=True)
    optimizer.step()
    assert gate.norm == pytest.approx(5.0)  # sqrt(3^2 + 4^2)
    # SGD with lr 1 subtracts the clipped gradient g / 5 (up to clip's 1e-6 epsilon)
    assert first.detach().tolist() == pytest.approx([-0.6, 0.0], abs=1e-5)
    assert second.detach().tolist() == pytest.approx([-0.8], abs=1e-5)

    first.grad, second.grad = torch.tensor([math.nan, 0.0]), torch.tensor([1.0])
    gate.arm(open_=True)
    optimizer.step()
    assert math.isnan(gate.norm) and gate.applied == 0
    assert first.detach().tolist() == pytest.approx([-0.6, 0.0], abs=1e-5)


def test_stage0_gate_reports_the_norm_of_a_requested_skip_without_clipping() -> None:
    param = nn.Parameter(torch.zeros(2))
    param.grad = torch.tensor([6.0, 8.0])
    optimizer = torch.optim.SGD([param], lr=1.0)
    gate = StepGate(optimizer, clip_params=[param], max_norm=1.0)
    gate.arm(open_=False)
    optimizer.step()
    assert gate.norm == pytest.approx(10.0)
    assert param.grad.tolist() == [6.0, 8.0] and param.detach().tolist() == [0.0, 0.0]


def test_to_host_copies_nested_tensors() -> None:
    tensor = torch.ones(2)
    state = {"a": [tensor, 3], "b": {"c": (tensor,)}, "d": "x"}
    copied = to_host(state)
    tensor.add_(1)
    assert copied["a"][0].tolist() == [1.0, 1.0] and copied["a"][1] == 3
    assert isinstance(copied["b"]["c"], tuple) and copied["b"]["c"][0].tolist() == [1.0, 1.0]
    assert copied["d"] == "x"
