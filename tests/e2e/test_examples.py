"""The scripts of examples/: every one is valid bash; the RL scripts' flags (the original
LightRFT's) resolve with `lightrft config show` (LIGHTRFT_DRY_RUN=1); the other scripts pass
only flags their command has; marked slow, each runnable script runs on a CPU with a tiny
random model of its family on data in the original's layout."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from lightrft.adapters.reward_service import BackgroundServer
from lightrft.entrypoints.config.legacy_flag_table import PENDING_KEYS
from tests.e2e.example_runs import CLI, EXAMPLES, preprocess, printed_command, run_example
from tests.helpers.fake_teacher import FakeTeacher
from tests.helpers.hf_media_files import wav_bytes
from tests.helpers.judge_media_sets import judge_media_sets
from tests.helpers.tiny_multimodal import save_tiny_audio_model, save_tiny_vl_model

RL_SCRIPTS = {
    "gsm8k_geo3k/run_grpo_gsm8k_qwen2.5_0.5b.sh": "modality: text",
    "gsm8k_geo3k/run_grpo_geo3k_qwen2.5_vl_7b.sh": "modality: vision-language",
    "gsm8k_geo3k/run_ppo_geo3k_qwen2.5_vl_7b.sh": "advantage_estimator: gae",
    "r1_aqa/run_grpo_r1_aqa_qwen2_audio_7b.sh": "modality: audio-language",
    "grm_vl_rl/run_grm_vl_rl.sh": "modality: vision-language",
    "on_policy_distillation/run_opd_qwen.sh": "advantage_estimator: opd",
    "grm_training/run_grpo_with_judge.sh": "type: generative_rm",
}
"""Each RL script, and a line its resolved configuration holds."""

OTHER_SCRIPTS = {
    "srm_training/run_srm_vl.sh": ("rm", "train"),
    "srm_training/run_srm_al.sh": ("rm", "train"),
    "grm_training/run_grm_vl.sh": ("rm", "train"),
    "chat/chat.sh": ("chat",),
    "math_benchmarks/run_eval.sh": ("eval",),
}
"""The scripts of other commands, and that command."""


def test_every_script_is_valid_bash() -> None:
    scripts = sorted(EXAMPLES.rglob("*.sh"))
    assert len(scripts) >= len(RL_SCRIPTS) + len(OTHER_SCRIPTS)
    for script in scripts:
        done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, f"{script}: {done.stderr}"


@pytest.mark.parametrize("script", sorted(RL_SCRIPTS))
def test_the_rl_scripts_flags_resolve(script: str, tmp_path: Path) -> None:
    """As on 8 GPUs: every flag is read; the only problems allowed are keys of PENDING_KEYS
    that the schema does not hold yet (the original's data layout and optimizer settings)."""
    done = run_example(
        script, check=False, LIGHTRFT_DRY_RUN="1", NPROC="8", SAVE_PATH=str(tmp_path / "run")
    )
    if done.returncode == 0:
        assert RL_SCRIPTS[script] in done.stdout
        return
    problems = done.stderr.strip().splitlines()
    assert problems[0] == "lightrft: invalid configuration:", done.stderr
    for line in problems[1:]:
        key, _, what = line.strip().partition(": ")
        assert what == "unknown key" and key in PENDING_KEYS, done.stderr


def test_the_gsm8k_system_prompt_is_taken_literally(tmp_path: Path) -> None:
    # a text with ": " in it stays a string (the original's prompts have one)
    script = "gsm8k_geo3k/run_grpo_gsm8k_qwen2.5_0.5b.sh"
    assert '--system_prompt "$BOXED_SYSTEM_PROMPT"' in (EXAMPLES / script).read_text()
    prompt = re.search(r"^BOXED_SYSTEM_PROMPT='(.*)'$", (EXAMPLES / "common.sh").read_text(), re.M)
    assert prompt is not None and ": " in prompt.group(1)
    done = run_example(script, check=False, LIGHTRFT_DRY_RUN="1", NPROC="8")
    assert "system_prompt" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    shown = yaml.safe_load(done.stdout)  # the resolved config (the notes are YAML comments)
    assert shown["data"]["train"]["system_prompt"] == prompt.group(1)


@pytest.mark.parametrize("script", sorted(OTHER_SCRIPTS))
def test_the_other_scripts_pass_only_their_commands_flags(script: str) -> None:
    args = ["/models/m", "math500"] if script.startswith("math_benchmarks") else []
    args = ["-c"] if script.startswith("chat") else args
    done = run_example(script, *args, LIGHTRFT_DRY_RUN="1", NPROC="8")
    words = printed_command(done.stdout)
    command = OTHER_SCRIPTS[script]
    assert tuple(words[: len(command)]) == command
    help_text = subprocess.run(
        [*CLI.split(), *command, "--help"], capture_output=True, text=True, check=True
    ).stdout
    known = set(re.findall(r"--[a-z][a-z0-9-]*", help_text))
    flags = {w for w in words if w.startswith("--")}
    assert flags and flags <= known, flags - known


def test_chat_batch_mode_passes_the_file_and_the_output() -> None:
    done = run_example("chat/chat.sh", "batch", "questions.json", LIGHTRFT_DRY_RUN="1")
    words = printed_command(done.stdout)
    assert words[:1] == ["chat"] and words[-4:] == [
        "--batch",
        "questions.json",
        "--output",
        "results.json",
    ]


# --- one step on a CPU (slow) ---------------------------------------------------------------


def gsm8k_dir(tmp_path: Path) -> Path:
    """examples/data/gsm8k_sample (raw GSM8K rows) through data_preprocess/gsm8k.py."""
    out = tmp_path / "gsm8k"
    preprocess(
        "gsm8k_geo3k/data_preprocess/gsm8k.py",
        "--input_dir",
        str(EXAMPLES / "data" / "gsm8k_sample"),
        "--local_save_dir",
        str(out),
    )
    return out


def geo3k_dir(tmp_path: Path) -> Path:
    """Drawn Geo3K-like raw files (make_geo3k_rows.py) through data_preprocess/geo3k.py."""
    raw, out = tmp_path / "geo3k-raw", tmp_path / "geo3k"
    preprocess("gsm8k_geo3k/make_geo3k_rows.py", str(raw), "4", "2")
    preprocess("gsm8k_geo3k/data_preprocess/geo3k.py", "--input_dir", str(raw), "--local_save_dir", str(out))  # fmt: skip
    return out


def one_step(script: str, model: Path, data: Path, tmp_path: Path, *args: str, **env: str) -> Path:
    run = tmp_path / "run"
    run_example(script, *args, MODEL_PATH=str(model), DATA_PATH=str(data), SAVE_PATH=str(run), **env)  # fmt: skip
    assert json.loads((run / "summary.json").read_text())["steps"] == 1
    return run


@pytest.mark.slow
def test_gsm8k_script_runs_a_step(tiny_dir: Path, tmp_path: Path) -> None:
    run = one_step("gsm8k_geo3k/run_grpo_gsm8k_qwen2.5_0.5b.sh", tiny_dir, gsm8k_dir(tmp_path), tmp_path)  # fmt: skip
    metrics = (run / "metrics.jsonl").read_text()
    assert "reward/recipe/gsm8k_rule/mean" in metrics  # scored by the rows' label


@pytest.mark.slow
def test_geo3k_script_runs_a_step(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "vl")
    run = one_step("gsm8k_geo3k/run_grpo_geo3k_qwen2.5_vl_7b.sh", model, geo3k_dir(tmp_path), tmp_path)  # fmt: skip
    assert "reward/recipe/geo3k_rule/mean" in (run / "metrics.jsonl").read_text()


@pytest.mark.slow
def test_ppo_geo3k_script_runs_a_step_with_a_vision_language_critic(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "vl", family="qwen2_5_vl")
    run = tmp_path / "run"
    # the tiny model has 1024 positions: the script's --prompt_max_len 1024 plus the CPU
    # step's 8 new tokens would not fit, so the prompt budget is lowered after the flags
    run_example(
        "gsm8k_geo3k/run_ppo_geo3k_qwen2.5_vl_7b.sh",
        "data.train.max_prompt_length=512",
        "data.eval.max_prompt_length=512",
        MODEL_PATH=str(model),
        DATA_PATH=str(geo3k_dir(tmp_path)),
        SAVE_PATH=str(run),
    )
    assert json.loads((run / "summary.json").read_text())["steps"] == 1
    metrics = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert "critic/loss" in metrics and "value/values_mean" in metrics  # GAE with a critic
    assert "reward/recipe/geo3k_rule/mean" in metrics


@pytest.mark.slow
def test_r1_aqa_script_runs_a_step(tmp_path: Path) -> None:
    model = save_tiny_audio_model(tmp_path / "audio")
    clips = tmp_path / "clips"
    clips.mkdir()
    rate = 16000
    records = []
    for i in range(4):
        tone = np.sin(np.arange(rate // 2) * (i + 1) * 0.05).astype(np.float32)
        (clips / f"c{i}.wav").write_bytes(wav_bytes(tone, rate))
        options = ["dog", "car", "bell"]
        records.append({"id": i, "question_text": "What makes the sound in the video?",
                        "multi_choice": options, "answer": i % 3, "audio_path": f"c{i}.wav"})  # fmt: skip
    raw = tmp_path / "avqa.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in records))
    data = tmp_path / "avqa"
    preprocess("r1_aqa/data_preprocess/avqa.py", "--input_jsonl", str(raw), "--audio_dir", str(clips), "--local_save_dir", str(data))  # fmt: skip
    run = one_step("r1_aqa/run_grpo_r1_aqa_qwen2_audio_7b.sh", model, data, tmp_path)
    assert "reward/recipe/avqa_rule/mean" in (run / "metrics.jsonl").read_text()


TINY_CONTEXT = (
    "data.train.max_prompt_length=64",
    "data.eval.max_prompt_length=64",
    "model.dtype=fp32",
)
"""The tiny text model has 128 positions: the OPD script's --prompt_max_len 1024 is lowered;
float32 weights (not the script's --bf16), so the student's log-probs equal a forward's."""


@pytest.mark.slow
def test_opd_script_runs_a_step(tiny_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Count to {i}."}) + "\n" for i in range(4)))
    one_step("on_policy_distillation/run_opd_qwen.sh", tiny_dir, data, tmp_path, *TINY_CONTEXT, TEACHER_MODEL_PATH=str(tiny_dir))  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("route", ["/generate", "/v1/completions"])
def test_opd_script_runs_a_step_with_a_served_teacher(
    tiny_dir: Path, tmp_path: Path, route: str
) -> None:
    """The original's --remote_rm_url: a fake SGLang (or vLLM) server computing the teacher's
    log-probs with the student's own weights, so the student-teacher reverse KL of the step is
    0 when the served log-probs are the ones a forward gives (the tokens went out unchanged)."""
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Count to {i}."}) + "\n" for i in range(4)))
    teacher = FakeTeacher(tiny_dir)
    with BackgroundServer(teacher.app()) as server:
        run = one_step("on_policy_distillation/run_opd_qwen.sh", tiny_dir, data, tmp_path, *TINY_CONTEXT, TEACHER_URL=server.url + route)  # fmt: skip
    assert teacher.requests >= 1 and sum(teacher.sizes) == 4  # 2 prompts x 2 samples
    metrics = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert abs(metrics["distill/reverse_kl"]) < 1e-5, metrics["distill/reverse_kl"]


@pytest.mark.slow
def test_grm_vl_rl_script_runs_a_step_on_image_and_video_pairs(tmp_path: Path) -> None:
    """The original's grm_vl_rl flags on a tiny Qwen2-VL: Rapidata image-to-video pairs (real
    videos) and HPDv3 image pairs, each judge prompt with its task type's system prompt."""
    model = save_tiny_vl_model(tmp_path / "vl")
    run = tmp_path / "run"
    run_example(
        "grm_vl_rl/run_grm_vl_rl.sh",
        "data.train.max_prompt_length=900",
        "--rollout_batch_size",
        "4",  # every pair of both sets in the one step, every sample logged
        "logging.log_samples_per_step=8",
        MODEL_PATH=str(model),
        DATA_PATH=judge_media_sets(tmp_path / "data"),
        SAVE_PATH=str(run),
    )
    assert json.loads((run / "summary.json").read_text())["steps"] == 1
    assert "reward/judge_agreement/agreement" in (run / "metrics.jsonl").read_text()
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    prompts = {s["uid"].split(":")[0]: s["prompt"] for s in samples}
    video, image = prompts["rapidata-i2v"], prompts["hpdv3"]
    assert "You judge two videos" in video and "Instruction: **make scene" in video
    assert video.count("<|video_pad|>") == 2 and video.count("<|image_pad|>") == 1
    assert "You judge two images" in image and "Caption: **a " in image
    assert image.count("<|image_pad|>") == 2 and "<|video_pad|>" not in image


@pytest.mark.slow
def test_judge_example_trains_and_exports(tiny_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_example("grm_training/run_grpo_with_judge.sh", MODEL_PATH=str(tiny_dir), SAVE_PATH=str(run))  # fmt: skip
    assert (run / "final_model" / "model.safetensors").is_file()


@pytest.mark.slow
def test_scalar_rm_example_on_a_text_model(tiny_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_example("srm_training/run_srm_al.sh", MODEL_PATH=str(tiny_dir), SAVE_PATH=str(run), MODALITY="text")  # fmt: skip
    assert (run / "model" / "config.json").is_file()


@pytest.mark.slow
def test_chat_example_answers_piped_lines(tiny_dir: Path) -> None:
    done = run_example(
        "chat/chat.sh", "-g", "--max-new-tokens", "3", stdin="hi\n/reset\nyo\n",
        MODEL_PATH=str(tiny_dir),
    )  # fmt: skip
    assert done.stdout.count("model> ") == 2 and "(conversation reset)" in done.stdout


def test_no_script_names_a_removed_example() -> None:
    gone = ("run_grpo_gsm8k.sh", "run_grpo_geo3k_vl.sh", "train_scalar_rm.sh", "grm/run_grpo")
    texts = [p.read_text() for p in EXAMPLES.rglob("*") if p.suffix in (".sh", ".md", ".py")]
    assert not [name for name in gone for text in texts if name in text]
