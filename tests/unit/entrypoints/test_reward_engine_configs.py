"""``reward.sources[*].engine``: the choices equal the registries, bad settings name the key,
and what is decided before any engine starts (HF fallback, SGLang on a CPU). The vLLM
equality checks are in tests/unit/adapters/reward_models/test_reward_models_on_vllm.py."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
import torch
from structlog.testing import capture_logs

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.config.reward_model_configs import (
    EngineRmSection,
    GenerativeRmConfig,
    RmEngine,
    ScalarRmConfig,
)
from lightrft.entrypoints.wiring import reward_model_builders  # noqa: F401  (registers)
from lightrft.entrypoints.wiring.registries import JUDGE_ENGINES, SCALAR_RM_ENGINES, BuildContext


def source(**fields: object) -> list[str]:
    items = ", ".join(f"{k}: {v}" for k, v in fields.items())
    return [f"reward.sources=[{{{items}}}]"]


def context(tmp_path: Path) -> BuildContext:
    return BuildContext(load_config(), tmp_path, torch.device("cpu"), None, lambda: None)  # type: ignore[arg-type,return-value]


def test_engine_choices_are_the_registry_keys() -> None:
    assert set(EngineRmSection.engines) == set(get_args(RmEngine))
    assert set(JUDGE_ENGINES.names()) == set(GenerativeRmConfig.engines)
    assert set(SCALAR_RM_ENGINES.names()) == set(ScalarRmConfig.engines)
    assert set(ScalarRmConfig.engines) < set(get_args(RmEngine))  # SGLang cannot score one


def test_engine_defaults_to_hf_and_takes_its_options() -> None:
    default = load_config(overrides=source(type="scalar_rm", path="/rm")).reward.sources[0]
    assert default.engine == "hf"  # type: ignore[attr-defined]
    chosen = load_config(
        overrides=source(
            type="generative_rm", engine="vllm", engine_kv_cache_gib=0.5, engine_max_model_len=512
        )
    ).reward.sources[0]
    assert (chosen.engine, chosen.engine_kv_cache_gib, chosen.engine_max_model_len) == (  # type: ignore[attr-defined]
        "vllm",
        0.5,
        512,
    )
    assert chosen.engine_memory_fraction == 0.2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"type": "scalar_rm", "path": "/rm", "engine": "sglang"},
            "engine 'sglang' is not available for scalar_rm reward sources (LightRFT's SGLang "
            "adapter",
        ),
        ({"type": "generative_rm", "engine": "tpu"}, "reward.sources.0.engine"),
        (
            {"type": "scalar_rm", "path": "/rm", "engine_kv_cache_gib": 1},
            "engine_kv_cache_gib set but engine is 'hf'",
        ),
        (
            {"type": "generative_rm", "engine": "vllm", "engine_memory_fraction": 1.5},
            "engine_memory_fraction",
        ),
        ({"type": "generative_rm", "engine": "vllm", "engine_max_model_len": 0}, "max_model_len"),
    ],
)
def test_bad_engine_settings_name_the_key(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=source(**fields))
    assert message in str(info.value)


def test_a_causal_lm_directory_is_scored_on_hf_with_a_warning(
    tiny_dir: Path, tmp_path: Path
) -> None:
    section = ScalarRmConfig(path=str(tiny_dir), engine="vllm", engine_kv_cache_gib=0.0625)
    with capture_logs() as events:
        built = SCALAR_RM_ENGINES.get("vllm")(section, context(tmp_path))
    assert isinstance(built, HfScalarRewardModel)
    (warning,) = [e for e in events if e["event"] == "reward.engine_fallback"]
    assert warning["log_level"] == "warning" and warning["used"] == "hf"
    assert "LlamaForCausalLM is not a sequence classifier" in warning["reason"]


def test_an_sglang_judge_needs_cuda(tiny_dir: Path, tmp_path: Path) -> None:
    section = GenerativeRmConfig(path=str(tiny_dir), engine="sglang")
    with pytest.raises(ValueError, match="engine sglang needs a CUDA device"):
        JUDGE_ENGINES.get("sglang")(section, context(tmp_path), tiny_dir)
