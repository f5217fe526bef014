"""`lightrft samples RUN_DIR`: print or filter a run's saved trajectories in the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "samples"
HELP = "print/filter saved trajectories of a run"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--step", type=int, help="only this step")
    parser.add_argument("--last", action="store_true", help="only the last step with samples")
    parser.add_argument("--min-reward", type=float, help="reward >= this")
    parser.add_argument("--max-reward", type=float, help="reward <= this")
    parser.add_argument("--finish", choices=("stop", "length"), help="finish reason")
    parser.add_argument("--contains", help="response contains this text")
    parser.add_argument("--limit", type=int, help="print at most this many")
    parser.add_argument("--json", action="store_true", help="JSON lines instead of blocks")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.adapters.report.sample_filter import SampleFilter, format_samples, read_samples

    if rest:
        raise ValueError(f"unexpected arguments {rest}")
    if args.step is not None and args.last:
        raise ValueError("--step and --last exclude each other")
    selection = SampleFilter(
        step=-1 if args.last else args.step,
        min_reward=args.min_reward,
        max_reward=args.max_reward,
        finish_reason=args.finish,
        contains=args.contains,
        limit=args.limit,
    )
    print(format_samples(selection.select(read_samples(args.run_dir)), as_json=args.json))
    return 0
