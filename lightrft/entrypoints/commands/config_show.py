"""`lightrft config show ALGORITHM`: the resolved configuration, every option with its value."""

from __future__ import annotations

import argparse
from pathlib import Path

from lightrft.entrypoints.config.presets import PRESETS

NAME = "config"
HELP = "show configurations"


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", required=True)
    show = sub.add_parser("show", help="print the resolved config of an algorithm")
    show.add_argument("algorithm", choices=sorted(PRESETS))
    show.add_argument("--config", type=Path, help="YAML config file")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.config.batch_scope import batch_scope_lines
    from lightrft.entrypoints.config.loading import dump_config, load_config, world_size_of

    config = load_config(args.config, rest, algorithm=args.algorithm)
    print(dump_config(config), end="")
    ranks = world_size_of(config.model_dump(mode="json"))
    print("\n".join(batch_scope_lines(config, ranks)))
    return 0
