"""``HfPromptDataset``: the ``PromptSource`` port over local files, read with HF ``datasets``.

Accepted paths: ``.jsonl`` / ``.json`` (JSON lines or one JSON array), ``.parquet``,
``.arrow`` files, directories written by ``Dataset.save_to_disk`` /
``DatasetDict.save_to_disk`` (read with ``load_from_disk``; ``split`` picks the split of a
``DatasetDict``), and directories of split files (``train.parquet``, ``test.jsonl`` ...:
``split`` picks the files, :mod:`~lightrft.adapters.datasets.split_files`). Nothing is ever fetched from the Hugging Face hub. All rows are read,
rendered and tokenized when the dataset is built (see :mod:`prompt_rows`), so ``len`` is
exact and ``stats`` tells what was skipped, dropped or truncated. Media columns of the HF
``Image`` / ``Audio`` features are read as stored and decoded row by row here
(:mod:`~lightrft.adapters.datasets.media_features`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from lightrft.adapters.datasets.bad_rows import BadRowError, BadRowPolicy, BadRows, with_bad_lines
from lightrft.adapters.datasets.json_check import json_line_errors
from lightrft.adapters.datasets.media_features import undecoded_media
from lightrft.adapters.datasets.prepared_source import PreparedPromptSource
from lightrft.adapters.datasets.prompt_rows import (
    PreparedPrompt,
    RowRef,
    RowSpec,
    prepare_prompts,
)
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.split_files import is_saved_dataset, split_paths

PathLike = str | os.PathLike[str]

FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".arrow": "arrow"}


class Table(NamedTuple):
    """A ``datasets.Dataset`` and the bad JSON-lines lines left out of it: counted
    (``skipped_lines``, ``"skip"``) or to be reported with the bad rows (``bad_lines``,
    ``defer_bad_lines``); ``lines``: each row's line number when lines were left out (the
    rows after one are numbered without it)."""

    rows: Any
    skipped_lines: int = 0
    bad_lines: tuple[BadRowError, ...] = ()
    lines: tuple[int, ...] = ()

    def where(self, file: Path, index: int) -> str:
        """How a row error names row ``index`` of ``file`` (its line too, when lines were
        left out before it)."""
        line = f" (line {self.lines[index]})" if self.lines else ""
        return f"{file} row {index}{line}"


def load_table(path: PathLike, *, split: str = "train", cache_dir: PathLike | None = None) -> Any:
    """One ``datasets.Dataset`` from a local file or a ``save_to_disk`` directory."""
    return read_table(path, split=split, cache_dir=cache_dir).rows


def read_table(
    path: PathLike,
    *,
    split: str = "train",
    cache_dir: PathLike | None = None,
    on_bad_row: BadRowPolicy = "error",
    defer_bad_lines: bool = False,
) -> Table:
    """:func:`load_table`; under ``on_bad_row="skip"`` a JSON-lines file's bad lines (not
    UTF-8, not JSON, not an object) are left out and counted instead of refused (the rows
    after one are then numbered without it). ``defer_bad_lines`` (under ``"error"``): they
    are left out too and returned in ``bad_lines``, for the loader to name them in one
    error with the bad rows (:func:`~bad_rows.with_bad_lines`)."""
    import datasets

    file = Path(path)
    if file.is_dir():
        if not any((file / name).exists() for name in ("state.json", "dataset_dict.json")):
            raise ValueError(f"{file} is not a directory written by save_to_disk")
        loaded = datasets.load_from_disk(str(file))
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise ValueError(f"{file} has splits {sorted(loaded)}, not {split!r}")
            loaded = loaded[split]
        with _no_progress_bars(datasets):
            return Table(undecoded_media(loaded))
    if not file.is_file():
        raise FileNotFoundError(f"no such prompt file: {file}")
    builder = FILE_BUILDERS.get(file.suffix.lower())
    if builder is None:
        raise ValueError(f"{file}: unsupported file type; use one of {sorted(FILE_BUILDERS)}")
    errors = json_line_errors(file) if builder == "json" else []
    deferred = on_bad_row == "error" and defer_bad_lines
    if errors and not deferred:
        log = BadRows(on_bad_row)
        for error in errors:
            log.add(error)
        log.check()  # raises under "error"
    numbers: tuple[int, ...] = ()
    if errors:
        good = _good_lines(file, {error.number for error in errors})
        numbers, rows = tuple(n for n, _ in good), [row for _, row in good]
        keys = list(dict.fromkeys(key for row in rows for key in row))  # every row's keys
        table = datasets.Dataset.from_dict({k: [row.get(k) for row in rows] for k in keys})
    else:
        table = _load_file(datasets, builder, file, cache_dir)
    if len(table) == 0:
        if deferred and errors:
            with_bad_lines(errors, lambda: None)  # raises: every line is a bad one
        raise ValueError(f"{file} holds no rows")
    if deferred:
        return Table(table, 0, tuple(errors), numbers)
    return Table(table, len(errors), (), numbers)


def file_row_refs(
    path: PathLike,
    on_bad_row: BadRowPolicy = "error",
    *,
    bad_lines: list[BadRowError] | None = None,
) -> tuple[list[RowRef], int]:
    """The rows of a file as refs (uid ``<stem>:<i>``, where ``<name> row <i>``; relative
    media paths start at the file's folder) and the number of bad lines skipped reading it
    (see :func:`read_table`). ``bad_lines``: under ``"error"``, the file's bad lines are
    appended there instead of raised, for :func:`~bad_rows.with_bad_lines`."""
    file = Path(path)
    table = read_table(file, on_bad_row=on_bad_row, defer_bad_lines=bad_lines is not None)
    if bad_lines is not None:
        bad_lines.extend(table.bad_lines)
    base = file if file.is_dir() else file.parent
    named = Path(file.name)
    refs = [
        RowRef(f"{file.stem}:{i}", table.where(named, i), dict(row), base_dir=base)
        for i, row in enumerate(table.rows)
    ]
    return refs, table.skipped_lines


def _good_lines(file: Path, bad: set[int]) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` of each good non-blank line."""
    with open(file, "rb") as f:
        return [
            (number, json.loads(raw))
            for number, raw in enumerate(f, start=1)
            if number not in bad and raw.strip()
        ]


@contextmanager
def _no_progress_bars(datasets: Any) -> Iterator[None]:
    """No bar for a local file (a data error comes first) or a media cast."""
    bars_were_off = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not bars_were_off:
            datasets.enable_progress_bars()


def _load_file(datasets: Any, builder: str, file: Path, cache_dir: PathLike | None) -> Any:
    with _no_progress_bars(datasets):
        try:
            table = datasets.load_dataset(
                builder,
                data_files=str(file),
                split="train",
                cache_dir=None if cache_dir is None else str(cache_dir),
            )
        except Exception as error:
            reason = str(error) or type(error).__name__
            raise ValueError(f"cannot read {file}: {reason}") from error
        return undecoded_media(table)


def _split_files_of(path: Path, split: str) -> list[Path]:
    """A directory of split files as its ``split`` files; anything else as it is."""
    if path.is_dir() and not is_saved_dataset(path):
        return split_paths(path, split)
    return [path]


class HfPromptDataset(PreparedPromptSource):
    """Prompt records from one or more local files (rows concatenated in the given order).

    ``uid`` is ``"<name>:<row>"`` (``"<name>:<file stem>:<row>"`` with several files); the
    record's ``metadata`` holds ``source``, ``where`` (file and row) and ``truncated_tokens``.
    """

    def __init__(
        self,
        paths: PathLike | Sequence[PathLike],
        tokenizer: Any,
        *,
        spec: RowSpec | None = None,
        prompt_format: PromptFormat | None = None,
        split: str = "train",
        name: str | None = None,
        cache_dir: PathLike | None = None,
    ) -> None:
        given = [Path(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
        if not given:
            raise ValueError("paths must name at least one file or directory")
        files = [f for path in given for f in _split_files_of(path, split)]
        self.spec = spec or RowSpec()
        self.renderer = PromptRenderer(tokenizer, prompt_format)
        self.name = name or given[0].stem
        read = [
            read_table(
                f,
                split=split,
                cache_dir=cache_dir,
                on_bad_row=self.spec.on_bad_row,
                defer_bad_lines=True,
            )
            for f in files
        ]
        self._tables = [table.rows for table in read]
        self._dirs = [f if f.is_dir() else f.parent for f in files]
        refs = self._row_refs(files, read)
        bad_lines = [error for table in read for error in table.bad_lines]
        self._prepared, stats = with_bad_lines(
            bad_lines, lambda: prepare_prompts(refs, self.renderer, self.spec, self.name)
        )
        lines = sum(table.skipped_lines for table in read)  # bad lines are skipped rows too
        self.stats = replace(
            stats, rows=stats.rows + lines, skipped_bad_rows=stats.skipped_bad_rows + lines
        )
        if not self._prepared:
            raise ValueError(f"no usable prompts in {[str(f) for f in files]}: {self.stats}")

    def _row_refs(self, files: list[Path], read: list[Table]) -> Iterator[RowRef]:
        several = len(files) > 1
        for table_index, (file, table) in enumerate(zip(files, read, strict=True)):
            prefix = f"{self.name}:{file.stem}" if several else self.name
            for row_index, row in enumerate(table.rows):
                yield RowRef(
                    uid=f"{prefix}:{row_index}",
                    where=table.where(file, row_index),
                    row=row,
                    position=(table_index, row_index),
                    base_dir=self._dirs[table_index],
                )

    def _media_ref(self, prepared: PreparedPrompt) -> RowRef:
        table_index, row_index = prepared.position
        row = self._tables[table_index][row_index]
        where = prepared.record.metadata["where"]
        return RowRef(prepared.record.uid, where, row, base_dir=self._dirs[table_index])
