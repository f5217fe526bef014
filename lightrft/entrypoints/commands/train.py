"""`lightrft train ALGORITHM`: RL training from a preset, a config file and overrides."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.config.loading import load_config

    overrides = list(rest) + ([f"logging.run_dir={args.run_dir}"] if args.run_dir else [])
    if args.nproc_per_node is not None:
        overrides.append(f"backend.nproc_per_node={args.nproc_per_node}")
    config = load_config(args.config, overrides, algorithm=args.algorithm)
    if config.backend.nproc_per_node > 1:
        from lightrft.adapters.distributed.launch import (
            relaunch_with_torchrun,
            running_under_torchrun,
        )

        if not running_under_torchrun():
            argv = ["-m", "lightrft.entrypoints.cli", *sys.argv[1:]]
            return relaunch_with_torchrun(config.backend.nproc_per_node, argv)
    from lightrft.entrypoints.run_training import train

    summary = train(config)
    print(json.dumps(summary, indent=2))
    return 0
