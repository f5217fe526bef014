"""Sample packing of multimodal rows (``packing=True``) equals the padded path.

A tiny random Qwen2-VL (and Qwen2.5-VL for the log-probs) scores rows with two images of different sizes, none and one in one
packed row: per-token log-probs equal the padded path's, the M-RoPE positions it uses equal
the model's ``get_rope_index`` on each unpadded row, and rows do not see each other (a
packed row with the rows in another order scores each row alike).
"""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion
from tests.helpers.tiny_multimodal import tiny_qwen2_vl
from tests.unit.adapters.hf.test_vision_language_guards import own_rope, sequences
from tests.unit.adapters.hf.test_vision_language_policy import (
    FAMILIES,
    RESPONSES,
    mixed_prompts,
)


def _batch(order: list[int]):
    prompts = mixed_prompts()
    completions = [Completion(i, RESPONSES[i], "", "stop") for i in order]
    return build_rollout_tensors(prompts, completions, pad_token_id=0).sequences


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_packed_logprobs_equal_the_padded_path_for_rows_with_0_1_and_2_images(
    family: str,
) -> None:
    model = FAMILIES[family]()
    inputs = multimodal_inputs_for(model)
    batch = _batch([0, 1, 2])
    padded = HfPolicy(model, multimodal=inputs)
    packed = HfPolicy(model, multimodal=inputs, packing=True)
    with torch.no_grad():
        want = padded.forward(batch, with_entropy=True)
        got = packed.forward(batch, with_entropy=True)
    scored = batch.response_mask.bool()
    assert int(scored.sum()) == sum(len(r) for r in RESPONSES)
    torch.testing.assert_close(got.logprobs, want.logprobs, atol=1e-5, rtol=0)
    assert want.entropy is not None and got.entropy is not None
    torch.testing.assert_close(got.entropy, want.entropy, atol=1e-5, rtol=0)
    # rows are confined: the same rows packed in another order score alike
    with torch.no_grad():
        swapped = packed.forward(_batch([2, 0, 1])).logprobs
    torch.testing.assert_close(swapped[[1, 2, 0]], got.logprobs, atol=1e-5, rtol=0)


def test_packed_positions_are_get_rope_index_of_each_unpadded_row() -> None:
    model = tiny_qwen2_vl()
    batch = _batch([0, 1, 2])
    prompts, rows = sequences()
    payloads = list(batch.multimodal)
    packed = multimodal_inputs_for(model).packed_inputs(
        batch.input_ids, batch.attention_mask, payloads
    )
    assert packed is not None and packed["attention_mask"] is None
    positions = packed["position_ids"]  # [4, 1, N]: text positions, then M-RoPE
    assert positions.shape == (4, 1, sum(len(r) for r in rows))
    assert packed["input_ids"][0].tolist() == [t for row in rows for t in row]
    start = 0
    for prompt, row in zip(prompts, rows, strict=True):
        span = slice(start, start + len(row))
        want, _ = own_rope(model, row, prompt)  # [3, n]
        torch.testing.assert_close(positions[1:, 0, span], want)
        assert positions[0, 0, span].tolist() == list(range(len(row)))
        start += len(row)
    counts = [sum(p.multimodal.get("image_tokens", ())) for p in prompts]
    assert int(packed["mm_token_type_ids"].sum()) == sum(counts) == 18
    grids = [p.multimodal["image_grid_thw"] for p in prompts if p.multimodal]
    torch.testing.assert_close(packed["image_grid_thw"], torch.cat(grids))  # row order


def test_a_text_only_batch_packs_with_rows_confined() -> None:
    model = tiny_qwen2_vl()
    inputs = multimodal_inputs_for(model)
    prompts = mixed_prompts()
    completions = [Completion(1, RESPONSES[1], "", "stop"), Completion(1, (70, 71), "", "stop")]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        want = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
        got = HfPolicy(model, multimodal=inputs, packing=True).forward(batch).logprobs
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
