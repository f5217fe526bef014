"""Built-in rollout engine builders (``rollout.engine``)."""

from __future__ import annotations

from lightrft.adapters.hf import HfRolloutEngine
from lightrft.entrypoints.config.engine_configs import HfEngineConfig
from lightrft.entrypoints.wiring.registries import ENGINES, MODEL_LOADERS, BuildContext


@ENGINES.register("hf")
def build_hf_engine(section: HfEngineConfig, context: BuildContext) -> HfRolloutEngine:
    """LightRFT's KV-cached sampler on the policy's own module when the config shares
    weights, else on a model of its own."""
    config = context.config
    shared = section.shares_weights(config)
    model = (
        context.policy().module  # type: ignore[attr-defined]
        if shared
        else MODEL_LOADERS.get(config.model.modality).generation_model(context)
    )
    return HfRolloutEngine(
        model,  # type: ignore[arg-type]
        context.tokenizer,
        context.device,
        sleep_mode="offload",
        max_batch_size=section.max_batch_size,
        shares_policy_weights=shared,
        compile_decode=section.compile_decode,
    )
