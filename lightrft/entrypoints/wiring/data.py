"""Prompt data: the built-in tasks and row formats of ``data.train`` / ``data.eval`` and the
prompt source a dataset section describes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets import (
    HfPromptDataset,
    PromptFormat,
    RowSpec,
    arithmetic_prompts,
    beep_problems,
    clip_rows_source,
    geo3k_prompts,
    gsm8k_prompts,
    sound_choice_problems,
    tone_prompts,
    visual_prompts,
)
from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.judge_pairs import load_judge_pairs
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from lightrft.adapters.datasets.synthetic_video import motion_prompts
from lightrft.adapters.datasets.task_prompts import TaskPrompts
from lightrft.adapters.datasets.video_frames import FrameSampling
from lightrft.adapters.hf.multimodal_inputs import MediaRequirements
from lightrft.domain.ports import PromptSource
from lightrft.domain.registry import Registry
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.wiring.data_layout import read_dataset

BuiltinTask = Callable[[DatasetConfig, Any, PromptFormat], PromptSource]
BUILTIN_TASKS: Registry[BuiltinTask] = Registry("built-in task (data.*.builtin)")


@BUILTIN_TASKS.register("arithmetic")
def _arithmetic(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    extra = {} if dataset.instruction is None else {"instruction": dataset.instruction}
    return arithmetic_prompts(
        dataset.num_builtin,
        dataset.seed,
        dataset.difficulty,
        tokenizer=tokenizer,
        prompt_format=fmt,
        split=dataset.builtin_split,
        **extra,
    )


@BUILTIN_TASKS.register("visual_colour")
def _visual_colour(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    return visual_prompts(
        dataset.num_builtin, dataset.seed, "colour", tokenizer=tokenizer, prompt_format=fmt
    )


@BUILTIN_TASKS.register("visual_count")
def _visual_count(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    return visual_prompts(
        dataset.num_builtin, dataset.seed, "count", tokenizer=tokenizer, prompt_format=fmt
    )


@BUILTIN_TASKS.register("visual_compare")
def _visual_compare(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    return visual_prompts(
        dataset.num_builtin, dataset.seed, "compare", tokenizer=tokenizer, prompt_format=fmt
    )


@BUILTIN_TASKS.register("video_motion")
def _video_motion(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    return motion_prompts(dataset.num_builtin, dataset.seed, tokenizer=tokenizer, prompt_format=fmt)


@BUILTIN_TASKS.register("tones")
def _tones(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    rate = dataset.audio_sampling_rate or 16_000
    return tone_prompts(
        dataset.num_builtin, dataset.seed, tokenizer=tokenizer, prompt_format=fmt, rate=rate
    )


@BUILTIN_TASKS.register("beeps")
def _beeps(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    rate = dataset.audio_sampling_rate or 16_000
    rows = beep_problems(dataset.num_builtin, dataset.seed, rate=rate)
    return clip_rows_source(rows, tokenizer, fmt, rate, name=f"beeps-{dataset.seed}")


@BUILTIN_TASKS.register("sound_choice")
def _sound_choice(dataset: DatasetConfig, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    rate = dataset.audio_sampling_rate or 16_000
    rows = sound_choice_problems(dataset.num_builtin, dataset.seed, rate=rate)
    return clip_rows_source(rows, tokenizer, fmt, rate, name=f"sound_choice-{dataset.seed}")


RowFormat = Callable[
    [Path, DatasetConfig, Any, PromptFormat, MediaPlaceholders, str | None], PromptSource
]
ROW_FORMATS: Registry[RowFormat] = Registry("row preprocessor (data.*.preprocessor)")
"""How a dataset file's rows become prompts, by ``data.*.preprocessor``; each builder gets
the file, the section, the tokenizer, the prompt format, the model's placeholders and the
name the path has in a ``name:path`` list (None: unnamed)."""


@ROW_FORMATS.register("none")
def _columns(
    path: Path,
    dataset: DatasetConfig,
    tokenizer: Any,
    fmt: PromptFormat,
    marks: MediaPlaceholders,
    name: str | None = None,
) -> PromptSource:
    spec = copy_fields(
        RowSpec,
        dataset,
        "input_key reference_key on_bad_row images_key audios_key audio_sampling_rate label_key"
        " videos_key max_videos",
        placeholders=marks,
        frame_sampling=FrameSampling(dataset.fps, dataset.max_frames),
    )
    return HfPromptDataset(path, tokenizer, spec=spec, prompt_format=fmt)


@ROW_FORMATS.register("gsm8k")
def _gsm8k(
    path: Path,
    dataset: DatasetConfig,
    tokenizer: Any,
    fmt: PromptFormat,
    marks: MediaPlaceholders,
    name: str | None = None,
) -> PromptSource:
    extra = {} if dataset.instruction is None else {"instruction": dataset.instruction}
    return gsm8k_prompts(path, tokenizer, prompt_format=fmt, on_bad_row=dataset.on_bad_row, **extra)


@ROW_FORMATS.register("geo3k")
def _geo3k(
    path: Path,
    dataset: DatasetConfig,
    tokenizer: Any,
    fmt: PromptFormat,
    marks: MediaPlaceholders,
    name: str | None = None,
) -> PromptSource:
    extra = {} if dataset.instruction is None else {"instruction": dataset.instruction}
    return geo3k_prompts(
        path,
        tokenizer,
        placeholders=marks,
        prompt_format=fmt,
        on_bad_row=dataset.on_bad_row,
        **extra,
    )


@ROW_FORMATS.register("judge_pairs")
def _judge_pairs(
    path: Path,
    dataset: DatasetConfig,
    tokenizer: Any,
    fmt: PromptFormat,
    marks: MediaPlaceholders,
    name: str | None = None,
) -> PromptSource:
    prompts = (
        None if dataset.system_prompt_file is None else TaskPrompts(dataset.system_prompt_file)
    )
    rows, _ = load_judge_pairs(
        f"{name}:{path}" if name else str(path), tokenizer, seed=dataset.seed, task_prompts=prompts
    )
    images = any("images" in row for row in rows)
    videos = any("videos" in row for row in rows)
    for row in rows:  # a mixed list (image and video sets): an empty list is no media
        for kind, present in (("images", images), ("videos", videos)):
            if present:
                row.setdefault(kind, [])
    spec = RowSpec(
        images_key="images" if images else None,
        videos_key="videos" if videos else None,
        frame_sampling=FrameSampling(dataset.fps, dataset.max_frames),
        max_videos=dataset.max_videos,
        on_bad_row=dataset.on_bad_row,
        placeholders=marks,
        label_key=dataset.label_key,
    )
    return InMemoryPromptSource(rows, tokenizer, spec=spec, prompt_format=fmt, name=path.stem)


_judge_pairs.split_folders = False  # type: ignore[attr-defined]


def placeholders_of(media: MediaRequirements | None) -> MediaPlaceholders:
    """The placeholder tokens rows are checked against (none for a text model)."""
    if media is None:
        return MediaPlaceholders()
    return MediaPlaceholders(
        media.image_placeholder, media.audio_placeholder, media.video_placeholder
    )


def prompt_format_of(dataset: DatasetConfig) -> PromptFormat:
    """How ``dataset``'s prompts are rendered and bounded."""
    return PromptFormat(
        system_prompt=dataset.system_prompt,
        render="auto" if dataset.apply_chat_template else "plain",
        max_prompt_tokens=dataset.max_prompt_length,
        on_overlong=dataset.truncate,
    )


def build_prompts(
    dataset: DatasetConfig | None,
    tokenizer: Any,
    media: MediaRequirements | None = None,
    section: str = "data",
) -> PromptSource | None:
    """A prompt source for ``dataset`` (``None`` stays ``None``: no evaluation set).

    ``media``: what the model's prompt encoder needs of every row (placeholders, audio rate),
    checked while the rows are read, so a row that cannot be encoded is a bad row (an error
    naming it, or skipped and counted) rather than an error at the step that draws it.
    ``section`` names the config section in errors (``data.train`` ...).
    """
    if dataset is None:
        return None
    dataset = with_model_audio_rate(dataset, media, section)
    fmt = prompt_format_of(dataset)
    if dataset.path is None:
        return BUILTIN_TASKS.get(dataset.builtin)(dataset, tokenizer, fmt)
    read_rows, marks = ROW_FORMATS.get(dataset.preprocessor), placeholders_of(media)
    source = read_dataset(
        dataset,
        section,
        lambda path, name: read_rows(path, dataset, tokenizer, fmt, marks, name),
        split_folders=getattr(read_rows, "split_folders", True),
    )
    if dataset.max_samples is not None and dataset.max_samples < len(source):
        return _Truncated(source, dataset.max_samples)
    return source


def with_model_audio_rate(
    dataset: DatasetConfig, media: MediaRequirements | None, section: str
) -> DatasetConfig:
    """``dataset`` requiring the audio model's rate when it sets none; ``ValueError`` when it
    sets another one (the feature extractor takes one rate; clips are never resampled)."""
    rate = None if media is None else media.audio_sampling_rate
    if rate is None or dataset.audio_sampling_rate == rate:
        return dataset
    if dataset.audio_sampling_rate is not None:
        raise ValueError(
            f"{section}.audio_sampling_rate={dataset.audio_sampling_rate} but the model's "
            f"feature extractor takes {rate} Hz audio; set {rate} (or leave it unset) and "
            "resample the clips"
        )
    return dataset.model_copy(update={"audio_sampling_rate": rate})


class _Truncated:
    """The first ``limit`` prompts of a source."""

    def __init__(self, source: PromptSource, limit: int) -> None:
        self._source, self._limit = source, limit

    def __len__(self) -> int:
        return self._limit

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < self._limit:
            raise IndexError(index)
        return self._source[index]

    @property
    def stats(self) -> Any:
        """The full source's :class:`~lightrft.adapters.datasets.DatasetStats`, if any."""
        return self._source.stats  # type: ignore[attr-defined]
