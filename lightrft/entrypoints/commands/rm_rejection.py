"""``lightrft rm rejection-sample``'s arguments (its job:
:mod:`~lightrft.entrypoints.jobs.judge_rejection`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_rejection_sample(sub: Any) -> None:
    """Adds the ``rejection-sample`` subcommand to ``rm``'s subparsers ``sub``."""
    parser = sub.add_parser(
        "rejection-sample",
        help="sample judgements of preference pairs, keep those that reach the label, "
        "write SFT rows (and SFT on them with --sft)",
    )
    parser.add_argument("--model", required=True, help="the judge model directory")
    parser.add_argument(
        "--data",
        required=True,
        help="preference pairs: a rows file, or reward data sets 'hpdv3:PATH,...' (text or "
        "image responses; video sets are refused)",
    )
    parser.add_argument("--out", type=Path, required=True, help="the SFT rows (jsonl) to write")
    parser.add_argument("--n", type=int, default=8, help="judgements sampled per pair")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8, help="pairs per generate call")
    parser.add_argument("--max-kept-per-pair", type=int, help="keep at most this many per pair")
    parser.add_argument(
        "--labels", default="A,B", help="verdict labels, response 1's first (default A,B)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--modality", default="text", choices=("text", "vision-language"), help="the model's"
    )
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"))
    parser.add_argument(
        "--sft",
        type=Path,
        metavar="RUN_DIR",
        help="then run lightrft sft of --model on the rows into RUN_DIR (key=value overrides "
        "after the flags go to its config)",
    )


def run_rejection_sample(args: argparse.Namespace, rest: list[str]) -> int:
    """Runs the job; ``rest``: ``key=value`` overrides of the SFT run (needs ``--sft``)."""
    from lightrft.entrypoints.jobs.judge_rejection import (
        RejectionSampleOptions,
        rejection_sample_judgements,
    )

    if rest and args.sft is None:
        raise ValueError(f"key=value overrides go to the --sft run; no --sft given, got {rest}")
    unknown = [item for item in rest if "=" not in item]
    if unknown:
        raise ValueError(f"expected key=value overrides of the SFT run, got {unknown}")
    options = RejectionSampleOptions(
        model=args.model,
        data=args.data,
        out=args.out,
        n=args.n,
        temperature=args.temperature,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        max_kept_per_prompt=args.max_kept_per_pair,
        labels=tuple(label.strip() for label in args.labels.split(",") if label.strip()),
        seed=args.seed,
        modality=args.modality,
        dtype=args.dtype,
        sft_run_dir=args.sft,
        sft_overrides=tuple(rest),
    )
    summary = rejection_sample_judgements(options)
    print(json.dumps(summary, indent=2, default=str))
    return 0
