"""The flags of the original whose meaning depends on other flags, read together.

Each rule takes the command line's flag values (``name -> value``, as read) and the
:class:`Reading` it adds settings and problems to. The table
(:mod:`~lightrft.entrypoints.config.legacy_flag_table`) names the rule of each such flag.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

WHITENED = ("gae", "reinforce_pp", "reinforce", "reinforce_pp_baseline", "reinforce_baseline")
"""Estimators whose advantages are whitened here (the original's --advantages_norm)."""

KL_IN_REWARD = ("gae", "reinforce_pp", "reinforce")
"""Estimators whose KL term goes in the reward here (the original without --use_kl_loss)."""


@dataclass
class CommandLine:
    """A command line's settings, by precedence (see :mod:`.legacy_flags`)."""

    overrides: dict[str, Any] = field(default_factory=dict)
    implied: dict[str, Any] = field(default_factory=dict)
    global_sizes: dict[str, tuple[str, int]] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)


@dataclass
class Reading(CommandLine):
    """What a command line's flags set so far, and what cannot be read (one line each)."""

    problems: list[str] = field(default_factory=list)

    def refuse(self, flag: str, why: str) -> None:
        self.problems.append(f"--{flag}: {why}")


Values = Mapping[str, Any]
Rule = Callable[[Values, Reading], None]


def _on(values: Values, name: str) -> bool:
    return values.get(name) not in (None, False)


def strategy(values: Values, out: Reading) -> None:
    """--fsdp (FSDP2), --zero_stage N (DeepSpeed ZeRO-N), --adam_offload, --fsdp_cpu_offload.
    In the original --fsdp wins, and FSDP2 shards like ZeRO-3."""
    stage = values.get("zero_stage")
    if _on(values, "fsdp"):
        if stage not in (None, 3):
            out.refuse(
                "zero_stage",
                f"{stage} with --fsdp: FSDP2 shards parameters, gradients and optimizer state "
                "like ZeRO-3; drop --zero_stage (backend.strategy=fsdp2), or drop --fsdp for "
                "DeepSpeed (backend.strategy=deepspeed backend.strategy.zero_stage=N)",
            )
        out.overrides["backend.strategy"] = "fsdp2"
        # --adam_offload under FSDP moves the optimizer state to host memory outside the
        # update: this project's phase switching does so already (nothing to set)
    elif stage is not None:
        out.overrides["backend.strategy"] = "deepspeed"
        out.overrides["backend.strategy.zero_stage"] = stage
        if _on(values, "adam_offload"):
            out.overrides["backend.strategy.cpu_offload"] = True
    elif _on(values, "adam_offload"):
        out.implied["backend.strategy"] = "deepspeed"  # the original's default backend
        out.overrides["backend.strategy.cpu_offload"] = True
    if _on(values, "fsdp_cpu_offload"):
        if not _on(values, "fsdp"):
            out.implied["backend.strategy"] = "fsdp2"
        out.overrides["backend.strategy.cpu_offload"] = True


def global_size(values: Values, out: Reading) -> None:
    """The original's global batch sizes, divided by the ranks once the config says how many."""
    for flag, key in (
        ("rollout_batch_size", "rollout.prompts_per_step"),
        ("train_batch_size", "train.mini_batch_size"),
    ):
        if flag in values:
            size = values[flag]
            if size <= 0:
                out.refuse(flag, f"expected a positive whole number (got {size})")
            else:
                out.global_sizes[key] = (f"--{flag}", size)


def prompt_data(values: Values, out: Reading) -> None:
    """--prompt_data (the raw string) and --prompt_data_probs (one number per dataset).
    Reward data sets by name (``rapidata-i2v:path``, ``hpdv3:path`` ...: the original's
    grm_vl_rl) are pairs a judge is trained on: judge prompts (data.train.preprocessor=
    judge_pairs) scored by the verdict's agreement with the human preference, the original's
    ``<answer>Video 1 is better</answer>`` under its prompts by task type
    (--system_prompt_path), unless a reward flag names the reward."""
    if "prompt_data" in values:
        out.overrides["data.train.path"] = values["prompt_data"]
        _judge_sets(values, out)
    probs = values.get("prompt_data_probs")
    if probs is None or probs.strip() == "1.0":
        return  # the original's default: one dataset, all of it
    try:
        numbers = [float(p) for p in probs.split(",")]
    except ValueError:
        out.refuse("prompt_data_probs", f"expected numbers separated by commas (got {probs!r})")
        return
    datasets = str(values.get("prompt_data", "")).split(",")
    if len(numbers) != len(datasets):
        out.refuse(
            "prompt_data_probs",
            f"{len(numbers)} numbers for {len(datasets)} datasets of --prompt_data",
        )
        return
    out.overrides["data.train.sampling_probs"] = numbers


def _judge_sets(values: Values, out: Reading) -> None:
    from lightrft.adapters.datasets.task_prompts import TASK_TYPES  # the judge sets' names

    names = {entry.split(":", 1)[0].strip() for entry in str(values["prompt_data"]).split(",")}
    if not names & set(TASK_TYPES):
        return
    out.overrides["data.train.preprocessor"] = "judge_pairs"
    if values.get("eval_data") is None:
        out.overrides["data.eval"] = None  # the original's judge training evaluates nothing
    rewarded = values.get("remote_rm_url") is not None or str(
        values.get("reward_pretrain", "{}")
    ).strip() not in ("", "{}")
    if not rewarded:
        verdict = (
            "answer" if _prompts_by_task_type(values.get("system_prompt_path")) else "brackets"
        )
        out.overrides["reward.sources"] = [{"type": "judge_agreement", "verdict": verdict}]


def _prompts_by_task_type(text: str | None) -> bool:
    """Whether ``text`` names a YAML file holding prompts by task type."""
    if text is None or not text.endswith((".yaml", ".yml")) or not Path(text).is_file():
        return False
    return isinstance(yaml.safe_load(Path(text).read_text(encoding="utf-8")), dict)


def eval_set(values: Values, out: Reading) -> None:
    """--eval_data P: the evaluation set; --eval_split S: its split, of --eval_data or (as in
    the original) of --prompt_data."""
    path = values.get("eval_data")
    split = values.get("eval_split")
    if split is not None:
        out.overrides["data.eval.split"] = split
        path = path if path is not None else values.get("prompt_data")
        if path is None:
            out.refuse("eval_split", "needs --eval_data or --prompt_data (the set it splits)")
    if path is not None:
        out.overrides["data.eval.path"] = path


def system_prompt_path(values: Values, out: Reading) -> None:
    """The original reads a .yaml/.yml file (one prompt per task type: the judge prompts'
    data.train.system_prompt_file; or one prompt); any other text is the prompt itself."""
    text = values["system_prompt_path"]
    prompt: Any = text
    if text.endswith((".yaml", ".yml")):
        file = Path(text)
        if not file.is_file():
            out.refuse("system_prompt_path", f"{text} is not a file")
            return
        prompt = yaml.safe_load(file.read_text(encoding="utf-8"))
        if isinstance(prompt, dict):  # by task type: the judge prompts' (see prompt_data)
            out.overrides["data.train.system_prompt_file"] = text
            return
        if not isinstance(prompt, str):
            out.refuse(
                "system_prompt_path",
                f"{text}: expected one prompt or a mapping of task type to prompt",
            )
            return
    out.overrides["data.train.system_prompt"] = prompt
    out.implied["data.eval.system_prompt"] = prompt  # under the file, as every eval copy


def media_limits(values: Values, out: Reading) -> None:
    """--limit_mm_image_per_prompt N: vLLM's per-prompt image cap, as in the original (other
    engines ignore it there too)."""
    limit = values["limit_mm_image_per_prompt"]
    engine = values.get("engine_type")
    on_vllm = engine == "vllm" or (
        engine is None and ("engine_mem_util" in values or "engine_tp_size" in values)
    )
    if limit < 0 or not on_vllm or _on(values, "text_only"):
        return
    out.overrides["rollout.engine.media_per_prompt"] = {"image": limit}


def policy_loss(values: Values, out: Reading) -> None:
    """--use_gspo / --use_gmpo / --use_cpg_loss: the policy loss."""
    chosen = [
        (flag, loss)
        for flag, loss in (("use_gspo", "gspo"), ("use_gmpo", "gmpo"), ("use_cpg_loss", "cpgd"))
        if _on(values, flag)
    ]
    if len(chosen) > 1:
        out.refuse(chosen[1][0], f"one policy loss at a time (also --{chosen[0][0]})")
    elif chosen:
        out.overrides["algorithm.policy_loss"] = chosen[0][1]


def _estimator(values: Values) -> str:
    """The --advantage_estimator given ("" when none: the config decides)."""
    return str(values.get("advantage_estimator", ""))


def kl_placement(values: Values, out: Reading) -> None:
    """--use_kl_loss: the KL term in the loss, not the reward."""
    if _on(values, "use_kl_loss") and _estimator(values) in KL_IN_REWARD:
        out.refuse(
            "use_kl_loss",
            f"with {_estimator(values)} the KL term goes in the reward here; a KL loss term "
            "goes with the group estimators (group_norm, rloo, dr_grpo, ...)",
        )


def advantages_norm(values: Values, out: Reading) -> None:
    estimator = _estimator(values)
    if _on(values, "advantages_norm") and estimator and estimator not in WHITENED:
        out.refuse(
            "advantages_norm",
            f"advantages of {_estimator(values)} are not whitened here (gae, reinforce and "
            "reinforce_baseline are, always)",
        )


def overlong(values: Values, out: Reading) -> None:
    """--overlong_buffer turns the DAPO length penalty on over --overlong_buffer_len tokens
    (1024 in the original); the length alone turns it on too (OpenRLHF)."""
    length = values.get("overlong_buffer_len")
    if _on(values, "overlong_buffer"):
        out.overrides["reward.overlong_buffer"] = length if length is not None else 1024
    elif length is not None:
        out.overrides["reward.overlong_buffer"] = length


def fire(values: Values, out: Reading) -> None:
    """FIRE sampling: --use_fire, at --first_token_temperature (10 in the original)."""
    if _on(values, "use_fire"):
        out.overrides["rollout.first_token_temperature"] = values.get(
            "first_token_temperature", 10.0
        )


def critic(values: Values, out: Reading) -> None:
    """The critic starts from the policy's checkpoint here (with a new value head)."""
    path = values.get("critic_pretrain")
    if path is not None and path != values.get("pretrain"):
        out.refuse(
            "critic_pretrain",
            "the critic starts from the policy's checkpoint (--pretrain) here; a critic "
            "from another checkpoint is not built",
        )
    if "critic_learning_rate" in values:
        out.overrides["optim.critic_lr"] = values["critic_learning_rate"]


def ckpt_path(values: Values, out: Reading) -> None:
    path = values["ckpt_path"]
    if "save_path" not in values:
        out.overrides["logging.run_dir"] = path
    elif Path(path) != Path(values["save_path"]):
        out.refuse(
            "ckpt_path",
            "checkpoints are written to <run_dir>/checkpoints (run_dir: --save_path); a "
            "checkpoint directory elsewhere is not built: give both the same path",
        )


def reward(values: Values, out: Reading) -> None:
    """--reward_pretrain: reward models by label (a JSON object; the model of a path is the
    source ``rm_<first label with that path>``, so labels sharing a path share one model), one
    for every row (a path), or none (``{}``); --remote_rm_url: a reward server speaking the
    original's protocol, or a ``.py`` file whose ``reward_func(queries, prompts, labels)``
    scores (as in the original and OpenRLHF), or with on_policy_distillation the served
    teacher (``teacher.url``)."""
    text = values.get("reward_pretrain")
    sources: list[dict[str, Any]] = []
    if text is not None and text.strip() not in ("", "{}"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = text
        if isinstance(parsed, dict):
            names: dict[str, str] = {}  # path -> source name: one model per path, loaded once
            for label, path in parsed.items():
                if not isinstance(path, str):
                    out.refuse("reward_pretrain", f"label {label!r}: expected a path")
                    continue
                name = names.setdefault(path, f"rm_{label}")
                out.overrides[f"reward.recipes.{label}"] = [
                    {"type": "scalar_rm", "name": name, "path": path}
                ]
        elif isinstance(parsed, str):
            sources.append({"type": "scalar_rm", "path": parsed})
        else:
            out.refuse("reward_pretrain", f"expected a path or a JSON object (got {text!r})")
    url = values.get("remote_rm_url")
    if url is not None:
        if _estimator(values) in ("on_policy_distillation", "opd"):
            out.overrides["teacher.url"] = url  # the served teacher, as in the original
        else:
            sources.append(
                {"type": "python", "function": url, "convention": "openrlhf"}
                if url.endswith(".py")
                else {"type": "remote", "url": url, "protocol": "original"}
            )
    if sources:
        out.overrides["reward.sources"] = sources


def trackers(values: Values, out: Reading) -> None:
    """--use_wandb KEY (W&B; an empty key: off, as in the original), its run name, group and
    organization (wandb's own environment variables), --use_tensorboard DIR (used without
    W&B, as in the original)."""
    key = values.get("use_wandb")
    wandb = key is True or (isinstance(key, str) and key != "")
    if wandb:
        out.overrides["logging.trackers"] = ["jsonl", "wandb"]
        if isinstance(key, str):
            out.environment["WANDB_API_KEY"] = key
    elif values.get("use_tensorboard"):
        out.overrides["logging.trackers"] = ["jsonl", "tensorboard"]
    for flag, variable in (
        ("wandb_run_name", "WANDB_NAME"),
        ("wandb_group", "WANDB_RUN_GROUP"),
        ("wandb_org", "WANDB_ENTITY"),
    ):
        if values.get(flag):
            out.environment[variable] = values[flag]


def clip_pair(values: Values, out: Reading) -> None:
    low, high = values["eps_clip_low_high"]
    out.overrides["algorithm.clip_eps_low"] = low
    out.overrides["algorithm.clip_eps_high"] = high


RULES: dict[str, Rule] = {
    "strategy": strategy,
    "global_size": global_size,
    "prompt_data": prompt_data,
    "eval_set": eval_set,
    "system_prompt_path": system_prompt_path,
    "media_limits": media_limits,
    "policy_loss": policy_loss,
    "kl_placement": kl_placement,
    "advantages_norm": advantages_norm,
    "overlong": overlong,
    "fire": fire,
    "critic": critic,
    "ckpt_path": ckpt_path,
    "reward": reward,
    "trackers": trackers,
    "clip_pair": clip_pair,
}
"""The rules, by the name the table gives."""
