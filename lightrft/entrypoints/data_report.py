"""What building the prompt sets of `lightrft train` kept and left out (bad rows skipped
with ``on_bad_row=skip``): in ``summary.json`` always, under the names `lightrft sft` uses
(``train_rows``, ``skipped_rows``, plus ``eval_skipped_rows``); when rows were skipped also
on the console (``data.skipped_rows``) and in ``metrics.jsonl`` (``data/*`` at step 0)."""

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
    if isinstance(evaluation, CountedSource):
        counts["eval_skipped_rows"] = int(evaluation.stats.skipped_bad_rows)
    return counts


def report_prompt_counts(counts: dict[str, int], tracker: Tracker | None) -> None:
    """When rows were skipped: a warning per split, and the counts as ``data/<count>`` at
    step 0 to ``tracker`` (if given)."""
    skipped = False
    for split, key in (("train", "skipped_rows"), ("eval", "eval_skipped_rows")):
        if counts.get(key):
            skipped = True
            log.warning("data.skipped_rows", split=split, skipped=counts[key])
    if tracker is not None and skipped:
        tracker.log_metrics({f"data/{k}": float(v) for k, v in counts.items()}, step=0)
