"""Generative-judge training rows, from jsonl / json / parquet files (or in-memory rows), into
:class:`~lightrft.domain.judge.JudgedResponse`.

A row (keys configurable in :class:`JudgeRowSpec`):

- ``prompt``: text or chat messages, rendered like RL prompts (the
  :class:`~lightrft.adapters.datasets.rendering.PromptRenderer`), since the ``generative_rm``
  source fills its template with the policy's rendered prompt;
- ``response``: the answer being judged (non-empty text);
- ``judgement``: what the judge should write, reasoning ending in a verdict the configured
  parser reads (``Score: 7/10``, ``[[A]]``), and/or ``label``: the verdict itself (a number on
  the score scale, or a label name). A row with only a label trains on the verdict line
  alone; a row with both must agree (the judgement's verdict reads as the label's score);
- ``reference`` (optional): the reference answer the template's ``{reference}`` shows.

The verdict format is passed in (:class:`VerdictFormat`, e.g. the ``generative_rm`` source's
own parser), so rows are checked with exactly the parser that will read the trained judge.
Bad rows raise one :class:`~lightrft.adapters.datasets.bad_rows.BadRowsError` naming file,
row and key of each, or are skipped and counted (``on_bad_row="skip"``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lightrft.adapters.datasets.arithmetic import arithmetic_problems
from lightrft.adapters.datasets.bad_rows import (
    BadRowError,
    BadRowPolicy,
    BadRows,
    text_field,
    with_bad_lines,
)
from lightrft.adapters.datasets.chat_check import check_chat
from lightrft.adapters.datasets.hf_prompt_dataset import file_row_refs
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.domain.judge import SCORE_TOLERANCE, JudgedResponse


class VerdictFormat(Protocol):
    """Reads verdicts and labels (``ScoreVerdict`` / ``LabelVerdict`` of the reward models)."""

    def parse(self, text: str) -> float | None: ...

    def label_score(self, label: Any) -> float: ...

    def verdict_text(self, label: Any) -> str: ...


@dataclass(frozen=True)
class JudgeRowSpec:
    """Keys of a judge row and the bad-row policy."""

    prompt_key: str = "prompt"
    response_key: str = "response"
    judgement_key: str = "judgement"
    label_key: str = "label"
    reference_key: str = "reference"
    on_bad_row: BadRowPolicy = "error"


def _prompt(row: Mapping[str, Any], key: str, where: str) -> Any:
    value = row.get(key)
    if isinstance(value, list):
        if not all(isinstance(m, Mapping) and "role" in m and "content" in m for m in value):
            raise BadRowError(where, key, "expected a list of {role, content} messages in")
        check_chat(value, where, key)
        return value
    return text_field(row, key, where)


def _label_score(verdict: VerdictFormat, label: Any, key: str, where: str) -> float:
    try:
        return verdict.label_score(label)
    except ValueError as error:
        raise BadRowError(where, key, f"{error}, got {label!r} in") from None


def _verdict(
    row: Mapping[str, Any], spec: JudgeRowSpec, verdict: VerdictFormat, where: str
) -> tuple[str, float]:
    """(judgement text, expected score) of a row."""
    label = row.get(spec.label_key)
    if row.get(spec.judgement_key) is None:
        if label is None:
            raise BadRowError(where, spec.judgement_key, f"missing both {spec.label_key!r} and")
        score = _label_score(verdict, label, spec.label_key, where)
        return verdict.verdict_text(label), score
    judgement = text_field(row, spec.judgement_key, where)
    parsed = verdict.parse(judgement)
    if parsed is None:
        problem = f"no verdict {type(verdict).__name__} can read (see docs/reward-models.md) in"
        raise BadRowError(where, spec.judgement_key, problem)
    if label is not None:
        score = _label_score(verdict, label, spec.label_key, where)
        if abs(parsed - score) > SCORE_TOLERANCE:
            problem = f"verdict reads {parsed:g} but {spec.label_key}={label!r} reads {score:g} in"
            raise BadRowError(where, spec.judgement_key, problem)
    return judgement, parsed


def read_judge_row(
    ref: RowRef, spec: JudgeRowSpec, verdict: VerdictFormat, renderer: PromptRenderer
) -> JudgedResponse:
    """The row as a :class:`JudgedResponse`; :class:`BadRowError` naming the bad key."""
    row, where = ref.row, ref.where
    prompt = _prompt(row, spec.prompt_key, where)
    response = text_field(row, spec.response_key, where)
    reference = row.get(spec.reference_key)
    if reference is not None and not isinstance(reference, str):
        raise BadRowError(where, spec.reference_key, "expected a string in")
    judgement, score = _verdict(row, spec, verdict, where)
    return JudgedResponse(
        ref.uid, renderer.text(prompt), response, judgement, score, reference or ""
    )


def judge_rows(
    refs: Iterable[RowRef], renderer: PromptRenderer, spec: JudgeRowSpec, verdict: VerdictFormat
) -> tuple[list[JudgedResponse], int]:
    """The usable rows of ``refs`` and the number of skipped bad rows."""
    rows: list[JudgedResponse] = []
    bad = BadRows(spec.on_bad_row)
    for ref in refs:
        try:
            rows.append(read_judge_row(ref, spec, verdict, renderer))
        except BadRowError as error:
            bad.add(error)
    return rows, bad.check()


def load_judge_rows(
    path: str | Path,
    renderer: PromptRenderer,
    verdict: VerdictFormat,
    spec: JudgeRowSpec | None = None,
) -> tuple[list[JudgedResponse], int]:
    """Judge rows from a jsonl / json / parquet file (or ``save_to_disk`` directory)."""
    spec = spec or JudgeRowSpec()
    deferred: list[BadRowError] = []  # named with the bad rows, in one error
    refs, bad_lines = file_row_refs(path, spec.on_bad_row, bad_lines=deferred)
    rows, skipped = with_bad_lines(deferred, lambda: judge_rows(refs, renderer, spec, verdict))
    return rows, skipped + bad_lines


def in_memory_judge_rows(
    rows: Sequence[Mapping[str, Any]],
    renderer: PromptRenderer,
    verdict: VerdictFormat,
    spec: JudgeRowSpec | None = None,
    *,
    name: str = "rows",
) -> tuple[list[JudgedResponse], int]:
    """Judge rows from in-memory rows (uids ``"<name>:<i>"``)."""
    refs = (RowRef(f"{name}:{i}", f"{name} row {i}", dict(row)) for i, row in enumerate(rows))
    return judge_rows(refs, renderer, spec or JudgeRowSpec(), verdict)


SYNTHETIC_JUDGEMENTS = {
    "answered": ("The response states a number.\nScore: 8/10", 8),
    "unanswered": ("The response gives no number.\nScore: 2/10", 2),
}
"""Judgement and label of the built-in judge rows, by whether the response answers."""


def synthetic_judge_rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` rows ``{"prompt", "response", "judgement", "label"}`` on the built-in arithmetic
    problems: every other response answers (``The answer is N.``), the rest do not (a
    refusal); the judgement says which, then ``Score: 8/10`` or ``Score: 2/10`` (labels 8
    and 2 on the default 0..10 scale). Learnable from the response alone."""
    rng = random.Random(f"judge-rows-{seed}")
    rows = []
    for i, problem in enumerate(arithmetic_problems(n, seed=seed, difficulty=1)):
        kind = "answered" if i % 2 == 0 else "unanswered"
        response = (
            f"The answer is {problem['reference']}."
            if kind == "answered"
            else rng.choice(["I don't know.", "No idea.", "Figure it out yourself."])
        )
        judgement, label = SYNTHETIC_JUDGEMENTS[kind]
        rows.append(
            {
                "prompt": problem["prompt"],
                "response": response,
                "judgement": judgement,
                "label": label,
            }
        )
    return rows
