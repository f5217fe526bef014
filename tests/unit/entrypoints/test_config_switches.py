"""On/off-style options take YAML's booleans (``off`` reads as false) from files and overrides."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import pytest
from pydantic import BaseModel, TypeAdapter

from lightrft.entrypoints.config.components import (
    ENGINE_CONFIGS,
    REWARD_SOURCE_CONFIGS,
    STRATEGY_CONFIGS,
)
from lightrft.entrypoints.config.loading import ConfigError, load_config
from lightrft.entrypoints.config.run_config import RunConfig

# (dotted key, value as typed, the value the config must hold)
CASES = [
    ("model.prefix_sharing", "off", "off"),
    ("model.prefix_sharing", "on", "on"),
    ("model.prefix_sharing", "auto", "auto"),
    ("model.prefix_sharing", "false", "off"),
    ("model.prefix_sharing", "'On'", "on"),  # quoted in YAML: the word as a string
    ("rollout.engine.share_policy_weights", "off", "off"),
    ("rollout.engine.share_policy_weights", "on", "on"),
    ("checkpoint.resume", "on", True),
    ("checkpoint.resume", "off", False),
    ("checkpoint.resume", "'yes'", True),
    ("checkpoint.resume", "auto", "auto"),
]


def value_at(config: RunConfig, key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = getattr(node, part)
    return node


@pytest.mark.parametrize(("key", "text", "expected"), CASES)
def test_override_on_the_command_line(key: str, text: str, expected: Any) -> None:
    assert value_at(load_config(None, [f"{key}={text}"]), key) == expected


@pytest.mark.parametrize(("key", "text", "expected"), CASES)
def test_yaml_file(key: str, text: str, expected: Any, tmp_path: Path) -> None:
    *sections, leaf = key.split(".")
    lines = [f"{'  ' * depth}{part}:" for depth, part in enumerate(sections)]
    lines.append(f"{'  ' * len(sections)}{leaf}: {text}")
    path = tmp_path / "run.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert value_at(load_config(path), key) == expected


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.prefix_sharing=maybe", "model.prefix_sharing: Input should be 'auto', 'on' or"),
        ("checkpoint.resume=maybe", "checkpoint.resume: expected true/false"),
        ("checkpoint.resume=1", "checkpoint.resume: expected true/false"),
    ],
)
def test_other_values_are_refused_in_one_line(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(None, [override])
    lines = str(error.value).splitlines()
    assert len(lines) == 2 and lines[1].strip().startswith(message), lines


def config_models() -> Iterator[type[BaseModel]]:
    """RunConfig, every section under it, and every registered component config."""
    seen: set[type[BaseModel]] = set()
    todo: list[Any] = [RunConfig]
    for registry in (ENGINE_CONFIGS, REWARD_SOURCE_CONFIGS, STRATEGY_CONFIGS):
        todo.extend(registry.get(name) for name in registry.names())
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        yield model
        for field in model.model_fields.values():
            todo.extend(t for t in flat_types(field.annotation) if is_model(t))


def is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def flat_types(annotation: Any) -> Iterator[Any]:
    yield annotation
    for arg in get_args(annotation):
        yield from flat_types(arg)


def switch_fields() -> Iterator[tuple[str, Any]]:
    """(name, full annotation) of every field with choices 'on'/'off' or bool | 'auto'."""
    for model in config_models():
        for name, field in model.model_fields.items():
            literals = {
                value
                for t in flat_types(field.annotation)
                if get_origin(t) is Literal
                for value in get_args(t)
            }
            has_bool = bool in set(flat_types(field.annotation))
            if {"on", "off"} <= literals or (has_bool and "auto" in literals):
                annotation = field.annotation
                if field.metadata:  # the validators of an Annotated type
                    annotation = Annotated[(annotation, *field.metadata)]
                yield f"{model.__name__}.{name}", annotation


def test_every_switch_field_reads_yaml_booleans() -> None:
    found = dict(switch_fields())
    # the three known today; a new one is checked by the loop below
    assert {
        "ModelConfig.prefix_sharing",
        "HfEngineConfig.share_policy_weights",
        "CheckpointConfig.resume",
    } <= set(found)
    for name, annotation in found.items():
        adapter = TypeAdapter(annotation)
        on, off = adapter.validate_python(True), adapter.validate_python(False)
        assert on in ("on", True) and off in ("off", False), name
        assert adapter.validate_python("OFF") == off, name
