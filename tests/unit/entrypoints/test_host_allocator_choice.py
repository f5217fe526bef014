"""``backend.host_allocator``: lean applies the allocator policy when the accelerator is
built; default leaves glibc alone; anything else is refused naming the key."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.wiring import models


def _config(policy: str | None):  # type: ignore[no-untyped-def]
    overrides = {"backend.accelerator": "cpu"}
    if policy is not None:
        overrides["backend.host_allocator"] = policy
    return load_config(algorithm="grpo", overrides=overrides)


@pytest.mark.parametrize(("policy", "calls"), [(None, 0), ("default", 0), ("lean", 1)])
def test_lean_policy_is_applied_when_the_accelerator_is_built(
    monkeypatch: pytest.MonkeyPatch, policy: str | None, calls: int
) -> None:
    applied: list[bool] = []
    monkeypatch.setattr(models, "return_freed_memory_promptly", lambda: applied.append(True))
    accelerator = models.build_accelerator(_config(policy))
    assert accelerator.device().type == "cpu"
    assert len(applied) == calls


def test_unknown_policy_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="host_allocator"):
        _config("tcmalloc")
