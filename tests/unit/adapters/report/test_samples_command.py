"""`lightrft samples`: filters by step, reward, finish reason and text; terminal output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from lightrft.adapters.report.sample_filter import SampleFilter
from lightrft.entrypoints.cli import main


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """``main`` configures logging onto pytest's captured stream; later tests must not log
    into it after it is closed."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


ROWS = [
    {"step": 1, "response": "#### 4", "reward": 1.0, "finish_reason": "stop"},
    {"step": 1, "response": "dunno", "reward": 0.0, "finish_reason": "length"},
    {"step": 2, "response": "#### 5", "reward": 0.5, "finish_reason": "stop"},
    {"step": 2, "response": "<script>", "reward": -1.0, "finish_reason": "stop"},
]


def write(run: Path) -> Path:
    run.mkdir()
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return run


@pytest.mark.parametrize(
    ("selection", "responses"),
    [
        (SampleFilter(), ["#### 4", "dunno", "#### 5", "<script>"]),
        (SampleFilter(step=1), ["#### 4", "dunno"]),
        (SampleFilter(step=-1), ["#### 5", "<script>"]),
        (SampleFilter(min_reward=0.5), ["#### 4", "#### 5"]),
        (SampleFilter(max_reward=0.0), ["dunno", "<script>"]),
        (SampleFilter(finish_reason="length"), ["dunno"]),
        (SampleFilter(contains="####", limit=1), ["#### 4"]),
    ],
)
def test_filters(selection: SampleFilter, responses: list[str]) -> None:
    assert [r["response"] for r in selection.select(ROWS)] == responses


def test_command_prints_blocks_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write(tmp_path / "run")
    assert main(["samples", str(run), "--last", "--min-reward", "0"]) == 0
    out = capsys.readouterr().out
    assert "step 2 | reward 0.5 | finish_reason stop" in out and "1 sample(s)" in out
    assert main(["samples", str(run), "--step", "1", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line)["response"] for line in lines] == ["#### 4", "dunno"]


def test_missing_samples_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["samples", str(tmp_path)]) == 2
    assert "no samples.jsonl in" in capsys.readouterr().err
