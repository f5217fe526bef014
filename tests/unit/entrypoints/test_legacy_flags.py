"""The original LightRFT README's flag blocks, fed through `lightrft config show` as printed.

The blocks are copied from the README's "Key Configuration Parameters" (github.com/
opendilab/LightRFT, README.md), comments included: ``shlex`` drops them as a shell would.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import yaml

from lightrft.entrypoints.cli import main
from lightrft.entrypoints.config.loading import ConfigError, load_config

ALGORITHM_BLOCK = """
--advantage_estimator group_norm  # Advantage estimator: group_norm, reinforce, cpgd
--n_samples_per_prompt 8          # Number of samples per prompt
--max_epochs 1                    # Training epochs per episode
--num_episodes 3                  # Total training episodes
--kl_estimator k3                 # KL estimator type
--init_kl_coef 0.001              # KL penalty coefficient
"""

DISTRIBUTED_BLOCK = """
--fsdp                            # Enable FSDP
--zero_stage 3                    # DeepSpeed ZeRO Stage
--gradient_checkpointing          # Gradient checkpointing
--adam_offload                    # Adam optimizer offload
--bf16                            # BF16 mixed precision
"""

ENGINE_BLOCK = """
--rm_use_engine                   # Use inference engine (vLLM/SGLang)
--engine_mem_util 0.4             # Engine memory utilization
--engine_tp_size 1                # Engine tensor parallelism degree
--enable_engine_sleep             # Enable engine sleep mechanism
"""

# TBS=128 RBS=128 micro_train_batch_size=1 micro_rollout_batch_size=2, as flags
BATCH_BLOCK = """
--train_batch_size 128 --rollout_batch_size 128
--micro_train_batch_size 1 --micro_rollout_batch_size 2
"""


def words(block: str) -> list[str]:
    return shlex.split(block, comments=True)


def show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    status = main(["config", "show", "grpo", *args])
    out = capsys.readouterr()
    return status, (yaml.safe_load(out.out) if status == 0 else {}), out.err


def test_algorithm_block_runs(capsys: pytest.CaptureFixture[str]) -> None:
    status, config, err = show(capsys, *words(ALGORITHM_BLOCK))
    assert status == 0, err
    assert config["algorithm"]["advantage_estimator"] == "group_norm"
    assert config["rollout"]["n_samples_per_prompt"] == 8
    assert config["train"]["epochs"] == 1
    assert config["train"]["episodes"] == 3  # total_steps follows from the dataset's size
    assert config["algorithm"]["kl_estimator"] == "k3"
    assert config["algorithm"]["kl_coef"] == 0.001


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("reinforce", "reinforce_pp"), ("reinforce_baseline", "reinforce_pp_baseline")],
)
def test_openrlhf_estimator_names(name: str, canonical: str) -> None:
    config = load_config(algorithm="grpo", overrides=["--advantage_estimator", name])
    assert config.to_domain().algorithm.advantage_estimator in (name, canonical)
    from lightrft.domain.advantages import ADVANTAGE_ESTIMATORS

    assert ADVANTAGE_ESTIMATORS.canonical(name) == canonical


def test_distributed_block_is_fsdp2_with_bf16_and_checkpointing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, config, err = show(capsys, *words(DISTRIBUTED_BLOCK))
    assert status == 0, err
    # --adam_offload under --fsdp: the optimizer state only, outside the update (the phase
    # switching here); parameter offload is --fsdp_cpu_offload
    assert config["backend"]["strategy"] == {"type": "fsdp2", "cpu_offload": False}
    assert config["model"]["gradient_checkpointing"] is True
    assert config["model"]["dtype"] == "bf16"


@pytest.mark.parametrize(
    ("flags", "strategy"),
    [
        (["--zero_stage", "3"], {"type": "deepspeed", "zero_stage": 3, "cpu_offload": False}),
        (
            ["--zero_stage", "3", "--adam_offload"],
            {"type": "deepspeed", "zero_stage": 3, "cpu_offload": True},
        ),
        (["--adam_offload"], {"type": "deepspeed", "zero_stage": 2, "cpu_offload": True}),
        (["--fsdp"], {"type": "fsdp2", "cpu_offload": False}),
        # under FSDP the original's --adam_offload moves optimizer state to host memory
        # outside the update, which the phase switching here does by default
        (["--fsdp", "--adam_offload"], {"type": "fsdp2", "cpu_offload": False}),
        (["--fsdp", "--fsdp_cpu_offload"], {"type": "fsdp2", "cpu_offload": True}),
        (["--adam_offload", "backend.strategy=fsdp2"], {"type": "fsdp2", "cpu_offload": True}),
    ],
)
def test_strategy_flags(flags: list[str], strategy: dict[str, Any]) -> None:
    config = load_config(algorithm="grpo", overrides=flags)
    assert config.backend.strategy.model_dump() == strategy


def test_zero_stage_below_3_with_fsdp_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides=["--fsdp", "--zero_stage", "2"])
    assert "\n" not in str(err.value) and "backend.strategy=fsdp2" in str(err.value)


def test_offload_on_the_single_strategy_names_the_strategies_that_have_it() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides=["--adam_offload", "backend.strategy=single"])
    assert "cpu_offload is an option of the training strategy types deepspeed, fsdp2" in str(
        err.value
    )


def test_engine_block_is_a_vllm_engine(capsys: pytest.CaptureFixture[str]) -> None:
    status, config, err = show(capsys, *words(ENGINE_BLOCK))
    assert status == 0, err
    engine = config["rollout"]["engine"]
    assert engine["type"] == "vllm"
    assert engine["memory_fraction"] == 0.4 and engine["tensor_parallel_size"] == 1


def test_engine_options_with_the_hf_engine_name_the_engines_that_have_them() -> None:
    with pytest.raises(ConfigError, match="memory_fraction is an option of the rollout engine"):
        load_config(overrides=["--engine_mem_util", "0.4", "rollout.engine=hf"])


def test_bare_switches_and_their_settings() -> None:
    config = load_config(
        algorithm="grpo",
        overrides=[
            "--gradient_checkpointing",
            "--bf16",
            "--flash_attn",
            "--normalize_reward",
            "--enable_engine_sleep",
            "--fp8_rollout",
            "--enable_vllm_is_correction",
            "--rm_use_engine",
            "--packing_samples",
        ],
    )
    assert config.model.gradient_checkpointing and config.model.dtype == "bf16"
    assert config.model.attn_implementation == "auto"
    assert config.reward.normalize and config.rollout.fp8 and config.model.packing
    assert config.algorithm.tis_cap == 2.0  # OpenRLHF's default truncation threshold


def test_a_switch_takes_an_explicit_boolean() -> None:
    on = load_config(overrides=["--gradient_checkpointing", "true", "--bf16"])
    off = load_config(overrides=["--gradient_checkpointing=false"])
    assert on.model.gradient_checkpointing and not off.model.gradient_checkpointing


def test_is_correction_threshold_overrides_the_implied_cap() -> None:
    config = load_config(
        overrides=["--vllm_is_truncated_threshold", "5", "--enable_vllm_is_correction"]
    )
    assert config.algorithm.tis_cap == 5


def test_global_batch_sizes_are_divided_over_the_ranks(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "8")  # as under torchrun --nproc-per-node 8
    status, config, err = show(capsys, *words(BATCH_BLOCK), "--n_samples_per_prompt", "8")
    assert status == 0, err
    assert config["rollout"]["prompts_per_step"] == 16  # 128 prompts / 8 ranks
    assert config["train"]["mini_batch_size"] == 16  # 128 samples / 8 ranks
    assert config["train"]["micro_batch_size"] == 1  # per GPU in both projects
    assert config["rollout"]["forward_micro_batch_size"] == 2


def test_config_show_states_per_rank_and_global(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "grpo", "backend.nproc_per_node=2"]) == 0
    out = capsys.readouterr().out
    assert "# batch sizes: per rank; this run has 2 rank(s)" in out
    assert "rollout.prompts_per_step: 8 prompts per step per rank = 16 over all ranks" in out
    assert "--rollout_batch_size (global)" in out and "--train_batch_size (global)" in out


def test_a_global_size_the_ranks_do_not_divide_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ConfigError) as err:
        load_config(overrides=["--rollout_batch_size", "128"])
    assert "\n" not in str(err.value) and "rollout.prompts_per_step (per rank)" in str(err.value)


@pytest.mark.parametrize(
    ("flags", "missing"),
    [
        (["--enable_ema"], "no EMA copy"),
        (["--pretrain_data", "/data/ptx"], "no PTX"),
        (["--load_in_4bit"], "4-bit"),
        (["--aux_loss_coef", "0.01"], "MoE"),
    ],
)
def test_refused_flags_name_the_missing_capability(flags: list[str], missing: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides=flags)
    assert "\n" not in str(err.value) and missing in str(err.value)


def test_a_reward_model_path_is_one_scalar_reward_model() -> None:
    config = load_config(overrides=["--reward_pretrain", "/models/rm"])
    assert [s.model_dump()["path"] for s in config.reward.sources] == ["/models/rm"]
    assert config.reward.sources[0].type == "scalar_rm"


@pytest.mark.parametrize("flag", ["--bf16", "--flash_attn", "--adam_offload"])
def test_value_switches_take_false_too(flag: str) -> None:
    """EC LF17: ``--bf16=false``, ``--flash_attn=false`` and ``--adam_offload=false`` were
    refused (the value False reached dtype, attn_implementation and cpu_offload): each
    means the switch is off, the same config as without it."""
    default = load_config(overrides=[])
    for spelling in ([f"{flag}=false"], [flag, "false"]):
        off = load_config(overrides=spelling)
        assert off.model.dtype == default.model.dtype
        assert off.model.attn_implementation == default.model.attn_implementation
        assert off.backend.model_dump() == default.backend.model_dump()
    on = load_config(overrides=[flag])
    assert on.model_dump() != default.model_dump()
