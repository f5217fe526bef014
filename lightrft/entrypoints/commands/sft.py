"""`lightrft sft`: supervised fine-tuning on chat or prompt/completion rows.

Loss on assistant/completion tokens only; `sft.*` keys set the data and schedule, `model.*`,
`optim.*`, `backend.*`, `checkpoint.*` and `logging.*` as for `lightrft train`. The model
written to RUN_DIR/final_model is what `lightrft train ALGORITHM model.path=...` loads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lightrft.entrypoints.commands.resume_flags import add_resume_changing, with_stated_keys

NAME = "sft"
HELP = "supervised fine-tuning (chat or prompt/completion data)"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="YAML config file")
    parser.add_argument("--model", help="model path (model.path)")
    parser.add_argument("--data", help="training rows (sft.train_data.path)")
    parser.add_argument("--eval-data", help="held-out rows (sft.eval_data.path)")
    parser.add_argument("--run-dir", help="run directory (logging.run_dir)")
    parser.add_argument(
        "--nproc-per-node",
        type=int,
        default=None,
        help="processes on this node (relaunches under torchrun when > 1)",
    )
    add_resume_changing(parser)


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.commands.torchrun import relaunch_under_torchrun
    from lightrft.entrypoints.config.loading import load_sft_config

    flags = {
        "model.path": args.model,
        "sft.train_data.path": args.data,
        "sft.eval_data.path": args.eval_data,
        "logging.run_dir": args.run_dir,
        "backend.nproc_per_node": args.nproc_per_node,
    }
    overrides = with_stated_keys(args, rest)
    overrides += [f"{key}={value}" for key, value in flags.items() if value is not None]
    config = load_sft_config(args.config, overrides)
    status = relaunch_under_torchrun(config.backend.nproc_per_node)
    if status is not None:
        return status
    from lightrft.adapters.distributed import leaving_process_group
    from lightrft.entrypoints.jobs.sft import sft
    from lightrft.entrypoints.next_command import NextCommand

    next_command = NextCommand(args.argv, config.logging.overwrite)
    with leaving_process_group():
        summary = sft(config, next_command=next_command)
    print(json.dumps(summary, indent=2))
    return 0
