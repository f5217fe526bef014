"""The data preprocessors of examples/ write the original LightRFT's row layout (verl-style:
``data_source``, ``prompt`` chat messages with a system message, ``ability``,
``reward_model``, ``extra_info``, the recipe label) from local files, checked column by
column and on rows worked out by hand."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.e2e.example_runs import EXAMPLES, preprocess

GSM8K = "gsm8k_geo3k/data_preprocess/gsm8k.py"
GEO3K = "gsm8k_geo3k/data_preprocess/geo3k.py"
AVQA = "r1_aqa/data_preprocess/avqa.py"
SHARED_GSM8K = Path("/work/shared/data/gsm8k")

RAW_GSM8K = {
    "train": [
        {"question": "Ann has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = 7\n#### 7"},
        {"question": "A farm sells 1,250 eggs a day. Eggs in 2 days?",
         "answer": "1,250 * 2 = 2,500\n#### 2,500"},
    ],
    "test": [{"question": "What is 10 - 12?", "answer": "10 - 12 = -2\n#### -2"}],
}  # fmt: skip


def write_raw_gsm8k(directory: Path) -> Path:
    directory.mkdir(parents=True)
    for split, rows in RAW_GSM8K.items():
        (directory / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def test_gsm8k_rows_have_the_original_layout(tmp_path: Path) -> None:
    out = tmp_path / "out"
    preprocess(GSM8K, "--input_dir", str(write_raw_gsm8k(tmp_path / "raw")), "--local_save_dir", str(out))  # fmt: skip
    train = pq.read_table(out / "train.parquet")
    assert train.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert train.schema.field("prompt").type == pa.list_(
        pa.struct([("role", pa.string()), ("content", pa.string())])
    )
    assert train.schema.field("extra_info").type.field("index").type == pa.int64()
    second = train.to_pylist()[1]
    question = "A farm sells 1,250 eggs a day. Eggs in 2 days?"
    assert second["data_source"] == "openai/gsm8k" and second["ability"] == "math"
    assert [m["role"] for m in second["prompt"]] == ["system", "user"]
    assert (
        "<think>" in second["prompt"][0]["content"]
        and "\\boxed{}" in second["prompt"][0]["content"]
    )
    assert second["prompt"][1]["content"] == question
    assert second["reward_model"] == {"style": "rule", "ground_truth": "2500"}  # commas dropped
    assert second["extra_info"] == {
        "label": "gsm8k_rule",
        "reference": "2500",
        "split": "train",
        "index": 1,
        "answer": "2500",
        "question": question,
        "full_solution": "1,250 * 2 = 2,500\n#### 2,500",
    }
    test = pq.read_table(out / "test.parquet").to_pylist()
    assert [(r["extra_info"]["split"], r["extra_info"]["reference"]) for r in test] == [
        ("test", "-2")
    ]


def test_gsm8k_as_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "out"
    preprocess(GSM8K, "--input_dir", str(write_raw_gsm8k(tmp_path / "raw")), "--local_save_dir", str(out), "--format", "jsonl")  # fmt: skip
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert [r["extra_info"]["reference"] for r in rows] == ["7", "2500"]
    assert sorted(p.name for p in out.iterdir()) == ["test.jsonl", "train.jsonl"]


def test_gsm8k_names_a_row_without_a_final_answer(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.jsonl").write_text(json.dumps({"question": "q", "answer": "no answer"}) + "\n")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / GSM8K), "--input_dir", str(raw), "--local_save_dir",
         str(tmp_path / "out"), "--splits", "train"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert "train.jsonl row 0: the answer has no '#### <number>' line" in done.stderr


def test_gsm8k_names_a_missing_split(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / GSM8K), "--input_dir", str(raw), "--local_save_dir", str(tmp_path / "o")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1 and "no train file" in done.stderr


@pytest.mark.skipif(not SHARED_GSM8K.is_dir(), reason="the downloaded GSM8K is not on this machine")
def test_gsm8k_on_the_downloaded_dataset(tmp_path: Path) -> None:
    out = tmp_path / "out"
    printed = preprocess(GSM8K, "--input_dir", str(SHARED_GSM8K), "--local_save_dir", str(out))
    assert "train: 7473 rows" in printed and "test: 1319 rows" in printed  # GSM8K's sizes
    first = pq.read_table(out / "train.parquet").slice(0, 1).to_pylist()[0]
    # "Natalia sold 48/2 = 24 clips in May ... 48+24 = 72": the first training problem
    assert first["prompt"][1]["content"].startswith("Natalia sold clips to 48 of her friends")
    assert first["reward_model"]["ground_truth"] == "72"
    references = pq.read_table(out / "test.parquet").column("extra_info").to_pylist()
    assert all(r["reference"].lstrip("-").replace(".", "").isdigit() for r in references)


def test_geo3k_rows_keep_their_images(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    preprocess("gsm8k_geo3k/make_geo3k_rows.py", str(raw), "3", "1")
    raw_rows = pq.read_table(raw / "data" / "train-00000-of-00001.parquet").to_pylist()
    preprocess(GEO3K, "--input_dir", str(raw), "--local_save_dir", str(out))
    train = pq.read_table(out / "train.parquet")
    assert train.column_names == [
        "data_source", "prompt", "images", "ability", "reward_model", "extra_info",
    ]  # fmt: skip
    assert train.schema.field("images").type == pa.list_(
        pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    )
    assert '"_type": "Image"' in train.schema.metadata[b"huggingface"].decode()  # datasets Image
    rows = train.to_pylist()
    for raw_row, row in zip(raw_rows, rows, strict=True):
        assert row["images"][0]["bytes"] == raw_row["images"][0]["bytes"]
        assert row["prompt"][1] == {"role": "user", "content": raw_row["problem"]}
        assert row["reward_model"] == {"style": "rule", "ground_truth": raw_row["answer"]}
        assert row["extra_info"]["label"] == "geo3k_rule"
        assert row["extra_info"]["reference"] == raw_row["answer"]
    image = Image.open(io.BytesIO(rows[0]["images"][0]["bytes"]))
    assert image.size == (112, 112)
    assert [r["extra_info"]["index"] for r in rows] == [0, 1, 2]
    assert pq.read_table(out / "test.parquet").num_rows == 1


def test_geo3k_as_json_lines_writes_image_files(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "out"
    preprocess("gsm8k_geo3k/make_geo3k_rows.py", str(raw), "2", "1")
    preprocess(GEO3K, "--input_dir", str(raw), "--local_save_dir", str(out), "--format", "jsonl")
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert [r["images"] for r in rows] == [["images/train_0_0.png"], ["images/train_1_0.png"]]
    assert Image.open(out / rows[1]["images"][0]).size == (112, 112)


def test_avqa_rows_carry_the_clip_in_the_prompt(tmp_path: Path) -> None:
    records = [
        {"id": 7, "question_text": "What is in the video?", "multi_choice": ["dog", "cat"],
         "answer": 1, "audio_path": "/x/VGG10000/a.wav", "dataset_name": "AVQA"},
        {"question_text": "Is it loud?", "multi_choice": ["yes", "no"], "answer": 0,
         "audio_path": "b.wav"},
    ]  # fmt: skip
    raw = tmp_path / "avqa.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    preprocess(AVQA, "--input_jsonl", str(raw), "--audio_dir", "/clips", "--local_save_dir", str(out))  # fmt: skip
    rows = pq.read_table(out / "train.parquet").to_pylist()
    first, second = rows
    content = first["prompt"][0]["content"]
    assert first["prompt"][0]["role"] == "user"
    assert content[0] == {"type": "audio", "audio_url": "/x/VGG10000/a.wav", "text": None}
    assert content[1]["type"] == "text" and "What is in the audio?" in content[1]["text"]
    assert "<answer></answer>" in content[1]["text"] and "['dog', 'cat']" in content[1]["text"]
    assert (first["reference"], first["label"]) == ("cat", "avqa_rule")
    assert first["reward_model"] == {"style": "rule", "ground_truth": "cat"}
    assert first["extra_info"]["answer_idx"] == 1 and first["extra_info"]["id"] == 7
    assert second["audio_path"] == "/clips/b.wav"  # a relative clip moves under --audio_dir
    assert second["extra_info"]["id"] == 1 and second["reference"] == "yes"


def test_avqa_holds_out_a_validation_split(tmp_path: Path) -> None:
    records = [
        {"question_text": f"q{i}", "multi_choice": ["a", "b"], "answer": i % 2, "audio_path": f"{i}.wav"}
        for i in range(10)
    ]  # fmt: skip
    raw = tmp_path / "avqa.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    preprocess(AVQA, "--input_jsonl", str(raw), "--local_save_dir", str(out), "--val_ratio", "0.2", "--format", "jsonl")  # fmt: skip
    train = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    held = [json.loads(x) for x in (out / "validation.jsonl").read_text().splitlines()]
    assert (len(train), len(held)) == (8, 2)
    indices = sorted(r["extra_info"]["index"] for r in train + held)
    assert indices == list(range(10))  # every record once


def test_avqa_names_a_bad_record(tmp_path: Path) -> None:
    raw = tmp_path / "avqa.jsonl"
    raw.write_text(json.dumps({"question_text": "q", "multi_choice": ["a"], "answer": 3, "audio_path": "x"}) + "\n")  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / AVQA), "--input_jsonl", str(raw), "--local_save_dir", str(tmp_path / "o")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (
        done.returncode == 1 and "line 1: answer 3 is not an index of multi_choice" in done.stderr
    )
