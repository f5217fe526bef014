"""The composition root's builder registries: one per component kind.

A builder is a plain function ``(section, context) -> component``: ``section`` is the
component's own config model (a :class:`~lightrft.entrypoints.config.components.ComponentSection`
registered under the same name) and ``context`` the frozen :class:`BuildContext` of the run.
Adding a component is one adapter module, one config model and one builder:

    register_component("reward_source", "my_rm", MyRmConfig, build_my_rm)

The built-in builders live in the sibling modules (``engines``, ``reward_sources``,
``strategies``, ``model_loaders``) and are registered by the one list of
:mod:`.registrations`; ``docs/extending.md`` has the recipes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from lightrft.domain.agent import EnvironmentFactory, Tool
from lightrft.domain.ports import (
    Critic,
    Policy,
    ReferenceModel,
    RewardSource,
    RolloutEngine,
    Strategy,
)
from lightrft.domain.registry import Registry
from lightrft.domain.types import OptimizerParams
from lightrft.entrypoints.config import RunConfig
from lightrft.entrypoints.config.components import (
    ENGINE_CONFIGS,
    ENVIRONMENT_CONFIGS,
    REWARD_SOURCE_CONFIGS,
    STRATEGY_CONFIGS,
    TOOL_CONFIGS,
    ComponentSection,
    register_config,
)


@dataclass(frozen=True)
class BuildContext:
    """What every builder may use. ``policy`` builds (once) and returns the run's policy;
    ``role``: which model a strategy builder trains (its optimizer's learning rate)."""

    config: RunConfig
    model_path: Path
    device: torch.device
    tokenizer: Any
    policy: Callable[[], Policy]
    role: Literal["policy", "critic"] = "policy"

    def optimizer_params(self) -> OptimizerParams:
        """The optimizer of the model being built (the critic's: ``optim.critic_lr``)."""
        return self.config.optimizer_params(self.role)


EngineBuilder = Callable[[Any, BuildContext], RolloutEngine]
RewardBuilder = Callable[[Any, BuildContext], RewardSource]
StrategyBuilder = Callable[[Any, BuildContext], Strategy]
EnvironmentBuilder = Callable[[Any, BuildContext], EnvironmentFactory]
ToolBuilder = Callable[[Any, BuildContext], Tool]
JudgeEngineBuilder = Callable[[Any, BuildContext, Path], RolloutEngine]
"""(generative_rm section, context, judge directory) -> the engine that runs the judge."""


@dataclass(frozen=True)
class ModelLoader:
    """How one modality's models are built (``model.modality`` selects it).

    ``tokenizer(config, path)`` returns the tokenizer or processor; ``policy``,
    ``reference`` and ``critic`` take the context; ``generation_model(context)`` is the
    plain module an in-process engine runs when it does not share the policy's weights.
    Multimodal modalities also give ``prompt_encoder(context)`` (turns records with decoded
    media into model-ready ones, :mod:`lightrft.adapters.hf.multimodal_inputs`) and
    ``engine_inputs(module)`` (the engine's builder of media inputs for that module);
    ``None`` for text.
    """

    tokenizer: Callable[[RunConfig, Path], Any]
    policy: Callable[[BuildContext], Policy]
    reference: Callable[[BuildContext], ReferenceModel]
    critic: Callable[[BuildContext], Critic]
    generation_model: Callable[[BuildContext], torch.nn.Module]
    prompt_encoder: Callable[[BuildContext], Any] | None = None
    engine_inputs: Callable[[torch.nn.Module], Any] | None = None


ENGINES: Registry[EngineBuilder] = Registry("rollout engine")
REWARD_SOURCES: Registry[RewardBuilder] = Registry("reward source type")
STRATEGIES: Registry[StrategyBuilder] = Registry("training strategy")
MODEL_LOADERS: Registry[ModelLoader] = Registry("model modality")
ENVIRONMENTS: Registry[EnvironmentBuilder] = Registry("environment")
TOOLS: Registry[ToolBuilder] = Registry("tool")
JUDGE_ENGINES: Registry[JudgeEngineBuilder] = Registry("generative_rm engine")
SCALAR_RM_ENGINES: Registry[RewardBuilder] = Registry("scalar_rm engine")
"""``reward.sources[*].engine`` of the model-backed sources (``wiring/reward_engines.py``)."""

_KINDS: dict[str, tuple[Registry[type[ComponentSection]], Registry[Any]]] = {
    "engine": (ENGINE_CONFIGS, ENGINES),
    "reward_source": (REWARD_SOURCE_CONFIGS, REWARD_SOURCES),
    "strategy": (STRATEGY_CONFIGS, STRATEGIES),
    "environment": (ENVIRONMENT_CONFIGS, ENVIRONMENTS),
    "tool": (TOOL_CONFIGS, TOOLS),
}


def register_component(
    kind: str, name: str, config_model: type[ComponentSection], builder: Callable[..., Any]
) -> None:
    """Registers a component: its config model (``type`` tag ``name``) and its builder.

    ``kind`` is ``"engine"``, ``"reward_source"``, ``"strategy"``, ``"environment"`` (the
    builder returns an environment factory: a callable giving a fresh ``Environment`` per
    episode) or ``"tool"``. Register before the
    config is loaded (a module listed in the config's ``plugins`` key is imported first).
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown component kind {kind!r}; valid kinds: {', '.join(_KINDS)}")
    configs, builders = _KINDS[kind]
    if name in builders:
        raise ValueError(f"{builders.kind} {name!r} is already registered")
    register_config(configs, name)(config_model)
    builders.add(name, builder)


def build(registry: Registry[Any], section: ComponentSection, context: BuildContext) -> Any:
    """The component ``section`` describes, from the builder registered under its type."""
    return registry.get(section.type)(section, context)
