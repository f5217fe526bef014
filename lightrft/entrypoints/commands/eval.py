"""`lightrft eval`: evaluate a model.

With ``--data FILE [FILE ...]`` (or ``--benchmarks NAME ...``): greedy accuracy, pass@k and
maj@k on GSM8K-format, MATH-style (boxed answer), Geo3K (vision: ``problem`` / ``images`` /
``answer``) or math-benchmark files (the original LightRFT's ``eval_data``: ``prompt`` /
``final_answer``, GPQA's ``choices`` graded by the chosen letter), a table per file on stdout
and a JSON report. Without them: accuracy and pass@k on the config's ``data.eval`` prompts
with the configured rewards.

The flags of the original's ``examples/math_benchmarks/eval_math_benchmarks.py`` are read
with their meaning (``--model_path``, ``--benchmarks``, ``--data_root``, ``--max_tokens``,
``--temperature``, ``--top_p``, ``--batch_size``, ``--output_dir``, ``--use_vllm``,
``--vllm_tensor_parallel_size``, ``--device``); docs/cli.md lists them.
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
    parser.add_argument(
        "--model", "--model_path", "--model-path", help="model path (model.path): any HF directory"
    )
    parser.add_argument("--output", type=Path, help="JSON report path (default RUN_DIR/eval.json)")
    parser.add_argument(
        "--output_dir", "--output-dir", type=Path, help="directory of the JSON report (eval.json)"
    )
    suite = parser.add_argument_group("evaluation files (--data, --benchmarks)")
    suite.add_argument(
        "--data",
        type=Path,
        nargs="+",
        help="GSM8K / MATH-style / benchmark files; 'builtin': the config's data.eval prompts",
    )
    suite.add_argument(
        "--benchmarks",
        nargs="+",
        help="benchmarks by name (math500 aime2024 gpqa_diamond, or comma-separated): "
        "NAME.json under --data_root or its eval_data folder",
    )
    suite.add_argument(
        "--data_root", "--data-root", type=Path, default=Path("."), help="where --benchmarks are"
    )
    suite.add_argument(
        "--format",
        default="auto",
        help="gsm8k, boxed (alias math), geo3k, benchmark or auto (default)",
    )
    suite.add_argument(
        "--n-samples", "--n_samples", type=int, default=0, help="samples per prompt for pass@k"
    )
    suite.add_argument("--k", type=int, nargs="+", default=None, help="k values (default 1 and n)")
    suite.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="sampling temperature (default 1.0); 0: the greedy pass alone; > 0 without "
        "--n-samples: one sampled completion per prompt (sample_accuracy)",
    )
    suite.add_argument("--top-p", "--top_p", type=float, default=1.0, help="nucleus sampling mass")
    suite.add_argument(
        "--max-new-tokens",
        "--max_new_tokens",
        "--max_tokens",
        "--max-tokens",
        type=int,
        default=512,
        help="generation budget",
    )
    suite.add_argument(
        "--max-prompts", "--max_prompts", type=int, default=None, help="prompts used per file"
    )
    suite.add_argument(
        "--batch-size", "--batch_size", type=int, default=32, help="prompts generated at once"
    )
    suite.add_argument("--seed", type=int, default=0, help="sampling seed")
    suite.add_argument("--no-greedy", action="store_true", help="skip the greedy pass")
    suite.add_argument("--no-records", action="store_true", help="omit per-prompt records")
    suite.add_argument("--no-progress", action="store_true", help="no progress bar")
    engine = parser.add_argument_group("the original's engine flags (as config overrides)")
    engine.add_argument("--use_vllm", "--use-vllm", action="store_true", help="rollout.engine=vllm")
    engine.add_argument(
        "--vllm_tensor_parallel_size",
        "--vllm-tensor-parallel-size",
        type=int,
        default=None,
        help="rollout.engine.tensor_parallel_size (with --use_vllm)",
    )
    engine.add_argument("--device", choices=("cuda", "cpu"), help="backend.accelerator")


def original_overrides(args: argparse.Namespace) -> list[str]:
    """The config overrides the original's model and engine flags stand for."""
    overrides = [f"model.path={args.model}"] if args.model else []
    if args.use_vllm:
        overrides.append("rollout.engine=vllm")
        if args.vllm_tensor_parallel_size is not None:
            tp = args.vllm_tensor_parallel_size
            overrides.append(f"rollout.engine.tensor_parallel_size={tp}")
    if args.device:
        overrides.append(f"backend.accelerator={args.device}")
    return overrides


def run(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.config.loading import ConfigError, load_config

    problems: list[str] = []
    config = None
    try:
        config = load_config(args.config, [*rest, *original_overrides(args)])
    except ValueError as exc:
        problems.append(str(exc))
    files = list(args.data or [])
    if args.benchmarks:
        from lightrft.entrypoints.wiring.eval_files import benchmark_files

        names = [n for word in args.benchmarks for n in word.split(",") if n]
        try:
            files += benchmark_files(names, args.data_root)
        except FileNotFoundError as exc:
            problems.append(str(exc))
    if args.output and args.output_dir:
        problems.append("--output and --output_dir both name the report; give one")
    if problems or config is None:
        raise ConfigError("\n".join(problems))  # every problem of the command line
    if args.output_dir:
        args.output = args.output_dir / "eval.json"
    if files:
        return _run_suite(args, config, files)
    from lightrft.entrypoints.jobs.eval import evaluate

    report = evaluate(config, args.output)
    print(json.dumps(report, indent=2))
    return 0


def _run_suite(args: argparse.Namespace, config: RunConfig, files: list[Path]) -> int:
    from lightrft.application.eval_suite import SuiteParams
    from lightrft.entrypoints.field_copy import copy_fields
    from lightrft.entrypoints.jobs.eval_suite import evaluate_files, format_table

    temperature = 1.0 if args.temperature is None else args.temperature
    # the original samples one completion at a temperature > 0
    n = args.n_samples or (1 if args.temperature else 0)
    ks = tuple(args.k) if args.k else tuple(sorted({1, n})) if n else (1,)
    params = copy_fields(
        SuiteParams,
        args,
        "max_new_tokens top_p seed batch_size max_prompts",
        temperature=temperature,
        greedy=not args.no_greedy,
        n_samples=n,
        ks=ks,
    )
    report = evaluate_files(
        config,
        files,
        params,
        file_format=args.format,
        output=args.output,
        progress=not args.no_progress,
        keep_records=not args.no_records,
    )
    print(format_table(report))
    print(f"report: {report['path']}")
    return 0
