"""``rollout.engine: auto``: the rule, its config and its registration."""

from __future__ import annotations

import pytest

from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.wiring.engine_choice import choose_engine
from lightrft.entrypoints.wiring.registries import ENGINES


@pytest.mark.parametrize(
    ("device", "installed", "tokens", "chosen", "because"),
    [
        ("cuda", True, 1024, "vllm", "cuda, vllm installed, rollout.max_new_tokens 1024 >= 256"),
        ("cuda", True, 256, "vllm", ">= 256"),  # the threshold itself is long
        ("cuda", True, 255, "hf", "rollout.max_new_tokens 255 < long_generation_tokens 256"),
        ("cuda", False, 1024, "hf", "vllm is not installed"),
        ("npu", True, 4096, "hf", "device is npu, not cuda"),
    ],
)
def test_rule(device: str, installed: bool, tokens: int, chosen: str, because: str) -> None:
    choice = choose_engine(device, installed, tokens, long_from=256)
    assert choice.name == chosen
    assert because in choice.reason


@pytest.mark.parametrize("tokens", [16, 128, 4096])
def test_cpu_gets_the_default_hf_engine_at_any_length(tokens: int) -> None:
    choice = choose_engine("cpu", True, tokens, long_from=256)
    assert choice.name == "hf"
    assert "device is cpu, not cuda" in choice.reason


def test_auto_is_a_registered_engine_with_its_threshold() -> None:
    config = load_config(overrides=["rollout.engine={type: auto, long_generation_tokens: 512}"])
    assert config.rollout.engine.type == "auto"
    assert config.rollout.engine.long_generation_tokens == 512  # type: ignore[attr-defined]
    assert "auto" in ENGINES.names()


def test_int8_rollout_turns_mismatch_metrics_and_correction_on() -> None:
    settings = load_config(overrides=["rollout.engine={type: hf, quantization: int8}"]).to_domain()
    assert settings.rollout.measure_mismatch
    assert settings.algorithm.resolved_loss.tis_cap == 2.0  # DEFAULT_CORRECTION_CAP
    plain = load_config().to_domain()
    assert not plain.rollout.measure_mismatch and plain.algorithm.resolved_loss.tis_cap is None


def test_int8_rollout_cannot_share_the_policy_weights() -> None:
    from lightrft.entrypoints.config.loading import ConfigError

    config = load_config(overrides=["rollout.engine={type: hf, quantization: int8}"])
    assert not config.rollout.engine.shares_weights(config)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="quantization none"):
        load_config(
            overrides=["rollout.engine={type: hf, quantization: int8, share_policy_weights: on}"]
        )


def test_int8_rollout_syncs_are_not_checksummed() -> None:
    # the engine holds int8 tensors, not the float ones the trainer sends
    quantized = load_config(overrides=["rollout.engine={type: hf, quantization: int8}"])
    assert not quantized.rollout.off_policy().verify_weight_sync
    assert load_config().rollout.off_policy().verify_weight_sync
