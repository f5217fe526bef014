"""One Qwen2.5-Omni prompt with clips, images and a video interleaved in one message.

Through the real data layer (a jsonl of chat content parts, files read from disk), the
thinker's prompt encoder, the policy and the HF engine: the parts keep their order, each
placeholder expands to its item's hand-computed count, the M-RoPE positions are the
thinker's own ``get_rope_index`` on the unpadded row, the policy's log-probs equal the
thinker's own forward (which computes its positions itself), the engine's equal the
policy's, and a gradient step reaches the language model and the audio encoder.
"""

from __future__ import annotations

import pytest
import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.omni import OmniEncoder
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from lightrft.entrypoints.config.sections import DatasetConfig
from lightrft.entrypoints.wiring.data import build_prompts
from tests.helpers.omni_mixed import write_mixed_rows
from tests.helpers.tiny_multimodal import tiny_feature_extractor, tiny_image_processor
from tests.helpers.tiny_omni import (
    THINKER_SUPPRESSED,
    omni_token_id,
    thinker_logprobs,
    tiny_omni_thinker,
    tiny_omni_tokenizer,
)

TOKENS = ("<|IMAGE|>", "<|VIDEO|>", "<|AUDIO|>", "<|vision_bos|>", "<|audio_bos|>")
IMAGE, VIDEO, AUDIO, VISION_BOS, AUDIO_BOS = (omni_token_id(t) for t in TOKENS)
RESPONSES = [(40, 41, 42, 43), (50, 51), (60, 61, 62, 1)]
TOL = 1e-4  # the bound; measured differences are printed (about 1e-6)


def encoder() -> OmniEncoder:
    return OmniEncoder(tiny_omni_tokenizer(), tiny_image_processor(), tiny_feature_extractor(1))


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[PromptRecord], list[PromptRecord]]:
    """(raw records as the data layer gives them, the same encoded)."""
    path = write_mixed_rows(tmp_path_factory.mktemp("omni"))
    source = build_prompts(
        DatasetConfig(path=str(path)), tiny_omni_tokenizer(), encoder().requirements
    )
    assert source is not None
    raw = [source[i] for i in range(len(source))]
    return raw, [encoder().encode(r) for r in raw]


def _starts(ids: tuple[int, ...]) -> list[str]:
    """The kinds of media in the order their placeholders come."""
    kinds = {IMAGE: "image", VIDEO: "video", AUDIO: "audio"}
    return [kinds[ids[i + 1]] for i, t in enumerate(ids) if t in (VISION_BOS, AUDIO_BOS)]


def test_the_parts_keep_their_order_and_expand_to_their_counts(rows) -> None:
    raw, encoded = rows
    mixed = raw[0]
    assert _starts(mixed.prompt_token_ids) == ["audio", "image", "video", "audio", "image"]
    assert "<|audio_bos|><|AUDIO|><|audio_eos|><|vision_bos|><|IMAGE|><|vision_eos|>then" in (
        mixed.prompt_text
    )
    media = mixed.multimodal
    assert [im.size for im in media["images"]] == [(60, 90), (40, 40)]  # in chat order
    assert [clip.shape[0] for clip, _ in media["audios"]] == [8000, 4000]
    assert len(media["videos"]) == 1 and len(media["videos"][0].frames) == 3
    payload = encoded[0].multimodal
    # 60x90 -> 56x84 -> (1, 6, 4): 6 pads; 40x40 -> 56x56 -> (1, 4, 4): 4 pads
    assert payload["image_tokens"] == (6, 4)
    # 3 frames 56x84, temporal patch 2 -> (2, 6, 4): 12 pads
    assert payload["video_tokens"] == (12,) and payload["video_grid_thw"].tolist() == [[2, 6, 4]]
    # 0.5 s = 50 frames -> (49//2+1-2)//2+1 = 12; 0.25 s = 25 frames -> 6
    assert payload["audio_tokens"] == (12, 6)
    ids = encoded[0].prompt_token_ids
    assert (ids.count(IMAGE), ids.count(VIDEO), ids.count(AUDIO)) == (10, 12, 18)
    assert _starts(ids) == _starts(mixed.prompt_token_ids)  # expansion keeps the order
    # the first clip's 12 pads come before the first image's 6
    first_audio, first_image = ids.index(AUDIO), ids.index(IMAGE)
    assert first_audio < first_image and ids[first_audio : first_audio + 12] == (AUDIO,) * 12
    assert encoded[2] == raw[2]  # text row unchanged


def _batch(prompts, responses):
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(responses)]
    return build_rollout_tensors(list(prompts), completions, pad_token_id=0).sequences


def test_positions_are_the_thinkers_own_rope_index(rows) -> None:
    model = tiny_omni_thinker()
    _, encoded = rows
    batch = _batch(encoded, RESPONSES)
    built = multimodal_inputs_for(model).model_inputs(
        batch.input_ids, batch.attention_mask, batch.multimodal
    )
    positions = built.kwargs["position_ids"]  # [3, B, T]
    row = encoded[0]
    ids = torch.tensor([list(row.prompt_token_ids) + list(RESPONSES[0])])
    p = row.multimodal
    want, delta = model.get_rope_index(
        ids,
        p["image_grid_thw"],
        p["video_grid_thw"],
        torch.ones_like(ids),
        False,
        p["feature_attention_mask"].sum(-1),
        p["second_per_grid_ts"],
    )
    keep = batch.attention_mask[0].bool()
    assert torch.equal(positions[:, 0, keep], want[:, 0])
    assert torch.equal(built.position_offsets[0], delta[0].to(torch.long))
    # the clip that opens the row is 1-D (its three axes equal); the image after it is not
    pads = (ids[0] == AUDIO).nonzero().squeeze(-1)[:12]
    assert torch.equal(want[0, 0, pads], want[1, 0, pads])
    image = (ids[0] == IMAGE).nonzero().squeeze(-1)[:6]
    assert not torch.equal(want[1, 0, image], want[2, 0, image])


def test_policy_equals_the_thinkers_forward_and_the_engine_equals_the_policy(rows) -> None:
    model = tiny_omni_thinker()
    _, encoded = rows
    inputs = multimodal_inputs_for(model)
    policy = HfPolicy(model, multimodal=inputs)
    with torch.no_grad():
        got = policy.forward(_batch(encoded, RESPONSES)).logprobs
    worst = 0.0
    for row, (prompt, response) in enumerate(zip(encoded, RESPONSES, strict=True)):
        want = thinker_logprobs(model, prompt, response)
        worst = max(worst, float((got[row, : len(response)].double() - want).abs().max()))
    print(f"policy vs thinker forward: max |diff| {worst:.2e}")
    assert worst <= TOL
    engine = HfRolloutEngine(model, tiny_omni_tokenizer(), torch.device("cpu"), multimodal=inputs)
    sampled = engine.generate(encoded, SamplingParams(n=2, max_new_tokens=4, seed=5))
    assert not any(set(c.token_ids) & set(THINKER_SUPPRESSED) for c in sampled)
    batch = build_rollout_tensors(encoded, sampled, pad_token_id=0).sequences
    with torch.no_grad():
        again = policy.forward(batch).logprobs
    gap = max(
        float((again[i, : len(c.token_ids)] - torch.tensor(c.logprobs)).abs().max())
        for i, c in enumerate(sampled)
    )
    print(f"engine vs policy: max |diff| {gap:.2e}")
    assert gap <= TOL


def test_the_mixed_row_depends_on_each_medium(rows) -> None:
    """The check above can fail: dropping the audio or the video changes the row's
    log-probs (the thinker reads every medium of the row)."""
    model = tiny_omni_thinker()
    _, encoded = rows
    prompt, response = encoded[0], RESPONSES[0]
    full = thinker_logprobs(model, prompt, response)
    for drop in ("input_features", "pixel_values_videos"):
        zeroed = torch.zeros_like(prompt.multimodal[drop])
        other = thinker_logprobs(model, prompt, response, **{drop: zeroed})
        assert float((other - full).abs().max()) > 1e-4, drop


def test_a_gradient_step_on_the_mixed_batch_reaches_the_lm_and_the_audio_encoder(rows) -> None:
    model = tiny_omni_thinker()
    _, encoded = rows
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    policy.forward(_batch(encoded, RESPONSES)).logprobs.sum().backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert any(n.startswith("model.layers.") and g.abs().sum() > 0 for n, g in grads.items())
    assert any(n.startswith("audio_tower.") and g.abs().sum() > 0 for n, g in grads.items())
    assert any(n.startswith("visual.") and g.abs().sum() > 0 for n, g in grads.items())
