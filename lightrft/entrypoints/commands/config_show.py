"""`lightrft config show ALGORITHM` (or `config show sft`): the resolved configuration of an
RL algorithm's run (or of `lightrft sft`'s), every option with its value."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from lightrft.entrypoints.config.presets import PRESETS

NAME = "config"
HELP = "show configurations"
VERBS = ("sft",)
"""Verbs with a config of their own, shown by name like an algorithm."""


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", required=True)
    show = sub.add_parser("show", help="print the resolved config of an algorithm (or of sft)")
    show.add_argument("algorithm", choices=[*sorted(PRESETS), *VERBS])
    show.add_argument("--config", type=Path, help="YAML config file")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.config.batch_scope import batch_scope_lines
    from lightrft.entrypoints.config.loading import (
        dump_config,
        load_config,
        load_sft_config,
        world_size_of,
    )

    verb_loaders = {"sft": load_sft_config}  # one per name of VERBS
    preset = partial(load_config, algorithm=args.algorithm)
    config = verb_loaders.get(args.algorithm, preset)(args.config, rest)
    print(dump_config(config), end="")
    ranks = world_size_of(config.model_dump(mode="json"))
    print("\n".join(batch_scope_lines(config, ranks)))
    return 0
