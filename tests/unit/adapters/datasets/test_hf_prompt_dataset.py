"""HfPromptDataset: file formats, bad rows, rendering, truncation, decoded images."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from PIL import Image

from lightrft.adapters.datasets import (
    BadRowError,
    HfPromptDataset,
    PromptFormat,
    RowSpec,
)
from lightrft.domain.ports import PromptSource
from tests.unit.adapters.datasets.tiny_tokenizers import byte_tokenizer

ROWS = [
    {"prompt": "What is 2+2?", "reference": "4"},
    {"prompt": "What is 3+4?", "reference": "7"},
    {"prompt": "What is 5*6?", "reference": "30"},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def build(path: Path | list[Path], tmp_path: Path, **kwargs: Any) -> HfPromptDataset:
    return HfPromptDataset(path, byte_tokenizer(), cache_dir=tmp_path / "cache", **kwargs)


def chat_text(user: str, system: str | None = None) -> str:
    """The tiny template's output, written out by hand."""
    text = "<s>"
    if system is not None:
        text += f"<|im_start|>system\n{system}<|im_end|>\n"
    return text + f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def file_in_format(kind: str, tmp_path: Path) -> Path:
    table = datasets.Dataset.from_list(ROWS)
    if kind == "jsonl":
        return write_jsonl(tmp_path / "p.jsonl", ROWS)
    if kind == "json":
        (tmp_path / "p.json").write_text(json.dumps(ROWS))
        return tmp_path / "p.json"
    if kind == "parquet":
        table.to_parquet(str(tmp_path / "p.parquet"))
        return tmp_path / "p.parquet"
    table.save_to_disk(str(tmp_path / "saved"))
    if kind == "arrow":
        (arrow,) = (tmp_path / "saved").glob("*.arrow")
        return arrow
    if kind == "saved_dir":
        return tmp_path / "saved"
    datasets.DatasetDict({"train": table.select([0]), "test": table}).save_to_disk(
        str(tmp_path / "saved_dict")
    )
    return tmp_path / "saved_dict"


@pytest.mark.parametrize("kind", ["jsonl", "json", "parquet", "arrow", "saved_dir", "saved_dict"])
def test_each_format_loads(kind: str, tmp_path: Path) -> None:
    path = file_in_format(kind, tmp_path)
    dataset = build(path, tmp_path, split="test", name="p")
    assert isinstance(dataset, PromptSource)
    assert len(dataset) == 3
    assert [dataset[i].reference for i in range(3)] == ["4", "7", "30"]
    assert dataset[1].prompt_text == chat_text("What is 3+4?")
    assert [dataset[i].uid for i in range(3)] == ["p:0", "p:1", "p:2"]
    assert dataset[-1].uid == "p:2"


def test_tokens_are_the_tokenized_chat_template(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", ROWS[:1])
    tokenizer = byte_tokenizer()
    dataset = build(path, tmp_path, prompt_format=PromptFormat(system_prompt="Be brief."))
    record = dataset[0]
    expected_text = chat_text("What is 2+2?", system="Be brief.")
    assert record.prompt_text == expected_text
    # the template holds the BOS token: no second one is added
    expected_ids = tokenizer(expected_text, add_special_tokens=False)["input_ids"]
    assert list(record.prompt_token_ids) == expected_ids
    assert expected_ids[0] == tokenizer.bos_token_id and expected_ids[1] != tokenizer.bos_token_id
    assert tokenizer.decode(list(record.prompt_token_ids)) == expected_text


def test_plain_text_without_a_template_or_when_asked(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", ROWS[:1])
    fmt = PromptFormat(system_prompt="Be brief.")
    no_template = HfPromptDataset(
        path, byte_tokenizer(chat_template=None), prompt_format=fmt, cache_dir=tmp_path / "c"
    )
    asked = build(
        path, tmp_path, prompt_format=PromptFormat(system_prompt="Be brief.", render="plain")
    )
    for dataset in (no_template, asked):
        assert dataset[0].prompt_text == "Be brief.\n\nWhat is 2+2?"
    with pytest.raises(ValueError, match="chat_template"):
        HfPromptDataset(
            path,
            byte_tokenizer(chat_template=None),
            prompt_format=PromptFormat(render="chat"),
            cache_dir=tmp_path / "c",
        )


def test_chat_messages_as_input(tmp_path: Path) -> None:
    rows = [
        {
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
            "answer": 5,
        }
    ]
    path = write_jsonl(tmp_path / "chat.jsonl", rows)
    dataset = build(
        path,
        tmp_path,
        spec=RowSpec(input_key="messages", reference_key="answer"),
        prompt_format=PromptFormat(system_prompt="ignored: the chat has its own"),
    )
    assert dataset[0].prompt_text == chat_text("U", system="S")
    assert dataset[0].reference == "5"  # numbers become strings


def test_missing_key_error_names_file_row_and_key(tmp_path: Path) -> None:
    rows = [ROWS[0], {"prompt": "no reference here"}, ROWS[1]]
    path = write_jsonl(tmp_path / "broken.jsonl", rows)
    with pytest.raises(BadRowError) as caught:
        build(path, tmp_path)
    message = str(caught.value)
    assert "broken.jsonl" in message and "row 1" in message and "'reference'" in message
    assert caught.value.key == "reference"
    with pytest.raises(BadRowError, match=r"broken\.jsonl row 0: missing key 'question'"):
        build(path, tmp_path, spec=RowSpec(input_key="question"))


def test_error_mode_names_every_bad_row(tmp_path: Path) -> None:
    rows = [ROWS[0], {"prompt": "no reference"}, ROWS[1], {"prompt": "  ", "reference": "1"}]
    path = write_jsonl(tmp_path / "two_bad.jsonl", rows)
    with pytest.raises(BadRowError) as caught:
        build(path, tmp_path)
    assert str(caught.value).splitlines() == [
        "2 bad rows:",
        f"  {path} row 1: no value (null or absent in this row) for key 'reference'",
        f"  {path} row 3: empty prompt in 'prompt'",
    ]


def test_skip_mode_counts_bad_rows(tmp_path: Path) -> None:
    rows = [
        ROWS[0],
        {"prompt": "no reference"},
        {"prompt": "   ", "reference": "1"},  # empty prompt
        {"prompt": ["not", "messages"], "reference": "1"},  # wrong type
        {"reference": "3"},  # no prompt
        ROWS[1],
    ]
    path = write_jsonl(tmp_path / "mixed.jsonl", rows)
    dataset = build(path, tmp_path, spec=RowSpec(on_bad_row="skip"))
    assert len(dataset) == 2
    assert (
        dataset.stats.rows == 6 and dataset.stats.kept == 2 and dataset.stats.skipped_bad_rows == 4
    )
    assert [r.uid for r in (dataset[0], dataset[1])] == ["mixed:0", "mixed:5"]  # row numbers kept


def test_several_files_concatenate_with_distinct_uids(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", ROWS[:2])
    b = write_jsonl(tmp_path / "b.jsonl", ROWS[2:])
    dataset = build([a, b], tmp_path, name="mix")
    assert [dataset[i].uid for i in range(3)] == ["mix:a:0", "mix:a:1", "mix:b:0"]
    assert dataset[2].metadata["where"].endswith("b.jsonl row 0")


def test_left_truncation_keeps_the_end_and_counts(tmp_path: Path) -> None:
    long_question = "word " * 40 + "What is 2+2?"
    path = write_jsonl(
        tmp_path / "long.jsonl", [ROWS[0], {"prompt": long_question, "reference": "4"}]
    )
    full_ids = byte_tokenizer()(chat_text(long_question), add_special_tokens=False)["input_ids"]
    limit = 60
    dataset = build(path, tmp_path, prompt_format=PromptFormat(max_prompt_tokens=limit))
    record = dataset[1]
    assert list(record.prompt_token_ids) == full_ids[-limit:]
    assert record.prompt_text.endswith("What is 2+2?<|im_end|>\n<|im_start|>assistant\n")
    assert record.metadata["truncated_tokens"] == len(full_ids) - limit
    assert dataset.stats.truncated == 1 and dataset.stats.truncated_tokens == len(full_ids) - limit
    assert len(dataset[0].prompt_token_ids) < limit  # the short prompt is untouched

    dropped = build(
        path, tmp_path, prompt_format=PromptFormat(max_prompt_tokens=limit, on_overlong="skip")
    )
    assert len(dropped) == 1 and dropped.stats.dropped_overlong == 1
    assert dropped[0].reference == "4" and dropped[0].uid.endswith(":0")


def test_images_are_decoded_into_multimodal(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    Image.new("RGB", (8, 6), (255, 0, 0)).save(tmp_path / "img" / "cat.png")
    rows = [{"prompt": "Describe.", "reference": "cat", "images": ["img/cat.png"]}]
    path = write_jsonl(tmp_path / "vl.jsonl", rows)
    dataset = build(path, tmp_path, spec=RowSpec(images_key="images"))
    (image,) = dataset[0].multimodal["images"]  # relative to the data file's folder
    assert image.size == (8, 6) and image.getpixel((0, 0)) == (255, 0, 0)
    with pytest.raises(BadRowError, match="'pictures'"):
        build(path, tmp_path, spec=RowSpec(images_key="pictures"))


def test_no_reference_key(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"prompt": "Write a poem."}])
    dataset = build(path, tmp_path, spec=RowSpec(reference_key=None))
    assert dataset[0].reference is None


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        build(tmp_path / "absent.jsonl", tmp_path)
    (tmp_path / "p.csv").write_text("prompt,reference\na,1\n")
    with pytest.raises(ValueError, match="unsupported file type"):
        build(tmp_path / "p.csv", tmp_path)
    (tmp_path / "plain_dir").mkdir()
    with pytest.raises(ValueError, match="save_to_disk"):
        build(tmp_path / "plain_dir", tmp_path)
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl"):
        build(tmp_path / "bad.jsonl", tmp_path)
    saved = file_in_format("saved_dict", tmp_path)
    with pytest.raises(ValueError, match="validation"):
        build(saved, tmp_path, split="validation")


def test_index_errors(tmp_path: Path) -> None:
    dataset = build(write_jsonl(tmp_path / "p.jsonl", ROWS), tmp_path)
    with pytest.raises(IndexError):
        dataset[3]
    with pytest.raises(TypeError):
        dataset["0"]  # type: ignore[index]


def test_bad_lines_are_named_or_skipped_and_counted(tmp_path: Path) -> None:
    from lightrft.adapters.datasets.hf_prompt_dataset import read_table

    path = tmp_path / "lines.jsonl"
    path.write_bytes(
        b'{"prompt": "a", "reference": "1"}\n{oops\n\n'
        b'{"prompt": "b", "reference": "2", "note": "x"}\n\xff\xfe\n[1]\n'
    )
    with pytest.raises(
        ValueError, match=r"^3 bad rows:\n  .*lines.jsonl line 2 is not valid"
    ) as info:
        read_table(path)
    listed = str(info.value).splitlines()[1:]  # every bad line named, in file order (EC D12)
    assert [line.split(" line ")[1].split(" ")[0] for line in listed] == ["2", "5", "6"]
    assert "line 5 is not UTF-8 text" in listed[1] and "line 6 is a JSON array" in listed[2]
    table = read_table(path, on_bad_row="skip")
    assert table.skipped_lines == 3  # lines 2, 5 (not UTF-8) and 6 (an array); 3 is blank
    assert table.rows.column_names == ["prompt", "reference", "note"]  # every row's keys
    assert [row["note"] for row in table.rows] == [None, "x"]


def test_a_line_nested_too_deep_is_a_bad_line_and_skip_mode_skips_it(tmp_path: Path) -> None:
    """EC D24/D24b: 100,000 nested arrays made the parser raise RecursionError (a traceback,
    and skip mode did not skip it)."""
    from lightrft.adapters.datasets.hf_prompt_dataset import read_table

    path = tmp_path / "deep.jsonl"
    deep = b"[" * 100_000 + b"]" * 100_000
    path.write_bytes(b'{"prompt": "a", "reference": "1"}\n' + deep + b"\n")
    with pytest.raises(ValueError, match=r"deep.jsonl line 2 is JSON nested too deep") as info:
        read_table(path)
    assert "\n" not in str(info.value)  # one bad line: its own one-line message
    table = read_table(path, on_bad_row="skip")
    assert table.skipped_lines == 1 and [row["prompt"] for row in table.rows] == ["a"]


def test_many_bad_lines_list_the_first_twenty_then_a_count(tmp_path: Path) -> None:
    from lightrft.adapters.datasets.bad_rows import MAX_LISTED
    from lightrft.adapters.datasets.hf_prompt_dataset import read_table

    path = tmp_path / "many.jsonl"
    path.write_text('{"prompt": "a", "reference": "1"}\n' + "oops\n" * 25)
    with pytest.raises(ValueError) as info:
        read_table(path)
    lines = str(info.value).splitlines()
    assert lines[0] == "25 bad rows:" and len(lines) == 1 + MAX_LISTED + 1
    assert "many.jsonl line 2 " in lines[1] and "many.jsonl line 21 " in lines[MAX_LISTED]
    assert lines[-1] == "  ... and 5 more"


def test_bad_lines_and_bad_rows_are_named_in_one_message_and_skip_skips_both(
    tmp_path: Path,
) -> None:
    """EC D20 (mixed_bad.jsonl): lines that do not parse and rows that parse but miss a key
    were reported in two rounds (the schema-bad rows only once the lines were fixed)."""
    path = tmp_path / "mixed_bad.jsonl"
    path.write_bytes(
        b'{"prompt": "What is 2+2?", "reference": "4"}\n'  # line 1: good
        b"{oops\n"  # line 2: not JSON
        b'{"prompt": "no reference"}\n'  # line 3: row 1, no reference
        b"\xff\n"  # line 4: not UTF-8
        b'{"prompt": "   ", "reference": "1"}\n'  # line 5: row 2, empty prompt
        b'{"prompt": "What is 3+4?", "reference": "7"}\n'  # line 6: good
    )
    with pytest.raises(BadRowError) as caught:
        build(path, tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0] == "4 bad rows:"
    assert lines[1].startswith(f"  {path} line 2 is not valid JSON")
    assert lines[2].startswith(f"  {path} line 4 is not UTF-8 text")
    assert lines[3] == (
        f"  {path} row 1 (line 3): no value (null or absent in this row) for key 'reference'"
    )
    assert lines[4] == f"  {path} row 2 (line 5): empty prompt in 'prompt'"
    dataset = build(path, tmp_path, spec=RowSpec(on_bad_row="skip"))
    assert [dataset[i].reference for i in range(len(dataset))] == ["4", "7"]
    assert dataset.stats.rows == 6 and dataset.stats.skipped_bad_rows == 4


def test_a_file_of_bad_lines_only_names_them_all(tmp_path: Path) -> None:
    path = tmp_path / "all_bad.jsonl"
    path.write_text("oops\n[1]\n")
    with pytest.raises(BadRowError) as caught:
        build(path, tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0] == "2 bad rows:" and "line 1 is not valid JSON" in lines[1]
    assert "line 2 is a JSON array, not an object" in lines[2]
