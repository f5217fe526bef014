"""Images in observations: a scripted environment answers with a picture; on a tiny Qwen2-VL
the picture reaches the next turn's model input (pixels, grid, expanded placeholders) and
the training forward (the policy's log-probs of the episode's generated tokens equal the
engine's); a text policy refuses it naming the environment; a bad image ends the episode
``env_invalid``."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from lightrft.adapters.hf import HfPolicy, HfRolloutEngine
from lightrft.adapters.hf.chat_turns import HfTurnRenderer
from lightrft.adapters.hf.media_turns import HfMediaTurnRenderer, observation_image
from lightrft.adapters.hf.multimodal_inputs import multimodal_inputs_for
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from lightrft.application.agent_rollout import AgentRolloutEngine
from lightrft.application.batching import build_rollout_tensors
from lightrft.application.params import AgentParams
from lightrft.domain.agent import Action, ChatMessage, ObservationMediaError, StepOutcome
from lightrft.domain.types import PromptRecord, SamplingParams
from tests.helpers.threads import one_torch_thread
from tests.helpers.tiny_multimodal import (
    noise_image,
    tiny_image_processor,
    tiny_mm_tokenizer,
    tiny_qwen2_vl,
    token_id,
)
from tests.unit.adapters.hf.test_vision_language_policy import _record

CPU = torch.device("cpu")
PAD = token_id("<|image_pad|>")
SAMPLING = SamplingParams(n=2, max_new_tokens=4, seed=5, stop_token_ids=tuple(range(100, 272)))


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    yield from one_torch_thread()


def png(seed: int, size: tuple[int, int] = (56, 84)) -> bytes:
    out = io.BytesIO()
    noise_image(*size, seed).save(out, format="PNG")
    return out.getvalue()


class CameraEnvironment:
    """Answers the first turn with a screenshot (``image``), the second with text; done
    after the third."""

    image: Any = png(21)

    def __init__(self) -> None:
        self.steps = 0

    def reset(self, prompt: PromptRecord) -> PromptRecord:
        return prompt

    def step(self, action: Action) -> StepOutcome:
        self.steps += 1
        if self.steps == 1:
            return StepOutcome((ChatMessage("tool", "screenshot", "camera", (self.image,)),))
        return StepOutcome((ChatMessage("tool", "ok"),), reward=1.0, done=self.steps >= 3)

    def close(self) -> None:
        pass


def rig() -> tuple[Any, Any, Any, list[PromptRecord]]:
    tok = tiny_mm_tokenizer()
    model = tiny_qwen2_vl()
    inputs = multimodal_inputs_for(model)
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())
    prompts = [
        encoder.encode(_record(tok, "a", "what is shown?", [noise_image(60, 60, 1)])),
        _record(tok, "b", "take a picture", []),
    ]
    engine = HfRolloutEngine(model, tok, CPU, multimodal=inputs)
    return model, inputs, HfMediaTurnRenderer(tok, encoder), (engine, prompts)


def run(environment: type, renderer: Any = None) -> tuple[Any, Any, list[PromptRecord], Any]:
    model, inputs, media_renderer, (engine, prompts) = rig()
    agent = AgentRolloutEngine(
        engine,
        environment,
        renderer or media_renderer,
        AgentParams(max_turns=3, environment="camera"),
    )
    return model, inputs, prompts, agent.generate(prompts, SAMPLING)


def test_an_image_observation_reaches_the_next_turn_and_the_training_forward() -> None:
    model, inputs, prompts, completions = run(CameraEnvironment)
    with_image = [c for c in completions if c.episode is not None and c.episode.turns >= 2]
    assert with_image, [c.episode.end_reason for c in completions if c.episode]
    expected_pads = (
        VisionLanguageEncoder(tiny_mm_tokenizer(), tiny_image_processor())
        .process([observation_image(CameraEnvironment.image, "t")], "t")
        .counts[0]
    )
    for c in with_image:
        observation = c.episode.segments[1]
        assert not observation.trained
        assert observation.token_ids.count(PAD) == expected_pads  # the pad, expanded
        assert c.multimodal is not None
        own = prompts[c.prompt_index].multimodal
        grids = c.multimodal["image_grid_thw"]
        assert len(grids) == len(own.get("image_grid_thw", ())) + 1  # prompt's + the screenshot
        assert c.multimodal["image_tokens"][-1] == expected_pads
    tensors = build_rollout_tensors(prompts, completions, pad_token_id=0)
    with torch.no_grad():
        policy_lp = HfPolicy(model, multimodal=inputs).forward(tensors.sequences).logprobs
    mask = tensors.sequences.response_mask.bool()
    assert tensors.rollout_logprobs is not None
    torch.testing.assert_close(policy_lp[mask], tensors.rollout_logprobs[mask], atol=1e-4, rtol=0)


@pytest.mark.slow
def test_the_image_changes_what_the_model_sees() -> None:
    """Another picture, the same everything else: the turns after it are scored otherwise."""

    class OtherCamera(CameraEnvironment):
        image = png(22)

    _, _, _, first = run(CameraEnvironment)
    _, _, _, other = run(OtherCamera)
    after = [
        (a, b) for a, b in zip(first, other, strict=True) if a.episode and a.episode.turns >= 2
    ]
    assert after
    for a, b in after:
        assert a.episode.segments[0].token_ids == b.episode.segments[0].token_ids  # turn 1 alike
    assert any(
        a.episode.segments[2].logprobs != b.episode.segments[2].logprobs  # turn 2 sees the image
        for a, b in after
        if b.episode and len(b.episode.segments) > 2
    )


def test_a_text_policy_refuses_an_image_naming_the_environment() -> None:
    tok = tiny_mm_tokenizer()
    with pytest.raises(ValueError, match="environment camera returned an image .* reads text only"):
        run(CameraEnvironment, HfTurnRenderer(tok))


def test_a_bad_image_ends_the_episode_env_invalid() -> None:
    class BrokenCamera(CameraEnvironment):
        image = b"\x89PNG not really"

    _, _, _, completions = run(BrokenCamera)
    ended = [c.episode for c in completions if c.episode is not None]
    assert all(e.end_reason == "env_invalid" for e in ended if e.turns == 1)
    assert any(e.counters.get("env_invalid_answers") for e in ended)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (b"\x00" * 10, "not a readable image"),
        (42, "is a int; expected a PIL image"),
        (png(1, (300, 300)), "more than the 10000 allowed"),
        ("/nonexistent/picture.png", "unreadable"),
    ],
)
def test_observation_images_are_checked(item: Any, message: str) -> None:
    with pytest.raises(ObservationMediaError, match=message):
        observation_image(item, "episode x", max_pixels=100 * 100)
    with pytest.raises(ObservationMediaError, match="more than the 5 allowed"):
        observation_image(png(1), "episode x", max_bytes=5)
