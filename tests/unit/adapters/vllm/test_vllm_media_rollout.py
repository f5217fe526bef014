"""Audio rollouts on the real vLLM CPU backend (skipped without vLLM; slow: the engine
starts in about 20 s with the audio processor).

A tiny random Qwen2-Audio saved for vLLM (:mod:`.vllm_tiny_audio`) is served by
``VllmRolloutEngine``; the HF policy holds the same weights. Checked: vLLM expands each
clip's one placeholder to the positions our encoder gives it, the engine's log-probs of the
sampled tokens equal the policy's for rows with two clips, one clip and none, before and
after a weight sync that changes every weight (the audio encoder's too).

Tolerance 1e-4 (absolute): both sides compute in fp32 with other kernels (vLLM's CPU
attention and fused linear layers vs transformers' eager ones), so the log-probs agree to
float rounding accumulated over two layers (measured about 1e-6 here, see docs/engines.md);
a missed placeholder, a clip read by the wrong weights or a placeholder left in the
distribution shifts them by 1e-3 or more (a random tiny model gives each of its 266 tokens
about 1/266 of the mass).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from lightrft.adapters.hf import HfPolicy
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import Completion, PromptRecord, SamplingParams
from tests.helpers.tiny_multimodal import tiny_qwen2_audio
from tests.unit.adapters.hf.test_audio_language import audio_prompts
from tests.unit.adapters.vllm.vllm_tiny import require_vllm, tiny_engine_params
from tests.unit.adapters.vllm.vllm_tiny_audio import save_for_vllm

pytestmark = pytest.mark.slow
ATOL = 1e-4


@pytest.fixture(scope="module")
def served() -> Iterator[tuple]:  # (engine, HF model)
    require_vllm()
    from lightrft.adapters.vllm import VllmRolloutEngine
    from lightrft.adapters.vllm.media_prompts import media_limits

    directory = Path(tempfile.mkdtemp(prefix="lightrft-vllm-audio-"))
    model = tiny_qwen2_audio(0)
    save_for_vllm(directory, model)
    params = tiny_engine_params(directory, media_per_prompt=media_limits(audio_prompts()))
    engine = VllmRolloutEngine(params, "cpu")
    try:
        yield engine, model
    finally:
        engine.close()
        shutil.rmtree(directory, ignore_errors=True)


def _policy_logprobs(
    model: torch.nn.Module, prompts: list[PromptRecord], completions: list[Completion]
) -> torch.Tensor:
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        return HfPolicy(model, multimodal=multimodal_inputs_for(model)).forward(batch).logprobs


def _check_equal(engine, model: torch.nn.Module, seed: int) -> None:  # noqa: ANN001
    prompts = audio_prompts()
    completions = engine.generate(prompts, SamplingParams(n=2, max_new_tokens=6, seed=seed))
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1, 2, 2]
    policy = _policy_logprobs(model, prompts, completions)
    for row, completion in enumerate(completions):
        n = len(completion.token_ids)
        assert n > 0
        torch.testing.assert_close(
            torch.tensor(completion.logprobs), policy[row, :n].float(), atol=ATOL, rtol=0
        )


def test_vllm_expands_each_clip_as_our_encoder_does(served: tuple) -> None:
    import vllm
    from vllm.inputs import TokensPrompt

    from lightrft.adapters.vllm.media_prompts import media_request

    engine, _ = served
    prompts = audio_prompts()
    requests = [media_request(p) for p in prompts]
    inputs = [
        TokensPrompt(prompt_token_ids=r.prompt_token_ids, multi_modal_data=r.multi_modal_data)
        if r.multi_modal_data
        else TokensPrompt(prompt_token_ids=r.prompt_token_ids)
        for r in requests
    ]
    outputs = engine.llm.generate(inputs, vllm.SamplingParams(max_tokens=1), use_tqdm=False)
    for prompt, output in zip(prompts, outputs, strict=True):
        assert tuple(output.prompt_token_ids) == prompt.prompt_token_ids
    assert len(requests[0].prompt_token_ids) == len(prompts[0].prompt_token_ids) - (12 + 25) + 2


def test_engine_logprobs_with_audio_equal_the_policys(served: tuple) -> None:
    engine, model = served
    _check_equal(engine, model, seed=3)


def test_after_a_sync_of_changed_weights_they_still_agree(served: tuple) -> None:
    engine, _ = served
    changed = tiny_qwen2_audio(0)
    torch.manual_seed(7)
    with torch.no_grad():
        for param in changed.parameters():
            param.add_(0.05 * torch.randn_like(param))
    engine.load_weights(changed.named_parameters())
    _check_equal(engine, changed, seed=5)
