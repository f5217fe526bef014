"""What building the prompt sets of `lightrft train` kept, left out and cut: bad rows
skipped with ``on_bad_row=skip`` and prompts truncated to ``max_prompt_length``. In
``summary.json`` always, under the names `lightrft sft` uses (``train_rows``,
``skipped_rows``, ``truncated_prompts``, ``dropped_long_prompts`` (``truncate=skip``), and
``eval_*`` of each); when rows were skipped, cut or dropped also on the console, one warning
per split and kind (``data.skipped_rows``, ``data.truncated_prompts``,
``data.dropped_long_prompts``), and in ``metrics.jsonl`` (``data/*`` at step 0)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import structlog

from lightrft.domain.ports import PromptSource, Tracker

log = structlog.get_logger(__name__)


@runtime_checkable
class CountedSource(Protocol):
    """A prompt source that counts what it read (``DatasetStats``: rows, kept, skipped ...)."""

    @property
    def stats(self) -> Any: ...


def prompt_counts(train: PromptSource | None, evaluation: PromptSource | None) -> dict[str, int]:
    """``train_rows`` / ``skipped_rows`` of the training set and ``eval_skipped_rows`` of
    the evaluation set, for the sources that count them (built-in and file sources do)."""
    counts: dict[str, int] = {}
    if isinstance(train, CountedSource):
        counts["train_rows"] = int(train.stats.kept)
        counts["skipped_rows"] = int(train.stats.skipped_bad_rows)
        counts["truncated_prompts"] = int(getattr(train.stats, "truncated", 0))
        counts["dropped_long_prompts"] = int(getattr(train.stats, "dropped_overlong", 0))
    if isinstance(evaluation, CountedSource):
        counts["eval_skipped_rows"] = int(evaluation.stats.skipped_bad_rows)
        counts["eval_truncated_prompts"] = int(getattr(evaluation.stats, "truncated", 0))
        dropped = int(getattr(evaluation.stats, "dropped_overlong", 0))
        counts["eval_dropped_long_prompts"] = dropped
    return counts


WARNINGS = (
    ("data.skipped_rows", "skipped", (("train", "skipped_rows"), ("eval", "eval_skipped_rows"))),
    (
        "data.truncated_prompts",
        "truncated",
        (("train", "truncated_prompts"), ("eval", "eval_truncated_prompts")),
    ),
    (
        "data.dropped_long_prompts",
        "dropped",
        (("train", "dropped_long_prompts"), ("eval", "eval_dropped_long_prompts")),
    ),
)
"""(event, field, ((split, count key), ...)): one warning per split whose count is not 0."""


def report_prompt_counts(counts: dict[str, int], tracker: Tracker | None) -> None:
    """When rows were skipped or prompts cut: a warning per split and kind, and the counts
    as ``data/<count>`` at step 0 to ``tracker`` (if given)."""
    warned = False
    for event, field, keys in WARNINGS:
        for split, key in keys:
            if counts.get(key):
                warned = True
                log.warning(event, split=split, **{field: counts[key]})
    if tracker is not None and warned:
        tracker.log_metrics({f"data/{k}": float(v) for k, v in counts.items()}, step=0)
