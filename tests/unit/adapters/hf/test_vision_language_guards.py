"""Guards against multimodal bugs seen in other RL frameworks, on a tiny Qwen2-VL.

- TRL #5785: token types built under another padding side than the ids. Here left- and
  right-padded layouts of the same rows give the same per-token log-probs as each row's
  own unpadded forward, and ``mm_token_type_ids`` marks exactly the attended image pads.
- verl #527: M-RoPE positions of padded rows. The positions built for a padded batch equal
  the model's own ``get_rope_index`` on each unpadded row (and its ``rope_deltas``);
  a policy configured to pack (and to share prefixes, which multimodal models never do)
  scores media rows exactly on the packed path (``test_packed_media.py`` checks the packed
  positions).
- TRL #6401 / #6294: pre-rendered (already expanded) prompt ids with raw images, records
  encoded twice, raw images reaching the forward: each refused, naming the row.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
from torch import Tensor

from lightrft.adapters.datasets import InMemoryPromptSource, RowSpec
from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.multimodal_inputs import EncodedPromptSource, multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord
from tests.helpers.tiny_multimodal import (
    noise_image,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_vl,
)
from tests.unit.adapters.hf.test_vision_language_policy import (
    PAD,
    RESPONSES,
    _record,
    direct_logprobs,
    mixed_batch,
    mixed_prompts,
)


def sequences() -> tuple[list[PromptRecord], list[list[int]]]:
    """The mixed prompts (two images / text only / one image) with their responses."""
    prompts = mixed_prompts()
    rows = [list(p.prompt_token_ids) + list(r) for p, r in zip(prompts, RESPONSES, strict=True)]
    return prompts, rows


def padded(rows: Sequence[Sequence[int]], side: str) -> tuple[Tensor, Tensor, list[Tensor]]:
    """(B, T) ids and mask with ``side`` padding (pad id 0), and each row's attended columns."""
    t = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), t, dtype=torch.long)
    mask = torch.zeros(len(rows), t, dtype=torch.long)
    columns = []
    for i, row in enumerate(rows):
        cols = torch.arange(t - len(row), t) if side == "left" else torch.arange(len(row))
        ids[i, cols], mask[i, cols] = torch.tensor(row), 1
        columns.append(cols)
    return ids, mask, columns


def next_token_logprobs(logits: Tensor, ids: Tensor, cols: Tensor) -> Tensor:
    """Log-probs (n - 1,) of each attended token after the first, from its predecessor."""
    logp = torch.log_softmax(logits.double(), -1)
    return logp[cols[:-1]].gather(-1, ids[cols[1:]][:, None]).squeeze(-1)


def own_rope(
    model: torch.nn.Module, row: Sequence[int], prompt: PromptRecord
) -> tuple[Tensor, Tensor]:
    """The model's ``get_rope_index`` on one unpadded row: positions (3, n), delta (1,)."""
    ids = torch.tensor([list(row)])
    grid = prompt.multimodal.get("image_grid_thw")
    positions, delta = model.model.get_rope_index(
        input_ids=ids,
        mm_token_type_ids=(ids == PAD).int(),
        image_grid_thw=grid,
        attention_mask=torch.ones_like(ids),
    )
    return positions[:, 0], delta.reshape(-1)


def test_left_and_right_padding_give_the_same_per_token_logprobs() -> None:
    model = tiny_qwen2_vl()
    inputs = multimodal_inputs_for(model)
    prompts, rows = sequences()
    payloads = [p.multimodal for p in prompts]
    scored: dict[str, list[Tensor]] = {}
    for side in ("left", "right"):
        ids, mask, columns = padded(rows, side)
        kwargs = inputs.model_inputs(ids, mask, payloads).kwargs
        # image token types exactly on the attended image pads, as many as the media need
        torch.testing.assert_close(kwargs["mm_token_type_ids"], ((ids == PAD) & mask.bool()).int())
        counts = kwargs["mm_token_type_ids"].sum(-1).tolist()
        assert counts == [sum(p.multimodal.get("image_tokens", ())) for p in prompts] == [10, 0, 8]
        with torch.no_grad():
            logits = model(**kwargs, use_cache=False).logits
        scored[side] = [next_token_logprobs(logits[i], ids[i], c) for i, c in enumerate(columns)]
    for i, (prompt, row) in enumerate(zip(prompts, rows, strict=True)):
        alone = torch.tensor([row])
        extra = {}
        if prompt.multimodal:
            extra = {
                "pixel_values": prompt.multimodal["pixel_values"],
                "image_grid_thw": prompt.multimodal["image_grid_thw"],
                "mm_token_type_ids": (alone == PAD).int(),
            }
        with torch.no_grad():
            logits = model(input_ids=alone, use_cache=False, **extra).logits[0]
        want = next_token_logprobs(logits, alone[0], torch.arange(len(row)))
        torch.testing.assert_close(scored["left"][i], want, atol=2e-5, rtol=1e-5)
        torch.testing.assert_close(scored["right"][i], want, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("side", ["left", "right"])
def test_mrope_positions_equal_the_models_get_rope_index_on_each_unpadded_row(side: str) -> None:
    model = tiny_qwen2_vl()
    prompts, rows = sequences()
    ids, mask, columns = padded(rows, side)
    built = multimodal_inputs_for(model).model_inputs(ids, mask, [p.multimodal for p in prompts])
    positions = built.kwargs["position_ids"]
    assert positions.shape[-2:] == ids.shape
    for i, (prompt, row) in enumerate(zip(prompts, rows, strict=True)):
        want, delta = own_rope(model, row, prompt)
        torch.testing.assert_close(positions[-3:, i, columns[i]], want)  # [3, n]
        torch.testing.assert_close(built.position_offsets[i], delta)
    # the text-only row counts 0..n-1 on all three axes, whatever the padding
    n = len(rows[1])
    assert positions[-3:, 1, columns[1]].tolist() == [list(range(n))] * 3
    # an image row's positions run behind its length: the image's h and w axes are shared
    assert int(positions[-3:, 0, columns[0]].max()) + 1 < len(rows[0])


def test_a_packing_policy_scores_media_rows_exactly() -> None:
    model = tiny_qwen2_vl()
    prompts, batch = mixed_batch()
    packed = HfPolicy(
        model, multimodal=multimodal_inputs_for(model), packing=True, prefix_sharing="on"
    )
    with torch.no_grad():
        got = packed.forward(batch).logprobs
    for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
        want = direct_logprobs(model, prompt, response)
        torch.testing.assert_close(got[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5)


def encoder() -> VisionLanguageEncoder:
    return VisionLanguageEncoder(tiny_mm_tokenizer(), tiny_image_processor())


def test_pre_rendered_expanded_ids_with_raw_images_are_refused() -> None:
    tok = tiny_mm_tokenizer()
    raw = _record(tok, "4", "what?", [noise_image(60, 90, 1)])
    expanded = encoder().encode(raw).prompt_token_ids  # what a processor would hand over
    assert expanded.count(PAD) == 6
    pre_rendered = PromptRecord(
        raw.uid, raw.prompt_text, expanded, None, raw.multimodal, raw.metadata
    )
    with pytest.raises(ValueError) as caught:
        encoder().encode(pre_rendered)
    assert str(caught.value).startswith(
        "t row 4: the prompt holds 6 image placeholder token(s) (id 5) but "
        "multimodal['images'] has 1 item(s); expected one placeholder per item (ids whose "
        "placeholders were already expanded"
    )


def test_a_record_is_never_expanded_twice() -> None:
    tok = tiny_mm_tokenizer()
    once = encoder().encode(_record(tok, "9", "look", [noise_image(40, 40, 2)]))
    with pytest.raises(
        ValueError,
        match=r"t row 9: the record is encoded already \(its image "
        r"placeholders were expanded to \(4,\) positions\); encode each record once",
    ):
        encoder().encode(once)
    rows = [{"prompt": "one", "reference": "1", "images": [noise_image(30, 30, 1)]}]
    inner = InMemoryPromptSource(rows, tok, spec=RowSpec(images_key="images"), name="s")
    twice = EncodedPromptSource(EncodedPromptSource(inner, encoder()), encoder())
    with pytest.raises(ValueError, match="s row 0: the record is encoded already"):
        twice[0]


def test_raw_images_reaching_the_forward_are_refused_by_row() -> None:
    model = tiny_qwen2_vl()
    tok = tiny_mm_tokenizer()
    raw = _record(tok, "3", "what?", [noise_image(40, 40, 1)])  # never encoded
    batch = build_rollout_tensors([raw], [Completion(0, (40, 41), "", "stop")], 0).sequences
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    expected = (
        r"row 0: its media were not encoded \(payload keys \['images'\]\); records must go "
        r"through the model's prompt encoder"
    )
    with pytest.raises(ValueError, match=expected):
        policy.forward(batch)
