"""Evaluation files for ``lightrft eval --data``: one prompt-source builder per file format.

``gsm8k``: rows ``question`` / ``answer`` with the final answer after ``####``;
``boxed``: MATH-style rows, ``problem`` (or ``question``) with ``answer`` or a ``solution``
ending in ``\\boxed{}``; ``geo3k``: Geo3K rows, ``problem`` / ``images`` / ``answer`` (a
vision-language model; every row's image placeholders are checked against its diagrams).
``benchmark``: the original LightRFT's math-benchmark rows (``prompt`` messages,
``final_answer``, ``choices`` for a multiple-choice question, graded by the chosen letter).
``auto`` looks at the first row's keys. :func:`benchmark_files` finds benchmarks by name
(``math500``, ``aime2024``, ``gpqa_diamond`` ...) under a data root, in the original's
``eval_data`` layout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets import geo3k_prompts, gsm8k_prompts, load_table
from lightrft.adapters.datasets.benchmark_rows import (
    BENCHMARK_KEYS,
    benchmark_prompts,
    choice_letters,
)
from lightrft.adapters.datasets.geo3k import GEO3K_KEYS, NO_PLACEHOLDERS
from lightrft.adapters.datasets.math_rows import boxed_answer_prompts
from lightrft.adapters.datasets.placeholders import MediaPlaceholders
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.rewards import MathAnswerGrader
from lightrft.adapters.rewards.answer_extraction import last_boxed
from lightrft.adapters.rewards.multiple_choice import MultipleChoiceGrader
from lightrft.domain.ports import AnswerGrader, PromptSource
from lightrft.domain.registry import Registry

EvalFileBuilder = Callable[[Path, Any, PromptFormat, MediaPlaceholders], PromptSource]
EVAL_FORMATS: Registry[EvalFileBuilder] = Registry("evaluation file format")
"""Builders get the file, the tokenizer, the prompt format and the model's media
placeholders (empty for a text model)."""


@EVAL_FORMATS.register("gsm8k")
def _gsm8k(path: Path, tokenizer: Any, fmt: PromptFormat, marks: MediaPlaceholders) -> PromptSource:
    return gsm8k_prompts(path, tokenizer, prompt_format=fmt, name=path.stem)


@EVAL_FORMATS.register("boxed", aliases=("math",))
def _boxed(path: Path, tokenizer: Any, fmt: PromptFormat, marks: MediaPlaceholders) -> PromptSource:
    return boxed_answer_prompts(path, tokenizer, last_boxed, prompt_format=fmt, name=path.stem)


@EVAL_FORMATS.register("geo3k")
def _geo3k(path: Path, tokenizer: Any, fmt: PromptFormat, marks: MediaPlaceholders) -> PromptSource:
    return geo3k_prompts(path, tokenizer, placeholders=marks, prompt_format=fmt, name=path.stem)


@EVAL_FORMATS.register("benchmark")
def _benchmark(
    path: Path, tokenizer: Any, fmt: PromptFormat, marks: MediaPlaceholders
) -> PromptSource:
    return benchmark_prompts(path, tokenizer, prompt_format=fmt, name=path.stem)


EVAL_GRADERS: Registry[Callable[[Path], AnswerGrader]] = Registry("evaluation answer grader")
"""How a format's answers are graded, given the file (default: the math answer grader)."""


@EVAL_GRADERS.register("benchmark")
def _benchmark_grader(path: Path) -> AnswerGrader:
    """The chosen letter for a file of multiple-choice questions (GPQA), else math answers."""
    letters = choice_letters(path)
    return MultipleChoiceGrader(letters) if letters else MathAnswerGrader()


def eval_file_grader(path: Path, fmt_name: str) -> AnswerGrader:
    """The grader of the answers to the file ``path`` of format ``fmt_name`` (auto: detected)."""
    name = detect_format(path) if fmt_name == "auto" else fmt_name
    return EVAL_GRADERS.get(name)(path) if name in EVAL_GRADERS else MathAnswerGrader()


BENCHMARK_SUFFIXES = (".json", ".jsonl", ".parquet")


def benchmark_files(names: list[str], data_root: Path) -> list[Path]:
    """The files of the benchmarks ``names`` under ``data_root``: ``NAME.json`` (``.jsonl``,
    ``.parquet``) in it or in its ``eval_data`` folder (the original's layout). Raises
    ``FileNotFoundError`` listing every benchmark not found."""
    found: list[Path] = []
    missing: list[str] = []
    for name in names:
        candidates = [
            folder / f"{name}{suffix}"
            for folder in (data_root, data_root / "eval_data")
            for suffix in BENCHMARK_SUFFIXES
        ]
        match = next((c for c in candidates if c.is_file()), None)
        if match is None:
            missing.append(name)
        else:
            found.append(match)
    if missing:
        shown = ", ".join(f"{n}.json" for n in missing)
        raise FileNotFoundError(
            f"--benchmarks: no {shown} (or .jsonl / .parquet) under {data_root} or "
            f"{data_root / 'eval_data'}; put the original's eval_data files there or pass "
            "--data_root"
        )
    return found


def detect_format(path: Path) -> str:
    """``gsm8k``, ``geo3k``, ``benchmark`` or ``boxed`` from the keys of the file's first
    row."""
    table = load_table(path)
    if len(table) == 0:
        raise ValueError(f"{path} has no rows")
    row = table[0]
    if all(key in row for key in GEO3K_KEYS):
        return "geo3k"
    if all(key in row for key in BENCHMARK_KEYS):
        return "benchmark"
    if "question" in row and "####" in str(row.get("answer", "")):
        return "gsm8k"
    if ("problem" in row or "question" in row) and ("answer" in row or "solution" in row):
        return "boxed"
    raise ValueError(
        f"{path} row 0: cannot tell the format from keys {sorted(row)}; expected GSM8K "
        "(question, answer with '####'), Geo3K (problem, images, answer), a math benchmark "
        "(prompt, final_answer) or MATH-style (problem, answer or solution); "
        "pass --format"
    )


def eval_file_prompts(
    path: Path,
    fmt_name: str,
    tokenizer: Any,
    fmt: PromptFormat,
    placeholders: MediaPlaceholders = NO_PLACEHOLDERS,
) -> PromptSource:
    """The prompts of one evaluation file (``fmt_name`` "auto" detects the format);
    ``placeholders``: the model's media tokens, checked against every row's media."""
    if not path.exists():
        raise FileNotFoundError(f"evaluation file {path} does not exist")
    name = detect_format(path) if fmt_name == "auto" else fmt_name
    return EVAL_FORMATS.get(name)(path, tokenizer, fmt, placeholders)
