"""What makes a run: the fingerprint a resume must match.

A fingerprint maps dotted keys to JSON values: the configuration keys that change the
optimisation (the model, the algorithm, the optimizer, the sampled batch, the rewards, the
training data; not the performance knobs such as attention kernels or micro-batch sizes, and
not the run length) plus ``model.weights``, an xxh3-128 digest of the model's weight files.

The whole files are hashed, not only their headers: a fine-tuned model of the same shape has
the same safetensors header. xxh3 runs at memory speed (0.1 s for the 538 MB default model
once it is in the page cache, 1.3 s from a cold disk).

A resume compares the fingerprint it would run with against the one recorded when the run
was started or last resumed (:mod:`history`) and refuses every changed key, naming it
with its old and new value, unless the user stated it (``--resume-changing KEY``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import xxhash

from lightrft.adapters.checkpoint.manifest import file_digest
from lightrft.entrypoints.run_dir.directory import RunDirectoryError

Fingerprint = dict[str, Any]
Changes = dict[str, tuple[Any, Any]]

WEIGHTS_KEY = "model.weights"
WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth")
ABSENT = "absent"

_MODEL_PERFORMANCE = (
    "model.attn_implementation",
    "model.gradient_checkpointing",
    "model.packing",
    "model.prefix_sharing",
    "model.logprob_chunk_size",
    "model.fused_lm_head",
    "model.max_positions",  # a check's bound, not a setting of the model
)


class ResumeIdentityError(RunDirectoryError):
    """A resume whose model, algorithm or optimisation settings differ from the run's."""


@dataclass(frozen=True)
class IdentityKeys:
    """Which flattened configuration keys make a run (``fnmatch`` patterns on dotted keys)."""

    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    whole: tuple[str, ...] = ()
    """Keys compared as one value with everything below them: an optional section (``None``
    or a component's fields), so that switching it on or off is a change of one key that
    both sides hold (``rollout.environment: null -> {type: tools, ...}``)."""

    def select(self, flat: Mapping[str, Any]) -> Fingerprint:
        """The entries of ``flat`` this identity compares, as JSON values."""
        found = {key: _json(value) for key, value in sorted(flat.items()) if self.compares(key)}
        for key in self.whole:
            below = {k[len(key) + 1 :]: v for k, v in flat.items() if k.startswith(key + ".")}
            found[key] = _json(below) if below else _json(flat.get(key))
        return dict(sorted(found.items()))

    def compares(self, key: str) -> bool:
        """Whether ``key`` is part of the identity (``model.weights`` always is)."""
        if key == WEIGHTS_KEY or key in self.whole:
            return True
        if any(key.startswith(whole + ".") for whole in self.whole):
            return False
        included = any(fnmatchcase(key, pattern) for pattern in self.include)
        return included and not any(fnmatchcase(key, pattern) for pattern in self.exclude)

    def describe(self) -> str:
        """The compared keys for a message, e.g. ``optim.*, ... (not: ...)``."""
        text = ", ".join((*self.include, *self.whole, WEIGHTS_KEY))
        return text + (f" (except {', '.join(self.exclude)})" if self.exclude else "")


RL_IDENTITY = IdentityKeys(
    include=(
        "model.*",
        "algorithm.*",
        "optim.*",
        "rollout.prompts_per_step",
        "rollout.n_samples_per_prompt",
        "rollout.max_new_tokens",
        "rollout.temperature",
        "rollout.top_p",
        "rollout.top_k",
        "rollout.min_p",
        "rollout.stop",
        "rollout.first_token_temperature",
        "rollout.dynamic_sampling",
        "rollout.max_sampling_rounds",
        "rollout.fp8",
        "rollout.mode",
        "rollout.max_staleness",
        "rollout.max_turns",
        "rollout.agent.*",
        "train.epochs",
        "train.mini_batch_size",
        "train.shuffle",
        "train.seed",
        "reward.*",
        "teacher.*",
        "data.train.*",
        "backend.nproc_per_node",
    ),
    exclude=(
        *_MODEL_PERFORMANCE,
        "reward.max_concurrent_sources",
        "reward.source_timeout_s",
        "reward.stop_on_failures",
        "reward.failure_threshold",
        "reward.failure_patience",
        "rollout.agent.straggler_wait_s",
    ),
    whole=("rollout.environment",),
)
"""``lightrft train`` / ``demo``: what changes the RL optimisation, the rollout regime
(``rollout.mode`` and its staleness) and the episodes (environment, turns, agent) included.
Not compared: the run length (``train.total_steps``: a resume may extend a run), how a batch is split
(``train.micro_batch_size``, token budgets), engines, backends, logging, evaluation."""

SFT_IDENTITY = IdentityKeys(
    include=("model.*", "optim.*", "sft.*", "backend.nproc_per_node"),
    exclude=(
        *_MODEL_PERFORMANCE,
        "sft.micro_batch_size",
        "sft.max_tokens_per_micro_batch",
        "sft.eval_*",
        "sft.total_steps",
        "sft.epochs",
    ),
)
"""``lightrft sft``: the model, optimizer, training rows and batch; not the run length or
evaluation."""

RM_IDENTITY = IdentityKeys(
    include=(
        "model",
        "data.*",
        "train.*",
        "lr",
        "max_grad_norm",
        "weight_decay",
        "betas",
        "heads.*",
        "max_length",
        "dtype",
        "modality",
        "lora_rank",
        "lora_alpha",
        "train_backbone",
    ),
    exclude=(
        "train.micro_batch_size",
        "train.eval_every",
        "train.checkpoint_every",
        "train.total_steps",
        "train.epochs",
    ),
)
"""``lightrft rm train``: the base model, preference data, batch, loss and optimizer."""


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested mapping (lists and empty mappings are values)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def weights_digest(path: Path) -> str:
    """``xxh3_128:<hex>`` over the names, sizes and xxh3 digests of the weight files at
    ``path`` (a ``.gguf``/``.safetensors`` file, or every weight file below a directory);
    ``"absent"`` when nothing is there."""
    path = Path(path)
    if path.is_file():
        files = [(path.name, path)]
    elif path.is_dir():
        files = sorted(
            ((p.relative_to(path).as_posix(), p) for p in _weight_files(path)),
            key=lambda item: item[0],
        )
    else:
        return ABSENT
    if not files:
        return ABSENT
    digest = xxhash.xxh3_128()
    for name, file in files:
        digest.update(f"{name}\0{file.stat().st_size}\0{file_digest(file)}\n".encode())
    return f"xxh3_128:{digest.hexdigest()}"


def _weight_files(root: Path) -> Iterable[Path]:
    for dirpath, _dirs, names in os.walk(root, followlinks=True):
        for name in names:
            if name.endswith(WEIGHT_SUFFIXES):
                yield Path(dirpath) / name


def fingerprint(flat: Mapping[str, Any], keys: IdentityKeys, weights: Path | None) -> Fingerprint:
    """The identity of a run with configuration ``flat`` and model weights at ``weights``."""
    found = keys.select(flat)
    if weights is not None:
        found[WEIGHTS_KEY] = weights_digest(weights)
    return found


LOSS_TEMPERATURE = "algorithm.logprob_temperature"

VALUES_BEFORE_THE_KEY: Mapping[str, Any] = {LOSS_TEMPERATURE: 1.0}
"""Keys added after runs were recorded, with the value those runs ran with: a recorded
fingerprint without the key is compared as if it held that value (a run from before
2026-11-27 trained on temperature-1 log-probs; resuming it under the sampling-temperature
default would change its loss without a word)."""


def _effective(fingerprint: Mapping[str, Any], key: str) -> Any:
    """The value ``key`` has in effect: ``sampling`` as a loss temperature is the rollout
    temperature (1 for greedy rollouts), so it equals a number that gives the same loss."""
    value = fingerprint[key]
    if key == LOSS_TEMPERATURE and value == "sampling":
        return float(fingerprint.get("rollout.temperature") or 1.0)
    return value


def changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> Changes:
    """``{key: (old, new)}`` for the keys both record whose values differ, also in effect (a
    key only one side has belongs to another LightRFT version's key set and is not compared,
    unless :data:`VALUES_BEFORE_THE_KEY` says what the older run ran with)."""
    implied = {k: v for k, v in VALUES_BEFORE_THE_KEY.items() if k in current and k not in recorded}
    old = {**implied, **recorded}
    return {
        key: (old[key], current[key])
        for key in sorted(set(old) & set(current))
        if old[key] != current[key] and _effective(old, key) != _effective(current, key)
    }


def check_stated_keys(
    stated: Iterable[str], current: Mapping[str, Any], keys: IdentityKeys
) -> None:
    """Refuses a ``--resume-changing`` key that the identity ``current`` (made with
    ``keys``) does not hold: a typo, or a key that is not compared."""
    unknown = [key for key in stated if key not in current]
    if unknown:
        raise ResumeIdentityError(
            f"--resume-changing / checkpoint.resume_changing: {', '.join(unknown)} "
            f"{'is' if len(unknown) == 1 else 'are'} not compared on resume; the compared "
            f"keys are {keys.describe()}"
        )


def check_resume(
    run_dir: Path, recorded: Mapping[str, Any], current: Mapping[str, Any], stated: Iterable[str]
) -> Changes:
    """The changes between the recorded and the current identity; raises
    :class:`ResumeIdentityError` naming each change that ``stated`` does not allow."""
    found = changes(recorded, current)
    allowed = set(stated)
    refused = {key: change for key, change in found.items() if key not in allowed}
    if not refused:
        return found
    lines = "\n  ".join(
        f"{key}: {_show(old)} -> {_show(new)}" for key, (old, new) in refused.items()
    )
    keys = " ".join(refused)
    raise ResumeIdentityError(
        f"cannot resume {run_dir}: this command differs from the run it would continue in "
        f"what makes the run:\n  {lines}\n"
        "The checkpoint holds the policy and optimizer trained under the old settings. To "
        f"continue under the new ones on purpose, add --resume-changing {keys} (or "
        f"checkpoint.resume_changing=[{', '.join(refused)}]); {run_dir}/history.jsonl records "
        "it. Otherwise start a new run: --overwrite (the old one is moved aside) or another "
        "run directory"
    )


def _json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, paths strings)."""
    return json.loads(json.dumps(value, default=str))


def _show(value: Any) -> str:
    text = json.dumps(value)
    if isinstance(value, str) and value.startswith("xxh3_128:"):
        text = json.dumps(value[:25] + "...")
    return text if len(text) <= 160 else text[:157] + "..."
