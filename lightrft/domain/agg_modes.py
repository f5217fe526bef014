"""The names of the loss aggregation modes (torch-free; the modes are in
:mod:`lightrft.domain.aggregation`)."""

from __future__ import annotations

from typing import Literal, get_args

AggMode = Literal[
    "token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"
]


AGG_MODES: tuple[str, ...] = get_args(AggMode)
