"""Geo3K rows (the ``hiyouga/geometry3k`` layout) as verifiable vision-language prompts.

A row holds ``problem`` (the question; ``<image>`` marks where its diagram goes),
``images`` (a list of HF ``Image`` values, ``{"bytes", "path"}`` structs in the parquet
files; usually one diagram) and ``answer`` (the final answer, e.g. ``"3"`` or
``"2\\sqrt{3}"``). The prompt is the problem followed by an instruction to put the final
answer in ``\\boxed{}`` (what :class:`~lightrft.adapters.rewards.MathAnswerReward` and the
evaluation grader extract); the reference is the answer, stripped. A row without a usable
problem, answer or ``images`` column is a bad row naming the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.datasets.hf_prompt_dataset import HfPromptDataset
from lightrft.adapters.datasets.math_rows import BOXED_INSTRUCTION
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from lightrft.adapters.datasets.prompt_rows import BadRowPolicy, RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

GEO3K_KEYS = ("problem", "images", "answer")
"""The columns a Geo3K row must have (how evaluation recognizes the format)."""
NO_PLACEHOLDERS = MediaPlaceholders()


@dataclass(frozen=True)
class Geo3kPreprocessor:
    """Maps a Geo3K row to ``{"prompt", "reference", "images"}``; ``KeyError(key)`` names a
    missing or empty key (reported with the file and row)."""

    instruction: str = BOXED_INSTRUCTION
    problem_key: str = "problem"
    images_key: str = "images"
    answer_key: str = "answer"

    def __call__(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        problem, answer = row.get(self.problem_key), row.get(self.answer_key)
        if not isinstance(problem, str) or not problem.strip():
            raise KeyError(self.problem_key)
        if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
            raise KeyError(self.answer_key)
        if not str(answer).strip():
            raise KeyError(self.answer_key)
        if row.get(self.images_key) is None:
            raise KeyError(self.images_key)
        prompt = f"{problem.strip()}\n{self.instruction}" if self.instruction else problem
        return {"prompt": prompt, "reference": str(answer).strip(), "images": row[self.images_key]}


def geo3k_spec(
    instruction: str = BOXED_INSTRUCTION,
    on_bad_row: BadRowPolicy = "error",
    placeholders: MediaPlaceholders = NO_PLACEHOLDERS,
) -> RowSpec:
    """The :class:`RowSpec` of Geo3K files; ``placeholders``: the model's image token, so a
    row whose rendered prompt does not hold one per diagram is a bad row."""
    return RowSpec(
        input_key="prompt",
        reference_key="reference",
        images_key="images",
        on_bad_row=on_bad_row,
        preprocess=Geo3kPreprocessor(instruction),
        placeholders=placeholders,
    )


def geo3k_prompts(
    path: str | os.PathLike[str],
    tokenizer: Any,
    *,
    placeholders: MediaPlaceholders = NO_PLACEHOLDERS,
    prompt_format: PromptFormat | None = None,
    instruction: str = BOXED_INSTRUCTION,
    on_bad_row: BadRowPolicy = "error",
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> HfPromptDataset:
    """A Geo3K split (e.g. ``test.parquet``) as an :class:`HfPromptDataset` whose records
    carry the decoded diagrams (``multimodal["images"]``)."""
    return HfPromptDataset(
        path,
        tokenizer,
        spec=geo3k_spec(instruction, on_bad_row, placeholders),
        prompt_format=prompt_format,
        name=name,
        cache_dir=cache_dir,
    )
