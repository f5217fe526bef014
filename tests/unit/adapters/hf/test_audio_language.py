"""Audio-language policy and engine (Qwen2-Audio): audio-token expansion, response log-probs
equal to the model's own forward per unpadded row, engine log-probs equal to the policy's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.audio_language import AudioLanguageEncoder, audio_tokens
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.tiny_multimodal import (
    tiny_feature_extractor,
    tiny_mm_tokenizer,
    tiny_qwen2_audio,
    token_id,
)

RATE = 16_000
AUDIO = token_id("<|AUDIO|>")


def tone(freq: float, seconds: float) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _record(uid: str, text: str, clips: Sequence[tuple[np.ndarray, int]]) -> PromptRecord:
    tok = tiny_mm_tokenizer()
    parts = [{"type": "audio"}] * len(clips) + [{"type": "text", "text": text}]
    rendered = tok.apply_chat_template(
        [{"role": "user", "content": parts}], tokenize=False, add_generation_prompt=True
    )
    ids = tuple(tok(rendered, add_special_tokens=False).input_ids)
    media = {"audios": list(clips)} if clips else {}
    return PromptRecord(uid, rendered, ids, multimodal=media, metadata={"where": f"a row {uid}"})


def audio_prompts() -> list[PromptRecord]:
    """Row 0: two clips (0.5 s, 1 s); row 1: text only; row 2: one clip of 0.25 s."""
    encoder = AudioLanguageEncoder(tiny_mm_tokenizer(), tiny_feature_extractor())
    raw = [
        _record("0", "which is higher?", [(tone(440, 0.5), RATE), (tone(880, 1.0), RATE)]),
        _record("1", "no audio at all", []),
        _record("2", "hm", [(tone(300, 0.25), RATE)]),
    ]
    return [encoder.encode(r) for r in raw]


def test_audio_token_count_follows_the_encoder_strides() -> None:
    # 0.5 s at 16 kHz, hop 160 -> 50 frames -> conv stride 2: (50-1)//2+1 = 25 -> pool
    # stride 2: (25-2)//2+1 = 12; 1 s -> 100 frames -> 50 -> 25; 0.25 s -> 25 -> 13 -> 6
    assert [audio_tokens(n) for n in (50, 100, 25)] == [12, 25, 6]
    prompts = audio_prompts()
    assert prompts[0].multimodal["audio_tokens"] == (12, 25)
    assert prompts[2].multimodal["audio_tokens"] == (6,)
    assert prompts[0].multimodal["input_features"].shape == (2, 128, 3000)
    assert prompts[1].multimodal == {}


def test_wrong_sampling_rate_names_the_row() -> None:
    encoder = AudioLanguageEncoder(tiny_mm_tokenizer(), tiny_feature_extractor())
    record = _record("9", "x", [(tone(440, 0.5), 8000)])
    with pytest.raises(ValueError, match=r"a row 9: audio clip 0 is sampled at 8000 Hz.*16000"):
        encoder.encode(record)


RESPONSES = [(40, 41, 42), (50, 51, 52, 53, 1), (60,)]


@pytest.mark.parametrize("packing", [False, True])
def test_policy_logprobs_equal_the_models_own_forward(packing: bool) -> None:
    model = tiny_qwen2_audio()
    prompts = audio_prompts()
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(RESPONSES)]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy = HfPolicy(model, multimodal=multimodal_inputs_for(model), packing=packing)
        got = policy.forward(batch).logprobs
    for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
        ids = torch.tensor([list(prompt.prompt_token_ids) + list(response)])
        media = prompt.multimodal
        kwargs = (
            {
                "input_features": media["input_features"],
                "feature_attention_mask": media["feature_attention_mask"],
            }
            if media
            else {}
        )
        with torch.no_grad():
            logits = model(input_ids=ids, use_cache=False, **kwargs).logits[0].double()
        logits[:, AUDIO] = float("-inf")  # the placeholder is outside the policy's distribution
        logp = torch.log_softmax(logits, -1)[len(prompt.prompt_token_ids) - 1 : -1]
        want = logp.gather(-1, torch.tensor(response)[:, None]).squeeze(-1)
        torch.testing.assert_close(got[row, : len(response)].double(), want, atol=1e-5, rtol=1e-5)


def test_engine_logprobs_equal_the_policys() -> None:
    model = tiny_qwen2_audio()
    inputs = multimodal_inputs_for(model)
    engine = HfRolloutEngine(model, tiny_mm_tokenizer(), torch.device("cpu"), multimodal=inputs)
    prompts = audio_prompts()
    completions = engine.generate(prompts, SamplingParams(n=2, max_new_tokens=5, seed=4))
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, completion in enumerate(completions):
        n = len(completion.token_ids)
        torch.testing.assert_close(
            policy_lp[row, :n], torch.tensor(completion.logprobs), atol=2e-5, rtol=1e-4
        )
