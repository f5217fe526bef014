"""The generate stage: the engine samples completions of a batch of prompts in the rollout
phase (the phase plan wakes the engine)."""

from __future__ import annotations

from collections.abc import Sequence

from lightrft.application.phases import Phase, PhaseSwitcher
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.types import Completion, PromptRecord, SamplingParams


class Generate:
    """``engine.generate`` inside :attr:`Phase.ROLLOUT`."""

    def __init__(self, engine: RolloutEngine, phases: PhaseSwitcher) -> None:
        self.engine, self.phases = engine, phases

    def __call__(
        self, prompts: Sequence[PromptRecord], sampling: SamplingParams
    ) -> list[Completion]:
        """``sampling.n`` completions of each prompt, prompt-major."""
        with self.phases.phase(Phase.ROLLOUT):
            return self.engine.generate(list(prompts), sampling)
