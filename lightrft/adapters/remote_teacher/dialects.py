"""How a served teacher is asked for input-token log-probs, and how its answer is read, by
server: SGLang's native ``/generate`` and vLLM's ``/v1/completions``.

Both take token ids as they are (no text, so nothing is retokenised) and give one entry per
input token, the first without a log-prob (nothing predicts it):

- SGLang: ``{"input_ids": [[...], ...], "return_logprob": true, "logprob_start_len": 0,
  "sampling_params": {"max_new_tokens": 0, ...}}`` answers one result per sequence, whose
  ``meta_info.input_token_logprobs`` lists ``[logprob, token_id, text]`` (or bare numbers);
- vLLM: ``{"prompt": [[...], ...], "max_tokens": 1, "prompt_logprobs": 0}`` answers
  ``choices`` (by ``index``) whose ``prompt_logprobs`` lists ``None`` then, per token, a
  mapping ``{token_id: {"logprob": x, ...}}`` that holds the token itself (or bare numbers);
  a top-level ``prompt_logprobs`` / ``token_logprobs`` list (one sequence) is read too.

Where an entry names its token, the token must be the one sent: an answer for other ids is a
:class:`~lightrft.adapters.http_client.retry.CallFailed` (not retried).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lightrft.adapters.http_client.retry import CallFailed


@dataclass(frozen=True)
class Dialect:
    """One server's request and answer forms."""

    name: str
    ending: str
    """The path a URL of this server ends with."""
    request: Callable[[list[list[int]]], dict[str, Any]]
    results: Callable[[Any, int], list[Any]]
    entries: Callable[[Any], list[Any]]
    info_path: str
    """Where the server tells its model path (GET, relative to the server's root)."""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CallFailed(f"{where}: expected a finite log-prob, got {value!r}")
    return float(value)


def _entry_logprob(entry: Any, token: int, where: str) -> float:
    """The log-prob of ``token`` in one answer entry (a number, ``[logprob, id, ...]`` or a
    ``{id: {"logprob": x}}`` mapping)."""
    if isinstance(entry, list | tuple):
        if len(entry) > 1 and entry[1] is not None and int(entry[1]) != token:
            raise CallFailed(f"{where}: the answer is for token {entry[1]}, not the {token} sent")
        return _number(entry[0] if entry else None, where)
    if isinstance(entry, Mapping):
        found = entry.get(str(token), entry.get(token))
        if found is None:
            raise CallFailed(f"{where}: the answer has no log-prob of the token {token} sent")
        return _number(found.get("logprob") if isinstance(found, Mapping) else found, where)
    return _number(entry, where)


def input_logprobs(entries: Sequence[Any], ids: Sequence[int], where: str) -> list[float]:
    """The log-prob of every token of ``ids`` but the first, from one answer's entries."""
    if len(entries) != len(ids):
        raise CallFailed(f"{where}: {len(entries)} log-probs for the {len(ids)} tokens sent")
    return [
        _entry_logprob(e, t, f"{where}, token {i}")
        for i, (e, t) in enumerate(zip(entries, ids, strict=True))
        if i > 0
    ]


def _sglang_request(ids: list[list[int]]) -> dict[str, Any]:
    return {
        "input_ids": ids,
        "sampling_params": {"max_new_tokens": 0, "temperature": 0.0, "skip_special_tokens": False},
        "return_logprob": True,
        "logprob_start_len": 0,
    }


def _sglang_results(answer: Any, count: int) -> list[Any]:
    results = answer if isinstance(answer, list) else [answer]
    if len(results) != count:
        raise CallFailed(f"{len(results)} results for the {count} sequences sent")
    return results


def _sglang_entries(result: Any) -> list[Any]:
    meta = result.get("meta_info") if isinstance(result, Mapping) else None
    entries = meta.get("input_token_logprobs") if isinstance(meta, Mapping) else None
    if not isinstance(entries, list):
        raise CallFailed("a result without meta_info.input_token_logprobs (return_logprob off?)")
    return entries


def _vllm_request(ids: list[list[int]]) -> dict[str, Any]:
    return {"prompt": ids, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}


def _vllm_results(answer: Any, count: int) -> list[Any]:
    if isinstance(answer, Mapping) and "choices" in answer:
        choices = answer["choices"]
        if not isinstance(choices, list):
            raise CallFailed("choices is not a list")
        ordered = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, Mapping) else 0)
    else:
        ordered = answer if isinstance(answer, list) else [answer]
    if len(ordered) != count:
        raise CallFailed(f"{len(ordered)} results for the {count} sequences sent")
    return ordered


def _vllm_entries(result: Any) -> list[Any]:
    entries = None
    if isinstance(result, Mapping):
        entries = result.get("prompt_logprobs", result.get("token_logprobs"))
    if not isinstance(entries, list):
        raise CallFailed("a result without prompt_logprobs (prompt_logprobs not asked?)")
    return entries


DIALECTS: dict[str, Dialect] = {
    d.ending: d
    for d in (
        Dialect(
            "sglang",
            "/generate",
            _sglang_request,
            _sglang_results,
            _sglang_entries,
            "get_model_info",
        ),
        Dialect(
            "vllm", "/v1/completions", _vllm_request, _vllm_results, _vllm_entries, "v1/models"
        ),
    )
}
"""The servers by the path their URL ends with."""


def dialect_of(url: str) -> Dialect:
    """The dialect of ``url``; ValueError naming the known endings."""
    for ending, dialect in DIALECTS.items():
        if url.rstrip("/").endswith(ending):
            return dialect
    raise ValueError(
        f"teacher url {url}: expected one ending in {' or '.join(DIALECTS)} (SGLang's native "
        "generate, vLLM's completions)"
    )
