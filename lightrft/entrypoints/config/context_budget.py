"""The run's token budget against the model's context, checked before the model loads.

``rollout.max_new_tokens`` must leave room for a prompt, and a prompt of up to a
``data.*.max_prompt_length`` other than the default plus that many generated tokens must fit in the
positions the model attends over: ``model.max_positions``,
else the ``max_position_embeddings`` of the model's ``config.json`` (its text model's, for a
multimodal one). A budget beyond it used to be accepted and the engine preallocated a cache
for it (``rollout.max_new_tokens=100000000``: 24 GB, then the kernel's OOM killer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from lightrft.entrypoints.config.loading import ConfigError
from lightrft.entrypoints.config.run_config import RunConfig

POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length")
log = structlog.get_logger(__name__)

NESTED = ("text_config", "thinker_config", "llm_config", "language_config")


def model_positions(model_path: Path) -> int | None:
    """The positions the model at ``model_path`` was built for, from its ``config.json``;
    ``None`` when there is none to read (a single weights file, a hub name)."""
    path = Path(model_path) / "config.json"
    try:
        tree = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _positions(tree) if isinstance(tree, dict) else None


def _positions(tree: Mapping[str, Any]) -> int | None:
    for key in POSITION_KEYS:
        value = tree.get(key)
        if isinstance(value, int) and value > 0:
            return value
    for key in NESTED:
        child = tree.get(key)
        if isinstance(child, dict):
            found = _positions(child)
            if found is not None:
                return found
    return None


def check_context_budget(config: RunConfig, model_path: Path) -> None:
    """Raises :class:`ConfigError` (one line naming the keys) when
    ``rollout.max_new_tokens`` leaves no position for a prompt, or when it plus a
    ``data.*.max_prompt_length`` other than the default exceeds the model's positions. The
    default prompt length (512) is a cap, not a length: beyond the model's context it is
    logged (``budget.prompt_cap_beyond_context``), since most prompts are far shorter (a
    config file a run recorded holds it too, so whether it was typed cannot tell)."""
    positions = config.model.max_positions or model_positions(model_path)
    if positions is None:
        return
    new_tokens = config.rollout.max_new_tokens
    source = (
        "model.max_positions"
        if config.model.max_positions
        else f"max_position_embeddings in {Path(model_path) / 'config.json'}"
    )
    advice = "set model.max_positions=N to run beyond the model's context on purpose"
    if new_tokens >= positions:
        raise ConfigError(
            f"rollout.max_new_tokens ({new_tokens}) leaves no room for a prompt: the model has "
            f"{positions} positions ({source}); lower it, or {advice}"
        )
    for key, dataset in (("data.train", config.data.train), ("data.eval", config.data.eval)):
        if dataset is None or dataset.max_prompt_length + new_tokens <= positions:
            continue
        prompt = dataset.max_prompt_length
        if prompt == type(dataset).model_fields["max_prompt_length"].default:
            log.info(
                "budget.prompt_cap_beyond_context",
                key=f"{key}.max_prompt_length",
                cap=prompt,
                fits=positions - new_tokens,
            )
            continue
        raise ConfigError(
            f"rollout.max_new_tokens ({new_tokens}) + {key}.max_prompt_length ({prompt}) = "
            f"{prompt + new_tokens} positions, but the model has {positions} ({source}): lower "
            f"them, or {advice}"
        )
