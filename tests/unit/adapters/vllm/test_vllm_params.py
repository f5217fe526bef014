"""Engine settings, ``vllm.LLM`` arguments and the checks before start (run without vLLM)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from lightrft.adapters.vllm.checks import (
    VllmMemoryError,
    check_model,
    head_dim,
    is_memory_error,
    memory_error,
    require_vllm,
)
from lightrft.adapters.vllm.params import GIB, VllmEngineParams, llm_kwargs


def _config(hidden: int = 64, heads: int = 2, dtype: str | None = "float32") -> SimpleNamespace:
    return SimpleNamespace(
        hidden_size=hidden, num_attention_heads=heads, head_dim=None, dtype=dtype
    )


def test_llm_kwargs_on_cpu_default_kv_cache_and_no_sleep_mode() -> None:
    kwargs = llm_kwargs(VllmEngineParams("/m", dtype="float32", max_model_len=512), "cpu")
    assert kwargs["model"] == kwargs["tokenizer"] == "/m"
    assert kwargs["logprobs_mode"] == "processed_logprobs"
    assert kwargs["enable_sleep_mode"] is False
    assert kwargs["kv_cache_memory_bytes"] == GIB  # CPU_DEFAULT_KV_CACHE_GIB = 1.0
    assert kwargs["max_model_len"] == 512 and kwargs["dtype"] == "float32"
    assert "distributed_executor_backend" not in kwargs and "quantization" not in kwargs


def test_llm_kwargs_of_a_pooling_engine_read_the_last_token_without_activation() -> None:
    assert "runner" not in llm_kwargs(VllmEngineParams("/m"), "cpu")  # generate: vLLM's default
    kwargs = llm_kwargs(VllmEngineParams("/m", runner="pooling"), "cpu")
    assert kwargs["runner"] == "pooling"
    assert kwargs["pooler_config"] == {
        "task": "classify",
        "seq_pooling_type": "LAST",
        "use_activation": False,
    }


def test_llm_kwargs_on_cuda() -> None:
    params = VllmEngineParams(
        "/m",
        memory_fraction=0.4,
        external_launcher=True,
        tensor_parallel_size=2,
        quantization="fp8",
        kv_cache_gib=2.5,
    )
    kwargs = llm_kwargs(params, "cuda")
    assert kwargs["enable_sleep_mode"] is True
    assert kwargs["gpu_memory_utilization"] == 0.4
    assert kwargs["distributed_executor_backend"] == "external_launcher"
    assert kwargs["tensor_parallel_size"] == 2 and kwargs["quantization"] == "fp8"
    assert kwargs["load_format"] == "dummy"  # FP8: weights arrive with the first sync
    block = kwargs["hf_overrides"]["quantization_config"]["weight_block_size"]
    assert block == [128, 128]
    assert kwargs["kv_cache_memory_bytes"] == int(2.5 * GIB)
    assert "kv_cache_memory_bytes" not in llm_kwargs(VllmEngineParams("/m"), "cuda")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("memory_fraction", 0.0),
        ("memory_fraction", 1.5),
        ("kv_cache_gib", 0.0),
        ("max_model_len", 0),
        ("sleep_level", 3),
        ("sync_bucket_mib", 0.0),
        ("tensor_parallel_size", 0),
    ],
)
def test_bad_params_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        VllmEngineParams("/m", **{field: value})  # type: ignore[arg-type]


def test_bucket_bytes() -> None:
    assert VllmEngineParams("/m", sync_bucket_mib=0.5).sync_bucket_bytes == 2**19


def test_head_dim_from_config() -> None:
    assert head_dim(_config(64, 2)) == 32
    assert head_dim(SimpleNamespace(hidden_size=64, num_attention_heads=4, head_dim=80)) == 80


def test_cpu_refuses_small_heads_and_float16() -> None:
    with pytest.raises(ValueError, match="head_dim=16"):
        check_model(_config(32, 2), "float32", "cpu")
    with pytest.raises(ValueError, match="float16"):
        check_model(_config(), "float16", "cpu")
    with pytest.raises(ValueError, match="float16"):
        check_model(_config(dtype="float16"), "auto", "cpu")  # the checkpoint's dtype
    check_model(_config(), "auto", "cpu")
    check_model(_config(), "bfloat16", "cpu")
    check_model(_config(32, 2), "float16", "cuda")  # not judged on GPUs


def test_missing_vllm_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(ImportError, match="LIGHTRFT_EXTRAS=dev,deepspeed,vllm"):
        require_vllm()


def test_memory_errors_name_the_settings() -> None:
    raw = ValueError("Available memory on node 0 (1.0/24.0 GiB) on kv cache allocation is less")
    assert is_memory_error(raw) and is_memory_error(MemoryError())
    assert not is_memory_error(ValueError("unknown architecture"))
    error = memory_error(raw, "cpu")
    assert isinstance(error, VllmMemoryError)
    assert "rollout.engine.kv_cache_gib" in str(error) and "host RAM" in str(error)


def test_media_per_prompt_is_vllms_limit_mm_per_prompt() -> None:
    media = llm_kwargs(VllmEngineParams("m", media_per_prompt={"audio": 2}), "cpu")
    assert media["limit_mm_per_prompt"] == {"audio": 2}
    assert "limit_mm_per_prompt" not in llm_kwargs(VllmEngineParams("m"), "cpu")
    with pytest.raises(ValueError, match=r"media_per_prompt\['image'\] must be >= 0"):
        VllmEngineParams("m", media_per_prompt={"image": -1})


def test_image_bounds_reach_vllms_processor() -> None:
    bounds = {"min_pixels": 3136, "max_pixels": 12544}
    kwargs = llm_kwargs(VllmEngineParams("m", mm_processor_kwargs=bounds), "cpu")
    assert kwargs["mm_processor_kwargs"] == bounds
    assert "mm_processor_kwargs" not in llm_kwargs(VllmEngineParams("m"), "cpu")
