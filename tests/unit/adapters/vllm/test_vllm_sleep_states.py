"""The CUDA sleep sequence of ``VllmRolloutEngine`` against a recording stand-in for
``vllm.LLM`` (the real sleep mode needs a GPU: that path is unverified here).

Expected order for a level-2 cycle: sleep(level=2); wake_up(tags=["weights"]); weights
reloaded in buckets; prefix cache reset; wake_up(tags=["kv_cache"]) at the next generate.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from lightrft.adapters.vllm import VllmEngineParams, VllmRolloutEngine
from lightrft.domain.types import PromptRecord, SamplingParams


class RecordingLlm:
    """Records the calls the engine makes; ``generate`` answers one token per request."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def sleep(self, level: int) -> None:
        self.calls.append(("sleep", level))

    def wake_up(self, tags: list[str]) -> None:
        self.calls.append(("wake_up", tuple(tags)))

    def collective_rpc(self, method: str, kwargs: dict[str, Any]) -> None:
        names = tuple(name for name, _ in kwargs["weights_iterator"])
        self.calls.append((method, names))
        self.dtypes = [t.dtype for _, t in kwargs["weights_iterator"]]

    def reset_prefix_cache(self) -> None:
        self.calls.append(("reset_prefix_cache", None))

    def generate(self, requests: list[Any], params: list[Any], use_tqdm: bool) -> list[Any]:
        self.calls.append(("generate", len(requests)))
        lp = {3: SimpleNamespace(logprob=-0.5)}
        out = SimpleNamespace(token_ids=[3], text="x", finish_reason="length", logprobs=[lp])
        return [SimpleNamespace(outputs=[out]) for _ in requests]


def _engine(level: int) -> tuple[VllmRolloutEngine, RecordingLlm]:
    llm = RecordingLlm()
    params = VllmEngineParams("/unused", sleep_level=level, sync_bucket_mib=1e-5)  # ~10 bytes
    return VllmRolloutEngine(params, "cuda", llm=llm), llm


WEIGHTS = [
    ("module.model.layers.0.q.weight", torch.zeros(4)),
    ("module.model.layers.0.k.weight", torch.zeros(4)),
    ("module.lm_head.weight", torch.zeros(4)),
]


def test_level2_cycle_is_staged() -> None:
    engine, llm = _engine(2)
    assert engine.sleep_frees_memory
    engine.sleep()
    engine.wake_up()
    assert engine.is_awake
    with pytest.raises(RuntimeError, match="level-2 sleep"):
        engine.generate([PromptRecord("a", "a", (1,))], SamplingParams(max_new_tokens=1))
    engine.load_weights(iter(WEIGHTS))
    assert llm.calls == [
        ("sleep", 2),
        ("wake_up", ("weights",)),
        ("reload_weights", ("model.layers.0.q.weight", "model.layers.0.k.weight")),
        ("reload_weights", ("lm_head.weight",)),
        ("reset_prefix_cache", None),
    ]
    pytest.importorskip("vllm", reason="generate builds vllm.SamplingParams")
    llm.calls.clear()
    completions = engine.generate([PromptRecord("a", "a", (1,))], SamplingParams(n=2))
    assert llm.calls == [("wake_up", ("kv_cache",)), ("generate", 2)]
    assert [c.logprobs for c in completions] == [(-0.5,), (-0.5,)]


def test_level1_wake_needs_no_reload_and_sleep_is_idempotent() -> None:
    engine, llm = _engine(1)
    engine.sleep()
    engine.sleep()
    engine.wake_up()
    engine.wake_up()
    assert llm.calls == [("sleep", 1), ("wake_up", ("weights",))]
    assert engine.last_sleep_freed_memory is True and engine.sleeps == 1


def test_fp8_engine_waits_for_its_first_sync_and_receives_block_fp8() -> None:
    llm = RecordingLlm()
    params = VllmEngineParams("/unused", quantization="fp8")
    engine = VllmRolloutEngine(params, "cuda", llm=llm)
    with pytest.raises(RuntimeError, match="FP8 engine before its first sync"):
        engine.generate([PromptRecord("a", "a", (1,))], SamplingParams(max_new_tokens=1))
    engine.load_weights(iter([("model.layers.0.mlp.up_proj.weight", torch.ones(4, 4))]))
    assert llm.calls[0] == (
        "reload_weights",
        ("model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight_scale_inv"),
    )
    assert llm.dtypes == [torch.float8_e4m3fn, torch.float32]
