"""Component sections: config models selected by a ``type`` tag, one registry per kind.

A component kind (rollout engine, reward source, training strategy) has a registry of config
models, each registered under the tag users write (``rollout.engine.type: vllm``). A config
field of that kind is :func:`component_field`: it accepts a mapping with ``type`` (or the bare
tag as a shorthand, ``rollout.engine=vllm``), looks the tag up in the registry and validates
the mapping with that model, so every type carries only its own options. This is a
discriminated union whose members are registered rather than listed, so a plugin adds a type
without editing this package (see ``docs/extending.md``).

The sections and the run model import this module; it imports nothing of theirs back (a test
in ``tests/architecture`` keeps the package free of import cycles). A component's cross-section
check therefore receives the run as ``RunView``: the validated ``RunConfig``, read by attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import Field, PlainValidator, SerializeAsAny
from pydantic_core import PydanticCustomError

from lightrft.domain.registry import Registry
from lightrft.entrypoints.config.base import Section

RunView = Any
"""The whole validated ``RunConfig`` as a component check sees it (``run.rollout.engine``...).

Named rather than imported: the run model imports the component registries, so a reference
back would close an import cycle."""


class ComponentSection(Section):
    """Base of a component's config model. Subclasses declare ``type: Literal["tag"]``."""

    type: str

    def check_in_run(self, run: RunView) -> None:
        """Cross-section checks (raise ``ValueError`` naming the keys); default: none."""


class RewardSourceSection(ComponentSection):
    """Base of a reward source's config: every source has a metric name and a weight."""

    name: str | None = Field(None, description="Metric name; defaults to the type.")
    weight: float = Field(1.0, description="Weight in the composite reward.")
    gate_threshold: float | None = Field(
        None,
        description="Make this source a gate: a sample scoring below the threshold gets "
        "reward.gate_value as its reward (e.g. 1 for a format check that must pass).",
    )

    @property
    def label(self) -> str:
        """The source's metric name (``name``, else ``type``)."""
        return self.name or self.type

    @property
    def passes_step_rewards(self) -> bool:
        """Whether the source hands each step's score on as a step reward (the input of an
        estimator with ``needs_step_rewards``, e.g. ``process_grpo``)."""
        return False


ENGINE_CONFIGS: Registry[type[ComponentSection]] = Registry("rollout engine")
REWARD_SOURCE_CONFIGS: Registry[type[ComponentSection]] = Registry("reward source type")
STRATEGY_CONFIGS: Registry[type[ComponentSection]] = Registry("training strategy")
ENVIRONMENT_CONFIGS: Registry[type[ComponentSection]] = Registry("environment")
TOOL_CONFIGS: Registry[type[ComponentSection]] = Registry("tool")

S = TypeVar("S", bound=type[ComponentSection])


def register_config(registry: Registry[type[ComponentSection]], name: str) -> Callable[[S], S]:
    """Class decorator: registers a component config model under ``name`` (its ``type``)."""

    def add(model: S) -> S:
        tag = model.model_fields["type"].default
        if tag != name:
            raise ValueError(f"{model.__name__}.type defaults to {tag!r}, registered as {name!r}")
        registry.add(name, model)
        return model

    return add


def _validator(
    registry: Registry[type[ComponentSection]], default: str | None
) -> Callable[..., Any]:
    def validate(value: Any) -> ComponentSection:
        if isinstance(value, ComponentSection):
            value = value.model_dump()
        if isinstance(value, str):
            value = {"type": value}
        if not isinstance(value, dict):
            raise PydanticCustomError(
                "component",
                "expected a {kind} name or a mapping with a 'type' key",
                {"kind": registry.kind},
            )
        tag = value.get("type", default)
        if tag is None:
            raise PydanticCustomError(
                "component_type",
                "missing 'type'; valid {kind}s: {choices}",
                {"kind": registry.kind, "choices": ", ".join(registry.names())},
            )
        if tag not in registry:
            raise PydanticCustomError(
                "component_type",
                "unknown {kind} {tag}; valid choices: {choices}",
                {"kind": registry.kind, "tag": repr(tag), "choices": ", ".join(registry.names())},
            )
        model = registry.get(tag)
        _refuse_options_of_other_types(registry, registry.canonical(tag), model, value)
        return model.model_validate({**value, "type": registry.canonical(tag)})

    return validate


def _refuse_options_of_other_types(
    registry: Registry[type[ComponentSection]],
    tag: str,
    model: type[ComponentSection],
    value: dict[str, Any],
) -> None:
    """An option that ``model`` lacks but other types of ``registry`` have: one error that
    names those types (``cpu_offload`` under ``single`` -> ``deepspeed, fsdp2``)."""
    for option in value:
        if option in model.model_fields:
            continue
        owners = [n for n in registry.names() if option in registry.get(n).model_fields]
        if owners:
            raise PydanticCustomError(
                "component_option",
                "{option} is an option of the {kind} types {owners}, not of {tag}; set "
                "this section's type to one of them",
                {
                    "option": option,
                    "kind": registry.kind,
                    "owners": ", ".join(owners),
                    "tag": repr(tag),
                },
            )


def component_field(registry: Registry[type[ComponentSection]], default: str | None = None) -> Any:
    """The annotation of a field holding one component section of ``registry``'s kind.

    ``default`` is the type assumed when a mapping has no ``type`` key (so setting only an
    option of the default component, ``backend.strategy.x=...``, still validates).
    """
    return Annotated[
        SerializeAsAny[ComponentSection], PlainValidator(_validator(registry, default))
    ]
