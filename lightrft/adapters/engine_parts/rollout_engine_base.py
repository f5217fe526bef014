"""``RolloutEngineBase``: the state every rollout engine reports the same way.

``is_awake`` is True from construction until the engine's ``sleep`` (its ``wake_up`` sets it
again: the engines set ``_awake``); ``shares_policy_weights`` is False, the engine holding
its own copy of the weights, unless an engine that can run the policy's module says so.
:class:`GuardedGenerate` adds the ``generate`` that refuses a sleeping engine and answers no
prompts with no completions before the engine's own ``_generate`` runs (HF, SGLang).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from lightrft.domain.types import Completion, PromptRecord, SamplingParams


class RolloutEngineBase:
    """Base of HF, vLLM, SGLang and fake rollout engines (see the module docstring)."""

    _awake: bool = True

    @property
    def is_awake(self) -> bool:
        """Whether ``generate`` may be called."""
        return self._awake

    @property
    def shares_policy_weights(self) -> bool:
        """Whether the engine runs the policy's own module (default: it holds a copy)."""
        return False

    def _require_awake(self, call: str = "") -> None:
        """Raises ``RuntimeError`` while asleep (``call``: the method the caller is about to run)."""
        if not self._awake:
            before = f"before {call}()" if call else "first"
            raise RuntimeError(f"the rollout engine is asleep; call wake_up() {before}")


class GuardedGenerate(RolloutEngineBase, ABC):
    """An engine whose ``generate`` checks the common preconditions, then runs ``_generate``."""

    def generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions per prompt; prompt i owns rows [i*n, (i+1)*n)."""
        self._require_awake()
        if not prompts:
            return []
        return self._generate(prompts, sampling)

    @abstractmethod
    def _generate(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """The engine's generation, for an awake engine and at least one prompt."""
