"""SGLang adapter on CPU: request/response translation and the engine's call sequence
against a recording stand-in for ``sglang.Engine`` (the real engine is GPU-only and
unverified)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lightrft.adapters.model_parts.seeds import row_seed
from lightrft.adapters.sglang import SglangEngineParams, SglangRolloutEngine, start_sglang
from lightrft.adapters.sglang.translate import generate_request, sampling_dict, to_completion
from lightrft.domain.types import PromptRecord, SamplingParams

PROMPTS = [PromptRecord("a", "x", (5, 6)), PromptRecord("b", "y", (7,))]


def _result(ids: list[int], lps: list[float], reason: Any = "length") -> dict[str, Any]:
    entries = [(lp, t, None) for lp, t in zip(lps, ids, strict=True)]
    return {
        "text": "t",
        "output_ids": ids,
        "meta_info": {"finish_reason": reason, "output_token_logprobs": entries},
    }


class RecordingSglang:
    """Records calls; ``generate`` answers token 3 with log-prob -0.25 per request."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def generate(
        self, input_ids: list[list[int]], sampling_params: list[dict], return_logprob: bool
    ) -> list:  # noqa: E501
        self.calls.append(("generate", len(input_ids)))
        return [_result([3], [-0.25], {"type": "stop", "matched": 3}) for _ in input_ids]

    def update_weights_from_tensor(self, named_tensors: list, flush_cache: bool) -> None:
        self.calls.append(("update", tuple(n for n, _ in named_tensors)))

    def flush_cache(self) -> None:
        self.calls.append(("flush_cache", None))

    def release_memory_occupation(self, tags: list[str]) -> None:
        self.calls.append(("release", tuple(tags)))

    def resume_memory_occupation(self, tags: list[str]) -> None:
        self.calls.append(("resume", tuple(tags)))


def test_sampling_dict_maps_every_field() -> None:
    sampling = SamplingParams(
        temperature=0.5,
        top_p=0.9,
        top_k=4,
        min_p=0.1,
        max_new_tokens=7,
        stop_strings=("##",),
        stop_token_ids=(2,),
        ignore_eos=True,
    )
    assert sampling_dict(sampling, 99) == {
        "n": 1,
        "temperature": 0.5,
        "top_p": 0.9,
        "top_k": 4,
        "min_p": 0.1,
        "max_new_tokens": 7,
        "stop": ["##"],
        "stop_token_ids": [2],
        "ignore_eos": True,
        "skip_special_tokens": True,
        "no_stop_trim": True,
        "sampling_seed": 99,
    }
    assert "sampling_seed" not in sampling_dict(SamplingParams(), None)
    assert sampling_dict(SamplingParams(), None)["top_k"] == -1
    with pytest.raises(ValueError, match="first_token_temperature"):
        sampling_dict(SamplingParams(first_token_temperature=2.0), None)


def test_generate_request_groups_samples_with_their_seeds() -> None:
    owners, request = generate_request(PROMPTS, SamplingParams(n=2, seed=4))
    assert owners == [0, 0, 1, 1]
    assert request["input_ids"] == [[5, 6], [5, 6], [7], [7]]
    assert request["return_logprob"] is True
    seeds = [p["sampling_seed"] for p in request["sampling_params"]]
    assert seeds == [
        row_seed(4, "a", 0),
        row_seed(4, "a", 1),
        row_seed(4, "b", 0),
        row_seed(4, "b", 1),
    ]


def test_to_completion() -> None:
    c = to_completion(1, _result([4, 9], [-0.5, -1.5], {"type": "stop", "matched": 9}))
    assert (c.prompt_index, c.token_ids, c.finish_reason, c.logprobs) == (
        1,
        (4, 9),
        "stop",
        (-0.5, -1.5),
    )
    assert (
        to_completion(0, _result([4], [-0.1], {"type": "length", "length": 1})).finish_reason
        == "length"
    )
    with pytest.raises(ValueError, match="log-probs"):
        to_completion(0, {"text": "", "output_ids": [4], "meta_info": {"finish_reason": "length"}})
    with pytest.raises(ValueError, match="token 5"):
        to_completion(
            0,
            {
                "text": "",
                "output_ids": [4],
                "meta_info": {
                    "finish_reason": "length",
                    "output_token_logprobs": [(-1.0, 5, None)],
                },
            },
        )
    with pytest.raises(RuntimeError, match="abort"):
        to_completion(0, _result([4], [-0.1], {"type": "abort"}))


def test_engine_call_sequence_is_staged() -> None:
    fake = RecordingSglang()
    engine = SglangRolloutEngine(SglangEngineParams("/m", sync_bucket_mib=1e-5), engine=fake)
    engine.sleep()
    with pytest.raises(RuntimeError, match="asleep"):
        engine.generate(PROMPTS, SamplingParams())
    engine.wake_up()
    weights = [
        ("module.model.layers.0.q.weight", torch.zeros(4)),
        ("module.model.layers.0.k.weight", torch.zeros(4)),
        ("module.lm_head.weight", torch.zeros(4)),
    ]
    engine.load_weights(iter(weights))
    completions = engine.generate(PROMPTS, SamplingParams(n=2))
    assert fake.calls == [
        ("release", ("weights", "kv_cache", "cuda_graph")),
        ("resume", ("weights",)),
        ("update", ("model.layers.0.q.weight", "model.layers.0.k.weight")),
        ("update", ("lm_head.weight",)),
        ("flush_cache", None),
        ("resume", ("kv_cache", "cuda_graph")),
        ("generate", 4),
    ]
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1]
    assert engine.generate([], SamplingParams()) == []


def test_engine_params_and_cpu_refusal() -> None:
    kwargs = SglangEngineParams("/m", memory_fraction=0.4, context_length=512).engine_kwargs()
    assert kwargs["mem_fraction_static"] == 0.4 and kwargs["enable_memory_saver"] is True
    assert kwargs["context_length"] == 512
    with pytest.raises(ValueError, match="CUDA"):
        start_sglang(SglangEngineParams("/m"), "cpu")
