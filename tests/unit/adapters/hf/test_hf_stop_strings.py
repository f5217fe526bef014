"""The stop-string matcher reads the decoded tail of the generated tokens."""

from __future__ import annotations

from lightrft.adapters.hf.stop_strings import StopStringMatcher
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer


def test_stop_string_matcher_reads_the_tail() -> None:
    tok = tiny_tokenizer()
    matcher = StopStringMatcher(tok, ["</a>"])
    ids = tok("x" * 50 + "</a", add_special_tokens=False).input_ids
    assert matcher and not matcher.hit(ids)
    assert matcher.hit(ids + tok(">", add_special_tokens=False).input_ids)
    assert not StopStringMatcher(tok, []) and not StopStringMatcher(tok, []).hit(ids)
