"""`lightrft eval --data geo3k.parquet` end to end on a tiny random Qwen2-VL (no download):
the Geo3K-schema file is detected, its diagrams are encoded by the model's prompt encoder,
the HF engine generates with them and the report holds accuracy and pass@k in [0, 1]
(what a random model scores is whatever it is; a correct answer scoring 1 is checked in
``tests/unit/entrypoints/test_geo3k_wiring.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from lightrft.entrypoints.cli import main
from tests.helpers.hf_media_files import write_geo3k_parquet
from tests.helpers.tiny_multimodal import noise_image, save_tiny_vl_model


def test_geo3k_eval_runs_on_a_tiny_vision_language_model(tmp_path: Path) -> None:
    model = save_tiny_vl_model(tmp_path / "model", byte_level=True)
    data = write_geo3k_parquet(
        tmp_path / "geo3k_test.parquet",
        [
            ("<image>Find x.", [noise_image(60, 40, 1)], "3"),
            ("<image>Find the area of the triangle.", [noise_image(50, 50, 2)], "24"),
            ("Find y. <image>", [Image.new("RGB", (30, 45), "white")], "2\\sqrt{3}"),
        ],
    )
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", str(model), "--data", str(data), "--output", str(out)]
    argv += ["--n-samples=2", "--k", "1", "2", "--max-new-tokens=3", "--no-progress"]
    argv += ["model.modality=vision-language", "model.min_pixels=3136", "model.max_pixels=12544"]
    argv += [f"logging.run_dir={tmp_path / 'run'}"]
    assert main(argv) == 0
    entry = json.loads(out.read_text())["files"][str(data)]
    metrics, records = entry["metrics"], entry["records"]
    assert metrics["prompts"] == 3
    for name in ("greedy_accuracy", "pass@1", "pass@2", "maj@1", "maj@2", "sample_accuracy"):
        assert 0.0 <= metrics[name] <= 1.0, name
    assert metrics["pass@1"] <= metrics["pass@2"]
    assert [r["reference"] for r in records] == ["3", "24", "2\\sqrt{3}"]
    assert [r["uid"] for r in records] == [f"geo3k_test:{i}" for i in range(3)]
    assert all(1 <= r["greedy_tokens"] <= 3 and len(r["sample_answers"]) == 2 for r in records)
    # media pads are never generated, so the responses hold no image placeholder text
    assert not any("<|image_pad|>" in r["greedy_response"] for r in records)
