"""`lightrft eval`: evaluate a model.

With ``--data FILE [FILE ...]``: greedy accuracy, pass@k and maj@k on GSM8K-format,
MATH-style (boxed answer) or Geo3K (vision: ``problem`` / ``images`` / ``answer``) files,
a table per file on stdout and a JSON report. Without it: accuracy and pass@k on the
config's ``data.eval`` prompts with the configured rewards.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lightrft.entrypoints.config import RunConfig

NAME = "eval"
HELP = "evaluate a model"


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="YAML config file")
    parser.add_argument("--model", help="model path (model.path): any HF model directory")
    parser.add_argument("--output", type=Path, help="JSON report path (default RUN_DIR/eval.json)")
    suite = parser.add_argument_group("evaluation files (--data)")
    suite.add_argument(
        "--data",
        type=Path,
        nargs="+",
        help="GSM8K / MATH-style files; 'builtin': the config's data.eval prompts",
    )
    suite.add_argument(
        "--format", default="auto", help="gsm8k, boxed (alias math), geo3k or auto (default)"
    )
    suite.add_argument("--n-samples", type=int, default=0, help="samples per prompt for pass@k")
    suite.add_argument("--k", type=int, nargs="+", default=None, help="k values (default 1 and n)")
    suite.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    suite.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass")
    suite.add_argument("--max-new-tokens", type=int, default=512, help="generation budget")
    suite.add_argument("--max-prompts", type=int, default=None, help="prompts used per file")
    suite.add_argument("--batch-size", type=int, default=32, help="prompts generated at once")
    suite.add_argument("--seed", type=int, default=0, help="sampling seed")
    suite.add_argument("--no-greedy", action="store_true", help="skip the greedy pass")
    suite.add_argument("--no-records", action="store_true", help="omit per-prompt records")
    suite.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.config.loading import load_config

    overrides = list(rest) + ([f"model.path={args.model}"] if args.model else [])
    config = load_config(args.config, overrides)
    if args.data:
        return _run_suite(args, config)
    from lightrft.entrypoints.jobs.eval import evaluate

    report = evaluate(config, args.output)
    print(json.dumps(report, indent=2))
    return 0


def _run_suite(args: argparse.Namespace, config: RunConfig) -> int:
    from lightrft.application.eval_suite import SuiteParams
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.eval_suite import evaluate_files, format_table

    n = args.n_samples
    ks = tuple(args.k) if args.k else tuple(sorted({1, n})) if n else (1,)
    params = copy_fields(
        SuiteParams,
        args,
        "max_new_tokens temperature top_p seed batch_size max_prompts",
        greedy=not args.no_greedy,
        n_samples=n,
        ks=ks,
    )
    report = evaluate_files(
        config,
        list(args.data),
        params,
        file_format=args.format,
        output=args.output,
        progress=not args.no_progress,
        keep_records=not args.no_records,
    )
    print(format_table(report))
    print(f"report: {report['path']}")
    return 0
