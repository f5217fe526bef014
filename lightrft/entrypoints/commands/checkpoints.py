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
    from lightrft.adapters.checkpoint.verify import checkpoint_stores, inspect_store

    run_dir: Path = args.run_dir
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} does not exist")
    checkpoints = run_dir / "checkpoints"
    reports = [r for store in checkpoint_stores(checkpoints) for r in inspect_store(store)]
    if not reports:
        print(f"no checkpoints in {checkpoints}")
        return 1
    for report in reports:
        step = "-" if report.step is None else str(report.step)
        print(f"{report.status:<11} step {step:>8}  {report.directory}")
        for problem in report.problems:
            print(f"    {problem}")
    return 1 if any(r.status == "damaged" for r in reports) else 0
