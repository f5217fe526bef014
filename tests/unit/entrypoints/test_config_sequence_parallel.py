"""backend.sequence_parallel_size: validated against the strategy and the process count."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config.loading import ConfigError, load_config


def test_sequence_parallel_needs_fsdp2_and_a_dividing_process_count() -> None:
    ok = load_config(
        overrides=[
            "backend.strategy=fsdp2",
            "backend.nproc_per_node=4",
            "backend.sequence_parallel_size=2",
        ]
    )
    assert ok.backend.sequence_parallel_size == 2
    with pytest.raises(ConfigError, match="needs backend.strategy=fsdp2"):
        load_config(overrides=["backend.nproc_per_node=2", "backend.sequence_parallel_size=2"])
    with pytest.raises(ConfigError, match="must divide backend.nproc_per_node=3"):
        load_config(
            overrides=[
                "backend.strategy=fsdp2",
                "backend.nproc_per_node=3",
                "backend.sequence_parallel_size=2",
            ]
        )
