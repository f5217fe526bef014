"""A checkpoint of another architecture is refused in one message, before anything changes
(RD11b: ``--resume-changing model.path`` with a model of another shape)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from lightrft.adapters.single_device import SingleDeviceStrategy
from lightrft.application.step_checkpoints import StepCheckpoints
from lightrft.domain.checkpoint_fit import CheckpointShapeError, check_weights_fit
from lightrft.domain.types import OptimizerParams

CPU = torch.device("cpu")


def strategy_of(hidden: int) -> SingleDeviceStrategy:
    torch.manual_seed(0)
    s = SingleDeviceStrategy(CPU, OptimizerParams())
    s.prepare(nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 1)))
    return s


class OneCheckpoint:
    """A store holding the state of step 7."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def steps(self) -> list[int]:
        return [7]

    def latest_step(self) -> int:
        return 7

    def load(self, step: int) -> dict[str, Any]:
        return self.state

    def save(self, step: int, state: Any) -> None:
        raise AssertionError("nothing is saved")


def test_a_checkpoint_of_another_shape_names_one_tensor_both_shapes_and_the_step() -> None:
    saved = StepCheckpoints("sft", strategy_of(8), None, None).state_dict(7)
    other = strategy_of(16)
    before = [p.detach().clone() for p in other.module.parameters()]
    checkpoints = StepCheckpoints("sft", other, OneCheckpoint(saved), None)
    with pytest.raises(CheckpointShapeError) as caught:
        checkpoints.resume()
    message = str(caught.value)
    assert message.startswith("the weights of the checkpoint of step 7 do not fit this model")
    assert "tensor 0.weight has shape [8, 4] in the checkpoint and [16, 4] in this model" in message
    assert "(and 2 more tensors differ)" in message  # 0.bias, 2.weight
    assert "size mismatch" not in message and "\n" not in message
    after = list(other.module.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))  # untouched
    explained = caught.value.explained("/run/checkpoints", "/models/other")
    assert "of step 7 in /run/checkpoints do not fit" in str(explained)
    assert "model.path (/models/other) must name a model of the checkpoint's architecture" in str(
        explained
    )
    assert isinstance(explained, ValueError)  # bad input: exit status 2


def test_missing_and_extra_tensors_are_named() -> None:
    w = torch.zeros(2)
    with pytest.raises(CheckpointShapeError, match=r"this model's b is not in the checkpoint"):
        check_weights_fit({"a": w}, {"a": w, "b": w})
    with pytest.raises(CheckpointShapeError, match=r"the checkpoint's c is not in this model"):
        check_weights_fit({"a": w, "c": w}, {"a": w})
    check_weights_fit({"a": w}, {"a": torch.ones(2)})  # same shapes: fits
