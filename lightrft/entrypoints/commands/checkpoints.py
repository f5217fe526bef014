"""`lightrft checkpoints verify RUN_DIR`: every checkpoint of a run and its state.
`lightrft checkpoints export RUN_DIR [--step N] --out DIR`: a checkpoint as a Hugging Face
model directory (LoRA merged; the PEFT adapter in DIR/adapter).

Exit status of verify: 0 when every checkpoint is intact (or unverified, i.e. saved without
checksums but readable), 1 when any is damaged or there is none, 2 when RUN_DIR does not
exist. Export: 0 done; 2 no such run, step or config, or an --out it refuses (a run
directory, inside or holding one; not empty without --force) or the run is in use; 1 a
damaged checkpoint (named) or a failed write (full disk).
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "checkpoints"
HELP = "verify a run's checkpoints, or export one as a Hugging Face model"


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="checkpoints_command", required=True)
    verify = sub.add_parser("verify", help="check sizes and checksums of every checkpoint")
    verify.add_argument("run_dir", type=Path, help="the run directory (logging.run_dir)")
    verify.set_defaults(job=_verify)
    export = sub.add_parser(
        "export", help="write a checkpoint (any strategy, LoRA) as a Hugging Face model"
    )
    export.add_argument("run_dir", type=Path, help="the run directory (logging.run_dir)")
    export.add_argument("--step", type=int, help="checkpoint step (default: the newest)")
    export.add_argument(
        "--out",
        type=Path,
        required=True,
        help="model directory to write: new or empty, outside every run directory",
    )
    export.add_argument(
        "--force",
        action="store_true",
        help="--out may hold something: it is moved aside to OUT.old-<UTC time> (not deleted)",
    )
    export.set_defaults(job=_export)


def run(args: argparse.Namespace, rest: list[str]) -> int:
    if rest:
        raise ValueError(f"unexpected arguments {rest}")
    return int(args.job(args))


def _verify(args: argparse.Namespace) -> int:
    from lightrft.entrypoints.jobs.checkpoints import verify_checkpoints

    return verify_checkpoints(args.run_dir)


def _export(args: argparse.Namespace) -> int:
    from lightrft.entrypoints.jobs.checkpoint_export import export_checkpoint

    done = export_checkpoint(args.run_dir, args.out, args.step, force=args.force)
    adapter = f" and the LoRA adapter to {done.adapter}" if done.adapter else ""
    print(f"exported step {done.step} of {args.run_dir} to {done.model}{adapter}")
    return 0
