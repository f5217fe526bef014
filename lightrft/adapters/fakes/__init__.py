"""Small, deterministic, honest implementations of every port, for tests (ours and users').

Each fake is a real implementation on a tiny scale (the policy is a real GRU language
model, the strategy a real AdamW trainer) and records what happened to it (``weight_syncs``,
``sleeps``, ``onloads`` ...). They import only :mod:`lightrft.domain`, the shared
adapter parts (:mod:`lightrft.adapters.strategy_parts`, :mod:`lightrft.adapters.engine_parts`,
:mod:`lightrft.adapters.reward_parts`; themselves domain + torch), ``torch`` and the standard
library. :mod:`lightrft.adapters.fakes.task` is a synthetic verifiable task the
tiny policy learns by RL in a few seconds on a CPU.
"""

from lightrft.adapters.fakes.accelerator import FakeAccelerator
from lightrft.adapters.fakes.batches import completions_batch, make_sequence_batch
from lightrft.adapters.fakes.checkpoint_store import InMemoryCheckpointStore, SimulatedCrash
from lightrft.adapters.fakes.collective import FakeCollective
from lightrft.adapters.fakes.critic import FakeCritic
from lightrft.adapters.fakes.environment import FakeRetryEnvironment, FakeTurnRenderer
from lightrft.adapters.fakes.policy import FakePolicy
from lightrft.adapters.fakes.prompt_source import FakePromptSource
from lightrft.adapters.fakes.reference import FakeReferenceModel
from lightrft.adapters.fakes.rewards import FakeModelReward, FakeRuleReward
from lightrft.adapters.fakes.rollout_engine import FakeRolloutEngine
from lightrft.adapters.fakes.strategy import FakeStrategy
from lightrft.adapters.fakes.task import synthetic_prompts
from lightrft.adapters.fakes.tracker import InMemoryTracker

__all__ = [
    "FakeAccelerator",
    "FakeCollective",
    "FakeCritic",
    "FakeModelReward",
    "FakePolicy",
    "FakePromptSource",
    "FakeReferenceModel",
    "FakeRetryEnvironment",
    "FakeRolloutEngine",
    "FakeRuleReward",
    "FakeStrategy",
    "FakeTurnRenderer",
    "InMemoryCheckpointStore",
    "InMemoryTracker",
    "SimulatedCrash",
    "completions_batch",
    "make_sequence_batch",
    "synthetic_prompts",
]
