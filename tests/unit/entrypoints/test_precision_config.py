"""model.dtype per strategy (fp32 master weights, fp16 refusal) and attn_implementation auto."""

from __future__ import annotations

import pytest
import structlog
import torch
from structlog.testing import capture_logs

from lightrft.adapters.hf.attention_choice import choose_attention
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.wiring.model_loaders import load_params

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("strategy", "trained", "inference"),
    [
        ("single", "bfloat16", "bfloat16"),
        ("fsdp2", "float32", "bfloat16"),
        ("deepspeed", "bfloat16", "bfloat16"),
    ],
)
def test_bf16_loads_the_trained_model_where_the_strategy_keeps_fp32_masters(
    strategy: str, trained: str, inference: str
) -> None:
    """single: fp32 copies in the optimizer; fsdp2: fp32 shards, bf16 compute (its policy);
    deepspeed: its own fp32 partitions. Models not trained load in bf16."""
    config = load_config(overrides=[f"backend.strategy={strategy}", "model.dtype=bf16"])
    assert load_params(config, CPU, train=True).dtype == trained
    assert load_params(config, CPU, train=False).dtype == inference


@pytest.mark.parametrize("strategy", ["fsdp2", "deepspeed"])
def test_fp16_with_a_sharded_strategy_is_refused_naming_the_keys(strategy: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides=[f"backend.strategy={strategy}", "model.dtype=fp16"])
    message = str(err.value)
    assert "model.dtype 'fp16'" in message and f"backend.strategy '{strategy}'" in message
    assert "model.dtype=bf16" in message and "backend.strategy=single" in message


def test_fp16_on_one_device_is_accepted() -> None:
    assert load_config(overrides=["model.dtype=fp16"]).model.dtype == "fp16"


def test_auto_attention_falls_back_to_sdpa_here_and_logs_why() -> None:
    config = load_config(overrides=["model.attn_implementation=auto", "model.dtype=bf16"])
    structlog.reset_defaults()  # an earlier test may have configured a WARNING level
    with capture_logs() as logs:
        params = load_params(config, CPU, train=True)
    assert params.attn_implementation == "sdpa"
    event = next(e for e in logs if e["event"] == "model.attention")
    assert event["chosen"] == "sdpa" and "flash_attention_2" in event["reason"]


def test_auto_attention_picks_flash_where_it_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "flash_attn" else real(name, *a),
    )
    cuda = torch.device("cuda")
    assert choose_attention("auto", cuda, "bf16").name == "flash_attention_2"
    assert choose_attention("auto", cuda, "fp32").name == "sdpa"  # no fp32 flash kernels
    assert choose_attention("auto", CPU, "bf16").name == "sdpa"
    assert choose_attention("auto", cuda, "bf16", dense_mask=True).name == "sdpa"
    assert choose_attention("eager", cuda, "bf16").name == "eager"


def test_explicit_flash_attention_still_names_the_alternatives() -> None:
    from lightrft.adapters.hf.attention_choice import check_attn_implementation

    with pytest.raises(ValueError, match="use 'sdpa', or 'auto'"):
        check_attn_implementation("flash_attention_2", CPU)
