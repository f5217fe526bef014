"""The original LightRFT's 12 RL example scripts' command lines (tests/helpers/
original_scripts.py) read with the original's meaning, and spot checks of that meaning."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lightrft.entrypoints.config import loading
from lightrft.entrypoints.config.legacy_flag_table import PENDING_KEYS
from lightrft.entrypoints.config.legacy_flags import CommandLine, FlagError, read_args
from lightrft.entrypoints.config.loading import ConfigError, load_config, parse_value
from tests.helpers.original_scripts import SCRIPTS, script_args


def paths(tmp_path: Path) -> dict[str, str]:
    prompts = tmp_path / "system_prompts.yaml"
    prompts.write_text("text-to-video: |\n  Judge two videos.\nimage-to-video: Judge.\n")
    return {
        "MODEL": str(tmp_path / "model"),
        "DATA": str(tmp_path / "data"),
        "OUT": str(tmp_path / "out"),
        "PROMPTS": str(prompts),
        "RM": str(tmp_path / "rm"),
    }


def read(args: list[str]) -> CommandLine:
    return read_args(args, parse_value)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_original_script_is_read(name: str, tmp_path: Path) -> None:
    line = read(script_args(name, **paths(tmp_path)))
    assert line.overrides["model.path"] == str(tmp_path / "model")
    assert line.overrides["logging.run_dir"] == str(tmp_path / "out")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_script_validates_but_for_the_keys_being_added(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key the script sets validates, except the keys other work adds (PENDING_KEYS:
    label_key, split, warmup_ratio, critic_lr ...) and the reward recipes."""
    monkeypatch.setenv("WORLD_SIZE", "1" if name == "r1_aqa" else "8")  # the scripts' GPUs
    line = read(script_args(name, **paths(tmp_path)))
    kept = {
        key: value
        for key, value in line.overrides.items()
        if key not in PENDING_KEYS and not key.startswith("reward.recipes.")
    }
    implied = {key: value for key, value in line.implied.items() if key not in PENDING_KEYS}
    filtered = CommandLine(
        overrides=kept, implied=implied, global_sizes=line.global_sizes, environment={}
    )
    monkeypatch.setattr(loading, "read_command_line", lambda args: filtered)
    algorithm = "ppo" if name == "ppo_geo3k" else "grpo"
    config = load_config(algorithm=algorithm, overrides=[])
    assert config.model.path == str(tmp_path / "model")


GSM8K_PROMPT_START = "A conversation between the User and Assistant. The User asks"


def test_gsm8k_means_what_it_meant(tmp_path: Path) -> None:
    line = read(script_args("gsm8k", **paths(tmp_path)))
    o = line.overrides
    # the label column names the reward recipe; the answer column is not touched
    assert o["data.train.label_key"] == "label"
    assert line.implied["data.eval.label_key"] == "label"  # under a file's data.eval: null
    assert "data.train.reference_key" not in o
    # a system prompt holding ": " is the text typed, not a YAML mapping
    prompt = o["data.train.system_prompt"]
    assert isinstance(prompt, str) and prompt.startswith(GSM8K_PROMPT_START)
    assert "like this: <think> reasoning process here </think>" in prompt
    assert "\\\\boxed{answer}" in prompt  # the two backslashes the script types
    # the eval split of the training data is the evaluation set
    assert o["data.eval.split"] == "test" and o["data.eval.path"] == str(tmp_path / "data")
    assert o["data.eval.max_samples"] == 1319 and o["eval.max_prompts"] == 1319
    # --fsdp --zero_stage 3 --adam_offload: FSDP2, optimizer state offloaded by the phases
    assert o["backend.strategy"] == "fsdp2" and "backend.strategy.cpu_offload" not in o
    # warm-up as a fraction, under the original's cosine schedule to 0.1 x the rate
    assert o["optim.warmup_ratio"] == 0.03 and o["optim.lr"] == 1e-6
    assert line.implied["optim.schedule"] == "cosine"
    assert line.implied["optim.min_lr_ratio"] == 0.1
    # W&B: the key and run name go to wandb's environment variables, not the config
    assert o["logging.trackers"] == ["jsonl", "wandb"]
    assert line.environment == {
        "WANDB_API_KEY": "WANDB_KEY",
        "WANDB_NAME": "lightrft-gsm8k-grpo-training-20260101_000000",
    }
    assert "WANDB_KEY" not in repr(o)
    # --freeze_prefix: the vision tower stays frozen; --text_only: a text run
    assert o["model.train_vision_tower"] is False and o["model.modality"] == "text"
    assert line.global_sizes == {
        "rollout.prompts_per_step": ("--rollout_batch_size", 128),
        "train.mini_batch_size": ("--train_batch_size", 128),
    }


def test_geo3k_keys_and_engine(tmp_path: Path) -> None:
    line = read(script_args("geo3k", **paths(tmp_path)))
    o = line.overrides
    assert o["data.train.images_key"] == "images" and o["algorithm.agg"] == "seq-mean-token-mean"
    assert o["rollout.engine"] == "sglang"
    # vLLM's image cap: the script runs SGLang, which ignores it in the original too
    assert "rollout.engine.media_per_prompt" not in o
    assert "model.modality" not in o  # vision-language comes from the checkpoint


def test_ppo_geo3k_critic_and_gae(tmp_path: Path) -> None:
    o = read(script_args("ppo_geo3k", **paths(tmp_path))).overrides
    assert o["algorithm.advantage_estimator"] == "gae" and o["optim.critic_lr"] == 9e-6
    assert o["backend.strategy.cpu_offload"] is True  # --fsdp_cpu_offload: parameters too
    assert o["algorithm.clip_eps_low"] == o["algorithm.clip_eps_high"] == 0.2


def test_reward_models_by_label(tmp_path: Path) -> None:
    o = read(script_args("prm_kg", **paths(tmp_path))).overrides
    rm = str(tmp_path / "rm")
    safety = {"type": "scalar_rm", "name": "rm_safety", "path": f"{rm}/safe_orm"}
    assert o["reward.recipes.safety"] == [safety]
    # knowledge, normal and general name one model: the source of the first label using it
    knowledge = {"type": "scalar_rm", "name": "rm_knowledge", "path": f"{rm}/knowledge_orm"}
    assert o["reward.recipes.general"] == o["reward.recipes.normal"] == [knowledge]
    assert o["data.train.reference_key"] == "chosen"
    assert o["rollout.engine.media_per_prompt"] == {"image": 1}  # vLLM (implied engine)


def test_named_datasets_with_probabilities() -> None:
    o = read(["--prompt_data", "a:/d/a.parquet,b:/d/b", "--prompt_data_probs", "0.7,0.3"])
    assert o.overrides["data.train.path"] == "a:/d/a.parquet,b:/d/b"
    assert o.overrides["data.train.sampling_probs"] == [0.7, 0.3]
    with pytest.raises(FlagError, match="3 numbers for 2 datasets"):
        read(["--prompt_data", "a:x,b:y", "--prompt_data_probs", "0.5,0.3,0.2"])


def test_eval_split_of_the_eval_data() -> None:
    o = read(["--prompt_data", "/d/train", "--eval_data", "/d/eval", "--eval_split", "val"])
    assert o.overrides["data.eval.path"] == "/d/eval" and o.overrides["data.eval.split"] == "val"


@pytest.mark.parametrize("text", ["a: b", "key: value, other: 1", "[not, a, list]", "1e-6", "true"])
def test_a_string_flag_stays_the_text_typed(text: str) -> None:
    o = read(["--system_prompt", text, "--input_key", text, "--wandb_project", text]).overrides
    assert o["data.train.system_prompt"] == text and o["data.train.input_key"] == text
    assert o["logging.wandb_project"] == text


def test_a_system_prompt_with_colons_validates() -> None:
    config = load_config(overrides=["--system_prompt", "Answer like this: <think> x"])
    assert config.data.train.system_prompt == "Answer like this: <think> x"


def test_system_prompt_path_of_one_prompt(tmp_path: Path) -> None:
    file = tmp_path / "prompt.yaml"
    file.write_text("'Think: then answer.'\n")  # a YAML string
    o = read(["--system_prompt_path", str(file)]).overrides
    assert o["data.train.system_prompt"] == "Think: then answer."
    literal = read(["--system_prompt_path", "Be brief."])
    assert literal.overrides["data.train.system_prompt"] == "Be brief."
    assert literal.implied["data.eval.system_prompt"] == "Be brief."


def test_several_problems_are_one_message_naming_all() -> None:
    with pytest.raises(FlagError) as err:
        read(["--no_such_flag", "1", "--other_unknown", "--enable_ema", "--eval_steps", "x"])
    lines = str(err.value).splitlines()
    assert len(lines) == 3
    assert "--no_such_flag" in lines[0] and "--other_unknown" in lines[0]
    assert any(line.startswith("--enable_ema") for line in lines)
    assert any(line.startswith("--eval_steps: expected a whole number") for line in lines)


def test_the_cli_reports_them_together(capsys: pytest.CaptureFixture[str]) -> None:
    from lightrft.entrypoints.cli import main

    assert main(["config", "show", "grpo", "--bogus_a", "--bogus_b", "--enable_ema"]) != 0
    err = capsys.readouterr().err
    assert "--bogus_a" in err and "--bogus_b" in err and "--enable_ema" in err


@pytest.mark.parametrize(
    ("flags", "key", "expected"),
    [
        (["--eval_steps", "-1"], "eval.every", None),
        (["--save_steps", "-1"], "checkpoint.every", None),
        (["--eval_steps", "20"], "eval.every", 20),
        (["--use_fire"], "rollout.first_token_temperature", 10.0),
        (["--use_fire", "--first_token_temperature", "5"], "rollout.first_token_temperature", 5.0),
        (["--high_entropy_token_ratio", "0.2"], "algorithm.high_entropy_fraction", 0.2),
        (["--use_gspo"], "algorithm.policy_loss", "gspo"),
        (["--use_gmpo"], "algorithm.policy_loss", "gmpo"),
        (["--use_cpg_loss"], "algorithm.policy_loss", "cpgd"),
        (["--clip_ratio_low", "3e-4"], "algorithm.clip_eps_low", 3e-4),
        (["--adam_betas", "0.9", "0.95"], "optim.betas", [0.9, 0.95]),
        (["--max_pixels", "282240"], "model.max_pixels", 282240),
        (["--fused_linear_logprob"], "model.fused_lm_head", "on"),
        (["--reward_clip", "5"], "reward.reward_clip", 5.0),
        (["--advantage_clip", "0"], "reward.advantage_clip", None),
        (["--load_checkpoint"], "checkpoint.resume", "auto"),
        (["--overlong_buffer"], "reward.overlong_buffer", 1024),
        (["--overlong_buffer", "--overlong_buffer_len", "256"], "reward.overlong_buffer", 256),
        (
            ["--remote_rm_url", "http://h:1"],
            "reward.sources",
            [{"type": "remote", "url": "http://h:1", "protocol": "original"}],
        ),
        (
            ["--remote_rm_url", "/x/reward_func.py"],
            "reward.sources",
            [{"type": "python", "function": "/x/reward_func.py", "convention": "openrlhf"}],
        ),
        (
            ["--advantage_estimator", "on_policy_distillation"],
            "algorithm.advantage_estimator",
            "opd",
        ),
        (["--use_tensorboard", "tb"], "logging.trackers", ["jsonl", "tensorboard"]),
        (["--ckpt_path", "/o"], "logging.run_dir", "/o"),
    ],
)
def test_flag_meanings(flags: list[str], key: str, expected: Any) -> None:
    o = read(flags).overrides
    assert o.get(key, "unset") == expected


def test_grm_vl_rl_trains_a_judge_with_prompts_by_task_type(tmp_path: Path) -> None:
    """The reward data set named in --prompt_data gives judge prompts, each with the system
    prompt of its task type from the YAML, scored by the original's <answer> verdict."""
    where = paths(tmp_path)
    o = read(script_args("grm_vl_rl", **where)).overrides
    assert o["data.train.path"] == f"rapidata-i2v:{where['DATA']}/train.parquet"
    assert o["data.train.preprocessor"] == "judge_pairs"
    assert o["data.train.system_prompt_file"] == where["PROMPTS"]
    assert o["reward.sources"] == [{"type": "judge_agreement", "verdict": "answer"}]
    assert o["data.eval"] is None  # the original's judge training evaluates nothing
    assert o["data.train.fps"] == 2.0 and o["data.train.max_videos"] == 2


def test_opd_reads_its_served_teacher(tmp_path: Path) -> None:
    """--remote_rm_url with on_policy_distillation is the teacher (an SGLang server), not a
    reward source."""
    o = read(script_args("opd", **paths(tmp_path))).overrides
    assert o["teacher.url"] == "http://127.0.0.1:13141/generate"
    assert o["algorithm.advantage_estimator"] == "opd" and "reward.sources" not in o


@pytest.mark.parametrize(
    "flags",
    [
        ["--first_token_temperature", "5"],  # only with --use_fire, as in the original
        ["--use_wandb", ""],  # an empty key: no W&B, as in the original
        ["--limit_mm_image_per_prompt", "4", "--engine_type", "sglang"],
        ["--logging_steps", "5", "--max_ckpt_mem", "160", "--print_replay_buffer_stats"],
    ],
)
def test_flags_with_nothing_to_set(flags: list[str]) -> None:
    line = read(flags)
    assert set(line.overrides) <= {"rollout.engine"} and line.environment == {}
    assert "rollout.engine.media_per_prompt" not in line.overrides


def test_a_file_without_evaluation_keeps_it_off(tmp_path: Path) -> None:
    """The evaluation set's copies of --input_key etc. go under the file."""
    file = tmp_path / "run.yaml"
    file.write_text("data:\n  eval: null\n")
    config = load_config(file, overrides=["--input_key", "question", "--prompt_max_len", "64"])
    assert config.data.eval is None and config.data.train.input_key == "question"
    assert load_config(overrides=["--input_key", "q"]).data.eval.input_key == "q"


def test_a_dotted_override_wins_over_the_flags() -> None:
    o = read(["--eval_split", "test", "--prompt_data", "/d", "data.eval.path=/e"]).overrides
    assert o["data.eval.path"] == "/e"


def test_differing_checkpoint_path_and_critic_are_refused() -> None:
    with pytest.raises(FlagError) as err:
        read(
            [
                "--save_path",
                "/a",
                "--ckpt_path",
                "/b",
                "--pretrain",
                "/m",
                "--critic_pretrain",
                "/c",
            ]
        )
    assert "--ckpt_path" in str(err.value) and "--critic_pretrain" in str(err.value)


def test_wandb_settings_reach_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("WANDB_API_KEY", "WANDB_NAME", "WANDB_RUN_GROUP", "WANDB_ENTITY"):
        monkeypatch.setenv(variable, "before")
    flags = ["--use_wandb", "k1", "--wandb_run_name", "r", "--wandb_group", "g", "--wandb_org", "o"]
    config = load_config(overrides=flags)
    assert config.logging.trackers == ["jsonl", "wandb"]
    assert [
        os.environ[v] for v in ("WANDB_API_KEY", "WANDB_NAME", "WANDB_RUN_GROUP", "WANDB_ENTITY")
    ] == [
        "k1",
        "r",
        "g",
        "o",
    ]


def test_the_original_gsm8k_script_is_not_refused_by_validation_for_its_prompt(
    tmp_path: Path,
) -> None:
    """The issue's first failure: the system prompt read as a YAML mapping."""
    args = script_args("gsm8k", **paths(tmp_path))
    at = args.index("--system_prompt")
    try:
        load_config(algorithm="grpo", overrides=args[at : at + 2])
    except ConfigError as exc:  # pragma: no cover - the message shows what went wrong
        pytest.fail(str(exc))
