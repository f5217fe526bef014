"""Rows of the original LightRFT's math benchmarks (``examples/math_benchmarks/eval_data``:
``math500.json``, ``aime2024.json``, ``gpqa_diamond.json``) as verifiable prompts.

A row holds ``prompt``, a list of ShareGPT messages (``{"from": "user", "value": ...}``;
``human`` / ``gpt`` are read as user / assistant, ``role`` / ``content`` messages are taken
as they are), ``final_answer`` (the reference) and, for a multiple-choice question, ``choices``
(``{"A": text, ...}``; the question's text already lists them). The prompt is the messages as
they are: no instruction is added (the original adds none either).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lightrft.adapters.datasets.hf_prompt_dataset import HfPromptDataset, load_table
from lightrft.adapters.datasets.math_rows import preprocessed_prompts
from lightrft.adapters.datasets.prompt_rows import BadRowPolicy
from lightrft.adapters.datasets.rendering import PromptFormat

BENCHMARK_KEYS = ("prompt", "final_answer")
ROLES = {"human": "user", "gpt": "assistant", "user": "user", "assistant": "assistant"}


def sharegpt_messages(messages: Any) -> list[dict[str, str]]:
    """``[{"from", "value"}]`` (or ``[{"role", "content"}]``) as chat messages; ``KeyError``
    names ``prompt`` when it is not such a list."""
    if not isinstance(messages, list) or not messages:
        raise KeyError("prompt")
    chat = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise KeyError("prompt")
        if "role" in message:
            chat.append({"role": str(message["role"]), "content": str(message.get("content", ""))})
            continue
        role = str(message.get("from") or "user")
        chat.append({"role": ROLES.get(role, role), "content": str(message.get("value") or "")})
    return chat


def benchmark_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """A benchmark row as ``{"prompt": messages, "reference": final_answer}``."""
    answer = row.get("final_answer")
    if answer is None or not str(answer).strip():
        raise KeyError("final_answer")
    return {"prompt": sharegpt_messages(row.get("prompt")), "reference": str(answer).strip()}


def benchmark_prompts(
    path: str | os.PathLike[str],
    tokenizer: Any,
    *,
    prompt_format: PromptFormat | None = None,
    on_bad_row: BadRowPolicy = "error",
    name: str | None = None,
) -> HfPromptDataset:
    """A benchmark file as an :class:`HfPromptDataset`."""
    return preprocessed_prompts(
        path,
        tokenizer,
        benchmark_row,
        prompt_format=prompt_format,
        on_bad_row=on_bad_row,
        name=name,
    )


def choice_letters(path: str | os.PathLike[str]) -> list[str]:
    """The letters of every row's ``choices`` (a multiple-choice file), sorted; empty for a
    file of open questions."""
    letters: set[str] = set()
    for row in load_table(path):
        choices = row.get("choices")
        if isinstance(choices, Mapping):
            letters.update(str(k) for k, v in choices.items() if v is not None)
    return sorted(letters)
