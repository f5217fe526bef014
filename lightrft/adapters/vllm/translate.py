"""Requests to and results from vLLM's offline API, as plain data (no vLLM import here).

One request per completion: prompt i's sample j is request ``i * n + j`` with ``n=1`` and,
when ``SamplingParams.seed`` is set, its own seed ``row_seed(seed, uid, j)``, so a
completion does not depend on the batch it was drawn in (the HF engine uses the same
seeds; the streams differ, so the two engines' samples differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from lightrft.adapters.engine_parts.engine_requests import (
    completion_requests,
    shared_sampling_options,
)
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams


class LogprobEntry(Protocol):
    """vLLM's ``Logprob``: the value of one token."""

    logprob: float


class CompletionOutput(Protocol):
    """The fields of vLLM's ``CompletionOutput`` that completions are made of."""

    token_ids: Sequence[int]
    text: str
    finish_reason: str | None
    logprobs: Sequence[dict[int, LogprobEntry]] | None


def sampling_kwargs(sampling: SamplingParams, seed: int | None) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for one completion of ``sampling``.

    ``logprobs=0`` returns the sampled token's log-prob only. A stop string stays in the
    text (``include_stop_str_in_output``), as with the HF engine; EOS ends a completion and
    is kept in its token ids.
    """
    return {
        **shared_sampling_options(sampling, "vllm"),
        "max_tokens": sampling.max_new_tokens,
        "include_stop_str_in_output": True,
        "logprobs": 0,
        "seed": seed,
    }


def request_plan(
    prompts: Sequence[PromptRecord], sampling: SamplingParams
) -> list[tuple[int, dict[str, Any]]]:
    """(prompt index, sampling kwargs) of every completion, grouped: prompt i owns
    [i*n, (i+1)*n)."""
    return [
        (i, sampling_kwargs(sampling, seed)) for i, seed in completion_requests(prompts, sampling)
    ]


def to_completion(prompt_index: int, output: CompletionOutput) -> Completion:
    """A :class:`Completion` from one vLLM output, with the sampled tokens' log-probs."""
    reason = _finish_reason(output.finish_reason)
    ids = tuple(int(t) for t in output.token_ids)
    if output.logprobs is None:
        raise ValueError("vLLM returned no log-probs; the request must set logprobs=0")
    logprobs = tuple(
        float(entries[token].logprob) for token, entries in zip(ids, output.logprobs, strict=True)
    )
    return Completion(prompt_index, ids, output.text, reason, logprobs)


def _finish_reason(reason: str | None) -> FinishReason:
    if reason == "stop":
        return "stop"
    if reason == "length":
        return "length"
    raise RuntimeError(f"vLLM finished a request with reason {reason!r} (expected stop/length)")
