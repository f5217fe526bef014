"""Math-Shepherd's label text read back into one token per step tag."""

from __future__ import annotations

import pytest

from lightrft.adapters.datasets.shepherd_labels import (
    LabelTextMismatch,
    first_difference,
    label_tokens,
    one_character,
    one_of,
)

PIECES = [
    "Q? Step 1: a ",
    "\nStep 2: b ",
]  # the input "Q? Step 1: a ки\nStep 2: b ки" cut at its tags


def test_tokens_and_where_the_rest_starts() -> None:
    text = "Q? Step 1: a +\nStep 2: b -\n"
    assert label_tokens(text, PIECES, one_of(["+", "-"])) == (["+", "-"], 26)
    # multi-character tokens; the first listed that the text holds is taken
    long = "Q? Step 1: a good\nStep 2: b bad"
    assert label_tokens(long, PIECES, one_of(["good", "bad"])) == (["good", "bad"], 31)
    assert label_tokens(text, [], one_of(["+"])) == ([], 0)


def test_first_place_that_does_not_read_as_the_input() -> None:
    with pytest.raises(LabelTextMismatch) as differs:
        label_tokens("Q? Step 1: a +\nStep 3: b -", PIECES, one_of(["+", "-"]))
    assert (differs.value.kind, differs.value.at) == ("differs", 20)  # "3" where "2" stood
    with pytest.raises(LabelTextMismatch) as no_token:
        label_tokens("Q? Step 1: a ?\nStep 2: b -", PIECES, one_of(["+", "-"]))
    assert (no_token.value.kind, no_token.value.at) == ("no_token", 13)
    with pytest.raises(LabelTextMismatch) as short:
        label_tokens("Q? Step 1: a +\nSte", PIECES, one_of(["+", "-"]))
    assert (short.value.kind, short.value.at) == ("differs", 18)  # where the text stops


def test_one_character_takes_whatever_stands_at_a_tag() -> None:
    assert label_tokens("Q? Step 1: a ?\nStep 2: b ", PIECES, one_character) == (["?", ""], 25)
    assert first_difference("abc", 1, "bc") is None and first_difference("abc", 1, "bd") == 2
