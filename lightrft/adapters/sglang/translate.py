"""Requests to and results from ``sglang.Engine.generate``, as plain data (no SGLang import).

A request is one prompt's token ids with a sampling dict; one request per completion, so
each sample carries its own ``sampling_seed`` (``row_seed(seed, uid, j)``, as the other
engines). A result is a dict with ``output_ids``, ``text`` and ``meta_info``; with
``return_logprob=True``, ``meta_info["output_token_logprobs"]`` holds one
``(logprob, token_id, text)`` triple per generated token. SGLang's log-probs are taken
after temperature scaling (verify on the installed version: GPU-only, unverified here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lightrft.adapters.engine_parts.engine_requests import (
    completion_requests,
    shared_sampling_options,
)
from lightrft.domain.types import Completion, FinishReason, PromptRecord, SamplingParams


def sampling_dict(sampling: SamplingParams, seed: int | None) -> dict[str, Any]:
    """SGLang's sampling parameters for one completion of ``sampling``."""
    params = shared_sampling_options(sampling, "sglang")
    params["max_new_tokens"] = sampling.max_new_tokens
    params["no_stop_trim"] = True  # keep a stop string in the text, as the other engines
    if seed is not None:
        params["sampling_seed"] = seed
    return params


def generate_request(
    prompts: Sequence[PromptRecord], sampling: SamplingParams
) -> tuple[list[int], dict[str, Any]]:
    """(owner prompt index per completion, keyword arguments of ``Engine.generate``)."""
    requests = completion_requests(prompts, sampling)
    owners = [i for i, _ in requests]
    input_ids = [list(prompts[i].prompt_token_ids) for i in owners]
    params = [sampling_dict(sampling, seed) for _, seed in requests]
    return owners, {"input_ids": input_ids, "sampling_params": params, "return_logprob": True}


def to_completion(prompt_index: int, result: Mapping[str, Any]) -> Completion:
    """A :class:`Completion` from one SGLang result dict."""
    meta = result["meta_info"]
    ids = tuple(int(t) for t in result["output_ids"])
    entries = meta.get("output_token_logprobs")
    if entries is None or len(entries) != len(ids):
        raise ValueError(
            f"SGLang returned {0 if entries is None else len(entries)} log-probs for "
            f"{len(ids)} tokens; the request must set return_logprob=True"
        )
    for (_, token, *_rest), expected in zip(entries, ids, strict=True):
        if int(token) != expected:
            raise ValueError(f"SGLang log-prob entry for token {token} where {expected} was output")
    logprobs = tuple(float(lp) for lp, *_ in entries)
    return Completion(prompt_index, ids, result["text"], _finish_reason(meta), logprobs)


def _finish_reason(meta: Mapping[str, Any]) -> FinishReason:
    reason = meta.get("finish_reason")
    kind = reason.get("type") if isinstance(reason, Mapping) else reason
    if kind in ("stop", "length"):
        return kind  # type: ignore[return-value]
    raise RuntimeError(f"SGLang finished a request with reason {reason!r} (expected stop/length)")
