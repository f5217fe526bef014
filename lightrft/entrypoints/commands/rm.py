"""`lightrft rm train` / `lightrft rm eval`: reward models from preference data.

    lightrft rm train --output DIR [--model PATH] [--data FILE|synthetic] [--eval-data FILE] ...
    lightrft rm eval --model DIR --data FILE|synthetic [--output FILE]

Preference files are jsonl / json / parquet rows with ``prompt`` (text or chat messages),
``chosen`` and ``rejected`` (text, or chat conversations ending with the assistant's answer).

A cost model (Safe RLHF): rows whose ``chosen`` is the *more harmful* response, with each
response's safety label (``--chosen-safe-key is_chosen_safe --rejected-safe-key
is_rejected_safe``, booleans); the sign term makes its score > 0 read as unsafe.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lightrft.entrypoints.commands.resume_flags import add_resume_changing, stated_keys

NAME = "rm"
HELP = "train or evaluate a reward model on preference data"


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default="synthetic", help="preference file, or 'synthetic'")
    parser.add_argument("--num-synthetic", type=int, default=1000, help="size of the synthetic set")
    parser.add_argument(
        "--synthetic-kinds",
        default="bare,ramble,refuse,wrong",
        help="rejected-answer kinds of the synthetic set (comma-separated)",
    )
    parser.add_argument("--prompt-key", default="prompt")
    parser.add_argument("--chosen-key", default="chosen")
    parser.add_argument("--rejected-key", default="rejected")
    parser.add_argument("--margin-key", default=None, help="per-pair margin column (optional)")
    parser.add_argument(
        "--chosen-safe-key",
        default=None,
        help="cost model: column saying whether the chosen (more harmful) response is safe",
    )
    parser.add_argument(
        "--rejected-safe-key", default=None, help="cost model: the same for the rejected one"
    )
    parser.add_argument(
        "--images-key", default=None, help="column of the prompt's images (vision-language RMs)"
    )
    parser.add_argument(
        "--audios-key", default=None, help="column of the prompt's audio (audio-language RMs)"
    )
    parser.add_argument("--skip-bad-rows", action="store_true", help="skip (and count) bad rows")
    parser.add_argument("--system-prompt", default=None)
    parser.add_argument("--render", choices=["auto", "chat", "plain"], default="auto")


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rm_command", required=True)
    train = sub.add_parser("train", help="Bradley-Terry training, held-out accuracy, export")
    train.add_argument("--output", type=Path, required=True, help="output directory")
    train.add_argument("--model", help="base model directory (default: the embedded model)")
    _data_arguments(train)
    train.add_argument("--eval-data", help="held-out preference file")
    train.add_argument("--eval-fraction", type=float, default=0.1)
    train.add_argument("--batch-size", type=int, default=16)
    train.add_argument("--micro-batch-size", type=int, default=8)
    train.add_argument("--epochs", type=int, default=1)
    train.add_argument("--total-steps", type=int, default=None)
    train.add_argument("--lr", type=float, default=1e-5)
    train.add_argument("--margin", type=float, default=0.0)
    train.add_argument("--max-length", type=int, default=512)
    train.add_argument("--eval-every", type=int, default=None)
    train.add_argument("--checkpoint-every", type=int, default=None)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--strategy", default="single", help="single, fsdp2 or deepspeed")
    train.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32")
    train.add_argument(
        "--modality",
        choices=["text", "vision-language", "audio-language"],
        default="text",
        help="the backbone: a causal LM, Qwen2-VL / Qwen2.5-VL, or Qwen2-Audio",
    )
    train.add_argument("--lora-rank", type=int, default=0, help="> 0: LoRA on the backbone")
    train.add_argument("--lora-alpha", type=float, default=16.0)
    train.add_argument(
        "--head-only", action="store_true", help="train only the score head (frozen backbone)"
    )
    start = train.add_mutually_exclusive_group()
    start.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        type=_resume_choice,
        help="continue the run in --output from its newest checkpoint ('auto': if it has one)",
    )
    start.add_argument(
        "--overwrite", action="store_true", help="move a previous run in --output aside first"
    )
    start.add_argument(
        "--no-resume", action="store_true", help="start fresh (the default; kept for scripts)"
    )
    add_resume_changing(train)
    ev = sub.add_parser("eval", help="accuracy and reward-margin distribution")
    ev.add_argument("--model", required=True, help="reward model directory")
    _data_arguments(ev)
    ev.add_argument("--micro-batch-size", type=int, default=16)
    ev.add_argument("--output", type=Path, help="write the report as JSON here too")


def _resume_choice(text: str) -> bool | str:
    if text == "auto":
        return "auto"
    if text.lower() in ("true", "yes", "on", "1"):
        return True
    if text.lower() in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true, false or auto, got {text!r}")


def _data_options(args: argparse.Namespace) -> Any:
    from lightrft.adapters.datasets.preferences import PreferenceSpec
    from lightrft.entrypoints.jobs.reward_model import RmDataOptions

    spec = PreferenceSpec(
        prompt_key=args.prompt_key,
        chosen_key=args.chosen_key,
        rejected_key=args.rejected_key,
        margin_key=args.margin_key,
        chosen_safe_key=args.chosen_safe_key,
        rejected_safe_key=args.rejected_safe_key,
        on_bad_row="skip" if args.skip_bad_rows else "error",
        images_key=args.images_key,
        audios_key=args.audios_key,
    )
    return RmDataOptions(
        data=args.data,
        eval_data=getattr(args, "eval_data", None),
        eval_fraction=getattr(args, "eval_fraction", 0.1),
        num_synthetic=args.num_synthetic,
        synthetic_kinds=tuple(k for k in args.synthetic_kinds.split(",") if k),
        spec=spec,
        system_prompt=args.system_prompt,
        render=args.render,
    )


def run(args: argparse.Namespace, rest: list[str]) -> int:
    if rest:
        raise ValueError(f"lightrft rm takes no key=value overrides, got {rest}")
    from lightrft.application.reward_model_training import RewardTrainParams
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.reward_model import (
        RmTrainOptions,
        eval_reward_model,
        train_reward_model,
    )
    from lightrft.entrypoints.next_command import NextCommand

    data = _data_options(args)
    if args.rm_command == "eval":
        report = eval_reward_model(args.model, data, micro_batch_size=args.micro_batch_size)
        text = json.dumps(report, indent=2)
        if args.output is not None:
            args.output.write_text(text + "\n")
        print(text)
        return 0
    params = copy_fields(
        RewardTrainParams,
        args,
        "batch_size micro_batch_size epochs total_steps margin eval_every checkpoint_every seed",
    )
    options = copy_fields(
        RmTrainOptions,
        args,
        "output model lr max_length strategy dtype modality lora_rank lora_alpha resume overwrite",
        data=data,
        train=params,
        train_backbone=not args.head_only,
        resume_changing=tuple(stated_keys(args)),
        next_command=NextCommand(args.argv),
    )
    summary = train_reward_model(options)
    print(json.dumps(summary, indent=2))
    print(f"held-out preference accuracy: {summary['eval/accuracy']:.3f}")
    return 0
