"""The shared JSON-lines writer: rows round-trip, the folder is made, nothing half-written."""

from __future__ import annotations

import json
from pathlib import Path

from lightrft.adapters.datasets.jsonl_files import write_jsonl


def test_rows_round_trip_into_a_new_folder_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    rows = [{"prompt": "2+2?", "reference": "4"}, {"prompt": "naïve ✓", "n": [1, 2]}]
    path = tmp_path / "new" / "rows.jsonl"
    assert write_jsonl(iter(rows), path) == path
    text = path.read_text(encoding="utf-8")
    assert [json.loads(line) for line in text.splitlines()] == rows
    assert "naïve ✓" in text  # non-ASCII kept as is
    assert sorted(p.name for p in path.parent.iterdir()) == ["rows.jsonl"]


def test_a_second_write_replaces_the_file(tmp_path: Path) -> None:
    path = write_jsonl([{"a": 1}, {"a": 2}], tmp_path / "rows.jsonl")
    write_jsonl([{"b": 3}], path)
    assert path.read_text() == '{"b": 3}\n'
