"""How the ``python`` reward source calls a user's function: this project's own convention
and those of verl, TRL and OpenRLHF, so a reward function written for one of them runs
unchanged (``reward.sources[].convention``).

- ``lightrft``: ``fn(prompt, response, reference) -> float``, one call per sample, with the
  rendered prompt text, the completion text and the prompt's reference.
- ``verl``: ``compute_score(data_source=..., solution_str=..., ground_truth=...,
  extra_info=...)``, one call per sample, by keyword as verl's reward managers call it
  (docs: verl "Implement Reward Function for Dataset"); it returns a number or a dict whose
  ``"score"`` is the reward. ``data_source``, ``extra_info`` and
  ``reward_model.ground_truth`` come from the data row (``PromptRecord.metadata``, see
  :mod:`lightrft.domain.row_metadata`); without them: the record's dataset name, ``{}`` and
  the prompt's reference. A ``.py`` file without ``:name`` means ``compute_score`` (verl's
  ``custom_reward_function.name`` default).
- ``trl``: ``fn(prompts=[...], completions=[...], completion_ids=[...], **columns) ->
  list[float | None]``, one call per batch, as TRL's ``GRPOTrainer`` calls its reward
  functions (docs: TRL GRPO Trainer, "Using a custom reward function"): a row whose prompt
  is a chat is conversational (its prompt the message list, its completion
  ``[{"role": "assistant", "content": text}]``), otherwise both are strings; every other
  column of the rows comes as a keyword with one value per sample (``None`` where a row
  lacks it). ``None`` (TRL: "does not apply") scores the failure score, 0 by default, as
  TRL's sum over functions counts it 0.
- ``openrlhf``: ``reward_func(queries, prompts, labels)``, one call per batch, as OpenRLHF's
  ``--remote_rm_url file.py`` and the original LightRFT's (vision-language) trainers call it:
  queries are prompt + response texts, prompts the rendered prompts, labels the references;
  it returns the rewards (a tensor or list) or a dict with ``"rewards"``
  (:mod:`~lightrft.adapters.reward_parts.openrlhf_rewards`; its ``extra_logs`` become
  metrics). A ``.py`` file without ``:name`` means ``reward_func``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from lightrft.adapters.reward_parts.openrlhf_rewards import openrlhf_rewards
from lightrft.domain.row_metadata import PROMPT_CONTENT_KEY, ROW_COLUMNS_KEY
from lightrft.domain.types import RewardSample


@dataclass(frozen=True)
class Call:
    """One call of the function: its arguments and the positions of the samples it scores."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    rows: tuple[int, ...]


class CallingConvention(ABC):
    """The arguments of each call, and the per-sample values read from its return."""

    name: ClassVar[str]
    default_function: ClassVar[str | None] = None
    """The function a ``.py`` file given without ``:name`` means (None: it must be named)."""

    @abstractmethod
    def calls(self, samples: Sequence[RewardSample]) -> list[Call]:
        """The calls that score ``samples``."""

    @abstractmethod
    def values(self, value: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        """(``count`` raw per-sample values, metrics) of one call's return; ``ValueError``
        with a one-line reason when it has the wrong shape."""


class PerSample(CallingConvention):
    """One call per sample; the value is the sample's."""

    def calls(self, samples: Sequence[RewardSample]) -> list[Call]:
        return [Call(*self.arguments(sample), rows=(i,)) for i, sample in enumerate(samples)]

    @abstractmethod
    def arguments(self, sample: RewardSample) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(positional, keyword) arguments of the sample's call."""

    def values(self, value: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        return [value], {}


class LightRftConvention(PerSample):
    name = "lightrft"

    def arguments(self, sample: RewardSample) -> tuple[tuple[Any, ...], dict[str, Any]]:
        prompt = sample.prompt
        return (prompt.prompt_text, sample.completion.text, prompt.reference), {}


class VerlConvention(PerSample):
    name = "verl"
    default_function = "compute_score"

    def arguments(self, sample: RewardSample) -> tuple[tuple[Any, ...], dict[str, Any]]:
        metadata = sample.prompt.metadata
        columns = row_columns(sample)
        reward_model = columns.get("reward_model")
        ground_truth = sample.prompt.reference
        if isinstance(reward_model, Mapping) and reward_model.get("ground_truth") is not None:
            ground_truth = reward_model["ground_truth"]
        extra_info = columns.get("extra_info")
        return (), {
            "data_source": columns.get("data_source", metadata.get("dataset")),
            "solution_str": sample.completion.text,
            "ground_truth": ground_truth,
            "extra_info": dict(extra_info) if isinstance(extra_info, Mapping) else {},
        }

    def values(self, value: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        if isinstance(value, Mapping):
            if "score" not in value:
                raise ValueError(f"a dict without 'score' (keys: {sorted(map(str, value))})")
            value = value["score"]
        return [value], {}


class TrlConvention(CallingConvention):
    name = "trl"

    def calls(self, samples: Sequence[RewardSample]) -> list[Call]:
        if not samples:
            return []
        columns = [row_columns(sample) for sample in samples]
        names = sorted({name for row in columns for name in row} - {"prompt", "completion"})
        kwargs: dict[str, Any] = {name: [row.get(name) for row in columns] for name in names}
        prompts, completions = zip(*(trl_pair(sample) for sample in samples), strict=True)
        kwargs |= {
            "prompts": list(prompts),
            "completions": list(completions),
            "completion_ids": [list(sample.completion.token_ids) for sample in samples],
        }
        return [Call((), kwargs, rows=tuple(range(len(samples))))]

    def values(self, value: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        if not isinstance(value, list):
            raise ValueError(f"expected a list of {count} rewards, got {type(value).__name__}")
        if len(value) != count:
            raise ValueError(f"{len(value)} rewards for {count} completions")
        return value, {}


class OpenRlhfConvention(CallingConvention):
    name = "openrlhf"
    default_function = "reward_func"

    def calls(self, samples: Sequence[RewardSample]) -> list[Call]:
        if not samples:
            return []
        prompts = [sample.prompt.prompt_text for sample in samples]
        queries = [p + sample.completion.text for p, sample in zip(prompts, samples, strict=True)]
        labels = [sample.prompt.reference for sample in samples]
        return [Call((queries, prompts, labels), {}, rows=tuple(range(len(samples))))]

    def values(self, value: Any, count: int) -> tuple[list[Any], dict[str, float]]:
        return openrlhf_rewards(value, count, bare_allowed=True)


def row_columns(sample: RewardSample) -> Mapping[str, Any]:
    """The data row's columns kept with the prompt (``{}`` for a prompt made otherwise)."""
    columns = sample.prompt.metadata.get(ROW_COLUMNS_KEY)
    return columns if isinstance(columns, Mapping) else {}


def trl_pair(sample: RewardSample) -> tuple[Any, Any]:
    """TRL's (prompt, completion) of a sample: conversational when the row's prompt is a
    chat, else strings (the row's prompt as written, or the rendered one)."""
    content = sample.prompt.metadata.get(PROMPT_CONTENT_KEY)
    text = sample.completion.text
    if isinstance(content, list):
        return content, [{"role": "assistant", "content": text}]
    return (content if isinstance(content, str) else sample.prompt.prompt_text), text


CONVENTIONS: dict[str, CallingConvention] = {
    convention.name: convention
    for convention in (
        LightRftConvention(),
        VerlConvention(),
        TrlConvention(),
        OpenRlhfConvention(),
    )
}
"""The conventions by name (``reward.sources[].convention``)."""


def function_target(function: str, convention: CallingConvention) -> str:
    """``function`` as the worker's target: a ``.py`` file without ``:name`` gets the
    convention's default function; ``ValueError`` when it has none."""
    if not function.endswith(".py"):
        return function
    if convention.default_function is None:
        raise ValueError(
            f"reward function file {function}: name the function ('{function}:NAME'); "
            f"the {convention.name} convention has no default name"
        )
    return f"{function}:{convention.default_function}"
