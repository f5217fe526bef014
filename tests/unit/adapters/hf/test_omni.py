"""Qwen2.5-Omni thinker as a policy: rows with an image, audio, both or neither.

Log-probs of the policy equal the thinker's own forward on inputs built here from the
image processor and feature extractor directly (placeholders expanded by hand-computed
counts); a padded batch of the four kinds of row equals each row alone; the engine's
log-probs equal the policy's; rows whose placeholders do not match their media are named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine, LoraParams
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.omni import OmniEncoder
from lightrft.adapters.hf.vision_language import language_model_lora
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.modality import media_cost
from lightrft.domain.types import Completion, PromptRecord, SamplingParams, SequenceBatch
from tests.helpers.tiny_multimodal import noise_image, tiny_feature_extractor, tiny_image_processor
from tests.helpers.tiny_omni import omni_token_id, tiny_omni_thinker, tiny_omni_tokenizer

RATE = 16_000
IMAGE, AUDIO = omni_token_id("<|IMAGE|>"), omni_token_id("<|AUDIO|>")
VISION_BOS, AUDIO_BOS = omni_token_id("<|vision_bos|>"), omni_token_id("<|audio_bos|>")
SUPPRESSED = [IMAGE, omni_token_id("<|VIDEO|>"), AUDIO, VISION_BOS, AUDIO_BOS]


def tone(freq: float, seconds: float) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _raw(uid: str, text: str, images: Sequence[Any], clips: Sequence[Any]) -> PromptRecord:
    tok = tiny_omni_tokenizer()
    parts = [{"type": "image"}] * len(images) + [{"type": "audio"}] * len(clips)
    rendered = tok.apply_chat_template(
        [{"role": "user", "content": [*parts, {"type": "text", "text": text}]}],
        tokenize=False,
        add_generation_prompt=True,
    )
    ids = tuple(tok(rendered, add_special_tokens=False).input_ids)
    media: dict[str, Any] = {}
    if images:
        media["images"] = list(images)
    if clips:
        media["audios"] = [(clip, RATE) for clip in clips]
    return PromptRecord(uid, rendered, ids, multimodal=media, metadata={"where": f"o row {uid}"})


def raw_rows() -> list[PromptRecord]:
    """Row 0: an image (60x90) and a clip (0.5 s); 1: text; 2: an image; 3: two clips."""
    return [
        _raw("0", "what do you see and hear?", [noise_image(60, 90, 1)], [tone(440, 0.5)]),
        _raw("1", "just some words", [], []),
        _raw("2", "what?", [noise_image(40, 40, 2)], []),
        _raw("3", "which is higher?", [], [tone(300, 0.25), tone(880, 1.0)]),
    ]


def encoder() -> OmniEncoder:
    return OmniEncoder(tiny_omni_tokenizer(), tiny_image_processor(), tiny_feature_extractor(1))


RESPONSES = [(40, 41, 42), (50, 51, 52, 53, 1), (60,), (70, 71)]


def batch_of(prompts: Sequence[PromptRecord], responses: Sequence[Sequence[int]]) -> SequenceBatch:
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(responses)]
    return build_rollout_tensors(list(prompts), completions, pad_token_id=0).sequences


def direct_inputs(raw: PromptRecord) -> tuple[list[int], dict[str, Tensor]]:
    """The prompt ids and media arguments a Qwen2.5-Omni processor gives, built here from
    the image processor and the feature extractor directly: each <|IMAGE|> repeated
    t*h*w/4 times, each <|AUDIO|> ((n-1)//2+1-2)//2+1 times for n attended frames."""
    kwargs: dict[str, Tensor] = {}
    image_counts: list[int] = []
    audio_counts: list[int] = []
    if "images" in raw.multimodal:
        out = tiny_image_processor()(images=raw.multimodal["images"], return_tensors="pt")
        kwargs.update(pixel_values=out["pixel_values"], image_grid_thw=out["image_grid_thw"])
        image_counts = [int(t * h * w) // 4 for t, h, w in out["image_grid_thw"].tolist()]
    if "audios" in raw.multimodal:
        out = tiny_feature_extractor(1)(
            [clip for clip, _ in raw.multimodal["audios"]],
            sampling_rate=RATE,
            return_attention_mask=True,
            padding="max_length",
            return_tensors="pt",
        )
        mask = out["attention_mask"]
        kwargs.update(input_features=out["input_features"], feature_attention_mask=mask)
        audio_counts = [((n - 1) // 2 + 1 - 2) // 2 + 1 for n in mask.sum(-1).tolist()]
    ids: list[int] = []
    for token in raw.prompt_token_ids:
        if token == IMAGE:
            ids += [IMAGE] * image_counts.pop(0)
        elif token == AUDIO:
            ids += [AUDIO] * audio_counts.pop(0)
        else:
            ids.append(token)
    return ids, kwargs


def direct_logprobs(model: Any, raw: PromptRecord, response: Sequence[int]) -> Tensor:
    """The thinker's own forward on one unpadded row (it computes its M-RoPE positions
    itself from the attention mask, image grids and audio lengths), float64."""
    prompt, kwargs = direct_inputs(raw)
    ids = torch.tensor([prompt + list(response)])
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False, **kwargs)
    logits = out.logits[0].double()
    logits[:, SUPPRESSED] = float("-inf")  # media tokens are outside the policy's distribution
    logp = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1]
    return logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)


def test_encoder_expands_both_media_of_a_row_into_one_payload() -> None:
    raw = raw_rows()
    prompts = [encoder().encode(r) for r in raw]
    both = prompts[0].multimodal
    # 60x90 -> 56x84 -> grid (1, 6, 4) -> 24 patches / 4 = 6 pads; 0.5 s = 50 frames ->
    # (49//2+1-2)//2+1 = 12 audio pads; cost = 24 patches + 12 audio positions
    assert both["image_grid_thw"].tolist() == [[1, 6, 4]] and both["image_tokens"] == (6,)
    assert both["audio_tokens"] == (12,) and both["feature_attention_mask"].shape == (1, 100)
    assert media_cost(both) == 24 + 12 and both["where"] == "o row 0"
    assert "images" not in both and "audios" not in both  # raw media replaced by tensors
    assert prompts[0].prompt_token_ids.count(IMAGE) == 6
    assert prompts[0].prompt_token_ids.count(AUDIO) == 12
    assert prompts[1] == raw[1]  # text only: unchanged
    assert (
        prompts[3].multimodal["audio_tokens"] == (6, 25)
        and "image_tokens" not in prompts[3].multimodal
    )
    for prompt, row in zip(prompts, raw, strict=True):
        assert list(prompt.prompt_token_ids) == direct_inputs(row)[0]


def test_policy_logprobs_equal_the_thinkers_own_forward() -> None:
    model = tiny_omni_thinker()
    raw = raw_rows()
    prompts = [encoder().encode(r) for r in raw]
    batch = batch_of(prompts, RESPONSES)
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with torch.no_grad():
        got = policy.forward(batch).logprobs
    for row, (record, response) in enumerate(zip(raw, RESPONSES, strict=True)):
        want = direct_logprobs(model, record, response)
        torch.testing.assert_close(got[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5)
        assert bool((got[row, len(response) :] == 0).all())  # padding holds 0


def test_m_rope_positions_matter_for_the_image_and_audio_row() -> None:
    """The check above can fail: 1-D positions give other log-probs for row 0."""
    model = tiny_omni_thinker()
    raw = raw_rows()[0]
    prompt, kwargs = direct_inputs(raw)
    ids = torch.tensor([prompt + list(RESPONSES[0])])
    with torch.no_grad():
        flat = model(input_ids=ids, position_ids=torch.arange(ids.shape[1])[None], **kwargs)
    logp = torch.log_softmax(flat.logits[0].double(), -1)[len(prompt) - 1 : -1]
    one_d = logp.gather(-1, torch.tensor(RESPONSES[0])[:, None]).squeeze(-1)
    assert (one_d - direct_logprobs(model, raw, RESPONSES[0])).abs().max() > 1e-3


def test_a_mixed_batch_equals_each_row_alone() -> None:
    model = tiny_omni_thinker()
    prompts = [encoder().encode(r) for r in raw_rows()]
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with torch.no_grad():
        together = policy.forward(batch_of(prompts, RESPONSES)).logprobs
        for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
            alone = policy.forward(batch_of([prompt], [response])).logprobs[0]
            torch.testing.assert_close(together[row, : len(response)], alone, atol=1e-5, rtol=1e-5)


def test_engine_logprobs_equal_the_policys() -> None:
    """Generation continues each row's positions after its media (the rope offsets)."""
    model = tiny_omni_thinker()
    inputs = multimodal_inputs_for(model)
    engine = HfRolloutEngine(model, tiny_omni_tokenizer(), torch.device("cpu"), multimodal=inputs)
    prompts = [encoder().encode(r) for r in raw_rows()]
    completions = engine.generate(prompts, SamplingParams(n=1, max_new_tokens=4, seed=3))
    assert not any(set(c.token_ids) & set(SUPPRESSED) for c in completions)
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, completion in enumerate(completions):
        n = len(completion.token_ids)
        torch.testing.assert_close(
            policy_lp[row, :n], torch.tensor(completion.logprobs), atol=2e-5, rtol=1e-4
        )


def _with_ids(batch: SequenceBatch, ids: Tensor) -> SequenceBatch:
    return SequenceBatch(ids, batch.attention_mask, batch.response_mask, batch.multimodal)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (AUDIO, r"row 0 \(o row 0\): 11 audio placeholder tokens but its media need 12"),
        (IMAGE, r"row 0 \(o row 0\): 5 image placeholder tokens but its media need 6"),
        (AUDIO_BOS, r"row 0 \(o row 0\): 1 vision-start and 0 audio-start tokens but its "
         r"media are 1 image\(s\) and 1 clip\(s\)"),
    ],
)  # fmt: skip
def test_a_row_whose_placeholders_do_not_match_its_media_is_named(token: int, message: str) -> None:
    model = tiny_omni_thinker()
    batch = batch_of([encoder().encode(r) for r in raw_rows()], RESPONSES)
    ids = batch.input_ids.clone()
    ids[0, (ids[0] == token).nonzero()[0]] = 50  # row 0 loses one such token
    policy = HfPolicy(model, multimodal=multimodal_inputs_for(model))
    with pytest.raises(ValueError, match=message):
        policy.forward(_with_ids(batch, ids))


def test_encoder_refuses_a_record_whose_placeholders_do_not_match_its_media() -> None:
    record = raw_rows()[0]
    extra_clip = PromptRecord(
        record.uid,
        record.prompt_text,
        record.prompt_token_ids,
        multimodal={**record.multimodal, "audios": [(tone(200, 0.3), RATE)] * 2},
        metadata=record.metadata,
    )
    expected = (
        r"o row 0: the prompt holds 1 audio placeholder token\(s\) \(id \d+\) but "
        r"multimodal\['audios'\] has 2 item\(s\)"
    )
    with pytest.raises(ValueError, match=expected):
        encoder().encode(extra_clip)


def test_requirements_name_the_thinkers_placeholders_and_rate() -> None:
    media = encoder().requirements
    assert (media.image_placeholder, media.audio_placeholder) == ("<|IMAGE|>", "<|AUDIO|>")
    assert media.audio_sampling_rate == RATE


def test_lora_adapts_the_language_model_and_audio_encoder_not_the_vision_tower() -> None:
    model = tiny_omni_thinker()
    params = language_model_lora(model, LoraParams(rank=2), train_vision=False)
    policy = HfPolicy(model, lora=params, multimodal=multimodal_inputs_for(model))
    trainable = [n for n, p in policy.module.named_parameters() if p.requires_grad]
    assert all("lora_" in n and ".visual." not in n for n in trainable)
    assert any(".audio_tower." in n for n in trainable) and any(
        ".model.layers." in n for n in trainable
    )
    batch = batch_of([encoder().encode(r) for r in raw_rows()], RESPONSES)
    policy.forward(batch).logprobs.sum().backward()  # gradients reach every adapter
    assert all(p.grad is not None for p in policy.module.parameters() if p.requires_grad)
