"""SFT rows: which tokens are trained, file formats, truncation and bad rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightrft.adapters.datasets.prompt_rows import BadRowError, RowRef
from lightrft.adapters.datasets.rendering import PromptFormat
from lightrft.adapters.datasets.sft_rows import SftRowSpec, build_sft_examples, load_sft_dataset
from tests.unit.adapters.hf.hf_tiny import EOS, tiny_tokenizer

CHAT = {
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2"},
    ]
}


def build(rows: list[dict], **kwargs: object):  # noqa: ANN201
    refs = [RowRef(f"r{i}", f"data.jsonl row {i}", row) for i, row in enumerate(rows)]
    return build_sft_examples(refs, tiny_tokenizer(), **kwargs)  # type: ignore[arg-type]


def trained_text(example) -> str:  # noqa: ANN001
    ids = [t for t, m in zip(example.response_ids, example.loss_mask, strict=True) if m]
    return tiny_tokenizer().decode(ids)


def test_chat_trains_every_assistant_turn_and_nothing_else() -> None:
    (e,) = build([CHAT])
    tok = tiny_tokenizer()
    # template: "role: content\n" per message, "assistant: " as the generation prompt
    assert tok.decode(list(e.prompt_ids)) == "system: be brief\nuser: hi\nassistant: "
    assert tok.decode(list(e.response_ids)) == "yo\nuser: q2\nassistant: a2\n"
    assert trained_text(e) == "yo\na2\n"


def test_prompt_completion_with_and_without_chat_template() -> None:
    (chat,) = build([{"prompt": "1+1", "completion": "2"}])
    assert trained_text(chat) == "2\n"
    (plain,) = build(
        [{"prompt": "1+1", "completion": "2"}], prompt_format=PromptFormat(render="plain")
    )
    assert tiny_tokenizer().decode(list(plain.prompt_ids)) == "1+1"
    assert plain.response_ids[-1] == EOS and all(plain.loss_mask)


def test_truncation_and_dropped_rows_are_counted() -> None:
    long = {"prompt": "abc", "completion": "x" * 50}
    ds = build([long, {"prompt": "a" * 40, "completion": "b"}], spec=SftRowSpec(max_length=30))
    assert len(ds) == 1 and ds[0].num_tokens == 30  # "user: abc\nassistant: " is 20 tokens
    assert ds.stats.truncated == 2 and ds.stats.dropped_empty == 1


@pytest.mark.parametrize(
    ("row", "key"),
    [
        ({"prompt": "x"}, "completion"),
        ({"prompt": "x", "completion": ""}, "completion"),
        ({"messages": [{"role": "user", "content": "x"}]}, "messages"),
        ({"messages": "not a list"}, "messages"),
        ({"text": "x"}, "prompt"),
    ],
)
def test_bad_rows_name_file_row_and_key(row: dict, key: str) -> None:
    with pytest.raises(BadRowError, match=r"data.jsonl row 1") as info:
        build([{"prompt": "ok", "completion": "ok"}, row])
    assert info.value.key == key
    skipped = build([{"prompt": "ok", "completion": "ok"}, row], spec=SftRowSpec(on_bad_row="skip"))
    assert len(skipped) == 1 and skipped.stats.skipped_bad_rows == 1


def test_error_mode_names_every_bad_row() -> None:
    rows = [{"prompt": "x"}, {"prompt": "ok", "completion": "ok"}, {"text": "x"}]
    with pytest.raises(BadRowError) as info:
        build(rows)
    assert str(info.value).splitlines() == [
        "2 bad rows:",
        "  data.jsonl row 0: expected a non-empty string in 'completion'",
        "  data.jsonl row 2: no 'messages' chat and missing key 'prompt'",
    ]


def test_jsonl_parquet_and_saved_dataset_give_the_same_examples(tmp_path: Path) -> None:
    import datasets

    rows = [{"prompt": f"q{i}", "completion": f"a{i}"} for i in range(3)]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = datasets.Dataset.from_list(rows)
    table.to_parquet(str(tmp_path / "d.parquet"))
    table.save_to_disk(str(tmp_path / "saved"))
    tok = tiny_tokenizer()
    loaded = [load_sft_dataset(p, tok) for p in (jsonl, tmp_path / "d.parquet", tmp_path / "saved")]
    key = [[(e.prompt_ids, e.response_ids, e.loss_mask) for e in ds] for ds in loaded]
    assert key[0] == key[1] == key[2] and len(key[0]) == 3


def test_a_files_bad_lines_and_bad_rows_are_named_together(tmp_path: Path) -> None:
    """EC D20 for SFT files: the row without a completion is named with the line that is
    not JSON, in one message; skip mode skips both."""
    path = tmp_path / "sft.jsonl"
    path.write_text(
        '{"prompt": "ok", "completion": "ok"}\n{oops\n{"prompt": "x"}\n'
        '{"prompt": "q", "completion": "a"}\n'
    )
    with pytest.raises(BadRowError) as info:
        load_sft_dataset(path, tiny_tokenizer())
    lines = str(info.value).splitlines()
    assert lines[0] == "2 bad rows:" and lines[1].startswith(f"  {path} line 2 is not valid")
    assert lines[2] == f"  {path} row 1 (line 3): expected a non-empty string in 'completion'"
    skipped = load_sft_dataset(path, tiny_tokenizer(), spec=SftRowSpec(on_bad_row="skip"))
    assert len(skipped) == 2 and skipped.stats.skipped_bad_rows == 2
