"""Markers: `slow` runs only when selected (-m slow); `gpu`/`npu` skip without the hardware."""

from __future__ import annotations

import importlib.util

import pytest
import torch


def _has_npu() -> bool:
    return importlib.util.find_spec("torch_npu") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected = config.getoption("markexpr") or ""
    for item in items:
        if "slow" in item.keywords and "slow" not in selected:
            item.add_marker(pytest.mark.skip(reason="slow test: run with -m slow"))
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU; none is available here"))
        if "npu" in item.keywords and not _has_npu():
            item.add_marker(pytest.mark.skip(reason="needs an Ascend NPU (torch_npu); not installed"))
