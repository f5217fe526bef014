"""The composition root's registries: config tags equal builder keys, lookups name the
choices, no name dispatch remains, and a third-party component plugs in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.components import (
    ENGINE_CONFIGS,
    ENVIRONMENT_CONFIGS,
    REWARD_SOURCE_CONFIGS,
    STRATEGY_CONFIGS,
    TOOL_CONFIGS,
)
from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.config.sections import ModelConfig
from lightrft.entrypoints.wiring import agents, models  # noqa: F401  (registers the built-ins)
from lightrft.entrypoints.wiring.registries import (
    ENGINES,
    ENVIRONMENTS,
    MODEL_LOADERS,
    REWARD_SOURCES,
    STRATEGIES,
    TOOLS,
    register_component,
)

PAIRS = [
    (ENGINE_CONFIGS, ENGINES),
    (REWARD_SOURCE_CONFIGS, REWARD_SOURCES),
    (STRATEGY_CONFIGS, STRATEGIES),
    (ENVIRONMENT_CONFIGS, ENVIRONMENTS),
    (TOOL_CONFIGS, TOOLS),
]
PLUGIN = "tests.helpers.plugin_components"


@pytest.mark.parametrize(("configs", "builders"), PAIRS, ids=lambda r: r.kind)
def test_every_config_tag_has_a_builder_and_back(configs, builders) -> None:  # type: ignore[no-untyped-def]
    assert set(configs.names()) == set(builders.names())
    for name in configs.names():
        assert configs.get(name).model_fields["type"].default == name
        assert get_args(configs.get(name).model_fields["type"].annotation) == (name,)


def test_modality_choices_equal_model_loaders() -> None:
    # auto: resolved from the checkpoint to one of the loaders' modalities
    assert set(get_args(ModelConfig.model_fields["modality"].annotation)) == {
        *MODEL_LOADERS.names(),
        "auto",
    }


@pytest.mark.parametrize(
    ("override", "listed"),
    [
        ("rollout.engine=nope", "unknown rollout engine 'nope'; valid choices: "),
        ("backend.strategy=nope", "valid choices: deepspeed, fsdp2, single"),
        ("reward.sources=[{type: nope}]", "unknown reward source type 'nope'"),
    ],
)
def test_unknown_type_names_the_registered_choices(override: str, listed: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(listed)):
        load_config(None, [override])


def test_each_type_takes_only_its_own_options() -> None:
    with pytest.raises(ConfigError, match="reward.sources.0.colour: unknown key"):
        load_config(None, ["reward.sources=[{type: math, colour: x}]"])
    # an option of other types names them
    with pytest.raises(ConfigError, match="reward.sources.0: think_tag is an option of the"):
        load_config(None, ["reward.sources=[{type: math, think_tag: x}]"])
    with pytest.raises(
        ConfigError,
        match="backend.strategy: zero_stage is an option of the training strategy types "
        "deepspeed, not of 'fsdp2'",
    ):
        load_config(None, ["backend.strategy=fsdp2", "backend.strategy.zero_stage=3"])
    # the bare name is a shorthand, and options may come before or after it
    for order in (
        ["backend.strategy=deepspeed", "--zero_stage", "1"],
        ["--zero_stage", "1", "backend.strategy=deepspeed"],
    ):
        strategy = load_config(None, order).backend.strategy
        assert (strategy.type, strategy.zero_stage) == ("deepspeed", 1)  # type: ignore[attr-defined]


def test_no_component_name_dispatch_in_wiring() -> None:
    names = {n for _, builders in PAIRS for n in builders.names()} | set(MODEL_LOADERS.names())
    # ``auto`` is also the value of the auto/on/off switches (model.attn_implementation,
    # backend.accelerator, eval formats); comparing a switch with it is not engine dispatch
    names -= {"auto"}
    wiring = Path(models.__file__).parent
    for path in wiring.glob("*.py"):
        compared = set(re.findall(r'[=!]=\s*"([a-z_0-9-]+)"', path.read_text()))
        assert not compared & names, (path, compared & names)


def test_register_component_refuses_duplicates_and_unknown_kinds() -> None:
    from lightrft.entrypoints.config.engine_configs import HfEngineConfig

    with pytest.raises(ValueError, match="already registered"):
        register_component("engine", "hf", HfEngineConfig, lambda s, c: None)
    with pytest.raises(
        ValueError, match="valid kinds: engine, reward_source, strategy, environment, tool"
    ):
        register_component("tokenizer", "x", HfEngineConfig, lambda s, c: None)


def test_a_plugin_that_cannot_be_imported_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot import plugin 'no_such_module_xyz'"):
        load_config(None, ["plugins=[no_such_module_xyz]"])


def test_plugin_components_are_built_and_run_by_the_cycle(tiny_dir: Path, tmp_path: Path) -> None:
    from lightrft.entrypoints.api import build_container

    config = load_config(
        None,
        [
            f"plugins=[{PLUGIN}]",
            f"model.path={tiny_dir}",
            f"logging.run_dir={tmp_path}",
            "rollout.engine={type: scripted, response: ' 7 7'}",
            "reward.sources=[{type: constant, value: 0.25, name: quarter}]",
            "rollout.prompts_per_step=2",
            "rollout.n_samples_per_prompt=2",
            "rollout.max_new_tokens=4",
            "train.total_steps=1",
            "data.train.num_builtin=4",
            "data.eval=null",
            "logging.progress=false",
        ],
    )
    assert config.rollout.engine.type == "scripted"
    container = build_container(config)
    history = container.cycle().run(resume=False)
    engine = container.engine()
    assert type(engine).__name__ == "ScriptedEngine" and engine.generate_calls == 1
    assert history[0]["reward/quarter/mean"] == pytest.approx(0.25)
    assert history[0]["reward/mean"] == pytest.approx(0.25)  # the only source, weight 1
    source = container.reward_sources()[0]
    assert source.value == 0.25 and source.name == "quarter"


def test_json_logs_from_the_config_reach_the_run(
    tiny_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from lightrft.entrypoints.jobs.training import train
    from lightrft.entrypoints.logging_setup import configure_logging

    config = load_config(
        None,
        [
            f"plugins=[{PLUGIN}]",
            f"model.path={tiny_dir}",
            f"logging.run_dir={tmp_path}",
            "logging.json_logs=true",
            "rollout.engine=scripted",
            "reward.sources=[{type: math, extractors: [last_number]}]",
            "rollout.prompts_per_step=1",
            "rollout.n_samples_per_prompt=2",
            "rollout.max_new_tokens=2",
            "train.total_steps=1",
            "data.train.num_builtin=2",
            "data.eval=null",
            "checkpoint.export_final=false",
            "logging.progress=false",
        ],
    )
    import structlog

    saved = structlog.get_config()
    configure_logging(json_logs=False, rank=0)  # what the CLI does before the config exists
    capsys.readouterr()
    try:
        train(config)
    finally:  # later tests must not log into this test's captured (then closed) stderr
        structlog.configure(**saved)
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line[:1] == "{"]
    assert {"run.start", "run.done"} <= {e["event"] for e in events}


def test_math_extractors_from_the_config_reach_the_reward() -> None:
    from lightrft.entrypoints.wiring.registries import build

    config = load_config(None, ["reward.sources=[{type: math, extractors: [boxed, last_number]}]"])
    reward = build(REWARD_SOURCES, config.reward.sources[0], None)  # type: ignore[arg-type]
    try:
        assert reward.extractors == ("boxed", "last_number")
    finally:
        reward.close()
    with pytest.raises(ConfigError, match="unknown answer extractor 'lastnumber'"):
        load_config(None, ["reward.sources=[{type: math, extractors: [lastnumber]}]"])
