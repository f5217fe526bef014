"""Stop-string detection for the HF rollout engine (the token draws of a decode step are
:func:`lightrft.domain.sampling.next_tokens`)."""

from __future__ import annotations

from collections.abc import Sequence

from transformers.tokenization_utils_base import PreTrainedTokenizerBase


class StopStringMatcher:
    """Finds whether the text generated so far ends a stop string.

    Only a tail of the generated tokens is decoded at each step (enough tokens to spell the
    longest stop string even if some tokens decode to nothing), so the check costs the
    same at every step. The caller checks after every token, so a hit is always new.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, stop_strings: Sequence[str]) -> None:
        self._tokenizer = tokenizer
        self._stops = tuple(s for s in stop_strings if s)
        self._window = 2 * max((len(s) for s in self._stops), default=0) + 8

    def __bool__(self) -> bool:
        return bool(self._stops)

    def hit(self, token_ids: Sequence[int]) -> bool:
        """Whether the decoded tail of ``token_ids`` contains a stop string."""
        if not self._stops:
            return False
        text = self._tokenizer.decode(list(token_ids[-self._window :]), skip_special_tokens=True)
        return any(stop in text for stop in self._stops)
