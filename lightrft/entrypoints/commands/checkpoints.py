"""`lightrft checkpoints verify RUN_DIR`: every checkpoint of a run and its state.

Exit status 0 when every checkpoint is intact (or unverified, i.e. saved without checksums
but readable), 1 when any is damaged or there is none, 2 when RUN_DIR does not exist.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "checkpoints"
HELP = "list a run's checkpoints and verify their checksums"


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="checkpoints_command", required=True)
    verify = sub.add_parser("verify", help="check sizes and checksums of every checkpoint")
    verify.add_argument("run_dir", type=Path, help="the run directory (logging.run_dir)")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.jobs.checkpoints import verify_checkpoints

    return verify_checkpoints(args.run_dir)
