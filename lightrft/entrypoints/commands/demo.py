"""`lightrft demo`: the main job, `lightrft train grpo` sized for a 2-core CPU (about 3 minutes
idle) on the embedded SmolLM2-135M-Instruct; held-out greedy accuracy before and after.

Arguments only: the recipes are :mod:`lightrft.entrypoints.recipes.demo`, ``.ttrl`` and
``.rlhf``; the GRPO demo's job is :mod:`lightrft.entrypoints.jobs.demo`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lightrft.entrypoints.commands.resume_flags import add_resume_changing, with_stated_keys

NAME = "demo"
HELP = (
    "the main jobs on the embedded model: GRPO (default), 'rlhf' (reward model, then GRPO), "
    "'ttrl' (label-free majority-vote reward), 'agent' (multi-turn RL with a calculator tool) "
    "or 'distill' (on-policy distillation of --teacher into the base model), "
    "or 'safe' (helpfulness and cost models, then GRPO under a cost limit: Safe RLHF)"
)


def add_parser(parser: argparse.ArgumentParser) -> None:
    """``lightrft demo [rlhf] [key=value ...]``: the GRPO main job, or the RLHF one."""
    parser.add_argument("--rm-pairs", type=int, default=160, help="rlhf, safe: synthetic pairs")
    parser.add_argument("--rm-epochs", type=int, default=2, help="rlhf, safe: reward-model epochs")
    parser.add_argument("--rm-lr", type=float, default=2e-3, help="rlhf, safe: reward-model lr")
    parser.add_argument(
        "--rm-full", action="store_true", help="rlhf: train the whole reward model, not the head"
    )
    parser.add_argument("--serve-rm", action="store_true", help="rlhf: score over HTTP")
    parser.add_argument("--run-dir", type=Path, default=None, help="rlhf, safe: output directory")
    parser.add_argument("--rm-model", type=Path, default=None, help="rlhf: skip RM training")
    parser.add_argument(
        "--teacher",
        type=Path,
        default=None,
        help="distill: the teacher's directory (default: runs/demo/final_model)",
    )
    parser.add_argument(
        "--no-constraint", action="store_true", help="safe: the same GRPO run without the limit"
    )
    parser.add_argument(
        "--cost-limit", type=float, default=0.1, help="safe: largest allowed violation rate"
    )
    parser.add_argument("--helpful-model", type=Path, default=None, help="safe: skip its training")
    parser.add_argument("--cost-model", type=Path, default=None, help="safe: skip its training")
    add_resume_changing(parser)


def run(args: argparse.Namespace, rest: list[str]) -> int:
    if rest and rest[0] == "rlhf":
        return _run_rlhf(args, with_stated_keys(args, rest[1:]))
    if rest and rest[0] == "agent":
        return _run_agent(args, with_stated_keys(args, rest[1:]))
    if rest and rest[0] == "distill":
        return _run_distill(args, with_stated_keys(args, rest[1:]))
    if rest and rest[0] == "safe":
        return _run_safe(args, with_stated_keys(args, rest[1:]))
    from lightrft.entrypoints.jobs.demo import run_grpo_demo
    from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES

    if rest and rest[0] == "ttrl":
        from lightrft.entrypoints.recipes.ttrl import ttrl_overrides

        overrides = ttrl_overrides(with_stated_keys(args, rest[1:]))
    else:
        overrides = with_stated_keys(args, rest)
    return run_grpo_demo(DEMO_OVERRIDES + overrides, args.argv)


def _run_rlhf(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.recipes.rlhf import RlhfDemoOptions, run_rlhf_demo

    options = RlhfDemoOptions(
        run_dir=args.run_dir or Path("runs/demo_rlhf"),
        rm_train_backbone=args.rm_full,
        serve_rm=args.serve_rm,
        rm_model=args.rm_model,
        **_rm_demo_args(args),
    )
    summary = run_rlhf_demo(options, rest)
    print(json.dumps(summary, indent=2))
    accuracy = summary["reward_model"].get("held_out_accuracy")
    if accuracy is not None:
        print(f"reward model held-out accuracy: {accuracy:.3f}")
    return 0


def _rm_demo_args(args: argparse.Namespace) -> dict[str, Any]:
    """The options of the demos that train reward models first (``RmDemoOptions``)."""
    from lightrft.entrypoints.next_command import NextCommand

    return {
        "rm_pairs": args.rm_pairs,
        "rm_epochs": args.rm_epochs,
        "rm_lr": args.rm_lr,
        "overwrite": True,  # like the GRPO demo: running it again starts over, the old run aside
        "next_command": NextCommand(args.argv, reruns_as_typed=True),
    }


def _run_agent(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.recipes.agent import AgentDemoOptions, run_agent_demo

    # the seed and the run directory are the demo's own (its stages live under it)
    seed = [int(o.split("=", 1)[1]) for o in rest if o.startswith("train.seed=")]
    run_dir = [Path(o.split("=", 1)[1]) for o in rest if o.startswith("logging.run_dir=")]
    rest = [o for o in rest if not o.startswith(("train.seed=", "logging.run_dir="))]
    options = AgentDemoOptions(
        run_dir=(run_dir or [args.run_dir or Path("runs/demo_agent")])[-1],
        seed=(seed or [0])[-1],
        overwrite=True,  # like the other demos: running it again moves the old run aside
    )
    summary = run_agent_demo(options, rest)
    print(json.dumps(summary, indent=2))
    print(
        f"held-out success: before {summary['eval_accuracy_before']:.3f} -> after SFT "
        f"{summary['eval_accuracy_after_sft']:.3f} -> after RL {summary['eval_accuracy_after']:.3f}"
        f"; tool use: {summary['tool_use_rate_before']:.3f} -> "
        f"{summary['tool_use_rate_after_sft']:.3f} -> {summary['tool_use_rate_after']:.3f}"
    )
    return 0


def _run_distill(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.recipes.distill import run_distill_demo

    summary = run_distill_demo(args.teacher, rest)
    print(json.dumps(summary, indent=2))
    if "teacher_accuracy" not in summary:  # stopped early
        return 0
    print(
        f"held-out accuracy: student before {summary.get('eval_accuracy_before')} -> after "
        f"{summary.get('eval_accuracy_after')}; teacher {summary['teacher_accuracy']}; "
        f"gap closed {summary.get('gap_closed')}"
    )
    return 0


def _run_safe(args: argparse.Namespace, rest: list[str]) -> int:
    from lightrft.entrypoints.recipes.rlhf import seed_of
    from lightrft.entrypoints.recipes.safe import SafeDemoOptions, run_safe_demo

    options = SafeDemoOptions(
        run_dir=args.run_dir or Path("runs/demo_safe"),
        seed=seed_of(rest),
        constrained=not args.no_constraint,
        limit=args.cost_limit,
        helpful_model=args.helpful_model,
        cost_model=args.cost_model,
        **_rm_demo_args(args),
    )
    # the seed is the demo's own (both models and GRPO use it)
    rest = [o for o in rest if not o.startswith("train.seed=")]
    summary = run_safe_demo(options, rest)
    print(json.dumps(summary, indent=2))
    print(
        f"held-out helpfulness {summary['reward_before']:+.3f} -> {summary['reward_after']:+.3f}; "
        f"unsafe rate {summary['cost_rate_before']:.3f} -> {summary['cost_rate_after']:.3f} "
        f"(limit {summary['cost_limit']}, multiplier {summary['multiplier_final']})"
    )
    return 0
