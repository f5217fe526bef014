"""Requests to and completions from vLLM as plain data (runs without vLLM)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lightrft.adapters.model_parts.seeds import row_seed
from lightrft.adapters.vllm.translate import request_plan, sampling_kwargs, to_completion
from lightrft.domain.types import PromptRecord, SamplingParams


@dataclass
class _Lp:
    logprob: float


@dataclass
class _Out:
    token_ids: list[int]
    text: str
    finish_reason: str | None
    logprobs: list[dict[int, _Lp]] | None


def _prompts() -> list[PromptRecord]:
    return [PromptRecord("a", "x", (5, 6)), PromptRecord("b", "y", (7,))]


def test_sampling_kwargs_map_every_field() -> None:
    sampling = SamplingParams(
        n=4,
        temperature=0.7,
        top_p=0.9,
        top_k=20,
        min_p=0.05,
        max_new_tokens=33,
        stop_strings=("####",),
        stop_token_ids=(9, 10),
        seed=3,
        ignore_eos=True,
    )
    kwargs = sampling_kwargs(sampling, seed=123)
    assert kwargs == {
        "n": 1,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 20,
        "min_p": 0.05,
        "max_tokens": 33,
        "stop": ["####"],
        "stop_token_ids": [9, 10],
        "ignore_eos": True,
        "include_stop_str_in_output": True,
        "logprobs": 0,
        "seed": 123,
        "skip_special_tokens": True,
    }


def test_disabled_filters_and_no_stops() -> None:
    kwargs = sampling_kwargs(SamplingParams(), seed=None)
    assert kwargs["top_k"] == -1 and kwargs["stop"] is None and kwargs["stop_token_ids"] is None
    assert kwargs["seed"] is None and kwargs["ignore_eos"] is False


def test_fire_is_refused_with_the_field_name() -> None:
    with pytest.raises(ValueError, match="first_token_temperature"):
        sampling_kwargs(SamplingParams(first_token_temperature=2.0), seed=None)


def test_request_plan_is_grouped_with_per_sample_seeds() -> None:
    plan = request_plan(_prompts(), SamplingParams(n=3, seed=11))
    assert [i for i, _ in plan] == [0, 0, 0, 1, 1, 1]
    assert [kw["seed"] for _, kw in plan] == [
        row_seed(11, "a", 0),
        row_seed(11, "a", 1),
        row_seed(11, "a", 2),
        row_seed(11, "b", 0),
        row_seed(11, "b", 1),
        row_seed(11, "b", 2),
    ]
    assert len({kw["seed"] for _, kw in plan}) == 6
    unseeded = request_plan(_prompts(), SamplingParams(n=2))
    assert all(kw["seed"] is None for _, kw in unseeded)


def test_to_completion_takes_the_sampled_tokens_logprobs() -> None:
    out = _Out([4, 1], "hi", "stop", [{4: _Lp(-0.5)}, {1: _Lp(-1.25), 7: _Lp(-0.1)}])
    c = to_completion(2, out)
    assert (c.prompt_index, c.token_ids, c.text, c.finish_reason) == (2, (4, 1), "hi", "stop")
    assert c.logprobs == (-0.5, -1.25)


def test_to_completion_errors() -> None:
    with pytest.raises(ValueError, match="log-probs"):
        to_completion(0, _Out([4], "", "length", None))
    with pytest.raises(RuntimeError, match="abort"):
        to_completion(0, _Out([4], "", "abort", [{4: _Lp(-1.0)}]))
