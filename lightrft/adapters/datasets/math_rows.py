"""MATH-style rows (a problem and a boxed answer) as verifiable prompts.

A row holds the problem under ``problem`` (or ``question``) and the answer under ``answer``,
or a worked ``solution`` from which ``solution_answer`` takes the answer (the wiring passes
the reward package's last-``\\boxed{}`` extractor; dataset adapters do not import it). The prompt is the problem
followed by an instruction to put the final answer in ``\\boxed{}``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.datasets.hf_prompt_dataset import HfPromptDataset
from lightrft.adapters.datasets.prompt_rows import BadRowPolicy, RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


@dataclass(frozen=True)
class BoxedAnswerPreprocessor:
    """Maps a MATH row to ``{"prompt", "reference"}``; ``KeyError(key)`` names a bad key."""

    solution_answer: Callable[[str], str | None]
    instruction: str = BOXED_INSTRUCTION
    problem_keys: tuple[str, ...] = ("problem", "question")
    answer_key: str = "answer"
    solution_key: str = "solution"

    def __call__(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        problem = next((row[k] for k in self.problem_keys if row.get(k) is not None), None)
        if not isinstance(problem, str) or not problem.strip():
            raise KeyError(self.problem_keys[0])
        answer = row.get(self.answer_key)
        if answer is None or not str(answer).strip():
            solution = row.get(self.solution_key)
            answer = self.solution_answer(solution) if isinstance(solution, str) else None
            if answer is None:
                raise KeyError(f"{self.answer_key}' or boxed '{self.solution_key}")
        prompt = f"{problem.strip()}\n{self.instruction}" if self.instruction else problem
        return {"prompt": prompt, "reference": str(answer).strip()}


def boxed_answer_prompts(
    path: str | os.PathLike[str],
    tokenizer: Any,
    solution_answer: Callable[[str], str | None],
    *,
    prompt_format: PromptFormat | None = None,
    instruction: str = BOXED_INSTRUCTION,
    on_bad_row: BadRowPolicy = "error",
    name: str | None = None,
) -> HfPromptDataset:
    """A MATH-style file as an :class:`HfPromptDataset`."""
    preprocess = BoxedAnswerPreprocessor(solution_answer, instruction)
    return preprocessed_prompts(
        path, tokenizer, preprocess, prompt_format=prompt_format, on_bad_row=on_bad_row, name=name
    )


def preprocessed_prompts(
    path: str | os.PathLike[str],
    tokenizer: Any,
    preprocess: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    *,
    prompt_format: PromptFormat | None = None,
    on_bad_row: BadRowPolicy = "error",
    name: str | None = None,
) -> HfPromptDataset:
    """The rows of ``path`` mapped by ``preprocess`` to ``{"prompt", "reference"}``."""
    spec = RowSpec(
        input_key="prompt", reference_key="reference", on_bad_row=on_bad_row, preprocess=preprocess
    )
    return HfPromptDataset(path, tokenizer, spec=spec, prompt_format=prompt_format, name=name)
