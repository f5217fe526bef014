"""The root of ``lightrft train`` (and the GRPO demos): the RL cycle and what the job reads
around it (the training prompts, the reward sources it closes), from a :class:`RunConfig`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from lightrft.application.cycle import RLCycle
from lightrft.domain.ports import PromptSource, RewardSource
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.context_budget import check_context_budget
from lightrft.entrypoints.roots.model_run import ModelRunRoot


class TrainingRoot(ModelRunRoot):
    """The parts of one RL run; each built on first request."""

    def prompts(self) -> PromptSource:
        return cast(PromptSource, self._container.prompts())

    def eval_prompts(self) -> PromptSource | None:
        return self._container.eval_prompts()

    def reward_sources(self) -> Sequence[RewardSource]:
        return self._container.reward_sources()

    def cycle(self) -> RLCycle:
        return self._container.cycle()


def training_root(config: RunConfig, **overrides: Any) -> TrainingRoot:
    """The root of ``config``'s run; ``overrides``: container providers replaced by objects
    (see :func:`~lightrft.entrypoints.api.build_container`). The token budget is checked
    against the model's context first, before anything is built."""
    if config.model.path:  # the embedded model (8192 positions) is not converted for this
        check_context_budget(config, Path(config.model.path))
    return TrainingRoot(build_container(config, **overrides))
