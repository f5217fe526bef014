"""The original LightRFT's reward-model scripts' command lines (examples/srm_training/
run_srm_vl.sh, run_srm_al.sh, examples/grm_training/run_grm_vl.sh: their flags, paths
replaced by fixtures) through `lightrft rm train`: resolved with the original's meaning
(``--dry-run``), refused naming what is missing, and trained for a step on tiny random
text, image and audio backbones (7 s for both media backbones at load 3, 2026-11-29)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lightrft.adapters.reward_models import HfScalarRewardModel, RewardModelCard
from lightrft.adapters.reward_models.score_heads import HeadSpec
from lightrft.entrypoints.cli import main
from lightrft.entrypoints.roots.reward_model import saved_reward_model
from tests.helpers.tiny_multimodal import save_tiny_audio_model, save_tiny_vl_model, write_wav

INSTRUCTION = """You will act as an expert audio evaluator for text-to-audio generation.
Given a text prompt and a generated audio clip: {prompt}.
"""


def srm_flags(root: Path, model: Path, data: str) -> list[str]:
    """run_srm_al.sh's torchrun arguments (the launcher removed, paths replaced)."""
    out = str(root / "results" / "srm")
    return [
        "--pretrain", str(model), "--save_path", out, "--ckpt_path", out,
        "--train_batch_size", "32", "--micro_train_batch_size", "4", "--max_epochs", "5",
        "--lr_warmup_ratio", "0.0", "--prompt_max_len", "8196", "--zero_stage", "3", "--bf16",
        "--actor_learning_rate", "1e-5", "--train_data", data, "--eval_data", data,
        "--eval_steps", "500", "--gradient_checkpointing", "--save_steps", "100",
        "--max_ckpt_num", "5", "--use_tensorboard", "tensorboard/srm",
        "--use_wandb", "your_wandb_api_key", "--wandb_project", "lightrft-srm-al-training",
        "--wandb_run_name", "run", "--l2", "1.0e-4", "--flash_attn", "--loss_type", "hps",
        "--margin", "0.1", "--scale_for_train", "--pooling_method", "attn",
        "--heads_types", "preference", "--task_instruction", INSTRUCTION,
    ]  # fmt: skip


VL_EXTRA = ["--fps", "2.0", "--max_pixels", "282240"]

GRM_FLAGS = [
    "--train_batch_size", "8", "--micro_train_batch_size", "4", "--max_epochs", "5",
    "--lr_warmup_ratio", "0.0", "--prompt_max_len", "8196", "--generate_max_len", "512",
    "--fps", "2.0", "--max_pixels", "282240", "--zero_stage", "3", "--bf16",
    "--actor_learning_rate", "1e-5", "--eval_steps", "500", "--gradient_checkpointing",
    "--save_steps", "500", "--max_ckpt_num", "10", "--use_tensorboard", "tb/grm",
    "--l2", "1.0e-4", "--flash_attn", "--task_instruction", "Judge {prompt}",
]  # fmt: skip


def _rows(path: Path, n: int, **media: object) -> Path:
    rows = [
        {"prompt": f"{i} + 1 = ?", "chosen": f"The answer is {i + 1}.", "rejected": "no", **media}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(autouse=True)
def _keep_environment() -> object:  # --use_wandb KEY sets WANDB_API_KEY for the run
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _dry_run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["rm", "train", "--dry-run", *argv]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_srm_al_script_resolves_with_the_original_meaning(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = f"audio-alpaca:{_rows(tmp_path / 'train.json', 4)}"
    options = _dry_run(srm_flags(tmp_path, tiny_dir, data), capsys)
    train, heads = options["train"], options["heads"]
    assert isinstance(train, dict) and isinstance(heads, dict)
    assert options["model"] == str(tiny_dir)
    assert options["output"] == str(tmp_path / "results" / "srm")
    assert (options["strategy"], options["zero_stage"], options["dtype"]) == (
        "deepspeed",
        3,
        "bf16",
    )
    assert (options["lr"], options["weight_decay"], options["max_length"]) == (1e-5, 1e-4, 8196)
    assert options["trackers"] == ["wandb"]  # --use_tensorboard only without W&B, as there
    assert os.environ["WANDB_API_KEY"] == "your_wandb_api_key"
    assert os.environ["WANDB_NAME"] == "run"
    assert train["batch_size"] == 32 and train["micro_batch_size"] == 4 and train["epochs"] == 5
    assert (train["loss_type"], train["margin"], train["seed"]) == ("hps", 0.1, 42)
    assert (train["eval_every"], train["checkpoint_every"]) == (500, 100)
    assert heads == {
        "pooling": "attn", "probing_layer": -1, "heads": ["preference"], "head_arch": "mlp",
        "scale_for_train": True, "weights": [], "attn_heads": 4,
    }  # fmt: skip
    data_options = options["data"]
    assert isinstance(data_options, dict)
    assert data_options["data"] == data and data_options["task_instruction"] == INSTRUCTION


def test_srm_vl_script_is_accepted_unchanged(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = srm_flags(tmp_path, tiny_dir, str(_rows(tmp_path / "t.json", 4)))
    options = _dry_run([*argv, *VL_EXTRA], capsys)
    assert options["max_pixels"] == 282240
    data = options["data"]
    assert isinstance(data, dict)
    assert data["spec"]["frame_sampling"] == {"fps": 2.0, "max_frames": 16}
    options = _dry_run([*argv, "--fps", "0.5", "--max-frames", "4"], capsys)
    assert options["data"]["spec"]["frame_sampling"] == {"fps": 0.5, "max_frames": 4}  # type: ignore[index]


def test_grm_script_lists_every_problem_in_one_message(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = ["--pretrain", str(tiny_dir), "--save_path", str(tmp_path / "grm")]
    data = ["--train_data", f"hpdv3:{tmp_path / 'x.json'}", "--eval_data", str(tmp_path / "e")]
    assert main(["rm", "train", "--kind", "generative", *paths, *data, *GRM_FLAGS]) == 2
    err = capsys.readouterr().err
    for expected in (
        "--fps applies to --kind scalar, not generative",
        "--zero_stage applies to --kind scalar, not generative",
        "--l2 applies to --kind scalar, not generative",
        "--use_tensorboard applies to --kind scalar, not generative",
        "--task_instruction applies to --kind scalar, not generative",
    ):
        assert expected in err, err
    capsys.readouterr()
    kept = [f for f in GRM_FLAGS if f not in ("--bf16", "--flash_attn", "--gradient_checkpointing")]
    accepted = [
        "--train_batch_size", "8", "--micro_train_batch_size", "4", "--max_epochs", "5",
        "--prompt_max_len", "8196", "--generate_max_len", "512", "--actor_learning_rate",
        "1e-5", "--eval_steps", "500", "--save_steps", "500", "--bf16", "--flash_attn",
    ]  # fmt: skip
    assert set(accepted) - {"--bf16", "--flash_attn"} <= set(kept)
    options = _dry_run(["--kind", "generative", *paths, *data, *accepted], capsys)
    judge = options["judge"]
    assert isinstance(judge, dict) and judge["max_new_tokens"] == 512
    assert (options["batch_size"], options["max_length"], options["dtype"]) == (8, 8196, "bf16")


def test_unknown_and_refused_flags_come_together(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--pretrain", str(tiny_dir), "--save_path", str(tmp_path / "o"), "--bogus", "1"]
    assert main(["rm", "train", *argv, "--lora_dropout", "0.1", "--lr_warmup_ratio", "0.03"]) == 2
    err = capsys.readouterr().err
    assert "unknown option --bogus" in err
    assert "--lora_dropout: 0.1: no LoRA dropout in `rm train`" in err
    assert "--lr_warmup_ratio: 0.03: no learning-rate warm-up" in err


def _cpu_only(argv: list[str]) -> None:
    """Drops DeepSpeed, bf16 and W&B from ``argv`` (not for a CPU test)."""
    for flag, words in (("--zero_stage", 2), ("--bf16", 1), ("--use_wandb", 2)):
        at = argv.index(flag)
        del argv[at : at + words]


def _train_step(argv: list[str], out: Path) -> HfScalarRewardModel:
    _cpu_only(argv)
    assert main(["rm", "train", *argv, "--total-steps", "1", "--eval-fraction", "0.5"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 1 and 0.0 <= summary["eval/accuracy"] <= 1.0
    card = RewardModelCard.load(out / "model")
    assert card is not None and card.heads == HeadSpec(
        pooling="attn", probing_layer=-1, heads=("preference",), head_arch="mlp",
        scale_for_train=True,
    )  # fmt: skip
    return saved_reward_model(out / "model", micro_batch_size=4)  # as `rm eval` loads it


def test_srm_script_trains_a_step_on_a_text_backbone(tiny_dir: Path, tmp_path: Path) -> None:
    data = f"preferences:{_rows(tmp_path / 'train.json', 32)}"
    argv = srm_flags(tmp_path, tiny_dir, data)
    argv[argv.index("--eval_data") + 1] = str(_rows(tmp_path / "held.json", 4))
    rm = _train_step(argv, tmp_path / "results" / "srm")
    assert rm.head_names == ("preference",)


def test_srm_scripts_train_a_step_on_image_and_audio_backbones(tmp_path: Path) -> None:
    vl = save_tiny_vl_model(tmp_path / "vl")
    Image.new("RGB", (28, 28), (200, 10, 10)).save(tmp_path / "red.png")
    images = _rows(tmp_path / "images.jsonl", 32, images=[str(tmp_path / "red.png")])
    argv = srm_flags(tmp_path / "v", vl, str(images)) + ["--max_pixels", "3136"]
    _train_step([*argv, "--images-key", "images"], tmp_path / "v" / "results" / "srm")
    audio = save_tiny_audio_model(tmp_path / "audio")
    clip = write_wav(tmp_path / "a.wav", np.sin(np.linspace(0, 300, 8000)) * 0.5, 16000)
    clips = _rows(tmp_path / "clips.jsonl", 32, audios=[str(tmp_path / clip)])
    argv = srm_flags(tmp_path / "a", audio, str(clips))
    _train_step([*argv, "--audios-key", "audios"], tmp_path / "a" / "results" / "srm")


def test_named_sets_with_media_responses_are_refused_by_name(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = srm_flags(tmp_path, tiny_dir, f"hpdv3:{tmp_path / 'train.json'}")
    _cpu_only(argv)
    assert main(["rm", "train", *argv]) == 2
    assert "hpdv3 gives images responses; this trainer reads text" in capsys.readouterr().err


def test_own_flags_win_over_the_original_defaults(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--pretrain", str(tiny_dir), "--save_path", str(tmp_path / "o")]
    options = _dry_run([*argv, "--seed", "0", "--pooling", "mean"], capsys)
    train, heads = options["train"], options["heads"]
    assert isinstance(train, dict) and isinstance(heads, dict)
    assert (train["seed"], train["loss_type"], heads["pooling"]) == (0, "hps", "mean")
    assert options["modality"] == "text"  # the tiny Llama's config.json
