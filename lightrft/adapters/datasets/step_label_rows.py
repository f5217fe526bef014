"""Step-labelled rows for process reward models (``lightrft rm train --kind process``), from
jsonl / json / parquet files or in-memory rows, into
:class:`~lightrft.domain.process_rewards.StepLabelledExample`.

Three row layouts (keys configurable in :class:`StepRowSpec`):

- steps and labels: ``{"prompt" (or "question"), "steps": [str, ...], "labels": [...]}``,
  one label per step: the positive / negative label token (``"+"`` / ``"-"``), a boolean, or
  a number in [0, 1] (the probability that the step is good: a soft label);
- PRM800K-style ratings: ``{"prompt", "steps", "ratings": [1, 0, -1, ...]}``: 1 good, -1
  bad, 0 neutral (read as ``neutral_label``, 1.0 by default: neutral counts as good);
- tagged text (Math-Shepherd, and the original LightRFT's ``process_reward_dataset``
  layout): ``{"input": "... step 1 ки ... step 2 ки", "label": ...}`` where each step ends
  with the tag (``"ки"``); ``label`` is either the same text with each tag replaced by
  ``+`` / ``-`` (Math-Shepherd) or a list with one label per tag (the original's layout).
  The question is the row's ``prompt`` / ``question`` when the input starts with it, else
  part of the first step.

Prompts (text or chat messages) are rendered like RL prompts by the
:class:`~lightrft.adapters.datasets.rendering.PromptRenderer`; with ``images_key`` the row's
images (paths, bytes, base64, as in RL prompt rows) join the prompt, one image part each, and
travel with the example (vision-language PRMs). Bad rows raise one
:class:`~lightrft.adapters.datasets.bad_rows.BadRowsError` naming file, row and key, or are
skipped and counted (``on_bad_row="skip"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError, BadRowPolicy, BadRows, with_bad_lines
from lightrft.adapters.datasets.hf_prompt_dataset import file_row_refs
from lightrft.adapters.datasets.multimodal_rows import media_content
from lightrft.adapters.datasets.prompt_rows import RowRef, RowSpec, multimodal_of
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.shepherd_labels import (
    LabelTextMismatch,
    label_tokens,
    one_character,
)
from lightrft.domain.process_rewards import StepLabelledExample


@dataclass(frozen=True)
class StepRowSpec:
    """Keys of a step-labelled row, the label tokens and the bad-row policy."""

    prompt_key: str = "prompt"
    question_key: str = "question"
    steps_key: str = "steps"
    labels_key: str = "labels"
    ratings_key: str = "ratings"
    input_key: str = "input"
    label_key: str = "label"
    tag: str = "ки"
    positive_token: str = "+"
    negative_token: str = "-"
    neutral_label: float = 1.0
    images_key: str | None = None  # the prompt's images (vision-language PRMs)
    on_bad_row: BadRowPolicy = "error"


def _label(value: Any, spec: StepRowSpec, key: str, where: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        marks = {spec.positive_token: 1.0, spec.negative_token: 0.0}
        if value.strip() in marks:
            return marks[value.strip()]
    elif isinstance(value, int | float) and 0.0 <= value <= 1.0:
        return float(value)
    problem = (
        f"label {value!r} is none of {spec.positive_token!r}, {spec.negative_token!r}, a "
        "boolean or a number in [0, 1] in"
    )
    raise BadRowError(where, key, problem)


def _rating(value: Any, spec: StepRowSpec, where: str) -> float:
    ratings = {1: 1.0, 0: spec.neutral_label, -1: 0.0}
    if isinstance(value, int) and not isinstance(value, bool) and value in ratings:
        return ratings[value]
    raise BadRowError(where, spec.ratings_key, f"rating {value!r} is not 1, 0 or -1 in")


def _prompt(row: Mapping[str, Any], spec: StepRowSpec, where: str, required: bool) -> Any:
    for key in (spec.prompt_key, spec.question_key):
        value = row.get(key)
        if value is not None:
            if not value or not isinstance(value, str | list):
                raise BadRowError(where, key, "expected non-empty text or chat messages in")
            return value
    if required:
        raise BadRowError(where, spec.prompt_key, "missing prompt (or question)")
    return None


def _steps_and_labels(
    row: Mapping[str, Any], spec: StepRowSpec, where: str
) -> tuple[list[str], list[float]]:
    steps = row.get(spec.steps_key)
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
        raise BadRowError(where, spec.steps_key, "expected a non-empty list of step texts in")
    if any(not s.strip() for s in steps):
        raise BadRowError(where, spec.steps_key, "empty step in")
    if row.get(spec.ratings_key) is not None:
        key, raw = spec.ratings_key, row[spec.ratings_key]
        read = [_rating(v, spec, where) for v in raw] if isinstance(raw, list) else None
    else:
        key, raw = spec.labels_key, row.get(spec.labels_key)
        read = [_label(v, spec, key, where) for v in raw] if isinstance(raw, list) else None
    if read is None:
        raise BadRowError(where, key, "expected a list with one label per step in")
    if len(read) != len(steps):
        raise BadRowError(where, key, f"{len(read)} labels for {len(steps)} steps in")
    return list(steps), read


def _labels_of_text(
    label: str, pieces: Sequence[str], spec: StepRowSpec, where: str
) -> list[float]:
    """The labels of Math-Shepherd's label text: one character stands for each tag, judged
    once the text reads as the input; whitespace may follow the last one."""
    try:
        marks, end = label_tokens(label, pieces, one_character)
    except LabelTextMismatch:
        marks, end = [], None
    if end is None or label[end:].strip():
        raise BadRowError(where, spec.label_key, "label text does not follow the input in")
    return [_label(m, spec, spec.label_key, where) for m in marks]


def _tagged(
    row: Mapping[str, Any], spec: StepRowSpec, where: str, question: Any
) -> tuple[list[str], list[float]]:
    text = row[spec.input_key]
    if not isinstance(text, str) or spec.tag not in text:
        raise BadRowError(where, spec.input_key, f"expected text with step tags {spec.tag!r} in")
    pieces = text.split(spec.tag)
    if pieces[-1].strip():
        raise BadRowError(where, spec.input_key, f"text after the last tag {spec.tag!r} in")
    pieces = pieces[:-1]
    label = row.get(spec.label_key)
    if isinstance(label, str):  # Math-Shepherd: the input with each tag replaced by its mark
        labels = _labels_of_text(label, pieces, spec, where)
    elif isinstance(label, list):
        labels = [_label(v, spec, spec.label_key, where) for v in label]
    else:
        raise BadRowError(where, spec.label_key, "expected label text or a list of labels in")
    if isinstance(question, str) and pieces and pieces[0].startswith(question):
        pieces[0] = pieces[0][len(question) :]
    if len(labels) != len(pieces):
        raise BadRowError(where, spec.label_key, f"{len(labels)} labels for {len(pieces)} tags in")
    if any(not p.strip() for p in pieces):
        raise BadRowError(where, spec.input_key, "empty step in")
    return pieces, labels


def read_step_row(ref: RowRef, spec: StepRowSpec, renderer: PromptRenderer) -> StepLabelledExample:
    """The row as a :class:`StepLabelledExample`; :class:`BadRowError` naming the bad key."""
    row, where = ref.row, ref.where
    tagged = row.get(spec.input_key) is not None and row.get(spec.steps_key) is None
    question = _prompt(row, spec, where, required=not tagged)
    if tagged:
        steps, labels = _tagged(row, spec, where, question)
    else:
        steps, labels = _steps_and_labels(row, spec, where)
    media = multimodal_of(ref, RowSpec(images_key=spec.images_key)) if spec.images_key else {}
    if media:
        images = len(media.get("images", ()))
        question = media_content(question or "", images, 0, where, str(spec.images_key))
    prompt = renderer.text(question) if question is not None else ""
    return StepLabelledExample(prompt, tuple(steps), tuple(labels), media or None, ref.uid)


def step_rows(
    refs: Iterable[RowRef], renderer: PromptRenderer, spec: StepRowSpec
) -> tuple[list[StepLabelledExample], int]:
    """The usable rows of ``refs`` and the number of skipped bad rows."""
    rows: list[StepLabelledExample] = []
    bad = BadRows(spec.on_bad_row)
    for ref in refs:
        try:
            rows.append(read_step_row(ref, spec, renderer))
        except BadRowError as error:
            bad.add(error)
    return rows, bad.check()


def load_step_rows(
    path: str | Path, renderer: PromptRenderer, spec: StepRowSpec | None = None
) -> tuple[list[StepLabelledExample], int]:
    """Step-labelled rows from a jsonl / json / parquet file (or ``save_to_disk`` directory)."""
    spec = spec or StepRowSpec()
    deferred: list[BadRowError] = []  # named with the bad rows, in one error
    refs, bad_lines = file_row_refs(path, spec.on_bad_row, bad_lines=deferred)
    rows, skipped = with_bad_lines(deferred, lambda: step_rows(refs, renderer, spec))
    return rows, skipped + bad_lines


def in_memory_step_rows(
    rows: Sequence[Mapping[str, Any]],
    renderer: PromptRenderer,
    spec: StepRowSpec | None = None,
    *,
    name: str = "rows",
) -> tuple[list[StepLabelledExample], int]:
    """Step-labelled rows from in-memory rows."""
    refs = (RowRef(f"{name}:{i}", f"{name} row {i}", dict(row)) for i, row in enumerate(rows))
    return step_rows(refs, renderer, spec or StepRowSpec())
