"""structlog setup: rank 0 logs INFO, other torchrun ranks WARNING+; the run config's
``logging.json_logs`` can switch to JSON lines after the config is loaded."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
import structlog

from lightrft.entrypoints.logging_setup import apply_config_logging, configure_logging

MODULE_LOGGER = structlog.get_logger("test.module")  # taken before any configuration


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize(("rank", "expected"), [("0", ["info", "warn"]), ("3", ["warn"])])
def test_only_rank_zero_logs_info_under_torchrun(
    rank: str, expected: list[str], capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("RANK", rank)  # what torchrun sets in each worker
    configure_logging()  # the CLI passes no rank: it comes from the environment
    log = structlog.get_logger("t")
    log.info("info")
    log.warning("warn")
    assert [next(w for w in ("info", "warn") if w in line) for line in _lines(capsys)] == expected


def test_without_rank_variable_the_process_is_rank_zero(
    capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.delenv("RANK", raising=False)
    assert configure_logging().rank == 0
    structlog.get_logger("t").info("hello")
    assert len(_lines(capsys)) == 1


def test_explicit_rank_wins_and_a_bad_rank_variable_is_named(monkeypatch) -> None:
    monkeypatch.setenv("RANK", "2")
    assert configure_logging(rank=0).rank == 0
    monkeypatch.setenv("RANK", "two")
    with pytest.raises(ValueError, match="RANK"):
        configure_logging()


def test_config_json_logs_switches_to_json_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.delenv("RANK", raising=False)
    configure_logging(json_logs=False)  # the CLI, before the config is read
    MODULE_LOGGER.info("console.event", step=1)
    console = _lines(capsys)
    assert len(console) == 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(console[0])
    settings = apply_config_logging(json_logs=True)  # logging.json_logs: true in the config
    assert settings.json_logs
    MODULE_LOGGER.info("json.event", step=2)
    record = json.loads(_lines(capsys)[0])
    assert record["event"] == "json.event"
    assert record["step"] == 2
    assert record["level"] == "info"


def test_cli_flag_stays_on_when_the_config_says_false(
    capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.delenv("RANK", raising=False)
    configure_logging(json_logs=True)  # --json-logs
    assert apply_config_logging(json_logs=False).json_logs
    structlog.get_logger("t").info("still.json")
    assert json.loads(_lines(capsys)[0])["event"] == "still.json"


def test_reconfiguring_keeps_rank_and_level_and_is_idempotent(
    capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    first = configure_logging()
    assert apply_config_logging(json_logs=True) == apply_config_logging(json_logs=True)
    assert apply_config_logging(json_logs=True).rank == first.rank == 1
    log = structlog.get_logger("t")
    log.info("hidden")
    log.warning("shown")
    lines = _lines(capsys)
    assert [json.loads(line)["event"] for line in lines] == ["shown"]


def test_logs_follow_a_swapped_stderr_and_never_hit_a_closed_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    import structlog

    saved = structlog.get_config()
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    try:
        configure_logging(json_logs=True, rank=0)
        first.close()  # e.g. the capture of the command that configured logging ended
        second = io.StringIO()
        monkeypatch.setattr(sys, "stderr", second)
        structlog.get_logger("t").info("after.swap", k=1)
    finally:
        structlog.configure(**saved)
    assert '"event": "after.swap"' in second.getvalue()
