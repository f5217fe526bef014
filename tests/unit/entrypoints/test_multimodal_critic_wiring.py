"""The critic of vision- and audio-language runs as the loaders build it: the vision tower
frozen as the policy's (all weights trained for audio), values of media rows, and
``optim.critic_lr`` reaching the critic's optimizer (the policy's keeps ``optim.lr``)."""

from __future__ import annotations

from pathlib import Path

import torch

from lightrft.adapters.hf.critic import HfCritic
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.wiring.models import build_strategy, loader
from lightrft.entrypoints.wiring.registries import BuildContext
from tests.helpers.tiny_multimodal import save_tiny_audio_model, save_tiny_vl_model
from tests.unit.adapters.hf.test_vision_language_policy import mixed_batch


def _context(model_dir: Path, modality: str, *overrides: str) -> BuildContext:
    config = load_config(
        overrides=[
            f"model.path={model_dir}",
            f"model.modality={modality}",
            "algorithm.advantage_estimator=gae",
            *overrides,
        ]
    )
    tokenizer = loader(config).tokenizer(config, model_dir)
    return BuildContext(config, model_dir, torch.device("cpu"), tokenizer, lambda: None)  # type: ignore[arg-type]


def test_the_vision_language_critic_freezes_the_tower_and_reads_the_images(tmp_path: Path) -> None:
    save_tiny_vl_model(tmp_path, byte_level=True, family="qwen2_5_vl")
    context = _context(tmp_path, "vision-language")
    critic = loader(context.config).critic(context)
    assert isinstance(critic, HfCritic)
    trained = {n for n, p in critic.module.named_parameters() if p.requires_grad}
    assert trained and not any(n.startswith("backbone.visual.") for n in trained)
    assert {"value_head.weight", "value_head.bias"} <= trained
    assert any(n.startswith("backbone.language_model.") for n in trained)
    torch.nn.init.normal_(critic.module.value_head.weight)
    _, batch = mixed_batch()
    with torch.no_grad():
        values = critic.values(batch)
    assert values.shape == batch.response_mask.shape and bool(torch.isfinite(values).all())
    assert bool((values[batch.response_mask.bool()] != 0).all())


def test_the_audio_critic_trains_every_weight(tmp_path: Path) -> None:
    save_tiny_audio_model(tmp_path)
    context = _context(tmp_path, "audio-language")
    critic = loader(context.config).critic(context)
    params = list(critic.module.named_parameters())
    assert any(".audio_tower." in f".{n}" for n, _ in params)
    assert all(p.requires_grad for _, p in params)


def test_optim_critic_lr_reaches_an_audio_critics_optimizer_only(tmp_path: Path) -> None:
    save_tiny_audio_model(tmp_path)
    context = _context(tmp_path, "audio-language", "optim.lr=1e-6", "optim.critic_lr=9e-6")
    critic = loader(context.config).critic(context)
    critic_strategy = build_strategy(context, critic.module, role="critic")
    policy_strategy = build_strategy(context, torch.nn.Linear(2, 2))
    assert critic_strategy is not None and policy_strategy is not None
    assert {g["lr"] for g in critic_strategy.optimizer.param_groups} == {9e-6}
    assert {g["lr"] for g in policy_strategy.optimizer.param_groups} == {1e-6}
