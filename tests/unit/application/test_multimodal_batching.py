"""Batching keeps each sample's multimodal payload (issue 10: image rows were dropped)."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from lightrft.adapters.datasets import InMemoryPromptSource, RowSpec
from lightrft.adapters.hf import HfPolicy
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord, SequenceBatch
from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer


def _record(uid: str, ids: tuple[int, ...], media: dict[str, object]) -> PromptRecord:
    return PromptRecord(uid=uid, prompt_text=uid, prompt_token_ids=ids, multimodal=media)


def test_rows_keep_their_prompts_payload_in_order() -> None:
    prompts = [_record("a", (5, 6), {"images": ["a.png"]}), _record("b", (7,), {})]
    completions = [
        Completion(1, (9,), "x", "stop"),
        Completion(0, (8, 1), "y", "stop"),
        Completion(0, (4,), "z", "stop"),
    ]
    seq = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    # row 0 answers prompt b (text), rows 1 and 2 answer prompt a (one image)
    assert seq.multimodal == ({}, {"images": ["a.png"]}, {"images": ["a.png"]})
    assert seq.select(torch.tensor([2, 0])).multimodal == ({"images": ["a.png"]}, {})
    assert seq.select(torch.tensor([0])).multimodal == ()  # text-only rows: no payload at all


def test_text_only_batches_have_no_payload() -> None:
    prompts = [_record("a", (5, 6), {})]
    seq = build_rollout_tensors(prompts, [Completion(0, (9,), "x", "stop")], 0).sequences
    assert seq.multimodal == () and not seq.multimodal


def test_payload_count_must_match_rows() -> None:
    ids = torch.tensor([[5, 6], [7, 8]])
    with pytest.raises(ValueError, match="1 payloads for 2 rows"):
        SequenceBatch(ids, torch.ones_like(ids), torch.ones(2, 1), multimodal=({"x": 1},))


def test_text_only_policy_refuses_image_rows_read_from_data() -> None:
    red, blue = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (4, 4), "blue")
    rows = [
        {"prompt": "what is shown?", "reference": "cat", "image": red},
        {"prompt": "and here?", "reference": "dog", "image": [blue, red]},
    ]
    source = InMemoryPromptSource(
        rows, tiny_tokenizer(), spec=RowSpec(images_key="image"), name="pics"
    )
    prompts = [source[0], source[1]]
    completions = [Completion(0, (40, 1), "a", "stop"), Completion(1, (41, 1), "b", "stop")]
    seq = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with pytest.raises(ValueError, match=r"reads text only .* rows \[0, 1\] .*\['images'\]"):
        HfPolicy(tiny_model()).forward(seq)
