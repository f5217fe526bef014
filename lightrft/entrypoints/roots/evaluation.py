"""The root of ``lightrft eval`` (and ``eval --data``): the configured engine over the model,
the rule rewards, the evaluation prompts or those of a file, the evaluation sampling."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.application.cycle import CycleSettings
from lightrft.domain.ports import AnswerGrader, PromptSource, RewardSource, RolloutEngine
from lightrft.entrypoints.api import build_container
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.container import Container
from lightrft.entrypoints.wiring.data import placeholders_of, prompt_format_of
from lightrft.entrypoints.wiring.eval_files import eval_file_grader, eval_file_prompts
from lightrft.entrypoints.wiring.models import build_prompt_source, encoded_prompts
from lightrft.entrypoints.wiring.registries import BuildContext


class EvalRoot:
    """What an evaluation of ``model.path`` reads; each part built on first request."""

    def __init__(self, container: Container) -> None:
        self._container = container

    def model_path(self) -> Path:
        return self._container.model_path()

    def engine(self) -> RolloutEngine:
        return self._container.engine()

    def reward_sources(self) -> Sequence[RewardSource]:
        return self._container.reward_sources()

    def eval_prompts(self) -> PromptSource | None:
        return self._container.eval_prompts()

    def settings(self) -> CycleSettings:
        """The service parameters (the evaluation sampling, the rewards' weights)."""
        return cast(CycleSettings, self._container.settings())

    def file_prompts(self, path: Path, file_format: str, fmt: PromptFormat) -> PromptSource:
        """The prompts of the file ``path`` (``file_format``: auto or a row format), rendered
        with ``fmt``; a multimodal model's prompt encoder checks every row's media and encodes
        them."""
        context: BuildContext = self._container.context()
        source = encoded_prompts(
            context,
            lambda media: eval_file_prompts(
                path, file_format, context.tokenizer, fmt, placeholders_of(media)
            ),
        )
        assert source is not None
        return source

    def file_grader(self, path: Path, file_format: str) -> AnswerGrader:
        """How the answers to the file ``path`` are graded (a multiple-choice file: by the
        chosen letter; every other: as math answers)."""
        return eval_file_grader(path, file_format)

    def dataset_prompts(self, dataset: DatasetConfig) -> PromptSource:
        """The prompts of the config section ``dataset`` (read as ``data.eval``)."""
        source = build_prompt_source(self._container.context(), dataset, "data.eval")
        assert source is not None
        return source


def eval_root(config: RunConfig) -> EvalRoot:
    """The root of an evaluation configured by ``config``."""
    return EvalRoot(build_container(config))


def eval_prompt_format(config: RunConfig) -> PromptFormat:
    """How evaluation files are rendered: as ``data.eval`` (else ``data.train``) is."""
    return prompt_format_of(config.data.eval or config.data.train)
