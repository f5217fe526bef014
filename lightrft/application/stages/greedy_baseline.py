"""ReMax's baseline stage: the reward of one greedy completion of each prompt, given to
each of its samples."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor

from lightrft.application.stages.generate import Generate
from lightrft.application.stages.records import Rollout
from lightrft.application.stages.score import Score
from lightrft.domain.types import SamplingParams


class GreedyBaseline:
    """Greedy decoding (``n=1``, temperature 0) of the rollout's prompts, scored."""

    def __init__(self, generate: Generate, score: Score, sampling: SamplingParams) -> None:
        self.generate, self.score = generate, score
        self.sampling = replace(sampling, n=1, temperature=0.0)

    def __call__(self, rollout: Rollout) -> Tensor:
        """The baseline reward of each sample (B,): its prompt's greedy completion's."""
        completions = self.generate(rollout.prompts, self.sampling)
        per_prompt = self.score(rollout.prompts, completions).total  # (number of prompts,)
        return per_prompt[torch.tensor([c.prompt_index for c in rollout.completions])]
