"""The critic on vision- and audio-language backbones: values of a padded batch of rows with
and without media equal a direct forward of each unpadded row through the family's base
model (which computes its own M-RoPE positions) and the value head; the media change the
values; the value head trains toward returns through the media inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from lightrft.adapters.hf.critic import HfCritic
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.application.batching import build_rollout_tensors
from lightrft.domain.ports import Critic
from lightrft.domain.types import Completion, PromptRecord, SequenceBatch
from tests.helpers.tiny_multimodal import tiny_qwen2_5_vl, tiny_qwen2_audio, tiny_qwen2_vl, token_id
from tests.unit.adapters.hf.test_audio_language import audio_prompts
from tests.unit.adapters.hf.test_vision_language_policy import RESPONSES, mixed_prompts

IMAGE_PAD = token_id("<|image_pad|>")


def _image_inputs(prompt: PromptRecord, ids: Tensor) -> dict[str, Any]:
    media = prompt.multimodal
    return {
        "pixel_values": media["pixel_values"],
        "image_grid_thw": media["image_grid_thw"],
        "mm_token_type_ids": (ids == IMAGE_PAD).int(),
    }


def _audio_inputs(prompt: PromptRecord, ids: Tensor) -> dict[str, Any]:
    media = prompt.multimodal
    return {
        "input_features": media["input_features"],
        "feature_attention_mask": media["feature_attention_mask"],
    }


FAMILIES: dict[str, tuple[Callable[[], nn.Module], Callable[[], list[PromptRecord]], Any]] = {
    "qwen2_vl": (tiny_qwen2_vl, mixed_prompts, _image_inputs),
    "qwen2_5_vl": (tiny_qwen2_5_vl, mixed_prompts, _image_inputs),
    "qwen2_audio": (tiny_qwen2_audio, audio_prompts, _audio_inputs),
}


def _batch(prompts: Sequence[PromptRecord]) -> SequenceBatch:
    completions = [Completion(i, r, "", "stop") for i, r in enumerate(RESPONSES)]
    return build_rollout_tensors(list(prompts), completions, pad_token_id=0).sequences


def _critic(family: str) -> tuple[nn.Module, HfCritic, list[PromptRecord]]:
    build, prompts, _ = FAMILIES[family]
    model = build()
    critic = HfCritic(model, init_seed=0, multimodal=multimodal_inputs_for(model))
    torch.manual_seed(1)
    torch.nn.init.normal_(critic.module.value_head.weight)  # a zero head would hide errors
    torch.nn.init.normal_(critic.module.value_head.bias)
    return model, critic, prompts()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_values_equal_a_direct_forward_of_each_unpadded_row(family: str) -> None:
    model, critic, prompts = _critic(family)
    assert isinstance(critic, Critic)
    assert critic.module.backbone is model.model  # the base model: encoders + LM, no LM head
    media_inputs = FAMILIES[family][2]
    batch = _batch(prompts)
    with torch.no_grad():
        values = critic.values(batch)
    assert values.shape == batch.response_mask.shape
    head = critic.module.value_head
    for row, (prompt, response) in enumerate(zip(prompts, RESPONSES, strict=True)):
        ids = torch.tensor([list(prompt.prompt_token_ids) + list(response)])
        extra = media_inputs(prompt, ids) if prompt.multimodal else {}
        with torch.no_grad():
            hidden = model.model(input_ids=ids, use_cache=False, **extra).last_hidden_state
            direct = head(hidden).squeeze(-1)[0]  # [n]
        n = len(prompt.prompt_token_ids)
        want = direct[n - 1 : n - 1 + len(response)]  # the column before each response token
        torch.testing.assert_close(values[row, : len(response)], want, atol=1e-5, rtol=1e-5)
        assert torch.all(values[row, len(response) :] == 0)  # padding


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_audio"])
def test_the_media_change_the_values(family: str) -> None:
    _, critic, prompts = _critic(family)
    batch = _batch(prompts)
    key = "pixel_values" if family == "qwen2_vl" else "input_features"
    changed = dict(batch.multimodal[0])
    changed[key] = changed[key] + 1.0
    other = SequenceBatch(
        batch.input_ids,
        batch.attention_mask,
        batch.response_mask,
        multimodal=(changed, *batch.multimodal[1:]),
    )
    with torch.no_grad():
        before, after = critic.values(batch), critic.values(other)
    assert float((before[0] - after[0]).abs().max()) > 1e-4  # row 0 hears / sees its media
    torch.testing.assert_close(before[1:], after[1:])  # the other rows do not


def test_the_critic_trains_toward_returns_with_images() -> None:
    _, critic, prompts = _critic("qwen2_5_vl")
    batch = _batch(prompts)
    target = torch.where(batch.response_mask.bool(), 0.5, 0.0)
    optimizer = torch.optim.Adam(critic.module.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = ((critic.values(batch) - target) ** 2).mean()
        losses.append(float(loss.detach()))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert losses[-1] < 0.1 * losses[0]


def test_the_omni_thinker_is_refused_since_its_base_model_holds_no_encoder() -> None:
    from tests.helpers.tiny_omni import tiny_omni_thinker

    model = tiny_omni_thinker()
    with pytest.raises(ValueError, match="holds no media encoder, so a critic on it would not"):
        HfCritic(model, multimodal=multimodal_inputs_for(model))
