"""The process-reward layout (step-labelled rows) as a registered reward data set: rows of
jsonl / json / parquet files (one, or a folder of them), read by
:mod:`~lightrft.adapters.datasets.reward_sets.step_rows`."""

from __future__ import annotations

from pathlib import Path

from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.reward_set import (
    LoadedRewardSet,
    RewardSetOptions,
    collect,
)
from lightrft.adapters.datasets.reward_sets.step_rows import read_step_row
from lightrft.adapters.datasets.reward_sets.table_files import table_refs


def load_process_rewards(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The step-labelled solutions of ``path`` (``renderer`` unused: texts stay as written)."""
    del renderer
    spec = options.step_spec
    refs, bad_lines = table_refs(path, (".jsonl", ".json", ".parquet"), options.on_bad_row)
    return collect(refs, lambda ref: read_step_row(ref, spec), options.on_bad_row, bad_lines)
