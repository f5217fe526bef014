"""The rows of a data set given as one file or as a folder of shards.

Each file is read as every row loader of this package reads one (:func:`~lightrft.adapters.
datasets.hf_prompt_dataset.file_row_refs`: ``.jsonl`` / ``.json`` / ``.parquet``, rows named
``<file> row <i>``, relative media paths from the file's folder); a folder is read as its
files of the accepted suffixes, in name order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lightrft.adapters.datasets.bad_rows import BadRowPolicy
from lightrft.adapters.datasets.hf_prompt_dataset import file_row_refs
from lightrft.adapters.datasets.prompt_rows import RowRef


def data_files(
    path: Path,
    suffixes: tuple[str, ...],
    *,
    recursive: bool = False,
    keep: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """``path`` itself (a file), or its files ending in ``suffixes`` that ``keep`` accepts
    (a folder)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such data file or folder: {path}")
    found = path.rglob("*") if recursive else path.iterdir()
    files = sorted(
        p
        for p in found
        if p.is_file() and p.suffix.lower() in suffixes and (keep is None or keep(p))
    )
    if not files:
        raise ValueError(f"{path} holds no {' / '.join(suffixes)} files")
    return files


def table_refs(
    path: Path,
    suffixes: tuple[str, ...],
    on_bad_row: BadRowPolicy,
    *,
    recursive: bool = False,
    keep: Callable[[Path], bool] | None = None,
) -> tuple[list[RowRef], int]:
    """The rows of every data file of ``path`` and the bad lines skipped reading them."""
    refs: list[RowRef] = []
    skipped = 0
    for file in data_files(path, suffixes, recursive=recursive, keep=keep):
        file_refs, bad_lines = file_row_refs(file, on_bad_row)
        refs.extend(file_refs)
        skipped += bad_lines
    return refs, skipped
