"""The flags of the original LightRFT's reward-model trainers (``examples/srm_training/
train_srm_vl.py``, ``train_srm_al.py``, ``examples/grm_training/train_grm_vl.py``), read by
``lightrft rm train`` with the original's meaning.

Each flag sets options of ``rm train`` (the keys are its argparse destinations: ``model``,
``data``, ``loss_type`` ...), is a no-op where it changes nothing here (``note`` says why),
or is refused naming what is missing. The reader is the RL flags' one
(:func:`~lightrft.entrypoints.config.legacy_flags.read_args` with this table and
:data:`RM_RULES`): values are read literally, every problem of a command line is reported
at once.

:data:`ORIGINAL_DEFAULTS`: the original SRM trainers' defaults for what decides the model and
its loss (attention pooling, one ``preference`` head of the original's MLP-with-sigmoid kind,
the HPS loss, probing layer -1, margin 0.1, seed 42, Adam betas (0.9, 0.95)), applied under
the flags when a command line uses the original's flags, so that a script that leaves them
out trains what it trained there.
"""

from __future__ import annotations

from typing import Any

from lightrft.entrypoints.config.legacy_flag_spec import (
    FLOAT,
    INT,
    PAIR,
    STR,
    SWITCH,
    WORDS,
    Flag,
    Kind,
    const,
    positive_or_none,
    sets,
    zero_is,
)
from lightrft.entrypoints.config.legacy_rules import Reading, Rule, Values, trackers

ORIGINAL_DEFAULTS: dict[str, Any] = {
    "loss_type": "hps",
    "margin": 0.1,
    "pooling": "attn",
    "heads": "preference",
    "head_arch": "mlp",
    "probing_layer": -1,
    "seed": 42,
    "betas": (0.9, 0.95),
}
"""The original SRM trainers' defaults (``add_argument`` defaults of train_srm_*.py) for the
options that decide the model and its loss; applied under the command line's flags."""


def rm_strategy(values: Values, out: Reading) -> None:
    """--fsdp (FSDP2; wins over --zero_stage, as in the original), --zero_stage N (DeepSpeed
    ZeRO-N), --adam_offload (refused: rm train keeps the optimizer state on the device)."""
    stage = values.get("zero_stage")
    if values.get("fsdp") is True:
        out.overrides["strategy"] = "fsdp2"
        if stage not in (None, 3):
            out.refuse("zero_stage", f"{stage} with --fsdp: FSDP2 shards like ZeRO-3")
    elif stage is not None:
        out.overrides["strategy"] = "deepspeed"
        out.overrides["zero_stage"] = stage
    if values.get("adam_offload") is True:
        out.refuse("adam_offload", "no optimizer-state offload in `rm train`")


def rm_trackers(values: Values, out: Reading) -> None:
    """The RL reader's tracker rule (W&B key, run name, group, org; TensorBoard), its keys
    renamed to ``rm train``'s options."""
    trackers(values, out)
    if "logging.trackers" in out.overrides:  # jsonl is always written by rm train
        chosen = out.overrides.pop("logging.trackers")
        out.overrides["trackers"] = [t for t in chosen if t != "jsonl"]


RM_RULES: dict[str, Rule] = {"rm_strategy": rm_strategy, "rm_trackers": rm_trackers}

RM_FLAGS: dict[str, Flag] = {
    # --- model and output -------------------------------------------------------------------
    "pretrain": Flag(STR, **sets("model")),
    "save_path": Flag(STR, **sets("output"), note="the run directory; the model in <it>/model"),
    "ckpt_path": Flag(
        STR, noop=True, note="checkpoints are kept in <save_path>/checkpoints (the run directory)"
    ),
    "bf16": Flag(SWITCH, **sets("dtype", value=const("bf16"))),
    "flash_attn": Flag(SWITCH, noop=True, note="attention runs on SDPA (the same scores)"),
    "gradient_checkpointing": Flag(
        SWITCH, noop=True, note="activations are kept (more memory, the same training)"
    ),
    "gradient_checkpointing_use_reentrant": Flag(SWITCH, noop=True, note="see above"),
    "disable_fast_tokenizer": Flag(SWITCH, noop=True, note="the fast tokenizer (same ids)"),
    "lora_rank": Flag(INT, **sets("lora_rank")),
    "lora_alpha": Flag(INT, **sets("lora_alpha")),
    "lora_dropout": Flag(FLOAT, accept=zero_is(0), refused="no LoRA dropout in `rm train`"),
    "target_modules": Flag(
        WORDS, accept=lambda w: not w, refused="no choice of LoRA target modules in `rm train`"
    ),
    "max_pixels": Flag(INT, **sets("max_pixels")),
    "fps": Flag(FLOAT, **sets("fps")),
    "engine_type": Flag(STR, noop=True, note="the trainers generate nothing"),
    # --- the reward model's scores and loss --------------------------------------------------
    "loss_type": Flag(STR, **sets("loss_type")),
    "margin": Flag(FLOAT, **sets("margin"), note="read by --loss_type sigmoid only, as there"),
    "pooling_method": Flag(STR, **sets("pooling")),
    "heads_types": Flag(WORDS, **sets("heads", value=",".join)),
    "probing_layer": Flag(INT, **sets("probing_layer")),
    "scale_for_train": Flag(SWITCH, **sets("scale_for_train")),
    # --- data ----------------------------------------------------------------------------------
    "train_data": Flag(
        STR,
        **sets("data"),
        note="a path or the original's name:path,name:path list, each name a reward data set "
        "(an unnamed path: preference rows); sets of media responses are refused by name",
    ),
    "eval_data": Flag(STR, **sets("eval_data")),
    "task_instruction": Flag(STR, **sets("task_instruction"), note="taken literally"),
    "input_template": Flag(
        STR, accept=lambda v: v in (None, "", "{}"), refused="no input template in `rm train`"
    ),
    "prompt_max_len": Flag(INT, **sets("max_length"), note="the prompt and the response"),
    "generate_max_len": Flag(INT, **sets("max_new_tokens")),
    # --- batches and optimizer --------------------------------------------------------------
    "train_batch_size": Flag(INT, **sets("batch_size"), note="all ranks together, as there"),
    "micro_train_batch_size": Flag(INT, **sets("micro_batch_size")),
    "max_epochs": Flag(INT, **sets("epochs")),
    "actor_learning_rate": Flag(FLOAT, **sets("lr")),
    "lr_warmup_ratio": Flag(
        FLOAT, accept=zero_is(0), refused="no learning-rate warm-up in `rm train` (constant lr)"
    ),
    "l2": Flag(FLOAT, **sets("weight_decay")),
    "adam_betas": Flag(PAIR, **sets("betas", value=tuple)),
    "seed": Flag(INT, **sets("seed")),
    # --- backend ------------------------------------------------------------------------------
    "zero_stage": Flag(INT, rule="rm_strategy", keys=("strategy", "zero_stage")),
    "fsdp": Flag(SWITCH, rule="rm_strategy", keys=("strategy",)),
    "adam_offload": Flag(SWITCH, rule="rm_strategy", refused="optimizer-state offload"),
    "local_rank": Flag(INT, noop=True, note="set by the launcher"),
    "zpg": Flag(INT, noop=True, note="a ZeRO++ communication detail"),
    "overlap_comm": Flag(SWITCH, noop=True, note="a DeepSpeed communication detail"),
    "grad_accum_dtype": Flag(STR, noop=True, note="gradients accumulate in the weights' dtype"),
    # --- checkpoints, evaluation, logging -------------------------------------------------------
    "save_steps": Flag(INT, **sets("checkpoint_every", value=positive_or_none)),
    "eval_steps": Flag(INT, **sets("eval_every", value=positive_or_none)),
    "logging_steps": Flag(INT, noop=True, note="metrics.jsonl holds every step"),
    "max_ckpt_num": Flag(INT, noop=True, note="the checkpoint store keeps its own count"),
    "max_ckpt_mem": Flag(INT, noop=True, note="the checkpoint store keeps its own count"),
    "save_hf_ckpt": Flag(SWITCH, noop=True, note="the model is always exported as HF"),
    "disable_ds_ckpt": Flag(SWITCH, noop=True, note="checkpoints hold the strategy's state"),
    "load_checkpoint": Flag(SWITCH, **sets("resume", value=const("auto"))),
    "use_wandb": Flag(Kind.OPTIONAL_STR, rule="rm_trackers", keys=("trackers", "$WANDB_API_KEY")),
    "wandb_project": Flag(STR, **sets("wandb_project")),
    "wandb_run_name": Flag(STR, rule="rm_trackers", keys=("$WANDB_NAME",)),
    "wandb_group": Flag(STR, rule="rm_trackers", keys=("$WANDB_RUN_GROUP",)),
    "wandb_org": Flag(STR, rule="rm_trackers", keys=("$WANDB_ENTITY",)),
    "use_tensorboard": Flag(
        STR,
        rule="rm_trackers",
        keys=("trackers",),
        note="without W&B, as the original; written to <save_path>/tensorboard",
    ),
}
"""``rm train``'s reading of the reward-model trainers' flags, by name (without ``--``)."""
