"""`lightrft demo prm`: does a process reward model trained here lift GRPO above the outcome
reward alone, on the same budget?

The task (:mod:`~lightrft.adapters.datasets.synthetic_steps`): chain arithmetic, "Start with
13. Multiply by 5. Add 6. Subtract 4.", worked one operation per line (``13 * 5 = 65``), the
answer after ``####``: every step is checkable. Three operations on ``medium`` numbers by
default (``--chain-length``, ``--difficulty``).

0. Warm-up (``--warmup-steps``, 0: none): ``lightrft sft`` of the policy on worked chains of 1
   to ``chain_length`` operations, so that it writes steps a checker can judge
   (:mod:`~lightrft.entrypoints.recipes.prm_policy_data`).
1. PRM: ``lightrft rm train --kind process`` from the warmed policy, on its own samples with
   every line labelled by the exact step checker (Math-Shepherd labels: good while every line
   so far is right; ``--prm-data own``), or on built-in rows (``--prm-data synthetic``: some
   steps wrong, junk lines, ``--prm-phrasings``); separator ``"\\n"``; held-out step accuracy
   on rows of other prompts, before and after.
2. GRPO from the warmed policy with the outcome reward only (``math`` on the ``####`` answer).
3. GRPO from the warmed policy with the same outcome reward plus the PRM's: each step score
   made a 0/1 verdict at ``step_threshold`` 0.5 (``--step-threshold none``: raw), their mean
   one more reward under ``grpo`` (``--prm-aggregate``; ``steps``: each verdict a step reward
   for ``process_grpo``, whose per-step returns are larger than ``grpo``'s advantages).

Both GRPO stages see the same prompts, samples, steps and seed; the held-out chains are the
same for every seed (only the training prompts follow it). ``summary.json``: the warm-up's
loss, the PRM's rows and held-out step accuracy, each stage's held-out math reward (greedy
accuracy) before and after, wall times.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from lightrft.adapters.datasets.jsonl_files import write_jsonl
from lightrft.adapters.datasets.synthetic_steps import (
    DIFFICULTIES,
    PHRASINGS,
    chain_problems,
    difficulty_problem,
    phrasing_problem,
    synthetic_step_rows,
)
from lightrft.adapters.hf.scratch_model import write_scratch_model
from lightrft.adapters.reward_models.process import STEPS
from lightrft.application.reward_model_training import RewardTrainParams
from lightrft.domain.process_rewards import STEP_AGGREGATIONS
from lightrft.entrypoints.config.loading import load_config
from lightrft.entrypoints.next_command import NextCommand
from lightrft.entrypoints.recipes.prm_options import POLICY_PROFILES, PRM_DATA, PrmDemoOptions
from lightrft.entrypoints.recipes.prm_policy_data import (
    own_rows_stage,
    prm_base_stage,
    warmup_stage,
)
from lightrft.entrypoints.recipes.registry import DemoRecipe
from lightrft.entrypoints.recipes.rlhf import metric_rows, model_path_of, seed_of
from lightrft.entrypoints.run_dir.guard import fresh_run_request, guard_run_directory

log = structlog.get_logger(__name__)

GRPO_OVERRIDES = [
    "rollout.prompts_per_step=8",
    "rollout.n_samples_per_prompt=4",
    "reward.truncated_reward=0",
    "train.total_steps=16",
    "optim.lr=1e-5",  # the warmed policy is peaked: 3e-5 and 5e-5 collapse outcome-only GRPO
    "eval.every=8",
    "eval.max_prompts=128",
    "eval.accuracy_sources=[math]",  # a PRM verdict of 1 must not make a wrong answer right
    "checkpoint.every=null",
    "checkpoint.export_final=false",
    "logging.progress=false",
]
"""GRPO settings of both RL stages (``key=value`` arguments override them)."""


def _write_problems(path: Path, n: int, seed: int, options: PrmDemoOptions) -> Path:
    problems = chain_problems(n, seed, options.chain_length, options.difficulty)
    rows = ({"prompt": r["prompt"], "reference": r["reference"]} for r in problems)
    return write_jsonl(rows, path)


def _write_step_rows(path: Path, n: int, seed: int, options: PrmDemoOptions) -> Path:
    """Built-in PRM rows (``--prm-data synthetic``) of the chains with their answer line as
    the last step and some junk lines (what a policy writes besides steps)."""
    rows = synthetic_step_rows(
        n,
        seed,
        length=options.chain_length,
        error_rate=options.prm_error_rate,
        answer_step=True,
        junk_rate=options.prm_junk_rate,
        phrasings=options.prm_phrasings,
        wrong_result_share=options.prm_wrong_result_share,
        difficulty=options.difficulty,
    )
    return write_jsonl(rows, path)


def _prm_rows(
    policy: str | None, options: PrmDemoOptions, overrides: Sequence[str]
) -> tuple[Path, Path, dict[str, Any]]:
    """The PRM's training and held-out row files, and how they were made."""
    if options.prm_data not in PRM_DATA:
        raise ValueError(f"prm_data must be one of {', '.join(PRM_DATA)}, got {options.prm_data!r}")
    if options.prm_data == "own":
        from lightrft.adapters.hf import default_model_path

        return own_rows_stage(policy or str(default_model_path()), options, overrides)
    seed = seed_of(overrides)
    data = options.run_dir / "data"
    train = _write_step_rows(data / "prm_train.jsonl", options.prm_rows, seed, options)
    held_out = _write_step_rows(
        data / "prm_eval.jsonl", options.prm_eval_rows, 10_000 + seed, options
    )
    return train, held_out, {"rows": "synthetic"}


def _prm_stage(
    policy: str | None, options: PrmDemoOptions, overrides: Sequence[str], base: str | None = None
) -> dict[str, Any]:
    """The PRM, trained from ``base`` (None: ``policy``) on rows of ``policy``'s samples."""
    from lightrft.entrypoints.jobs.process_reward_model import (
        PrmCardOptions,
        PrmTrainOptions,
        StepDataOptions,
        train_process_reward_model,
    )

    started = time.perf_counter()
    train, held_out, rows = _prm_rows(policy, options, overrides)
    summary = train_process_reward_model(
        PrmTrainOptions(
            output=options.run_dir / "prm",
            model=base or policy,
            data=StepDataOptions(
                data=str(train), eval_data=str(held_out), chain_length=options.chain_length
            ),
            card=PrmCardOptions(separator=options.separator),
            train=RewardTrainParams(
                batch_size=options.prm_batch_size,
                micro_batch_size=8,
                epochs=options.prm_epochs,
                total_steps=options.prm_steps,
                eval_every=options.prm_eval_every,
                seed=seed_of(overrides),
            ),
            lr=options.prm_lr,
            max_length=256,
            next_command=options.next_command,
        )
    )
    return {
        "path": summary["model"],
        "rows": rows,
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
            *POLICY_PROFILES[options.policy].grpo,
            f"rollout.temperature={options.sample_temperature}",
            f"rollout.max_new_tokens={options.max_new_tokens}",
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
    """The process arm's PRM source: step scores passed on as step rewards
    (``prm_aggregate: steps``) or aggregated into one reward added to the outcome's."""
    source: dict[str, Any] = {"type": "process_rm", "name": "prm", "path": path}
    return {**source, "aggregate": options.prm_aggregate, "step_threshold": options.step_threshold}


def process_estimator(options: PrmDemoOptions) -> str:
    """``process_grpo`` for step rewards, else ``grpo`` (the PRM is then one more reward)."""
    return "process_grpo" if options.prm_aggregate == STEPS else "grpo"


def _starting_policy(options: PrmDemoOptions, overrides: Sequence[str]) -> str | None:
    """``model.path`` of ``overrides``; else a fresh model when the profile makes one
    (``tiny``: written under ``run_dir``, seeded by ``train.seed``); else None (the default
    model)."""
    given = model_path_of(overrides)
    spec = POLICY_PROFILES[options.policy].scratch
    if given is not None or spec is None:
        return given
    target = options.run_dir / "scratch_policy"
    write_scratch_model(target, replace(spec, seed=seed_of(overrides)))
    return str(target)


def run_prm_demo(options: PrmDemoOptions, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Runs the stages in a guarded ``run_dir``; returns (and writes) the summary."""
    with guard_run_directory(fresh_run_request(options.run_dir, options.overwrite)):
        started = time.perf_counter()
        seed = seed_of(overrides)
        data_dir = options.run_dir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        data = (
            _write_problems(data_dir / "train.jsonl", options.train_problems, seed, options),
            _write_problems(data_dir / "eval.jsonl", options.eval_problems, 10_000, options),
        )
        summary: dict[str, Any] = {}
        policy = _starting_policy(options, overrides)
        if options.warmup_steps > 0:
            summary["warmup"] = warmup_stage(policy, options, overrides)
            policy = summary["warmup"]["path"]
        arm_overrides = [*overrides, *([f"model.path={policy}"] if policy else [])]
        if options.prm_model is not None:
            summary["prm"] = {"path": str(options.prm_model), "trained_here": False}
        else:
            base = policy
            if options.prm_base_steps > 0:
                summary["prm_base"] = prm_base_stage(policy, options, overrides)
                base = summary["prm_base"]["path"]
            summary["prm"] = _prm_stage(policy, options, overrides, base)
        math = {"type": "math", "name": "math"}
        summary["outcome_only"] = _grpo_stage(
            "grpo_outcome", [math], "grpo", data, options, arm_overrides
        )
        summary["process"] = _grpo_stage(
            "grpo_process",
            [math, process_source(summary["prm"]["path"], options)],
            process_estimator(options),
            data,
            options,
            arm_overrides,
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


def _difficulty(text: str) -> str:
    problem = difficulty_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def _aggregate(text: str) -> str:
    if text != STEPS and text not in STEP_AGGREGATIONS.names():
        choices = ", ".join([STEPS, *STEP_AGGREGATIONS.names()])
        raise argparse.ArgumentTypeError(f"{text!r} not among {choices}")
    return text


def _threshold(text: str) -> float | None:
    return None if text == "none" else float(text)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        choices=tuple(POLICY_PROFILES),
        default=PrmDemoOptions.policy,
        help="; ".join(f"{name}: {p.help}" for name, p in POLICY_PROFILES.items())
        + " (the flags below override the profile's settings)",
    )
    parser.add_argument(
        "--difficulty", type=_difficulty, help="the chains' numbers: " + ", ".join(DIFFICULTIES)
    )
    parser.add_argument("--chain-length", type=int, help="operations per chain")
    parser.add_argument(
        "--warmup-steps",
        type=int,
        help="SFT steps on worked chains before the PRM and RL (0: none)",
    )
    parser.add_argument(
        "--prm-data",
        choices=PRM_DATA,
        help="the PRM's rows: the (warmed) policy's own samples labelled by the step checker, "
        "or built-in chains",
    )
    parser.add_argument("--prm-rows", type=int, help="PRM rows")
    parser.add_argument(
        "--prm-base-steps",
        type=int,
        help="SFT steps more for the PRM's starting model, after the warm-up (0: the warmed policy)",
    )
    parser.add_argument("--prm-samples", type=int, help="own rows: samples a prompt")
    parser.add_argument("--prm-steps", type=int, help="PRM optimizer steps")
    parser.add_argument("--prm-lr", type=float, help="PRM learning rate")
    parser.add_argument("--prm-model", type=Path, help="a trained PRM: no PRM stage")
    parser.add_argument(
        "--prm-phrasings",
        type=_phrasings,
        help="synthetic rows: how the steps are written, comma-separated: " + ", ".join(PHRASINGS),
    )
    parser.add_argument(
        "--step-threshold",
        type=_threshold,
        default=argparse.SUPPRESS,
        help="process arm: step scores at or above it count 1, below it 0 ('none': raw scores)",
    )
    parser.add_argument(
        "--prm-aggregate",
        type=_aggregate,
        help="process arm: 'steps' passes each step's score to process_grpo; min, last, "
        "product or mean make one reward of them, added to the outcome's (grpo)",
    )
    parser.add_argument("--eval-problems", type=int, help="held-out chains")
    parser.add_argument("--run-dir", type=Path, help="output directory")


FLAG_FIELDS = (
    "run_dir", "difficulty", "chain_length", "warmup_steps", "prm_base_steps", "prm_data",
    "prm_rows", "prm_samples", "prm_steps", "prm_lr", "prm_model", "prm_phrasings",
    "prm_aggregate", "eval_problems",
)  # fmt: skip
"""The options a flag sets; a flag not given leaves the profile's value."""


def options_of(args: argparse.Namespace) -> PrmDemoOptions:
    """The options of parsed flags: the ``--policy`` profile, the flags given over it."""
    given = {name: getattr(args, name) for name in FLAG_FIELDS if getattr(args, name) is not None}
    if hasattr(args, "step_threshold"):  # None is a value here ('none': raw scores)
        given["step_threshold"] = args.step_threshold
    return PrmDemoOptions.for_policy(
        args.policy, **given, next_command=NextCommand(args.argv, reruns_as_typed=True)
    )


def _run(args: argparse.Namespace, overrides: list[str]) -> int:
    print(json.dumps(run_prm_demo(options_of(args), overrides), indent=2))
    return 0


RECIPE = DemoRecipe(
    name="prm",
    help="warm a policy up on worked chain arithmetic (--policy tiny: a small model made here), "
    "train a process reward model on its own labelled samples, then GRPO with the outcome "
    "reward alone and with the PRM's step verdicts added",
    run=_run,
    add_arguments=_add_arguments,
)
