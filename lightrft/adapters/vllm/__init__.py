"""vLLM adapters: ``VllmRolloutEngine`` behind the ``RolloutEngine`` port, and
``VllmRewardScorer`` (scalar reward models on vLLM's pooling runner).

Importing this package does not import vLLM; building an engine does (and says how to
install it when it is missing).
"""

from lightrft.adapters.vllm.checks import VllmMemoryError, require_vllm
from lightrft.adapters.vllm.engine import VllmRolloutEngine, start_llm
from lightrft.adapters.vllm.params import VllmEngineParams, llm_kwargs
from lightrft.adapters.vllm.reward_scorer import VllmRewardScorer, unsupported_reason

__all__ = [
    "VllmEngineParams",
    "VllmMemoryError",
    "VllmRewardScorer",
    "VllmRolloutEngine",
    "llm_kwargs",
    "require_vllm",
    "start_llm",
    "unsupported_reason",
]
