"""`lightrft sft` on chat rows with images and audio (tiny random Qwen2-VL / Qwen2-Audio
from configs): the loss falls, and the media reach the model (the policy's log-probs change
with the image and equal the model's own forward with the processor's pixels)."""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from lightrft.adapters.datasets.sft_rows import load_sft_dataset
from lightrft.adapters.datasets.synthetic_audio import tone_problems
from lightrft.adapters.datasets.synthetic_visual import visual_problems
from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.domain.sft import sft_batch
from lightrft.entrypoints.cli import main
from tests.helpers.tiny_multimodal import (
    save_tiny_audio_model,
    save_tiny_vl_model,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_vl,
    token_id,
)

RUN = ["sft.eval_data=null", "logging.progress=false", "sft.batch_size=8", "sft.micro_batch_size=4"]


def chat_row(part: dict[str, Any], question: str, answer: str) -> dict[str, Any]:
    user = [part, {"type": "text", "text": question}]
    return {
        "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run_sft(tmp_path: Path, model: Path, rows: list[dict[str, Any]], modality: str) -> Any:
    """`lightrft sft` on ``rows`` (4 epochs, lr 3e-3); the run's summary."""
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    run = tmp_path / "run"
    argv = ["sft", "--model", str(model), "--data", str(data), "--run-dir", str(run)]
    overrides = [f"model.modality={modality}", "sft.epochs=4", "optim.lr=3e-3", *RUN]
    assert main([*argv, *overrides]) == 0
    return json.loads((run / "summary.json").read_text())


@pytest.mark.slow  # 30 s at load 10 on the shared 2-core CPU (under 1 s when idle)
def test_vision_language_sft_loss_falls(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "model")
    rows = []
    for i, problem in enumerate(visual_problems(16, seed=0)):
        problem["images"][0].save(tmp_path / f"{i}.png")
        part = {"type": "image", "image": f"{i}.png"}
        rows.append(chat_row(part, "What colour is the shape ?", problem["reference"]))
    summary = run_sft(tmp_path, model, rows, "vision-language")
    assert summary["steps"] == 8 and summary["train_rows"] == 16
    # observed 3.76 -> 1.48 (ln 45 = 3.8 for a uniform guess over the ~45 tokens)
    assert summary["train_loss_last"] < 0.6 * summary["train_loss_first"]
    final = Path(summary["final_model"])
    assert (final / "preprocessor_config.json").is_file()  # the image processor travels


@pytest.mark.slow
def test_audio_language_sft_loss_falls(tmp_path: Path) -> None:
    model = save_tiny_audio_model(tmp_path / "model")
    rows = []
    for i, problem in enumerate(tone_problems(8, seed=0)):
        wave_i, rate = problem["audios"][0]
        with wave.open(str(tmp_path / f"{i}.wav"), "wb") as file:
            file.setnchannels(1), file.setsampwidth(2), file.setframerate(rate)
            file.writeframes((np.asarray(wave_i) * 32767).astype("<i2").tobytes())
        part = {"type": "audio", "audio": f"{i}.wav"}
        rows.append(chat_row(part, "Which tone is higher ?", problem["reference"]))
    summary = run_sft(tmp_path, model, rows, "audio-language")
    assert summary["steps"] == 4
    assert summary["train_loss_last"] < 0.7 * summary["train_loss_first"]


def test_the_image_reaches_the_policy(tmp_path: Path) -> None:
    tok = tiny_mm_tokenizer()
    for colour in ("red", "blue"):
        Image.new("RGB", (56, 56), colour).save(tmp_path / f"{colour}.png")
    rows = [
        chat_row({"type": "image", "image": f"{c}.png"}, "colour?", "red") for c in ("red", "blue")
    ]
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())
    examples = load_sft_dataset(write_jsonl(tmp_path / "d.jsonl", rows), tok, media=encoder)
    assert examples[0].prompt_ids == examples[1].prompt_ids  # the same text and positions
    model = tiny_qwen2_vl(seed=0)
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    batch = sft_batch(list(examples), pad_token_id=0)
    with torch.no_grad():
        logprobs = policy.forward(batch).logprobs  # [2, R]
    assert not torch.allclose(logprobs[0], logprobs[1], atol=1e-4)  # only the image differs
    # the model's own forward with the processor's pixels (it computes M-RoPE itself)
    for row, example in enumerate(examples):
        ids = torch.tensor([example.prompt_ids + example.response_ids])
        pad = token_id("<|image_pad|>")
        with torch.no_grad():
            logits = model(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                pixel_values=example.multimodal["pixel_values"],
                image_grid_thw=example.multimodal["image_grid_thw"],
                mm_token_type_ids=(ids == pad).int(),
            ).logits[0]
        start = len(example.prompt_ids)
        logits = logits[start - 1 : -1].float()
        logits[:, [pad, token_id("<|video_pad|>")]] = -torch.inf  # never generated (policy)
        direct = torch.log_softmax(logits, -1)
        want = direct.gather(-1, torch.tensor(example.response_ids)[:, None])[:, 0]
        torch.testing.assert_close(logprobs[row, : len(want)], want, atol=1e-4, rtol=1e-4)
