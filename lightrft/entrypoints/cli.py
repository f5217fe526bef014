"""The `lightrft` console script.

    lightrft train ALGORITHM [--config FILE] [--nproc-per-node N] [--resume] [key=value ...]
    lightrft eval [--config FILE] [--model PATH] [--output FILE] [key=value ...]
    lightrft config show ALGORITHM [--config FILE] [key=value ...]
    lightrft report RUN_DIR
    lightrft demo [key=value ...]

Overrides are dotted ``key=value`` pairs (``optim.lr=1e-5``) or LightRFT/OpenRLHF flags
(``--n_samples_per_prompt 8``). Every problem with a config exits with status 2 and a
message naming the key.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from lightrft.entrypoints.config.loading import ConfigError, dump_config, load_config
from lightrft.entrypoints.config.presets import PRESETS

EXIT_USAGE = 2

DEMO_OVERRIDES = [
    "logging.run_dir=runs/demo",
    # built-in arithmetic word problems; the model is asked for the bare number
    "data.train.difficulty=1",
    "data.train.num_builtin=2000",
    "data.train.instruction=Answer with just the number.",
    "data.train.system_prompt=Reply with only the final number.",
    "data.eval.difficulty=1",
    "data.eval.num_builtin=100",
    "data.eval.instruction=Answer with just the number.",
    "data.eval.system_prompt=Reply with only the final number.",
    # GRPO: 8 prompts x 8 samples of at most 16 tokens, full fine-tuning in fp32
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=8",
    "rollout.max_new_tokens=16",
    "rollout.temperature=0.8",
    "train.total_steps=10",
    "train.micro_batch_size=16",
    "optim.lr=5e-5",
    "eval.every=10",
    "eval.max_prompts=100",
    "checkpoint.every=5",
]
"""`lightrft demo`: `lightrft train grpo` sized for a 2-core CPU (about 3 minutes idle) on the
embedded SmolLM2-135M-Instruct; held-out greedy accuracy is measured before and after."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lightrft", description=__doc__.split("\n")[0])
    parser.add_argument("--json-logs", action="store_true", help="log JSON lines")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="run RL training", description="Run RL training.")
    train.add_argument("algorithm", choices=sorted(PRESETS), help="algorithm preset")
    train.add_argument("--config", type=Path, help="YAML config file")
    train.add_argument(
        "--nproc-per-node",
        type=int,
        default=None,
        help="processes on this node (relaunches under torchrun when > 1)",
    )
    train.add_argument("--run-dir", help="run directory (logging.run_dir)")

    ev = sub.add_parser("eval", help="evaluate a model", description="Accuracy and pass@k.")
    ev.add_argument("--config", type=Path, help="YAML config file")
    ev.add_argument("--model", help="model path (model.path)")
    ev.add_argument("--output", type=Path, help="JSON report path (default RUN_DIR/eval.json)")

    cfg = sub.add_parser("config", help="show configurations")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    show = cfg_sub.add_parser("show", help="print the resolved config of an algorithm")
    show.add_argument("algorithm", choices=sorted(PRESETS))
    show.add_argument("--config", type=Path, help="YAML config file")

    report = sub.add_parser("report", help="render plots and an HTML page of a run")
    report.add_argument("run_dir", type=Path)

    sub.add_parser("demo", help="the main job: GRPO on the embedded model, then the report")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args, rest = _parser().parse_known_args(argv)
    try:
        return _dispatch(args, rest)
    except ConfigError as exc:
        print(f"lightrft: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"lightrft: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.logging_setup import configure_logging

    configure_logging(json_logs=args.json_logs)
    if args.command == "config":
        config = load_config(args.config, rest, algorithm=args.algorithm)
        print(dump_config(config), end="")
        return 0
    if args.command == "report":
        from lightrft.adapters.report import render_report

        if not args.run_dir.is_dir():
            raise FileNotFoundError(f"run directory {args.run_dir} does not exist")
        print(render_report(args.run_dir))
        return 0
    if args.command == "eval":
        from lightrft.entrypoints.run_eval import evaluate

        overrides = list(rest) + ([f"model.path={args.model}"] if args.model else [])
        report = evaluate(load_config(args.config, overrides), args.output)
        print(json.dumps(report, indent=2))
        return 0
    if args.command == "demo":
        return _train_and_report(load_config(None, DEMO_OVERRIDES + list(rest), algorithm="grpo"))
    overrides = list(rest) + ([f"logging.run_dir={args.run_dir}"] if args.run_dir else [])
    if args.nproc_per_node is not None:
        overrides.append(f"backend.nproc_per_node={args.nproc_per_node}")
    config = load_config(args.config, overrides, algorithm=args.algorithm)
    if config.backend.nproc_per_node > 1:
        from lightrft.adapters.distributed.launch import (
            relaunch_with_torchrun,
            running_under_torchrun,
        )

        if not running_under_torchrun():
            argv = ["-m", "lightrft.entrypoints.cli", *sys.argv[1:]]
            return relaunch_with_torchrun(config.backend.nproc_per_node, argv)
    from lightrft.entrypoints.run_training import train

    summary = train(config)
    print(json.dumps(summary, indent=2))
    return 0


def _train_and_report(config: object) -> int:
    from lightrft.adapters.report import render_report
    from lightrft.entrypoints.run_training import train

    summary = train(config)  # type: ignore[arg-type]
    page = render_report(Path(summary["run_dir"]))
    before, after = summary.get("eval_accuracy_before"), summary.get("eval_accuracy_after")
    print(json.dumps(summary, indent=2))
    if before is not None and after is not None:
        print(
            f"held-out accuracy: before {before:.3f} -> after {after:.3f} ({after - before:+.3f})"
        )
    print(f"report: {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
