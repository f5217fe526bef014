"""Where a dataset section's rows come from: its path (one file or directory, or several
datasets ``name:path,...``), the split of a directory, and how several datasets mix.

``data.<set>.split`` picks a directory's split (null: ``train`` for data.train, ``test`` for
data.eval); ``data.<set>.sampling_probs`` mixes several datasets by probability (seeded with
``data.<set>.seed``), else they are read one after another.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lightrft.adapters.datasets.data_mix import ConcatenatedPromptSource, mix_prompt_sources
from lightrft.adapters.datasets.data_specs import parse_data_specs
from lightrft.adapters.datasets.split_files import SplitNotFoundError, split_paths
from lightrft.domain.ports import PromptSource
from lightrft.entrypoints.config.sections import DatasetConfig


def split_of(dataset: DatasetConfig, section: str) -> str:
    """The split ``section`` (``data.train`` / ``data.eval``) reads from a directory."""
    if dataset.split is not None:
        return dataset.split
    return "test" if section.endswith(".eval") else "train"


def read_dataset(
    dataset: DatasetConfig,
    section: str,
    read_file: Callable[[Path, str | None], PromptSource],
    *,
    split_folders: bool = True,
) -> PromptSource:
    """The prompts of ``dataset.path``; ``read_file(path, name)`` reads one file or saved
    directory of the entry ``name:path`` (``name`` None for an unnamed path).
    ``split_folders=False``: a directory is given to ``read_file`` whole (a reader of
    published data-set layouts), not as its split's files."""
    if dataset.path is None:
        raise ValueError(f"{section}.path is not set")
    split = split_of(dataset, section)
    specs = parse_data_specs(dataset.path)
    sources = []
    for spec in specs:
        if not spec.path.exists():
            raise FileNotFoundError(f"dataset {spec.path} does not exist")
        try:
            paths = split_paths(spec.path, split) if split_folders else [spec.path]
        except SplitNotFoundError as error:
            raise SplitNotFoundError(f"{error}; set {section}.split") from None
        parts = [read_file(path, spec.name) for path in paths]
        sources.append(parts[0] if len(parts) == 1 else ConcatenatedPromptSource(parts))
    names = [spec.name for spec in specs]
    return mix_prompt_sources(sources, names, dataset.sampling_probs, seed=dataset.seed)
