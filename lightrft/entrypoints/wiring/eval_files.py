"""Evaluation files for ``lightrft eval --data``: one prompt-source builder per file format.

``gsm8k``: rows ``question`` / ``answer`` with the final answer after ``####``;
``boxed``: MATH-style rows, ``problem`` (or ``question``) with ``answer`` or a ``solution``
ending in ``\\boxed{}``. ``auto`` looks at the first row's keys.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets import gsm8k_prompts, load_table
from lightrft.adapters.datasets.math_rows import boxed_answer_prompts
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.rewards.answer_extraction import last_boxed
from lightrft.domain.ports import PromptSource
from lightrft.domain.registry import Registry

EvalFileBuilder = Callable[[Path, Any, PromptFormat], PromptSource]
EVAL_FORMATS: Registry[EvalFileBuilder] = Registry("evaluation file format")


@EVAL_FORMATS.register("gsm8k")
def _gsm8k(path: Path, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    return gsm8k_prompts(path, tokenizer, prompt_format=fmt, name=path.stem)


@EVAL_FORMATS.register("boxed", aliases=("math",))
def _boxed(path: Path, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    return boxed_answer_prompts(path, tokenizer, last_boxed, prompt_format=fmt, name=path.stem)


def detect_format(path: Path) -> str:
    """``gsm8k`` or ``boxed`` from the keys of the file's first row."""
    table = load_table(path)
    if len(table) == 0:
        raise ValueError(f"{path} has no rows")
    row = table[0]
    if "question" in row and "####" in str(row.get("answer", "")):
        return "gsm8k"
    if ("problem" in row or "question" in row) and ("answer" in row or "solution" in row):
        return "boxed"
    raise ValueError(
        f"{path} row 0: cannot tell the format from keys {sorted(row)}; expected GSM8K "
        "(question, answer with '####') or MATH-style (problem, answer or solution); "
        "pass --format"
    )


def eval_file_prompts(path: Path, fmt_name: str, tokenizer: Any, fmt: PromptFormat) -> PromptSource:
    """The prompts of one evaluation file (``fmt_name`` "auto" detects the format)."""
    if not path.exists():
        raise FileNotFoundError(f"evaluation file {path} does not exist")
    name = detect_format(path) if fmt_name == "auto" else fmt_name
    return EVAL_FORMATS.get(name)(path, tokenizer, fmt)
