"""The process-reward layout (step-labelled rows) as a registered reward data set: rows of
jsonl / json / parquet files (one, or a folder of them), read by
:mod:`~lightrft.adapters.datasets.reward_sets.step_rows`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.reward_set import LoadedRewardSet, RewardSetOptions
from lightrft.adapters.datasets.reward_sets.step_rows import step_solutions
from lightrft.adapters.datasets.reward_sets.table_files import table_refs


def load_process_rewards(
    path: Path, renderer: PromptRenderer, options: RewardSetOptions
) -> LoadedRewardSet:
    """The step-labelled solutions of ``path`` (``renderer`` unused: texts stay as written)."""
    del renderer
    spec = replace(options.step_spec, on_bad_row=options.on_bad_row)
    refs, bad_lines = table_refs(path, (".jsonl", ".json", ".parquet"), options.on_bad_row)
    solutions, skipped = step_solutions(refs, spec)
    return LoadedRewardSet(solutions, skipped + bad_lines)
