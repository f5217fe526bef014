"""HF engine generation with images: KV-cached sampling whose log-probs equal the policy's."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lightrft.adapters.datasets import InMemoryPromptSource, RowSpec
from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.multimodal_inputs import EncodedPromptSource, multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.types import SamplingParams
from tests.helpers.tiny_multimodal import (
    noise_image,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_5_vl,
    tiny_qwen2_vl,
    token_id,
)
from tests.unit.adapters.hf.test_vision_language_policy import _record, mixed_prompts

FAMILIES = {"qwen2_vl": tiny_qwen2_vl, "qwen2_5_vl": tiny_qwen2_5_vl}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_engine_logprobs_equal_the_policys(family: str) -> None:
    model = FAMILIES[family]()
    inputs = multimodal_inputs_for(model)
    tokenizer = tiny_mm_tokenizer()
    engine = HfRolloutEngine(model, tokenizer, torch.device("cpu"), multimodal=inputs)
    prompts = mixed_prompts()  # two images / text only / one image
    sampling = SamplingParams(n=2, temperature=1.0, max_new_tokens=6, seed=3)
    completions = engine.generate(prompts, sampling)
    assert [c.prompt_index for c in completions] == [0, 0, 1, 1, 2, 2]
    batch = build_rollout_tensors(prompts, completions, pad_token_id=0).sequences
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(batch).logprobs
    for row, completion in enumerate(completions):
        n = len(completion.token_ids)
        engine_lp = torch.tensor(completion.logprobs)
        torch.testing.assert_close(policy_lp[row, :n], engine_lp, atol=2e-5, rtol=1e-4)


def test_same_ids_with_other_images_are_not_shared() -> None:
    model = tiny_qwen2_vl()
    tokenizer = tiny_mm_tokenizer()
    encoder = VisionLanguageEncoder(tokenizer, tiny_image_processor())
    a = encoder.encode(_record(tokenizer, "a", "look", [noise_image(56, 56, 10)]))
    b = encoder.encode(_record(tokenizer, "b", "look", [noise_image(56, 56, 11)]))
    assert a.prompt_token_ids == b.prompt_token_ids  # same text, same image size
    engine = HfRolloutEngine(
        model, tokenizer, torch.device("cpu"), multimodal=multimodal_inputs_for(model)
    )
    greedy = SamplingParams(temperature=0.0, max_new_tokens=3)
    together = engine.generate([a, b], greedy)
    alone = [engine.generate([p], greedy)[0] for p in (a, b)]
    for got, want in zip(together, alone, strict=True):
        assert got.token_ids == want.token_ids
        torch.testing.assert_close(torch.tensor(got.logprobs), torch.tensor(want.logprobs))
    assert together[0].logprobs != together[1].logprobs  # the images matter


def test_text_only_engine_refuses_image_prompts() -> None:
    from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

    engine = HfRolloutEngine(tiny_model(), tiny_tokenizer(), torch.device("cpu"))
    prompt = replace(mixed_prompts()[2], uid="pic-7")
    with pytest.raises(ValueError, match=r"reads text only, but prompts \['pic-7'\]"):
        engine.generate([prompt], SamplingParams(max_new_tokens=2))


def test_media_placeholders_are_never_sampled() -> None:
    model = tiny_qwen2_vl()
    with torch.no_grad():  # make the image pad the model's overwhelming favourite
        model.lm_head.weight[token_id("<|image_pad|>")] = 50 * model.lm_head.weight[40]
        model.lm_head.weight[40] = 0
    engine = HfRolloutEngine(
        model, tiny_mm_tokenizer(), torch.device("cpu"), multimodal=multimodal_inputs_for(model)
    )
    out = engine.generate(mixed_prompts(), SamplingParams(n=2, max_new_tokens=4, seed=0))
    suppressed = {token_id("<|image_pad|>"), token_id("<|video_pad|>")}
    assert all(not suppressed & set(c.token_ids) for c in out)


def test_encoded_source_encodes_on_access_and_names_bad_rows() -> None:
    tokenizer = tiny_mm_tokenizer()
    rows = [
        {"prompt": "one", "reference": "1", "images": [noise_image(30, 30, 1)]},
        {"prompt": "text only", "reference": "2", "images": []},
    ]
    inner = InMemoryPromptSource(rows, tokenizer, spec=RowSpec(images_key="images"), name="s")
    source = EncodedPromptSource(inner, VisionLanguageEncoder(tokenizer, tiny_image_processor()))
    assert len(source) == 2 and source.stats.rows == 2  # the wrapped source's facts
    first = source[0]
    assert first is source[0]  # encoded once, then cached
    assert first.prompt_token_ids.count(token_id("<|image_pad|>")) == 4  # 56x56 -> 2x2 merged
    assert source[1].multimodal == {}
    broken = replace(inner[0], multimodal={"images": []})
    expected = r"s row 0: the prompt holds 1 image placeholder .* multimodal\['images'\] has 0"
    with pytest.raises(ValueError, match=expected):
        VisionLanguageEncoder(tokenizer, tiny_image_processor()).encode(broken)
