"""The flags of LightRFT's (and OpenRLHF's) training scripts, read as config settings.

A command line is dotted ``key=value`` overrides plus these flags (``--name value``,
``--name=value``, ``--switch``). :func:`read_args` turns it into a :class:`CommandLine`:

- ``overrides``: settings applied over the config file, like ``key=value``;
- ``implied``: what a flag implies in the original, applied under the config file (so a
  file or an explicit override still decides): ``--adam_offload`` alone means DeepSpeed (the
  original's default backend), ``--engine_mem_util`` a vLLM engine (its default engine);
- ``global_sizes``: the original's global batch sizes (``--rollout_batch_size``,
  ``--train_batch_size``: all ranks together), divided by the number of ranks into this
  project's per-rank keys once the config says how many ranks there are.

Flags with no counterpart are refused with one line naming the key to use instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

VALUE_FLAGS: dict[str, tuple[str, ...]] = {
    "advantage_estimator": ("algorithm.advantage_estimator",),
    "policy_loss": ("algorithm.policy_loss",),
    "n_samples_per_prompt": ("rollout.n_samples_per_prompt",),
    "kl_estimator": ("algorithm.kl_estimator",),
    "init_kl_coef": ("algorithm.kl_coef",),
    "kl_target": ("algorithm.kl_target",),
    "kl_horizon": ("algorithm.kl_horizon",),
    "micro_train_batch_size": ("train.micro_batch_size",),
    "micro_rollout_batch_size": ("rollout.forward_micro_batch_size",),
    "max_epochs": ("train.epochs",),
    "num_steps": ("train.total_steps",),
    "num_episodes": ("train.episodes",),
    "actor_learning_rate": ("optim.lr",),
    "learning_rate": ("optim.lr",),
    "lr_warmup_steps": ("optim.warmup_steps",),
    "l2": ("optim.weight_decay",),
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
    "system_prompt": ("data.train.system_prompt",),
    "max_samples": ("data.train.max_samples",),
    "lora_rank": ("model.lora.rank",),
    "lora_alpha": ("model.lora.alpha",),
    "lora_dropout": ("model.lora.dropout",),
    "target_modules": ("model.lora.target_modules",),
    "seed": ("train.seed",),
    "save_steps": ("checkpoint.every",),
    "max_ckpt_num": ("checkpoint.keep_last",),
    "eval_steps": ("eval.every",),
    "max_eval_samples": ("data.eval.max_samples",),
    "save_path": ("logging.run_dir",),
    "wandb_project": ("logging.wandb_project",),
    "overlong_buffer_len": ("reward.overlong_buffer",),
    "overlong_penalty_factor": ("reward.overlong_factor",),
    "engine_type": ("rollout.engine",),
    "engine_mem_util": ("rollout.engine.memory_fraction",),
    "engine_tp_size": ("rollout.engine.tensor_parallel_size",),
    "vllm_is_truncated_threshold": ("algorithm.tis_cap",),
    "sp_size": ("backend.sequence_parallel_size",),
}
"""``--name value``: the config keys the value sets."""

SWITCHES: dict[str, tuple[str, Any]] = {
    "bf16": ("model.dtype", "bf16"),
    "flash_attn": ("model.attn_implementation", "auto"),
    "gradient_checkpointing": ("model.gradient_checkpointing", True),
    "packing_samples": ("model.packing", True),
    "apply_chat_template": ("data.train.apply_chat_template", True),
    "normalize_reward": ("reward.normalize", True),
    "dynamic_sampling": ("rollout.dynamic_sampling", True),
    "fp8_rollout": ("rollout.fp8", True),
    "adam_offload": ("backend.strategy.cpu_offload", True),
    "fsdp_cpu_offload": ("backend.strategy.cpu_offload", True),
    "resume": ("checkpoint.resume", True),
    "load_checkpoint": ("checkpoint.resume", True),
    "overwrite": ("logging.overwrite", True),
}
"""``--name``: the setting it turns on (``--name=value`` or ``--name false`` sets ``value``).
``--flash_attn`` asks for ``auto``: FlashAttention-2 where it can run, else SDPA, logged."""

DEFAULT_SWITCHES: dict[str, str] = {
    "rm_use_engine": "reward models run colocated in the training process; put one on vLLM "
    "with reward.sources[*].engine=vllm",
    "enable_engine_sleep": "the rollout engine always sleeps outside the generation phase",
    "save_trajectories": "samples.jsonl holds logging.log_samples_per_step trajectories a step",
    "use_kl_loss": "the KL term goes where algorithm.advantage_estimator puts it (the loss "
    "for group estimators)",
    "text_only": "model.modality is text unless set otherwise",
}
"""Switches the original defaults to on whose behaviour is this project's only one: accepted,
nothing to set (the reason is what ``docs/cli.md`` says)."""

IMPLIED: dict[str, dict[str, Any]] = {
    "adam_offload": {"backend.strategy": "deepspeed"},
    "fsdp_cpu_offload": {"backend.strategy": "fsdp2"},
    "engine_mem_util": {"rollout.engine": "vllm"},
    "engine_tp_size": {"rollout.engine": "vllm"},
    "fp8_rollout": {"rollout.engine": "vllm"},
    "enable_vllm_is_correction": {"algorithm.tis_cap": 2.0},
}
"""What a flag implies where nothing else says otherwise (the original's defaults)."""

GLOBAL_SIZES: dict[str, str] = {
    "rollout_batch_size": "rollout.prompts_per_step",
    "train_batch_size": "train.mini_batch_size",
}
"""The original's global batch sizes and the per-rank keys they are divided into."""

EMPTY_ONLY: dict[str, str] = {
    "reward_pretrain": "set reward.sources, e.g. 'reward.sources=[{type: scalar_rm, path: DIR}]'",
}
"""Valued flags accepted when empty (``--reward_pretrain "{}"``: no reward model), refused
with the replacement otherwise."""

REFUSED: dict[str, str] = {
    "lr_warmup_ratio": "set optim.warmup_steps (a number of optimizer steps)",
    "disable_engine_sleep": "the rollout engine always sleeps outside generation here; "
    "drop the flag",
    "ckpt_path": "checkpoints are written to logging.run_dir/checkpoints (--save_path); "
    "drop the flag",
    "eval_split": "the evaluation set is a file: set --eval_data (data.eval.path) to it",
    "max_len": "set rollout.max_new_tokens and data.train.max_prompt_length "
    "(--generate_max_len, --prompt_max_len)",
    "use_wandb": "set logging.trackers=[jsonl,wandb] and the key in WANDB_API_KEY (the "
    "config is saved in the run directory; a key there would be too)",
    "wandb_run_name": "W&B names the run; WANDB_NAME in the environment sets the name",
    "zero_stage_with_fsdp": "FSDP2 shards parameters, gradients and optimizer state like ZeRO-3; "
    "drop --zero_stage (backend.strategy=fsdp2), or drop --fsdp for DeepSpeed "
    "(backend.strategy=deepspeed backend.strategy.zero_stage=N)",
}
"""Flags without a counterpart: the replacement, one line."""

BOOL_WORDS = {"true", "false", "on", "off", "yes", "no"}


class FlagError(ValueError):
    """A command-line flag that cannot be read; one line naming the replacement."""


@dataclass
class CommandLine:
    """A command line's settings, by precedence (see the module docstring)."""

    overrides: dict[str, Any] = field(default_factory=dict)
    implied: dict[str, Any] = field(default_factory=dict)
    global_sizes: dict[str, tuple[str, int]] = field(default_factory=dict)


def known_flags() -> list[str]:
    """Every flag :func:`read_args` accepts, sorted."""
    names = [*VALUE_FLAGS, *SWITCHES, *DEFAULT_SWITCHES, *IMPLIED, *GLOBAL_SIZES, *EMPTY_ONLY]
    return sorted({*names, "fsdp", "zero_stage"})


def read_args(args: Sequence[str], parse_value: Any) -> CommandLine:
    """Reads ``key=value`` pairs and flags; ``parse_value`` turns a value's text into a
    value (YAML rules). Raises :class:`FlagError` for a flag it cannot read."""
    line = CommandLine()
    items = list(args)
    strategy: dict[str, Any] = {}
    i = 0
    while i < len(items):
        arg = items[i]
        if not arg.startswith("--"):
            if "=" not in arg:
                raise FlagError(f"cannot read argument {arg!r}: expected key=value or --flag")
            key, _, raw = arg.partition("=")
            line.overrides[key.strip()] = parse_value(raw)
            i += 1
            continue
        name, sep, text = arg[2:].partition("=")
        name, has_value = name.replace("-", "_"), bool(sep)
        takes_value = any(name in table for table in (VALUE_FLAGS, GLOBAL_SIZES, EMPTY_ONLY))
        takes_value = takes_value or name == "zero_stage"  # refused flags stop before a value
        if takes_value and not has_value:
            if i + 1 >= len(items):
                raise FlagError(f"--{name}: expected a value")
            i, text, has_value = i + 1, items[i + 1], True
        elif not takes_value and not has_value and _is_bool_word(items, i + 1):
            i, text, has_value = i + 1, items[i + 1], True  # --gradient_checkpointing true
        value = parse_value(text) if has_value else True
        _read_flag(line, strategy, name, value, has_value)
        i += 1
    _resolve_strategy(line, strategy)
    return line


def _is_bool_word(items: list[str], at: int) -> bool:
    return at < len(items) and items[at].lower() in BOOL_WORDS


def _read_flag(
    line: CommandLine, strategy: dict[str, Any], name: str, value: Any, has_value: bool
) -> None:
    if name in REFUSED:
        raise FlagError(f"--{name} has no counterpart here: {REFUSED[name]}")
    if name in EMPTY_ONLY:
        if value in ({}, [], "", None):
            return
        raise FlagError(f"--{name} {value!r}: {EMPTY_ONLY[name]}")
    if name in ("fsdp", "zero_stage"):
        strategy[name] = value
        return
    if name in GLOBAL_SIZES:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise FlagError(f"--{name}: expected a positive whole number (got {value!r})")
        line.global_sizes[GLOBAL_SIZES[name]] = (f"--{name}", value)
        return
    known = False
    if name in VALUE_FLAGS:
        for key in VALUE_FLAGS[name]:
            line.overrides[key] = value
        known = True
    if name in SWITCHES:
        key, implied = SWITCHES[name]
        line.overrides[key] = value if has_value else implied  # --resume=auto
        known = True
    if name in IMPLIED:
        if value is not False:
            line.implied.update(IMPLIED[name])
        known = True
    if not known and name not in DEFAULT_SWITCHES:
        raise FlagError(
            f"unknown option --{name}; use dotted key=value overrides or one of "
            f"--{', --'.join(known_flags())}"
        )


def _resolve_strategy(line: CommandLine, strategy: dict[str, Any]) -> None:
    """``--fsdp`` (FSDP2) and ``--zero_stage N`` (DeepSpeed ZeRO-N): in the original
    ``--fsdp`` wins and FSDP2 shards like ZeRO-3, so ``--fsdp --zero_stage 3`` is FSDP2."""
    fsdp = strategy.get("fsdp", False) is True
    stage = strategy.get("zero_stage")
    if fsdp:
        if stage not in (None, 3):
            raise FlagError(f"--zero_stage {stage} with --fsdp: {REFUSED['zero_stage_with_fsdp']}")
        line.overrides["backend.strategy"] = "fsdp2"
    elif stage is not None:
        line.overrides["backend.strategy"] = "deepspeed"
        line.overrides["backend.strategy.zero_stage"] = stage
