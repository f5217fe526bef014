"""`lightrft samples` on a directory that does not exist (EC X07: it said the run logged no
samples) and on a samples.jsonl with bytes that are not UTF-8 (EC RD20: the codec's message,
no file or line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightrft.adapters.report.reading import read_jsonl
from lightrft.adapters.report.sample_filter import read_samples

ROW = b'{"step": 1, "prompt": "a", "response": "b"}\n'


def test_a_run_directory_that_does_not_exist_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"^run directory {tmp_path / 'nope'} does not"):
        read_samples(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        read_samples(tmp_path / "file")
    (tmp_path / "run").mkdir()
    with pytest.raises(FileNotFoundError, match="the run logged no samples"):
        read_samples(tmp_path / "run")


def test_a_line_that_is_not_utf8_is_named_and_a_torn_last_one_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_bytes(ROW + b"\n" + b'{"step": 2, "response": "\xff\xfe"}\n' + ROW)
    with pytest.raises(ValueError, match=f"^{path}:3 is not UTF-8 text \\(byte 25 of"):
        read_jsonl(path)
    path.write_bytes(ROW + b'{"step": 2, "prom\xe2\x82')  # cut inside a UTF-8 character
    assert read_jsonl(path) == [{"step": 1, "prompt": "a", "response": "b"}]
    path.write_bytes(ROW + b"\n{oops\n" + ROW)
    with pytest.raises(ValueError, match=f"^{path}:3 is not valid JSON"):
        read_jsonl(path)
