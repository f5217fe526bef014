"""check_weights_only_safe agrees with what torch.load(weights_only=True) really accepts."""

from __future__ import annotations

import collections
import enum
import io
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from lightrft.adapters.checkpoint import UnsafeCheckpointStateError, check_weights_only_safe


class _Mode(enum.IntEnum):
    A = 1


ACCEPTED: list[Any] = [
    None,
    True,
    3,
    2.5,
    float("nan"),
    1 + 2j,
    "s",
    b"b",
    torch.Size([2]),
    torch.bfloat16,
    torch.device("cpu"),
    torch.ones(2),
    nn.Parameter(torch.ones(2)),
    torch.eye(2).to_sparse(),
    [1, (2, {3})],
    collections.OrderedDict(a=1),
    {0: {(1, "x"): [torch.zeros(1)]}},
]
REFUSED: list[Any] = [
    np.float64(1.0),
    np.int64(1),
    np.ones(2),
    _Mode.A,
    range(3),
    slice(1, 2),
    frozenset({1}),
    collections.defaultdict(list),
]


def _torch_weights_only_round_trip(value: Any) -> bool:
    buffer = io.BytesIO()
    torch.save({"v": value}, buffer)
    buffer.seek(0)
    try:
        torch.load(buffer, weights_only=True)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("value", ACCEPTED, ids=lambda v: type(v).__name__)
def test_accepted_values_really_load_with_weights_only(value: Any) -> None:
    check_weights_only_safe({"v": value})
    assert _torch_weights_only_round_trip(value)


@pytest.mark.parametrize("value", REFUSED, ids=lambda v: type(v).__name__)
def test_refused_values_really_fail_with_weights_only(value: Any) -> None:
    with pytest.raises(UnsafeCheckpointStateError, match=r"state\['v'\]"):
        check_weights_only_safe({"v": value})
    assert not _torch_weights_only_round_trip(value)


def test_the_first_offender_in_insertion_order_is_named() -> None:
    state = {"a": [1, 2, {"b": np.float32(1)}], "c": np.float32(2)}
    with pytest.raises(UnsafeCheckpointStateError, match=r"state\['a'\]\[2\]\['b'\] holds"):
        check_weights_only_safe(state)
