"""Preference rows: a pair with the same answer twice is a bad row; every bad row is named."""

from __future__ import annotations

import pytest

from lightrft.adapters.datasets.bad_rows import BadRowsError
from lightrft.adapters.datasets.preferences import PreferenceSpec, in_memory_preferences
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer

GOOD = {"prompt": "2+2?", "chosen": "The answer is 4.", "rejected": "5"}
SAME = {"prompt": "2+3?", "chosen": "The answer is 5.", "rejected": "The answer is 5."}
CHAT = [{"role": "user", "content": "2+2?"}]
SAME_CHAT = {
    "chosen": [*CHAT, {"role": "assistant", "content": "4"}],
    "rejected": [*CHAT, {"role": "assistant", "content": "4"}],
}
EMPTY = {"prompt": "x", "chosen": "", "rejected": "y"}


def read(rows: list[dict], on_bad_row: str = "error"):  # noqa: ANN201
    renderer = PromptRenderer(tiny_tokenizer(), PromptFormat(render="plain"))
    spec = PreferenceSpec(on_bad_row=on_bad_row)  # type: ignore[arg-type]
    return in_memory_preferences(rows, renderer, spec, name="prefs")


@pytest.mark.parametrize("row", [SAME, SAME_CHAT])
def test_identical_answers_are_a_bad_row(row: dict) -> None:
    with pytest.raises(BadRowsError) as info:
        read([GOOD, row])
    assert str(info.value) == (
        "prefs row 1: the same answer as the chosen one (no preference to learn) in 'rejected'"
    )
    pairs, skipped = read([GOOD, row], "skip")
    assert [p.uid for p in pairs] == ["prefs:0"] and skipped == 1


def test_answers_that_differ_only_in_case_are_kept() -> None:
    pairs, skipped = read([{**SAME, "rejected": "the answer is 5."}])
    assert len(pairs) == 1 and skipped == 0


def test_every_bad_row_is_named() -> None:
    with pytest.raises(BadRowsError) as info:
        read([GOOD, EMPTY, GOOD, SAME, {"prompt": "x", "chosen": "y"}])
    assert str(info.value).splitlines() == [
        "3 bad rows:",
        "  prefs row 1: empty response in 'chosen'",
        "  prefs row 3: the same answer as the chosen one (no preference to learn) in 'rejected'",
        "  prefs row 4: missing key 'rejected'",
    ]


def test_synthetic_hack_kinds_keep_the_format_but_not_the_answer() -> None:
    """``placeholder`` rejects the format with no number in it, ``preamble`` the right
    sentence after filler; the chosen answer is always exactly ``The answer is <answer>.``"""
    import re

    from lightrft.adapters.datasets.preferences import synthetic_preference_rows

    placeholder = synthetic_preference_rows(20, 3, kinds=("placeholder",))
    preamble = synthetic_preference_rows(20, 3, kinds=("preamble",))
    for row in placeholder:
        assert re.fullmatch(r"The answer is -?\d+\.", row["chosen"])
        assert row["rejected"].startswith("The answer is ")
        assert not re.search(r"\d", row["rejected"])
    for row in preamble:
        assert row["rejected"].endswith(row["chosen"]) and row["rejected"] != row["chosen"]
