"""Config models of the built-in rollout engines (``rollout.engine``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from lightrft.entrypoints.config.components import (
    ENGINE_CONFIGS,
    ComponentSection,
    register_config,
)

if TYPE_CHECKING:  # pragma: no cover
    from lightrft.entrypoints.config.run_config import RunConfig


@register_config(ENGINE_CONFIGS, "hf")
class HfEngineConfig(ComponentSection):
    """Hugging Face model with LightRFT's KV-cached sampler (the embedded default)."""

    type: Literal["hf"] = "hf"
    max_batch_size: int | None = Field(None, gt=0, description="Rows generated at once.")
    share_policy_weights: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Run the policy's own module (no weight copy, no sync copy); auto: when "
        "the training strategy does not shard parameters and model.lora.rank is 0.",
    )
    compile_decode: bool = Field(
        False,
        description="torch.compile the one-token decode step (minutes of compilation on a "
        "small CPU; faster steps after).",
    )

    def can_share_weights(self, run: RunConfig) -> bool:
        """Whether the policy is one unsharded copy of plain weights (a LoRA policy syncs
        merged weights, a sharded one gathers them)."""
        return not run.backend.strategy.shards_parameters and run.model.lora.rank == 0

    def shares_weights(self, run: RunConfig) -> bool:
        """Whether this engine runs the policy's own module in ``run``."""
        choice = self.share_policy_weights
        return choice == "on" or (choice == "auto" and self.can_share_weights(run))

    def check_in_run(self, run: RunConfig) -> None:
        if self.share_policy_weights == "on" and not self.can_share_weights(run):
            raise ValueError(
                "rollout.engine.share_policy_weights 'on' needs a backend.strategy that does "
                f"not shard parameters (got {run.backend.strategy.type!r}) and "
                f"model.lora.rank 0 (got {run.model.lora.rank})"
            )
