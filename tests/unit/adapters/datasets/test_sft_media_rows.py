"""SFT chat rows with image and audio parts: placeholders expanded to the processor's
positions, never trained, media payload attached; bad media rows named by file, row and key;
``max_length`` counts the expanded tokens and never cuts media."""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.sft_rows import SftRowSpec, load_sft_dataset
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder, audio_tokens
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.domain.sft import sft_batch
from tests.helpers.tiny_multimodal import (
    tiny_feature_extractor,
    tiny_image_processor,
    tiny_mm_tokenizer,
    token_id,
)

IMAGE_PAD = token_id("<|image_pad|>")
AUDIO_PAD = token_id("<|AUDIO|>")


def chat(part: dict[str, Any], answer: str = "red") -> dict[str, Any]:
    user = [part, {"type": "text", "text": "What colour?"}]
    return {
        "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    }


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def vl_encoder() -> VisionLanguageEncoder:
    return VisionLanguageEncoder(tiny_mm_tokenizer(), tiny_image_processor())


def test_image_part_is_expanded_untrained_and_carried(tmp_path: Path) -> None:
    Image.new("RGB", (56, 84), "red").save(tmp_path / "red.png")
    rows = [chat({"type": "image", "image": "red.png"}), {"prompt": "2+2=", "completion": "4"}]
    tok = tiny_mm_tokenizer()
    data = load_sft_dataset(write_rows(tmp_path / "d.jsonl", rows), tok, media=vl_encoder())
    image, text = data[0], data[1]
    # 56 wide x 84 high (multiples of 28) -> grid (t, h, w) = (1, 6, 4) patches -> 24 / 2**2 = 6
    assert image.prompt_ids.count(IMAGE_PAD) == 6
    assert IMAGE_PAD not in image.response_ids  # the image is context, never trained
    assert image.multimodal["image_tokens"] == (6,)
    assert image.multimodal["image_grid_thw"].tolist() == [[1, 6, 4]]
    assert image.multimodal["pixel_values"].shape[0] == 24
    trained = [t for t, m in zip(image.response_ids, image.loss_mask, strict=True) if m]
    assert tok.decode(trained) == "red<|im_end|>\n"  # the turn with its end marker
    assert text.multimodal == {}
    batch = sft_batch([image, text], pad_token_id=0)  # one payload per row, text row empty
    assert len(batch.multimodal) == 2 and batch.multimodal[1] == {}


def test_max_length_counts_media_and_never_cuts_it(tmp_path: Path) -> None:
    Image.new("RGB", (56, 84), "red").save(tmp_path / "red.png")
    path = write_rows(tmp_path / "d.jsonl", [chat({"type": "image", "image": "red.png"})])
    tok, enc = tiny_mm_tokenizer(), vl_encoder()
    full = load_sft_dataset(path, tok, media=enc)[0]
    length = full.num_tokens  # 44: the 6 image positions count, not 1 placeholder
    assert length == 44 and full.prompt_ids.index(IMAGE_PAD) == 7
    # the unexpanded text (39 tokens) would fit 40, the expanded row does not: cut at the
    # right, inside the answer, the image whole
    cut = load_sft_dataset(path, tok, media=enc, spec=SftRowSpec(max_length=40))
    assert cut.stats.truncated == 1 and cut[0].num_tokens == 40
    assert cut[0].prompt_ids == full.prompt_ids and sum(cut[0].loss_mask) == 1
    # a budget that ends inside the image's positions (7..12): a bad row, never a cut image
    with pytest.raises(BadRowError, match=r"d.jsonl row 0: .* would cut its media"):
        load_sft_dataset(path, tok, media=enc, spec=SftRowSpec(max_length=10))


@pytest.mark.parametrize(
    ("row", "media", "message"),
    [
        (
            chat({"type": "image", "image": "gone.png"}),
            True,
            "image file .*gone.png does not exist",
        ),
        (chat({"type": "image"}), True, "message 0 part 0: no 'image' value"),
        (
            chat({"type": "document", "file": "a.pdf"}),
            True,
            "expected a text, image, video or audio",
        ),
        (chat({"type": "image", "image": "red.png"}), False, "the model takes no media"),
        (
            {
                "messages": [
                    {"role": "user", "content": "Draw it"},
                    {"role": "assistant", "content": [{"type": "image", "image": "red.png"}]},
                ]
            },
            True,
            r"message 1 \(assistant\) holds an image part",
        ),
        (chat({"type": "text", "text": "<|image_pad|>"}), True, "0 image part"),
    ],
)
def test_bad_media_rows_are_named(tmp_path: Path, row: Any, media: bool, message: str) -> None:
    Image.new("RGB", (28, 28), "red").save(tmp_path / "red.png")
    path = write_rows(tmp_path / "d.jsonl", [row])
    with pytest.raises(BadRowError, match=f"d.jsonl row 0: .*{message}"):
        load_sft_dataset(path, tiny_mm_tokenizer(), media=vl_encoder() if media else None)


def write_wav(path: Path, seconds: float, rate: int) -> None:
    samples = (0.3 * np.sin(np.arange(int(rate * seconds)) * 0.2) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as file:
        file.setnchannels(1), file.setsampwidth(2), file.setframerate(rate)
        file.writeframes(samples.tobytes())


def test_audio_part_is_expanded_and_its_rate_checked(tmp_path: Path) -> None:
    write_wav(tmp_path / "a.wav", 0.5, 16000)
    write_wav(tmp_path / "slow.wav", 0.5, 8000)
    tok = tiny_mm_tokenizer()
    enc = AudioLanguageEncoder(tok, tiny_feature_extractor(chunk_seconds=1))
    spec = SftRowSpec(audio_sampling_rate=16000)
    path = write_rows(tmp_path / "d.jsonl", [chat({"type": "audio", "audio": "a.wav"})])
    example = load_sft_dataset(path, tok, media=enc, spec=spec)[0]
    want = audio_tokens(50)  # 0.5 s at hop 160 = 50 attended frames
    assert example.prompt_ids.count(AUDIO_PAD) == want == example.multimodal["audio_tokens"][0]
    slow = write_rows(tmp_path / "s.jsonl", [chat({"type": "audio", "audio": "slow.wav"})])
    with pytest.raises(BadRowError, match="s.jsonl row 0: .*sampled at 8000 Hz, expected 16000"):
        load_sft_dataset(slow, tok, media=enc, spec=spec)
