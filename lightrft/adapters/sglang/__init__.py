"""SGLang adapters: ``SglangRolloutEngine`` (GPU-only, unverified; see its module).

Importing this package does not import SGLang."""

from lightrft.adapters.sglang.engine import SglangEngineParams, SglangRolloutEngine, start_sglang

__all__ = ["SglangEngineParams", "SglangRolloutEngine", "start_sglang"]
