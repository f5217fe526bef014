"""Directories of dataset splits: which file(s) hold the split a run reads.

Two layouts are read:

- split files, as the original LightRFT's and verl's preprocessors write them
  (``train.parquet``, ``test.parquet``; also ``.jsonl`` / ``.json`` / ``.arrow``, shards named
  ``train-00000-of-00002.parquet``, directly in the directory or in its ``data/`` folder);
- a ``DatasetDict.save_to_disk`` directory, one saved dataset folder per split.

A ``Dataset.save_to_disk`` directory (one dataset, no splits) and a file are read as they are.
"""

from __future__ import annotations

from pathlib import Path

SPLIT_FILE_SUFFIXES = (".parquet", ".jsonl", ".json", ".arrow")


class SplitNotFoundError(ValueError):
    """A directory that holds no file (or saved folder) of the split asked for."""


def is_saved_dataset(directory: Path) -> bool:
    """Whether ``directory`` was written by ``save_to_disk`` (a dataset or a DatasetDict)."""
    return any((directory / name).exists() for name in ("state.json", "dataset_dict.json"))


def split_paths(path: Path, split: str) -> list[Path]:
    """What to read for ``split`` of ``path`` (see the module docstring): the path itself, a
    DatasetDict's split folder, or the split's files in name order (shards in order)."""
    if not path.is_dir():
        return [path]
    if (path / "dataset_dict.json").exists():
        if not is_saved_dataset(path / split):
            found = sorted(p.name for p in path.iterdir() if is_saved_dataset(p))
            raise SplitNotFoundError(f"{path} has splits {found}, not {split!r}")
        return [path / split]
    if is_saved_dataset(path):
        return [path]
    files = _split_files(path)
    if not files:
        raise SplitNotFoundError(
            f"{path} is not a directory written by save_to_disk and holds no split files "
            f"(train.parquet, test.jsonl, ...; also under data/)"
        )
    chosen = sorted(f for f in files if _split_of(f) == split)
    if not chosen:
        found = sorted({_split_of(f) for f in files})
        raise SplitNotFoundError(
            f"{path} holds no {split!r} split ({split}.parquet, {split}.jsonl, ... or "
            f"{split}-00000-of-0000N shards); splits found: {found}"
        )
    kinds = {f.suffix.lower() for f in chosen}
    if len(kinds) > 1:
        raise ValueError(f"{path}: split {split!r} mixes file types {sorted(kinds)}; keep one")
    return chosen


def _split_files(directory: Path) -> list[Path]:
    folders = [directory, directory / "data"]
    return [
        f
        for folder in folders
        if folder.is_dir()
        for f in folder.iterdir()
        if f.is_file() and f.suffix.lower() in SPLIT_FILE_SUFFIXES
    ]


def _split_of(file: Path) -> str:
    """``train`` for ``train.parquet`` and ``train-00000-of-00002.parquet``."""
    return file.stem.split("-", 1)[0]
