"""`lightrft demo prm`: does a process reward model trained here lift GRPO above the outcome
reward alone, on the same budget?

The task (:mod:`~lightrft.adapters.datasets.synthetic_steps`): chain arithmetic, "Start with
7. Add 5. Multiply by 3.", worked one operation per line (``7 + 5 = 12``), the answer after
``####``: every intermediate step is checkable. One operation by default (``--chain-length``),
sized for a CPU: the worked operation and the answer line are the response's two steps.

1. PRM: ``lightrft rm train --kind process`` from the policy's model on built-in
   step-labelled chains (a step is good while every step up to it is right) whose answer line
   is a step too and some of which carry a junk line (the instruction's example, a bare
   number, a run of ``#``, a sentence), so that it has seen every kind of line it scores in
   RL; separator ``"\\n"``; held-out step accuracy on 64 more such chains, before and after.
2. GRPO with the outcome reward only (the ``math`` rule on the ``####`` answer, ``grpo``).
3. GRPO with the same outcome reward plus the PRM's step scores as step rewards
   (``process_rm`` with ``aggregate: steps``, estimator ``process_grpo``), each step score
   made a 0/1 verdict at ``step_threshold`` 0.5 (``--step-threshold none``: raw scores).

Both GRPO stages see the same prompts, samples, steps and seed; the held-out chains are the
same for every seed (only the training prompts follow it). ``summary.json``: the PRM's
held-out step accuracy, each stage's held-out math reward before and after, wall times.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets.synthetic_steps import (
    PHRASINGS,
    chain_problems,
    phrasing_problem,
    synthetic_step_rows,
)
from lightrft.application.reward_model_training import RewardTrainParams
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.recipes.registry import DemoRecipe
from lightrft.entrypoints.recipes.rlhf import metric_rows, model_path_of, seed_of
from lightrft.entrypoints.run_dir.guard import fresh_run_request, guard_run_directory

log = structlog.get_logger(__name__)

SEPARATOR = "\n"

GRPO_OVERRIDES = [
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=4",
    "rollout.max_new_tokens=32",  # a worked operation and its answer line take ~12
    "rollout.temperature=0.8",
    "reward.truncated_reward=0",
    "train.total_steps=8",
    "optim.lr=5e-5",
    "eval.every=8",
    "eval.max_prompts=32",
    "checkpoint.every=null",
    "checkpoint.export_final=false",
    "logging.progress=false",
]
"""GRPO settings of both RL stages (``key=value`` arguments override them)."""


@dataclass(frozen=True)
class PrmDemoOptions:
    """The PRM's size and the demo's directory."""

    run_dir: Path = Path("runs/demo_prm")
    prm_rows: int = 960  # step-labelled training chains
    prm_eval_rows: int = 64  # held-out chains (another seed)
    prm_steps: int | None = None  # None: prm_epochs over the rows
    prm_epochs: int = 1
    prm_batch_size: int = 16
    prm_lr: float = 3e-5
    prm_eval_every: int | None = None  # held-out step accuracy every N PRM steps too
    prm_error_rate: float = 0.3  # chains with one wrong step
    prm_wrong_result_share: float = 0.5  # of the wrong steps, those with a wrong result
    prm_junk_rate: float = 0.15  # chains with one line that is not a step (labels: half +)
    prm_model: Path | None = None  # a PRM trained before: skips stage 1
    prm_phrasings: tuple[str, ...] = ("symbol",)  # how the PRM's steps are written
    step_threshold: float | None = 0.5  # process_rm's step_threshold in the process arm
    chain_length: int = 1  # operations per chain (PRM rows and RL prompts)
    train_problems: int = 512
    eval_problems: int = 32
    overwrite: bool = True
    next_command: NextCommand = field(default_factory=NextCommand)


def _write_problems(path: Path, n: int, seed: int, length: int) -> Path:
    problems = chain_problems(n, seed, length=length)
    rows = [{"prompt": r["prompt"], "reference": r["reference"]} for r in problems]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _write_step_rows(path: Path, n: int, seed: int, options: PrmDemoOptions) -> Path:
    """PRM rows of the built-in chains with their answer line as the last step and some
    junk lines (what the policy writes besides steps), so that the PRM has seen every kind
    of line it scores during RL."""
    rows = synthetic_step_rows(
        n,
        seed,
        length=options.chain_length,
        error_rate=options.prm_error_rate,
        answer_step=True,
        junk_rate=options.prm_junk_rate,
        phrasings=options.prm_phrasings,
        wrong_result_share=options.prm_wrong_result_share,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _prm_stage(options: PrmDemoOptions, overrides: Sequence[str]) -> dict[str, Any]:
    from lightrft.entrypoints.jobs.process_reward_model import (
        PrmCardOptions,
        PrmTrainOptions,
        StepDataOptions,
        train_process_reward_model,
    )

    started = time.perf_counter()
    seed = seed_of(overrides)
    data_dir = options.run_dir / "data"
    summary = train_process_reward_model(
        PrmTrainOptions(
            output=options.run_dir / "prm",
            model=model_path_of(overrides),
            data=StepDataOptions(
                data=str(
                    _write_step_rows(data_dir / "prm_train.jsonl", options.prm_rows, seed, options)
                ),
                eval_data=str(
                    _write_step_rows(
                        data_dir / "prm_eval.jsonl", options.prm_eval_rows, 10_000 + seed, options
                    )
                ),
                chain_length=options.chain_length,
            ),
            card=PrmCardOptions(separator=SEPARATOR),
            train=RewardTrainParams(
                batch_size=options.prm_batch_size,
                micro_batch_size=8,
                epochs=options.prm_epochs,
                total_steps=options.prm_steps,
                eval_every=options.prm_eval_every,
                seed=seed,
            ),
            lr=options.prm_lr,
            max_length=256,
            next_command=options.next_command,
        )
    )
    return {
        "path": summary["model"],
        "step_accuracy_before": summary.get("before/step_accuracy"),
        "step_accuracy_after": summary.get("eval/step_accuracy"),
        "first_error_accuracy_after": summary.get("eval/first_error_accuracy"),
        "seconds": time.perf_counter() - started,
        "trained_here": True,
    }


def _grpo_stage(
    name: str, sources: list[dict[str, Any]], estimator: str, data: tuple[Path, Path],
    options: PrmDemoOptions, overrides: Sequence[str],
) -> dict[str, Any]:  # fmt: skip
    from lightrft.entrypoints.jobs.training import train

    stage_dir = options.run_dir / name
    config = load_config(
        None,
        [
            *GRPO_OVERRIDES,
            f"data.train.path={data[0]}",
            f"data.eval.path={data[1]}",
            f"algorithm.advantage_estimator={estimator}",
            f"logging.run_dir={stage_dir}",
            "reward.sources=" + json.dumps(sources),
            *overrides,
        ],
        algorithm="grpo",
    )
    started = time.perf_counter()
    summary = train(config, next_command=options.next_command)
    evals = [row for row in metric_rows(stage_dir) if "eval/reward/math/mean" in row]
    return {
        "steps": summary["steps"],
        "seconds": time.perf_counter() - started,
        "math_before": evals[0]["eval/reward/math/mean"] if evals else None,
        "math_after": evals[-1]["eval/reward/math/mean"] if evals else None,
    }


def process_source(path: str, options: PrmDemoOptions) -> dict[str, Any]:
    """The process arm's PRM source: step scores passed on as step rewards."""
    source: dict[str, Any] = {"type": "process_rm", "name": "prm", "path": path}
    return {**source, "aggregate": "steps", "step_threshold": options.step_threshold}


def run_prm_demo(options: PrmDemoOptions, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Runs the three stages in a guarded ``run_dir``; returns (and writes) the summary."""
    with guard_run_directory(fresh_run_request(options.run_dir, options.overwrite)):
        started = time.perf_counter()
        seed = seed_of(overrides)
        data_dir = options.run_dir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        data = (
            _write_problems(
                data_dir / "train.jsonl", options.train_problems, seed, options.chain_length
            ),
            _write_problems(
                data_dir / "eval.jsonl", options.eval_problems, 10_000, options.chain_length
            ),
        )
        if options.prm_model is not None:
            prm: dict[str, Any] = {"path": str(options.prm_model), "trained_here": False}
        else:
            prm = _prm_stage(options, overrides)
        math = {"type": "math", "name": "math"}
        process = process_source(prm["path"], options)
        summary: dict[str, Any] = {"prm": prm}
        summary["outcome_only"] = _grpo_stage(
            "grpo_outcome", [math], "grpo", data, options, overrides
        )
        summary["process"] = _grpo_stage(
            "grpo_process", [math, process], "process_grpo", data, options, overrides
        )
        summary["seconds"] = time.perf_counter() - started
        (options.run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        log.info("demo.prm.done", seconds=summary["seconds"])
        return summary


def _phrasings(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    problem = phrasing_problem(names)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return names


def _threshold(text: str) -> float | None:
    return None if text == "none" else float(text)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = PrmDemoOptions()
    parser.add_argument("--prm-rows", type=int, default=defaults.prm_rows, help="PRM chains")
    parser.add_argument("--prm-steps", type=int, default=None, help="PRM optimizer steps")
    parser.add_argument("--prm-lr", type=float, default=defaults.prm_lr, help="PRM learning rate")
    parser.add_argument("--prm-model", type=Path, default=None, help="a trained PRM: skip stage 1")
    parser.add_argument(
        "--prm-phrasings",
        type=_phrasings,
        default=defaults.prm_phrasings,
        help="how the PRM's training steps are written, comma-separated: " + ", ".join(PHRASINGS),
    )
    parser.add_argument(
        "--step-threshold",
        type=_threshold,
        default=defaults.step_threshold,
        help="process arm: step scores at or above it count 1, below it 0 ('none': raw scores)",
    )
    parser.add_argument(
        "--chain-length", type=int, default=defaults.chain_length, help="operations per chain"
    )
    parser.add_argument(
        "--eval-problems", type=int, default=defaults.eval_problems, help="held-out chains"
    )
    parser.add_argument("--run-dir", type=Path, default=None, help="output directory")


def _run(args: argparse.Namespace, overrides: list[str]) -> int:
    options = PrmDemoOptions(
        run_dir=args.run_dir or PrmDemoOptions.run_dir,
        prm_rows=args.prm_rows,
        prm_steps=args.prm_steps,
        prm_lr=args.prm_lr,
        prm_model=args.prm_model,
        prm_phrasings=args.prm_phrasings,
        step_threshold=args.step_threshold,
        chain_length=args.chain_length,
        eval_problems=args.eval_problems,
        next_command=NextCommand(args.argv, reruns_as_typed=True),
    )
    print(json.dumps(run_prm_demo(options, overrides), indent=2))
    return 0


RECIPE = DemoRecipe(
    name="prm",
    help="a process reward model on chain arithmetic, then GRPO with the outcome reward alone "
    "and with the PRM's step rewards (process_grpo)",
    run=_run,
    add_arguments=_add_arguments,
)
