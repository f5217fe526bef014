"""`lightrft train ALGORITHM`: RL training from a preset, a config file and overrides."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lightrft.entrypoints.commands.resume_flags import add_resume_changing, with_stated_keys
from lightrft.entrypoints.config.presets import PRESETS

NAME = "train"
HELP = "run RL training"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("algorithm", choices=sorted(PRESETS), help="algorithm preset")
    parser.add_argument("--config", type=Path, help="YAML config file")
    parser.add_argument(
        "--nproc-per-node",
        type=int,
        default=None,
        help="processes on this node (relaunches under torchrun when > 1)",
    )
    parser.add_argument("--run-dir", help="run directory (logging.run_dir)")
    add_resume_changing(parser)


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.commands.torchrun import relaunch_under_torchrun
    from lightrft.entrypoints.config.loading import load_config
    from lightrft.entrypoints.next_command import NextCommand

    overrides = with_stated_keys(args, rest)
    overrides += [f"logging.run_dir={args.run_dir}"] if args.run_dir else []
    if args.nproc_per_node is not None:
        overrides.append(f"backend.nproc_per_node={args.nproc_per_node}")
    config = load_config(args.config, overrides, algorithm=args.algorithm)
    status = relaunch_under_torchrun(config.backend.nproc_per_node)
    if status is not None:
        return status
    from lightrft.adapters.distributed import leaving_process_group
    from lightrft.entrypoints.jobs.training import train

    with leaving_process_group():
        summary = train(config, next_command=NextCommand(args.argv, config.logging.overwrite))
    print(json.dumps(summary, indent=2))
    if summary.get("stopped_early"):
        from lightrft.entrypoints.graceful_stop import EXIT_STOPPED

        return EXIT_STOPPED
    return 0
