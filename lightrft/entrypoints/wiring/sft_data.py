"""SFT examples for ``lightrft sft`` from its ``sft.train_data`` / ``sft.eval_data`` sections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightrft.adapters.datasets import arithmetic_problems
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.datasets.sft_rows import (
    SftDataset,
    SftRowSpec,
    build_sft_examples,
    load_sft_dataset,
)
from lightrft.entrypoints.config.sft_section import BUILTIN_SYSTEM_PROMPT, SftDataConfig
from lightrft.entrypoints.field_copy import copy_fields


def build_sft_data(
    section: SftDataConfig | None, tokenizer: Any, media: Any | None = None
) -> SftDataset | None:
    """The tokenized examples ``section`` describes (``None`` stays ``None``); ``media``: the
    model's media encoder (vision- and audio-language models), which expands the image /
    audio parts of chat rows."""
    if section is None:
        return None
    requirements = getattr(media, "requirements", None)
    spec = copy_fields(
        SftRowSpec,
        section,
        "messages_key prompt_key completion_key max_length on_bad_row",
        audio_sampling_rate=getattr(requirements, "audio_sampling_rate", None),
    )
    system = section.system_prompt
    if system is None and section.path is None:
        system = BUILTIN_SYSTEM_PROMPT
    fmt = PromptFormat(
        system_prompt=system,
        render="auto" if section.apply_chat_template else "plain",
    )
    if section.path is None:
        rows = arithmetic_problems(
            section.num_builtin, section.seed, section.difficulty, section.builtin_split
        )
        refs = [
            RowRef(
                uid=f"arithmetic-{section.seed}:{i}",
                where=f"built-in arithmetic row {i}",
                row={
                    "prompt": f"{r['prompt']} {section.instruction}",
                    "completion": r[
                        "reference" if section.builtin_completion == "answer" else "solution"
                    ],
                },
            )
            for i, r in enumerate(rows)
        ]
        data = build_sft_examples(refs, tokenizer, spec=spec, prompt_format=fmt)
    else:
        paths = [section.path] if isinstance(section.path, str) else list(section.path)
        for path in paths:
            if not Path(path).exists():
                raise FileNotFoundError(f"SFT data {path} does not exist")
        data = load_sft_dataset(paths, tokenizer, spec=spec, prompt_format=fmt, media=media)
    if section.max_samples is not None and section.max_samples < len(data):
        data = SftDataset(list(data)[: section.max_samples], data.stats)
    return data
