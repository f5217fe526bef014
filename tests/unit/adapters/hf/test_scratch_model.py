"""The from-scratch policy directory: byte tokenizer, deterministic weights, loadable."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file

from lightrft.adapters.hf.loading import ModelLoadParams, load_causal_lm, load_tokenizer
from lightrft.adapters.hf.scratch_model import (
    ScratchModelSpec,
    byte_tokenizer,
    write_scratch_model,
)

TOKENIZER = byte_tokenizer()


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=40))
def test_every_text_round_trips_one_token_per_utf8_byte(text: str) -> None:
    ids = TOKENIZER(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text.encode("utf-8"))
    assert all(3 <= i < 259 for i in ids)
    assert TOKENIZER.decode(ids) == text


def test_the_chat_template_writes_role_lines_ends_answers_with_eos_and_opens_the_answer() -> None:
    rendered = TOKENIZER.apply_chat_template(
        [{"role": "user", "content": "Start with 3. Add 4."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert rendered == "user: Start with 3. Add 4.\nassistant: "
    chat = [{"role": "user", "content": "3 + 4?"}, {"role": "assistant", "content": "7"}]
    full = TOKENIZER.apply_chat_template(chat, tokenize=False)
    assert full == "user: 3 + 4?\nassistant: 7<eos>\n"  # SFT on chats teaches the stop
    ids = TOKENIZER(full, add_special_tokens=False)["input_ids"]
    assert ids[-2:] == [
        TOKENIZER.eos_token_id,
        TOKENIZER("\n", add_special_tokens=False)["input_ids"][0],
    ]


def _weights(directory: Path) -> dict[str, torch.Tensor]:
    (file,) = directory.glob("*.safetensors")
    return load_file(file)


def test_the_model_is_written_loadable_and_deterministic_given_the_seed(tmp_path: Path) -> None:
    spec = ScratchModelSpec(hidden=64, layers=2, max_positions=64, seed=3)
    first = write_scratch_model(tmp_path / "a", spec)
    second = write_scratch_model(tmp_path / "b", spec)
    other = write_scratch_model(tmp_path / "c", ScratchModelSpec(hidden=64, layers=2, seed=4))
    a, b, c = _weights(first), _weights(second), _weights(other)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)

    model = load_causal_lm(first, torch.device("cpu"), ModelLoadParams(dtype="float32"))
    assert model.config.hidden_size == 64 and model.config.num_hidden_layers == 2
    assert model.config.num_attention_heads == 2 and model.config.vocab_size == 259
    tokenizer = load_tokenizer(first)
    assert tokenizer.padding_side == "left" and tokenizer.pad_token_id == 0
    assert tokenizer.eos_token_id == 1
    ids = tokenizer("7 + 5 = 12", return_tensors="pt")["input_ids"]
    assert model(ids).logits.shape == (1, ids.shape[1], 259)
    assert not list(tmp_path.glob(".*"))  # no temporary directory left behind


def test_an_existing_directory_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "policy"
    target.mkdir()
    (target / "stale.txt").write_text("old")
    write_scratch_model(target, ScratchModelSpec(hidden=32, layers=1, max_positions=32))
    assert not (target / "stale.txt").exists()
    assert (target / "config.json").is_file()


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (ScratchModelSpec(hidden=48), "hidden"),
        (ScratchModelSpec(layers=0), "layers"),
        (ScratchModelSpec(max_positions=8), "max_positions"),
    ],
)
def test_bad_sizes_are_refused_naming_the_field(
    tmp_path: Path, spec: ScratchModelSpec, field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        write_scratch_model(tmp_path / "x", spec)
    assert not (tmp_path / "x").exists()
