"""The bad-row log shared by the loaders: every bad row named (up to a limit), or counted."""

from __future__ import annotations

import pytest

from lightrft.adapters.datasets.bad_rows import MAX_LISTED, BadRowError, BadRows, BadRowsError


def errors(n: int) -> list[BadRowError]:
    return [BadRowError(f"d.jsonl row {i}", "prompt", "missing key") for i in range(n)]


def test_one_bad_row_keeps_its_own_one_line_message() -> None:
    bad = BadRows("error")
    bad.add(errors(1)[0])
    with pytest.raises(BadRowsError) as info:
        bad.check()
    assert str(info.value) == "d.jsonl row 0: missing key 'prompt'"
    assert (info.value.where, info.value.key, info.value.count) == ("d.jsonl row 0", "prompt", 1)


def test_every_bad_row_is_named() -> None:
    bad = BadRows("error")
    for error in errors(3):
        bad.add(error)
    with pytest.raises(BadRowError) as info:  # still a BadRowError for existing handlers
        bad.check()
    assert str(info.value).splitlines() == [
        "3 bad rows:",
        "  d.jsonl row 0: missing key 'prompt'",
        "  d.jsonl row 1: missing key 'prompt'",
        "  d.jsonl row 2: missing key 'prompt'",
    ]


def test_past_the_limit_the_rest_are_counted() -> None:
    bad = BadRows("error")
    for error in errors(MAX_LISTED + 5):
        bad.add(error)
    with pytest.raises(BadRowsError) as info:
        bad.check()
    lines = str(info.value).splitlines()
    assert lines[0] == f"{MAX_LISTED + 5} bad rows:"
    assert len(lines) == 1 + MAX_LISTED + 1 and lines[-1] == "  ... and 5 more"
    assert lines[MAX_LISTED] == f"  d.jsonl row {MAX_LISTED - 1}: missing key 'prompt'"


def test_skip_mode_counts_and_a_clean_source_passes() -> None:
    bad = BadRows("skip")
    for error in errors(MAX_LISTED + 3):
        bad.add(error)
    assert bad.check() == MAX_LISTED + 3
    assert BadRows("error").check() == 0
    with pytest.raises(ValueError, match="on_bad_row must be error or skip, got 'ignore'"):
        BadRows("ignore")  # type: ignore[arg-type]
