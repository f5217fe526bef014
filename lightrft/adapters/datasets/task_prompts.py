"""System prompts by task type (the original LightRFT's ``--system_prompt_path`` YAML): a
mapping ``task type -> prompt`` whose ``{prompt}`` is replaced by the row's generation prompt.

A judge prompt row's task type is its reward data set's (:data:`TASK_TYPES`, the original's
data handlers': ``hpdv3`` is text-to-image, ``rapidata-i2v`` image-to-video ...). A file
without the row's task type is an error naming the file and the task type.
"""

from __future__ import annotations

from pathlib import Path

import yaml

TASK_TYPES: dict[str, str] = {
    "hpdv3": "text-to-image",
    "imagerewarddb": "text-to-image",
    "imagegen-cot-reward-5k": "text-to-image",
    "omnirewardbench-t2i": "text-to-image",
    "rapidata-t2i": "text-to-image",
    "omnirewardbench-t2v": "text-to-video",
    "rapidata-t2v": "text-to-video",
    "rapidata-i2v": "image-to-video",
    "omnirewardbench-t2a": "text-to-audio",
    "audio-alpaca": "text-to-audio",
}
"""The task type of each reward data set (its name in a ``name:path`` list)."""


class TaskPrompts:
    """The prompts of one YAML file, by task type."""

    def __init__(self, file: str | Path) -> None:
        self.file = Path(file)
        if not self.file.is_file():
            raise FileNotFoundError(f"system prompt file {self.file} does not exist")
        loaded = yaml.safe_load(self.file.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise ValueError(
                f"system prompt file {self.file}: expected a mapping of task type to prompt "
                "text (text-to-image: ..., text-to-video: ...)"
            )
        self.prompts: dict[str, str] = loaded

    def task_type(self, dataset: str) -> str:
        """The task type of the reward data set ``dataset``."""
        if dataset not in TASK_TYPES:
            raise ValueError(
                f"data set {dataset!r} has no task type, so {self.file} cannot give its system "
                f"prompt (data sets with one: {', '.join(sorted(TASK_TYPES))})"
            )
        return TASK_TYPES[dataset]

    def for_task(self, task_type: str, prompt: str) -> str:
        """The system prompt of ``task_type`` with ``prompt`` in place of ``{prompt}``."""
        if task_type not in self.prompts:
            raise ValueError(
                f"system prompt file {self.file} has no prompt for task type {task_type!r} "
                f"(it has: {', '.join(sorted(self.prompts)) or 'none'})"
            )
        return self.prompts[task_type].replace("{prompt}", prompt)
