"""Building a RunConfig: preset < YAML file < dotted ``key=value`` overrides and flag aliases.

Errors name the key and what is allowed: ``ConfigError`` carries one line per problem.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from lightrft.entrypoints.config.presets import PRESETS
from lightrft.entrypoints.config.run_config import RunConfig
from lightrft.entrypoints.config.yaml_reading import YamlTooLargeError, load_yaml, shown

FLAG_ALIASES: dict[str, tuple[str, ...]] = {
    "advantage_estimator": ("algorithm.advantage_estimator",),
    "policy_loss": ("algorithm.policy_loss",),
    "n_samples_per_prompt": ("rollout.n_samples_per_prompt",),
    "kl_estimator": ("algorithm.kl_estimator",),
    "init_kl_coef": ("algorithm.kl_coef",),
    "kl_target": ("algorithm.kl_target",),
    "kl_horizon": ("algorithm.kl_horizon",),
    "rollout_batch_size": ("rollout.prompts_per_step",),
    "train_batch_size": ("train.mini_batch_size",),
    "micro_train_batch_size": ("train.micro_batch_size",),
    "micro_rollout_batch_size": ("rollout.forward_micro_batch_size",),
    "max_epochs": ("train.epochs",),
    "num_steps": ("train.total_steps",),
    "actor_learning_rate": ("optim.lr",),
    "learning_rate": ("optim.lr",),
    "lr_warmup_steps": ("optim.warmup_steps",),
    "max_norm": ("optim.max_grad_norm",),
    "generate_max_len": ("rollout.max_new_tokens",),
    "prompt_max_len": ("data.train.max_prompt_length",),
    "temperature": ("rollout.temperature",),
    "top_p": ("rollout.top_p",),
    "eps_clip": ("algorithm.clip_eps_low", "algorithm.clip_eps_high"),
    "eps_clip_low_high": ("algorithm.clip_eps_low", "algorithm.clip_eps_high"),
    "dual_clip": ("algorithm.dual_clip",),
    "value_clip": ("algorithm.value_clip",),
    "entropy_loss_coef": ("algorithm.entropy_coef",),
    "gamma": ("algorithm.gamma",),
    "lambd": ("algorithm.lam",),
    "pretrain": ("model.path",),
    "prompt_data": ("data.train.path",),
    "eval_data": ("data.eval.path",),
    "input_key": ("data.train.input_key",),
    "label_key": ("data.train.reference_key",),
    "max_samples": ("data.train.max_samples",),
    "lora_rank": ("model.lora.rank",),
    "lora_alpha": ("model.lora.alpha",),
    "lora_dropout": ("model.lora.dropout",),
    "target_modules": ("model.lora.target_modules",),
    "zero_stage": ("backend.strategy.zero_stage",),
    "seed": ("train.seed",),
    "save_steps": ("checkpoint.every",),
    "eval_steps": ("eval.every",),
    "save_path": ("logging.run_dir",),
    "dynamic_sampling": ("rollout.dynamic_sampling",),
    "overlong_buffer_len": ("reward.overlong_buffer",),
    "overlong_penalty_factor": ("reward.overlong_factor",),
    "gradient_checkpointing": ("model.gradient_checkpointing",),
    "packing_samples": ("model.packing",),
}
"""OpenRLHF/LightRFT-style flags (``--name value``) and the config keys they set."""

SWITCH_ALIASES: dict[str, tuple[str, Any]] = {
    "bf16": ("model.dtype", "bf16"),
    "adam_offload": ("backend.strategy.cpu_offload", True),
    "resume": ("checkpoint.resume", True),
    "load_checkpoint": ("checkpoint.resume", True),
    "overwrite": ("logging.overwrite", True),
}
"""Flags without a value and the setting each one implies."""


class ConfigError(ValueError):
    """A configuration that cannot be used; the message lists every problem, by key."""


def parse_value(text: str) -> Any:
    """A command-line value as YAML (numbers, booleans, null, lists), else the string."""
    try:
        return load_yaml(text)
    except YamlTooLargeError as exc:
        raise ConfigError(f"cannot read the value {shown(text)}: {exc}") from None
    except (yaml.YAMLError, ValueError):  # ValueError: an integer of over 4300 digits
        return text


def overrides_from_args(args: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs and ``--flag value`` / ``--flag=value`` / ``--switch`` aliases."""
    out: dict[str, Any] = {}
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            name = name.replace("-", "_")
            if name in SWITCH_ALIASES:
                key, implied = SWITCH_ALIASES[name]
                out[key] = parse_value(value) if has_value else implied  # --resume=auto
            elif name in FLAG_ALIASES:
                if not has_value:
                    if i + 1 >= len(items):
                        raise ConfigError(f"--{name}: expected a value")
                    i += 1
                    value = items[i]
                for key in FLAG_ALIASES[name]:
                    out[key] = parse_value(value)
            else:
                raise ConfigError(
                    f"unknown option --{name}; use dotted key=value overrides or one of "
                    f"--{', --'.join(sorted([*FLAG_ALIASES, *SWITCH_ALIASES]))}"
                )
        elif "=" in arg:
            key, _, value = arg.partition("=")
            out[key.strip()] = parse_value(value)
        else:
            raise ConfigError(f"cannot read argument {arg!r}: expected key=value or --flag")
        i += 1
    return out


def _set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    """Sets ``key`` in ``tree``. A component section may be named by its type alone: an
    option set under a name becomes ``{type: name, option: ...}``, and a name set over a
    mapping sets its ``type`` (``backend.strategy=deepspeed backend.strategy.zero_stage=3``
    in either order)."""
    parts = key.split(".")
    node = tree
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if isinstance(child, str):
            child = node[part] = {"type": child}
        if not isinstance(child, dict):
            raise ConfigError(f"{'.'.join(parts[: depth + 1])} is not a section; cannot set {key}")
        node = child
    leaf = parts[-1]
    if isinstance(value, str) and isinstance(node.get(leaf), dict):
        node[leaf] = {**node[leaf], "type": value}
    else:
        node[leaf] = value


def _format_errors(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"])
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif isinstance(item.get("input"), Mapping):
            # a check across fields of a section: its message names the fields involved;
            # the section's whole contents would only bury it
            message = message.removeprefix("Value error, ")
        elif "input" in item and item["type"] not in ("missing", "component_type"):
            message = f"{message} (got {shown(item['input'])})"
        lines.append(f"{key}: {message}" if key else message)
    return "invalid configuration:\n  " + "\n  ".join(lines)


def load_config(
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | Iterable[str] = (),
    algorithm: str | None = None,
) -> RunConfig:
    """RunConfig from an optional ``algorithm`` preset, YAML file and overrides (in order)."""
    tree: dict[str, Any] = {}
    if algorithm is not None:
        if algorithm not in PRESETS:
            raise ConfigError(
                f"unknown algorithm {algorithm!r}; valid choices: {', '.join(sorted(PRESETS))}"
            )
        for key, value in PRESETS[algorithm].items():
            _set_dotted(tree, key, value)
    if path is not None:
        loaded = _read_config_file(Path(path))
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        for key, value in _flatten(loaded).items():
            _set_dotted(tree, key, value)
    pairs = overrides if isinstance(overrides, Mapping) else overrides_from_args(list(overrides))
    for key, value in pairs.items():
        _set_dotted(tree, key, value)
    import_plugins(tree.get("plugins") or [])
    try:
        return RunConfig.model_validate(tree)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc)) from None


def _read_config_file(file: Path) -> Any:
    if file.is_dir():
        raise ConfigError(f"config file {file} is a directory; expected a YAML file")
    if not file.exists():
        raise ConfigError(f"config file {file} does not exist")
    try:
        return load_yaml(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {file} is not valid YAML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {file} is not UTF-8 text (byte {exc.start}); expected a YAML file"
        ) from None
    except YamlTooLargeError as exc:
        raise ConfigError(f"config file {file} is refused: {exc}") from None
    except ValueError as exc:  # a value the YAML constructors refuse (an int of 5000 digits)
        raise ConfigError(f"config file {file} holds a value that cannot be read: {exc}") from None


def import_plugins(modules: Any) -> None:
    """Imports the installed ``lightrft.plugins`` entry points and the config's ``plugins``
    modules, which register their components (config models and builders) on import."""
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise ConfigError(f"plugins: expected a list of module names (got {shown(modules)})")
    for entry in entry_points(group="lightrft.plugins"):
        _import_plugin(entry.value, f"entry point {entry.name!r}", entry.load)
    for name in modules:
        _import_plugin(name, "plugins", lambda name=name: importlib.import_module(name))


def _import_plugin(name: str, origin: str, load: Callable[[], Any]) -> None:
    try:
        load()
    except Exception as exc:  # a broken plugin is a config problem, named as such
        raise ConfigError(f"{origin}: cannot import plugin {name!r}: {exc}") from exc


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested mapping; lists and scalars are leaves."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def dump_config(config: RunConfig) -> str:
    """The resolved config as YAML (what ``lightrft config show`` prints and runs save)."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
