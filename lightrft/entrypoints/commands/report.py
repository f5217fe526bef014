"""`lightrft report RUN_DIR`: plots and an HTML page of a run."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "report"
HELP = "render plots and an HTML page of a run"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.adapters.report import render_report

    if not args.run_dir.is_dir():
        raise FileNotFoundError(f"run directory {args.run_dir} does not exist")
    print(render_report(args.run_dir))
    return 0
