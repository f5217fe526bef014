"""The process-reward layout: step-labelled rows (Math-Shepherd / PRM800K style) into
:class:`~lightrft.domain.process_rewards.StepLabelledExample` records named by ``file:row``
(``uid``) that keep the data set's numbers (``label_range=None``).

Two row shapes are read (keys configurable in :class:`StepRowSpec`):

- the original LightRFT's (and OpenRLHF's) layout: ``input`` holds the question and the
  solution with a step tag (``placeholder``, Math-Shepherd's ``ки``) at the end of every
  step; the label key (``value``, else ``label``) holds one label per tag: a list of label
  tokens (``"+"`` correct, ``"-"`` wrong) or numbers, or Math-Shepherd's own ``label`` text,
  the ``input`` with each tag replaced by its token. The question is the text before the
  first step (where ``step_start``, ``Step 1:``, matches);
- explicit rows: ``prompt`` (the question), ``steps`` (a list of step texts) and ``labels``
  (one label per step, tokens or numbers).

Tokens map to numbers through ``label_values`` (``+`` -> 1.0, ``-`` -> 0.0); numbers are
kept as given (soft labels, PRM800K's -1 / 0 / +1 ratings). Texts are kept as written (no
chat template): a PRM scores the solution text as it reads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.shepherd_labels import (
    LabelTextMismatch,
    first_difference,
    label_tokens,
    one_of,
)
from lightrft.domain.process_rewards import StepLabelledExample


def _plus_minus() -> dict[str, float]:
    return {"+": 1.0, "-": 0.0}


@dataclass(frozen=True)
class StepRowSpec:
    """Keys and conventions of step-labelled rows (the bad-row policy is
    ``RewardSetOptions.on_bad_row``)."""

    input_key: str = "input"
    label_keys: tuple[str, ...] = ("value", "label")  # the first one a row has
    placeholder: str = "ки"
    step_start: str = r"Step 1\s*:"
    label_values: Mapping[str, float] = field(default_factory=_plus_minus)
    prompt_key: str = "prompt"
    steps_key: str = "steps"
    labels_key: str = "labels"


def _label(value: Any, spec: StepRowSpec, where: str, key: str) -> float:
    if isinstance(value, str) and value in spec.label_values:
        return float(spec.label_values[value])
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    tokens = ", ".join(repr(t) for t in spec.label_values)
    raise BadRowError(
        where, key, f"expected a label token ({tokens}) or a number, got {value!r} in"
    )


_MISMATCH = {
    "differs": "label text differs from the input at character {at} in",
    "no_token": "no label token at character {at} (a step tag of the input) in",
}


def _labels_of_text(
    text: str, segments: Sequence[str], spec: StepRowSpec, where: str, key: str
) -> list[float]:
    """The tokens of Math-Shepherd's ``label`` text: ``input`` with each tag replaced."""
    try:
        tokens, pos = label_tokens(text, segments[:-1], one_of(spec.label_values))
        at = first_difference(text, pos, segments[-1])
        if at is not None:
            raise LabelTextMismatch("differs", at)
    except LabelTextMismatch as bad:
        raise BadRowError(where, key, _MISMATCH[bad.kind].format(at=bad.at)) from None
    if len(text) != pos + len(segments[-1]):
        problem = f"label text goes on after the input's end (character {len(text)}) in"
        raise BadRowError(where, key, problem)
    return [float(spec.label_values[token]) for token in tokens]


def _tagged_row(
    row: Mapping[str, Any], spec: StepRowSpec, where: str
) -> tuple[str, list[str], list[float]]:
    text = row[spec.input_key]
    if not isinstance(text, str) or spec.placeholder not in text:
        problem = f"expected text with a step tag {spec.placeholder!r} after every step in"
        raise BadRowError(where, spec.input_key, problem)
    key = next((k for k in spec.label_keys if row.get(k) is not None), None)
    if key is None:
        raise BadRowError(where, " or ".join(spec.label_keys), "missing key")
    segments = text.split(spec.placeholder)
    start = re.search(spec.step_start, segments[0])
    if start is None:
        problem = f"cannot tell the question from the first step (no {spec.step_start!r}) in"
        raise BadRowError(where, spec.input_key, problem)
    prompt = segments[0][: start.start()].strip()
    steps = [segments[0][start.start() :].strip(), *(s.strip() for s in segments[1:-1])]
    value = row[key]
    if isinstance(value, str):
        labels = _labels_of_text(value, segments, spec, where, key)
    elif isinstance(value, list | tuple):
        labels = [_label(v, spec, where, key) for v in value]
    else:
        raise BadRowError(where, key, "expected a list of step labels or the labelled text in")
    if len(labels) != len(steps):
        problem = f"{len(labels)} labels for {len(steps)} tagged steps in"
        raise BadRowError(where, key, problem)
    return prompt, steps, labels


def _explicit_row(
    row: Mapping[str, Any], spec: StepRowSpec, where: str
) -> tuple[str, list[str], list[float]]:
    prompt, steps, labels = (row.get(k) for k in (spec.prompt_key, spec.steps_key, spec.labels_key))
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadRowError(where, spec.prompt_key, "expected a non-empty string in")
    if (
        not isinstance(steps, list | tuple)
        or not steps
        or not all(isinstance(s, str) for s in steps)
    ):
        raise BadRowError(where, spec.steps_key, "expected a non-empty list of step texts in")
    if not isinstance(labels, list | tuple):
        raise BadRowError(where, spec.labels_key, "expected a list of step labels in")
    if len(labels) != len(steps):
        problem = f"{len(labels)} labels for {len(steps)} steps in"
        raise BadRowError(where, spec.labels_key, problem)
    return prompt, list(steps), [_label(v, spec, where, spec.labels_key) for v in labels]


def read_step_row(ref: RowRef, spec: StepRowSpec) -> StepLabelledExample:
    """The solution of one row; :class:`BadRowError` naming its file, row and key."""
    row = ref.row
    if row.get(spec.input_key) is not None:
        prompt, steps, labels = _tagged_row(row, spec, ref.where)
    elif row.get(spec.steps_key) is not None:
        prompt, steps, labels = _explicit_row(row, spec, ref.where)
    else:
        raise BadRowError(ref.where, f"{spec.input_key}' or '{spec.steps_key}", "missing key")
    empty = [i for i, step in enumerate(steps) if not step]
    if empty:
        raise BadRowError(ref.where, spec.input_key, f"step {empty[0] + 1} is empty in")
    return StepLabelledExample(prompt, tuple(steps), tuple(labels), uid=ref.uid, label_range=None)
