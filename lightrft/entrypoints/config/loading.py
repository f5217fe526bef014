"""Building a RunConfig: preset < what legacy flags imply < YAML file < dotted ``key=value``
overrides and flags (:mod:`lightrft.entrypoints.config.legacy_flags`) < global batch sizes.

Errors name the key and what is allowed: ``ConfigError`` carries one line per problem.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

import structlog
import yaml
from pydantic import ValidationError

from lightrft.entrypoints.config.legacy_flags import CommandLine, FlagError, read_args
from lightrft.entrypoints.config.presets import PRESETS
from lightrft.entrypoints.config.run_config import RunConfig
from lightrft.entrypoints.config.sft_run_config import SftRunConfig
from lightrft.entrypoints.config.yaml_reading import YamlTooLargeError, load_yaml, shown

log = structlog.get_logger(__name__)

ConfigT = TypeVar("ConfigT", bound=RunConfig)

VERB_SECTIONS = ("sft",)
"""Sections only some verbs' configs have; a config file's copy for another verb (a run
directory's ``config.yaml`` written before each verb had its own config held ``sft``) is
skipped with a warning."""


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
    """The settings of ``key=value`` pairs and flags, without the flags' implied defaults
    and global batch sizes (see :func:`read_command_line`)."""
    return read_command_line(args).overrides


def last_override(overrides: Sequence[str], key: str) -> str | None:
    """The value of the last ``key=value`` word of ``overrides`` (None: ``key`` not given)."""
    values = [o.split("=", 1)[1] for o in overrides if o.startswith(f"{key}=")]
    return values[-1] if values else None


def read_command_line(args: Sequence[str]) -> CommandLine:
    """``key=value`` pairs and LightRFT/OpenRLHF flags
    (:mod:`lightrft.entrypoints.config.legacy_flags`)."""
    try:
        return read_args(args, parse_value)
    except FlagError as exc:
        raise ConfigError(str(exc)) from None


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
    return load_verb_config(RunConfig, path, overrides, algorithm)


def load_sft_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | Iterable[str] = ()
) -> SftRunConfig:
    """``lightrft sft``'s config (the ``sft`` section with the run's) from an optional YAML
    file and overrides."""
    return load_verb_config(SftRunConfig, path, overrides)


def load_verb_config(
    schema: type[ConfigT],
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | Iterable[str] = (),
    algorithm: str | None = None,
) -> ConfigT:
    """A verb's config ``schema`` from an optional ``algorithm`` preset, YAML file and
    overrides (in order)."""
    tree: dict[str, Any] = {}
    if algorithm is not None:
        if algorithm not in PRESETS:
            raise ConfigError(
                f"unknown algorithm {algorithm!r}; valid choices: {', '.join(sorted(PRESETS))}"
            )
        for key, value in PRESETS[algorithm].items():
            _set_dotted(tree, key, value)
    line = (
        CommandLine(overrides=dict(overrides))
        if isinstance(overrides, Mapping)
        else read_command_line(list(overrides))
    )
    os.environ.update(line.environment)  # --use_wandb KEY, --wandb_run_name ...: never saved
    for key, value in line.implied.items():
        _set_dotted(tree, key, value)
    if path is not None:
        _apply_file(tree, Path(path), schema)
    for key, value in line.overrides.items():
        _set_dotted(tree, key, value)
    for key, value in per_rank_sizes(line.global_sizes, tree).items():
        _set_dotted(tree, key, value)
    return config_from_tree(schema, tree)


def config_from_tree(schema: type[ConfigT], tree: Mapping[str, Any]) -> ConfigT:
    """``schema`` from nested sections of typed values (the installed plugins and the tree's
    ``plugins`` imported first); ``ConfigError`` lists every problem by dotted key."""
    import_plugins(tree.get("plugins") or [])
    try:
        return schema.model_validate(tree)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc)) from None


def _apply_file(tree: dict[str, Any], file: Path, schema: type[RunConfig]) -> None:
    loaded = _read_config_file(file)
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {file} must hold a mapping at the top level")
    for section in VERB_SECTIONS:
        if section in loaded and section not in schema.model_fields:
            log.warning(
                "config.section_skipped",
                file=str(file),
                section=section,
                detail=f"{section} is another verb's section (lightrft {section})",
            )
            loaded = {key: value for key, value in loaded.items() if key != section}
    for key, value in _flatten(loaded).items():
        _set_dotted(tree, key, value)


def per_rank_sizes(
    global_sizes: Mapping[str, tuple[str, int]], tree: Mapping[str, Any]
) -> dict[str, int]:
    """The per-rank values of global batch sizes (``key -> (flag, global value)``): each
    divided by the ranks, ``WORLD_SIZE`` under a launcher, else ``backend.nproc_per_node``."""
    ranks = world_size_of(tree)
    out: dict[str, int] = {}
    for key, (flag, size) in global_sizes.items():
        if size % ranks:
            raise ConfigError(
                f"{flag} {size} is global (all ranks together) and {ranks} ranks do not divide "
                f"it; use a multiple of {ranks}, or set {key} (per rank) instead"
            )
        out[key] = size // ranks
    return out


def world_size_of(tree: Mapping[str, Any]) -> int:
    """The number of ranks a run of ``tree`` has: ``WORLD_SIZE`` (set by torchrun), else
    ``backend.nproc_per_node``, else 1."""
    launched = os.environ.get("WORLD_SIZE")
    if launched is not None and launched.isdigit() and int(launched) > 0:
        return int(launched)
    nproc = (tree.get("backend") or {}).get("nproc_per_node", 1)
    return nproc if isinstance(nproc, int) and not isinstance(nproc, bool) and nproc > 0 else 1


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
