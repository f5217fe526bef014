"""Config of the vLLM / SGLang engines, mismatch metrics, correction mode and FP8 rollout."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.wiring.engines import build_vllm_engine
from lightrft.entrypoints.wiring.registries import BuildContext


def test_vllm_shorthand_and_options() -> None:
    config = load_config(overrides=["rollout.engine=vllm"])
    assert config.rollout.engine.type == "vllm"
    assert config.rollout.engine.memory_fraction == 0.3  # type: ignore[attr-defined]
    full = load_config(
        overrides=[
            "rollout.engine={type: vllm, kv_cache_gib: 2, sleep_level: 2, max_model_len: 512}"
        ]
    )
    assert full.rollout.engine.sleep_level == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["rollout.engine={type: vllm, memory_fraction: 1.5}"], "memory_fraction"),
        (["rollout.engine={type: vllm, sleep_level: 3}"], "sleep_level"),
        (["rollout.engine={type: vllm, share_policy_weights: on}"], "share_policy_weights"),
        (["rollout.fp8=true"], "rollout.fp8=true needs rollout.engine=vllm"),
        (["rollout.engine=vllm", "rollout.first_token_temperature=2"], "first_token_temperature"),
        (["algorithm.correction_mode=icepop"], "correction_mode"),
    ],
)
def test_bad_engine_settings_name_the_key(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(overrides=overrides)
    assert message in str(info.value)


def test_mismatch_metrics_default_on_for_other_engines() -> None:
    assert not load_config().to_domain().rollout.measure_mismatch  # hf: same implementation
    assert load_config(overrides=["rollout.engine=vllm"]).to_domain().rollout.measure_mismatch
    off = load_config(overrides=["rollout.engine=vllm", "rollout.mismatch_metrics=false"])
    assert not off.to_domain().rollout.measure_mismatch


def test_correction_mode_reaches_the_loss_and_fp8_turns_correction_on() -> None:
    chosen = load_config(
        overrides=["algorithm.tis_cap=3", "algorithm.correction_mode=sequence_mask"]
    ).to_domain()
    loss = chosen.algorithm.resolved_loss
    assert (loss.tis_cap, loss.correction_mode) == (3.0, "sequence_mask")
    assert load_config().to_domain().algorithm.resolved_loss.tis_cap is None
    fp8 = load_config(overrides=["rollout.engine=vllm", "rollout.fp8=true"]).to_domain()
    assert fp8.algorithm.resolved_loss.tis_cap == 2.0  # DEFAULT_CORRECTION_CAP
    assert fp8.algorithm.resolved_loss.correction_mode == "token_truncate"


def test_fp8_rollout_is_refused_on_cpu_before_vllm_starts(tmp_path: Path) -> None:
    config = load_config(overrides=["rollout.engine=vllm", "rollout.fp8=true"])
    context = BuildContext(config, tmp_path, torch.device("cpu"), None, lambda: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="rollout.fp8=true needs vLLM on a CUDA device"):
        build_vllm_engine(config.rollout.engine, context)  # type: ignore[arg-type]
