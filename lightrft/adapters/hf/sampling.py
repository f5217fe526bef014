"""Next-token distributions and draws for the HF rollout engine; stop-string detection.

Shape letters: N rows being generated, V vocabulary.

The distribution a token is drawn from, and whose log-prob the engine reports, is built in
this order (as in ``transformers`` and vLLM):

1. z = logits / temperature;
2. top-k, top-p, min-p in that order (:func:`lightrft.domain.sampling.filter_logits`, shared
   with the fake engine);
3. log-probs = log_softmax of the kept z (removed tokens get -inf).

So the reported log-prob is that of the filtered, renormalized distribution actually sampled
from. With no filter it equals the policy's log-prob at the same temperature. Greedy
decoding (temperature 0) takes the argmax and reports the plain log_softmax(logits)
(temperature 1, no filter): the policy's log-prob at temperature 1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

from lightrft.domain.sampling import filter_logits


@dataclass(frozen=True)
class TokenDistribution:
    """How one decoding step samples: temperature 0 means greedy."""

    temperature: float
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0


def sampling_logprobs(logits: Tensor, dist: TokenDistribution) -> Tensor:
    """Log-probs (N, V) of the distribution a token is drawn from (see module docstring).

    Shape: logits (N, V) -> (N, V) float32, -inf for filtered tokens.
    """
    z = logits.float()
    if dist.temperature == 0:
        return torch.log_softmax(z, dim=-1)
    kept = filter_logits(z / dist.temperature, top_k=dist.top_k, top_p=dist.top_p, min_p=dist.min_p)
    return torch.log_softmax(kept, dim=-1)


def draw(
    logprobs: Tensor,
    greedy: bool,
    generator: torch.Generator | Sequence[torch.Generator] | None,
) -> Tensor:
    """One token per row: argmax if ``greedy`` else a draw. Shape: (N, V) -> (N,) long.

    ``generator`` is one generator for the whole batch, or one per row (then each row's
    draws do not depend on which other rows share the batch). A draw is an inverse-CDF
    search: one uniform u per row, the token is the first whose cumulative probability
    exceeds u times the row's total (a filtered token, p = 0, adds no width and is never
    chosen). One uniform per row keeps the per-row streams cheap; the search over all rows
    is one vectorized call.
    """
    if greedy:
        return logprobs.argmax(dim=-1)
    n = logprobs.shape[0]
    device = logprobs.device
    if generator is None or isinstance(generator, torch.Generator):
        u = torch.rand(n, 1, generator=generator, device=device)
    else:
        if len(generator) != n:
            raise ValueError(f"got {len(generator)} generators for {n} rows")
        u = torch.cat([torch.rand(1, generator=g, device=device) for g in generator])[:, None]
    cdf = logprobs.exp().cumsum(dim=-1)  # [N, V] float32
    total = cdf[:, -1:]  # [N, 1]
    # u * total may round up to total; the float just below it still finds the last token
    # with p > 0 (searching the total itself would run past the end)
    target = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, target, right=True).squeeze(-1)  # [N]


def row_seed(seed: int, prompt_uid: str, sample: int) -> int:
    """A 63-bit seed for sample ``sample`` of prompt ``prompt_uid`` under base ``seed``.

    Stable across processes and Python versions (SHA-256, not ``hash``), so a completion is
    the same whatever the batch, the batch size or the data-parallel rank that draws it.
    """
    digest = hashlib.sha256(f"{seed}:{prompt_uid}:{sample}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


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
