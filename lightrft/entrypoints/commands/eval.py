"""`lightrft eval`: accuracy and pass@k of a model on a prompt set."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "eval"
HELP = "evaluate a model"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="YAML config file")
    parser.add_argument("--model", help="model path (model.path)")
    parser.add_argument("--output", type=Path, help="JSON report path (default RUN_DIR/eval.json)")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.config.loading import load_config
    from lightrft.entrypoints.run_eval import evaluate

    overrides = list(rest) + ([f"model.path={args.model}"] if args.model else [])
    report = evaluate(load_config(args.config, overrides), args.output)
    print(json.dumps(report, indent=2))
    return 0
