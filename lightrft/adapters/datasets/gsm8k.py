"""GSM8K rows (``question`` / ``answer``) as verifiable prompts.

The prompt is the question followed by an instruction to give the final answer after
"####" or in ``\\boxed{}`` (what :class:`~lightrft.adapters.rewards.MathAnswerReward`
extracts); the reference is what follows "####" in the answer, without thousands
separators (``"... #### 1,080"`` -> ``"1080"``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.datasets.hf_prompt_dataset import HfPromptDataset
from lightrft.adapters.datasets.prompt_rows import BadRowPolicy, RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat

ANSWER_INSTRUCTION = (
    'Solve the problem step by step. Give the final answer as a number after "####" '
    "(for example: #### 42) or in \\boxed{}."
)
_NUMBER_WITH_COMMAS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


def gsm8k_reference(answer: str) -> str:
    """The final answer of a GSM8K solution: the text after the last "####", with the
    thousands separators of a number removed. Raises ``ValueError`` without "####"."""
    head, sep, tail = answer.rpartition("####")
    final = tail.strip()
    if not sep or not final:
        raise ValueError("GSM8K answer has no final answer after '####'")
    return final.replace(",", "") if _NUMBER_WITH_COMMAS.match(final) else final


@dataclass(frozen=True)
class Gsm8kPreprocessor:
    """Maps a GSM8K row to ``{"prompt": question + instruction, "reference": answer}``.

    A missing key raises ``KeyError(key)``, which the dataset reports with file and row.
    """

    instruction: str = ANSWER_INSTRUCTION
    question_key: str = "question"
    answer_key: str = "answer"

    def __call__(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        question, answer = row.get(self.question_key), row.get(self.answer_key)
        if not isinstance(question, str) or not question.strip():
            raise KeyError(self.question_key)
        if not isinstance(answer, str):
            raise KeyError(self.answer_key)
        try:
            reference = gsm8k_reference(answer)
        except ValueError:
            raise KeyError(self.answer_key) from None
        prompt = f"{question.strip()}\n{self.instruction}" if self.instruction else question
        return {"prompt": prompt, "reference": reference}


def gsm8k_spec(
    instruction: str = ANSWER_INSTRUCTION, on_bad_row: BadRowPolicy = "error"
) -> RowSpec:
    """The :class:`RowSpec` of GSM8K files."""
    return RowSpec(
        input_key="prompt",
        reference_key="reference",
        on_bad_row=on_bad_row,
        preprocess=Gsm8kPreprocessor(instruction),
    )


def gsm8k_prompts(
    path: str | os.PathLike[str],
    tokenizer: Any,
    *,
    prompt_format: PromptFormat | None = None,
    instruction: str = ANSWER_INSTRUCTION,
    on_bad_row: BadRowPolicy = "error",
    name: str = "gsm8k",
    cache_dir: str | os.PathLike[str] | None = None,
) -> HfPromptDataset:
    """A GSM8K split (e.g. ``train.jsonl``) as an :class:`HfPromptDataset`."""
    return HfPromptDataset(
        path,
        tokenizer,
        spec=gsm8k_spec(instruction, on_bad_row),
        prompt_format=prompt_format,
        name=name,
        cache_dir=cache_dir,
    )
