"""One home per option: every field of a section that ``RunConfig.to_domain`` translates is
either copied into a parameters dataclass under its own name (``params_from``) or listed, with
what reads it, in ``config/field_routes.NOT_COPIED``; a field that is declared and then dropped
fails here. The copies are checked on the translated parameters of every preset and of a
config that sets many options away from their defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from lightrft.entrypoints.config.field_routes import NOT_COPIED, SECTION_PARAMETERS
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.config.presets import PRESETS
from lightrft.entrypoints.config.run_config import RunConfig

# same-named fields whose value to_domain resolves (so the parameter differs from the field)
RESOLVED = {
    "algorithm.logprob_temperature": "'sampling' -> the rollout's log-prob temperature",
    "reward.constraints": "ConstraintConfig -> CostLimit",
    "optim.warmup_steps": "optim.warmup_ratio x the optimizer steps when the ratio is set",
    "reward.recipes": "label -> source configs -> RecipeBook (with the built-in recipes)",
}

AWAY_FROM_DEFAULTS = [
    "train.epochs=3",
    "train.micro_batch_size=2",
    "train.seed=7",
    "train.max_rollbacks=5",
    "rollout.top_k=7",
    "rollout.min_p=0.05",
    "rollout.max_sampling_rounds=5",
    "rollout.forward_micro_batch_size=3",
    "rollout.queue_timeout_s=99",
    "rollout.first_token_temperature=1.5",
    "optim.weight_decay=0.01",
    "optim.warmup_steps=4",
    "algorithm.entropy_coef=0.003",
    "algorithm.clip_eps_high=0.3",
    "algorithm.gamma=0.9",
    "algorithm.lam=0.8",
    "reward.overlong_factor=0.7",
    "reward.gate_value=-1",
    "eval.temperature=0.4",
]


def _section_fields(section: str) -> tuple[str, ...]:
    model = RunConfig.model_fields[section].annotation
    assert model is not None
    return tuple(model.model_fields)


def _copied(section: str) -> set[str]:
    names: set[str] = set()
    for params in SECTION_PARAMETERS[section]:
        names |= {f.name for f in dataclasses.fields(params)}
    return names & set(_section_fields(section)) - {
        key.split(".", 1)[1] for key in NOT_COPIED if key.startswith(f"{section}.")
    }


def test_every_field_is_copied_or_routed() -> None:
    dropped, both = [], []
    for section, params in SECTION_PARAMETERS.items():
        names = {f.name for p in params for f in dataclasses.fields(p)}
        for name in _section_fields(section):
            key = f"{section}.{name}"
            if name not in names and key not in NOT_COPIED:
                dropped.append(key)
            if name in names and key in NOT_COPIED:
                both.append(key)
    assert not dropped, (
        f"config fields no parameter copies and field_routes.NOT_COPIED does not list: "
        f"{dropped}; add a same-named field to a parameters dataclass of the section, or list "
        "the field with what reads it"
    )
    assert not both, f"NOT_COPIED lists fields that params_from copies by name: {both}"


def test_the_table_names_only_fields_that_exist() -> None:
    stale = [
        key
        for key in (*NOT_COPIED, *RESOLVED)
        if key.split(".", 1)[0] not in SECTION_PARAMETERS
        or key.split(".", 1)[1] not in _section_fields(key.split(".", 1)[0])
    ]
    assert not stale, f"field_routes names fields the sections do not have: {stale}"


def _instances(value: Any) -> Iterator[Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield value
        for f in dataclasses.fields(value):
            yield from _instances(getattr(value, f.name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _instances(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _instances(item)


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@pytest.mark.parametrize(
    ("preset", "overrides"),
    [(name, []) for name in sorted(PRESETS)] + [("grpo", AWAY_FROM_DEFAULTS)],
)
def test_copied_fields_arrive_in_the_parameters(preset: str, overrides: list[str]) -> None:
    config = load_config(overrides=overrides, algorithm=preset)
    translated = list(_instances(config.to_domain())) + [config.optimizer_params()]
    missing = []
    for section, params in SECTION_PARAMETERS.items():
        built = [p for p in translated if isinstance(p, params)]
        absent = [p.__name__ for p in params if not any(isinstance(b, p) for b in built)]
        assert not absent, f"to_domain builds no {absent} (SECTION_PARAMETERS[{section!r}])"
        values = getattr(config, section)
        for name in sorted(_copied(section)):
            value = _plain(getattr(values, name))
            if f"{section}.{name}" in RESOLVED or value is None:  # None: the parameter's default
                continue
            if not any(_plain(getattr(b, name, None)) == value for b in built if hasattr(b, name)):
                missing.append(f"{section}.{name}={value!r}")
    assert not missing, f"copied fields whose value no translated parameter holds: {missing}"
