"""Generative-judge training pieces: judge rows as SFT examples laid out exactly as the
``generative_rm`` source prompts the judge, and held-out verdict accuracy measured through
that source.

:class:`JudgeEncoding` renders each :class:`~lightrft.domain.judge.JudgedResponse` with
:func:`~lightrft.adapters.reward_models.generative.render_judge_prompt` (the source's own
function: same template, chat template and special tokens); the example's trained tokens
are the judgement (``add_special_tokens=False``) plus EOS, where the source's greedy
generation stops. Rows longer than ``max_length`` tokens are dropped and counted: cutting
the prompt would train on a layout the judge never sees, cutting the answer would lose the
verdict.

:func:`judge_verdict_accuracy` asks an :class:`HfGenerativeRewardModel` for verdicts on
held-out rows and parses them with its own parser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lightrft.adapters.reward_models.generative import (
    DEFAULT_TEMPLATE,
    HfGenerativeRewardModel,
    check_judge_template,
    render_judge_prompt,
)
from lightrft.domain.judge import JudgedResponse, VerdictAccuracy, verdict_accuracy
from lightrft.domain.sft import SftExample
from lightrft.domain.types import Completion, PromptRecord, RewardSample


@dataclass
class JudgeEncoding:
    """Tokenizes judge rows into SFT examples (see the module docstring).

    ``use_chat_template`` None: the tokenizer's chat template when it has one (the source's
    default). ``too_long`` counts the rows dropped for length.
    """

    tokenizer: Any
    template: str = DEFAULT_TEMPLATE
    max_length: int | None = 1024
    use_chat_template: bool | None = None
    too_long: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        check_judge_template(self.template)
        if self.use_chat_template is None:
            self.use_chat_template = bool(getattr(self.tokenizer, "chat_template", None))
        if self.tokenizer.eos_token_id is None:
            raise ValueError("the judge tokenizer has no EOS token: its verdicts would not stop")

    def example(self, row: JudgedResponse) -> SftExample | None:
        """The row as context (judge prompt) + trained answer, or ``None`` if too long."""
        _, prompt_ids = render_judge_prompt(
            self.tokenizer,
            self.template,
            bool(self.use_chat_template),
            prompt=row.prompt,
            response=row.response,
            reference=row.reference,
        )
        answer = list(self.tokenizer(row.judgement, add_special_tokens=False)["input_ids"])
        answer.append(int(self.tokenizer.eos_token_id))
        if self.max_length is not None and len(prompt_ids) + len(answer) > self.max_length:
            self.too_long += 1
            return None
        return SftExample(row.uid, tuple(prompt_ids), tuple(answer), (1,) * len(answer))

    def examples(self, rows: Sequence[JudgedResponse]) -> list[SftExample]:
        """The examples of the rows that fit ``max_length``."""
        return [e for e in (self.example(row) for row in rows) if e is not None]


def judge_samples(rows: Sequence[JudgedResponse]) -> list[RewardSample]:
    """The rows as the reward samples a policy's rollout would give the source."""
    return [
        RewardSample(
            # the source reads the prompt's text only; (0,) stands in for its token ids
            PromptRecord(row.uid, row.prompt, (0,), reference=row.reference or None),
            Completion(0, (), row.response, "stop"),
        )
        for row in rows
    ]


def judge_verdict_accuracy(
    judge: HfGenerativeRewardModel, rows: Sequence[JudgedResponse], *, batch_size: int = 32
) -> tuple[VerdictAccuracy, list[str]]:
    """Held-out verdict accuracy of ``judge`` on ``rows`` and its verdict texts.

    Each batch goes through ``judge.score`` (the source's own prompts and greedy
    generation); its verdicts are parsed with ``judge.parser`` and compared with each row's
    ``score``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    verdicts: list[str] = []
    judge.onload()
    for start in range(0, len(rows), batch_size):
        judge.score(judge_samples(rows[start : start + batch_size]))
        verdicts.extend(judge.last_verdicts)
    parsed = [judge.parser.parse(text) for text in verdicts]
    return verdict_accuracy(parsed, [row.score for row in rows]), verdicts
