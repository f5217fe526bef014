"""Markers: `slow` runs only when selected (-m slow); `gpu`/`npu` skip without the hardware."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch


def _has_npu() -> bool:
    return importlib.util.find_spec("torch_npu") is not None


def pytest_configure(config: pytest.Config) -> None:
    """The built-in builders registered, as the composition roots register them before
    building (tests look the registries up directly)."""
    from lightrft.entrypoints.wiring.registrations import register_builtins

    register_builtins()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected = config.getoption("markexpr") or ""
    for item in items:
        if "slow" in item.keywords and "slow" not in selected:
            item.add_marker(pytest.mark.skip(reason="slow test: run with -m slow"))
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU; none is available here"))
        if "npu" in item.keywords and not _has_npu():
            item.add_marker(
                pytest.mark.skip(reason="needs an Ascend NPU (torch_npu); not installed")
            )


@pytest.fixture(autouse=True, scope="module")
def _no_vllm_engine_outlives_its_module() -> Iterator[None]:
    """Closes the shared in-process vLLM engine (if a test of the module started one): its
    process groups would otherwise meet the groups later tests create and destroy, and
    vLLM's exit hook would fail on groups destroyed under it."""
    yield
    helper = sys.modules.get("tests.unit.adapters.vllm.vllm_tiny")
    if helper is not None:
        helper.close_shared_engine()


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny random HF model + tokenizer directory (``model.path`` for CLI runs)."""
    from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

    path = tmp_path_factory.mktemp("tiny") / "model"
    tiny_model().save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


@pytest.fixture
def one_rank_group(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A one-process gloo group on the CPU (FSDP2 needs a process group), torn down after."""
    from lightrft.adapters.accelerators import CpuAccelerator
    from lightrft.adapters.distributed import init_process_group_from_env, shutdown_process_group

    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    init_process_group_from_env(CpuAccelerator(), single_process_group=True)
    yield
    shutdown_process_group()
