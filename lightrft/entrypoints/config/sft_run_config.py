"""``lightrft sft``'s config: the run config's model, optimizer, backend, logging and
checkpoint sections, and its own ``sft`` section (data and schedule). An RL run's config has
no ``sft`` section."""

from __future__ import annotations

from pydantic import Field

from lightrft.entrypoints.config.run_config import RunConfig
from lightrft.entrypoints.config.sft_section import SftConfig


class SftRunConfig(RunConfig):
    """Everything ``lightrft sft`` needs. Build it with
    :func:`lightrft.entrypoints.config.loading.load_sft_config`."""

    sft: SftConfig = Field(
        default_factory=SftConfig, description="Supervised fine-tuning (lightrft sft)."
    )
